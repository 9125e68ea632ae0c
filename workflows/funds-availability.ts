/**
 * fundsAvailabilityWorkflow: one per pending balance transaction (a payment's
 * money), workflow id = the balance transaction id. It sleeps on a durable timer
 * until the money's `available_on` (no poller), then moves it from pending to
 * available. The activity is idempotent: it moves only a movement still pending.
 */
import { proxyActivities, setCurrentDetails, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export interface FundsAvailabilityInput {
  balanceTransactionId: string;
  /** How long from the workflow's start until the money is available (0: at once). */
  availableAfterMs: number;
}

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function fundsAvailabilityWorkflow(input: FundsAvailabilityInput): Promise<boolean> {
  if (input.availableAfterMs > 0) {
    setCurrentDetails(`Pending until ${new Date(Date.now() + input.availableAfterMs).toISOString()}.`);
    await sleep(input.availableAfterMs, { summary: 'Until available_on' });
  }
  const moved = await activities.makeFundsAvailable(input.balanceTransactionId);
  setCurrentDetails(moved ? 'Available.' : 'Was no longer pending.');
  return moved;
}
