/**
 * fundsAvailabilityWorkflow: one per pending balance transaction (a payment's
 * money), workflow id = the balance transaction id. It sleeps on a durable timer
 * until the money's `available_on` (no poller), then moves it from pending to
 * available. The activity is idempotent: it moves only a movement still pending.
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface FundsAvailabilityInput {
  balanceTransactionId: string;
  /** How long from the workflow's start until the money is available (0: at once). */
  availableAfterMs: number;
  /** Money of an object on a test clock: it waits on the clock. */
  testClock?: ClockBinding;
}

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function fundsAvailabilityWorkflow(input: FundsAvailabilityInput): Promise<boolean> {
  const clock = workflowClock(input.testClock);
  if (input.availableAfterMs > 0) {
    setCurrentDetails(`Pending until ${new Date(clock.now().getTime() + input.availableAfterMs).toISOString()}.`);
    await clock.sleepFor(input.availableAfterMs, { summary: 'Until available_on' });
  }
  const moved = await activities.makeFundsAvailable(input.balanceTransactionId);
  setCurrentDetails(moved ? 'Available.' : 'Was no longer pending.');
  await clock.finished();
  return moved;
}
