/**
 * payoutWorkflow: one per payout, workflow id = payout id (`po_...`). The payout
 * was recorded `pending` (its amount already off the available balance) by the
 * API; this waits out the rail's arrival time on a durable timer, has the rail
 * send it and records `paid` (or `failed`, which gives the money back), then
 * emails the account its confirmation. Deterministic code only.
 */
import { proxyActivities, setCurrentDetails, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export interface PayoutWorkflowInput {
  payoutId: string;
  arrivalMs: number;
}

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function payoutWorkflow(input: PayoutWorkflowInput): Promise<string> {
  setCurrentDetails(`Payout ${input.payoutId} arrives at ${new Date(Date.now() + input.arrivalMs).toISOString()}.`);
  await sleep(input.arrivalMs, { summary: 'Payout arrival' });
  const status = await activities.completePayout(input.payoutId);
  setCurrentDetails(`Payout ${status}.`);
  if (status === 'paid') await activities.notifyPayoutPaid(input.payoutId);
  return status;
}
