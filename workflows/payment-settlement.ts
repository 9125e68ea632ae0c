/**
 * paymentSettlementWorkflow: one per payment that the processor left pending,
 * workflow id = transaction id. It sleeps through the processor's settlement
 * delay on a durable timer (no poller), then records the outcome. A payment
 * canceled meanwhile stays canceled: the activity only settles a pending one.
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface PaymentSettlementInput {
  transactionId: string;
  processorChargeId: string;
  settleAfterMs: number;
  /** A payment of an object on a test clock: it settles on the clock's time. */
  testClock?: ClockBinding;
}

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function paymentSettlementWorkflow(input: PaymentSettlementInput): Promise<string> {
  const clock = workflowClock(input.testClock);
  const settlesAt = new Date(clock.now().getTime() + input.settleAfterMs).toISOString();
  setCurrentDetails(`Waiting for the processor to settle ${input.transactionId} (at ${settlesAt}).`);
  await clock.sleepFor(input.settleAfterMs, { summary: 'Processor settlement delay' });
  const status = await activities.settlePendingPayment(input.transactionId, input.processorChargeId);
  setCurrentDetails(`Settled: ${status}.`);
  await clock.finished();
  return status;
}
