/**
 * The workflows of `npm run bench:renewals` (bench/renewals.ts), bundled into one
 * workflow bundle so the engine and the baseline run on the same kind of worker:
 * the engine's subscriptionWorkflow, as it ships, and the baseline, a workflow
 * that waits for the same instant and runs one activity that does nothing.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';

export { subscriptionWorkflow } from '../../workflows/subscription.ts';
// Each paid renewal starts a funds-availability workflow (pending money becomes available at available_on).
export { fundsAvailabilityWorkflow } from '../../workflows/funds-availability.ts';

/** The baseline's activity, added to the worker's activities by bench/renewals-worker.ts. */
export interface NoopActivities {
  benchNoop(): Promise<void>;
}

// The same activity options as subscriptionWorkflow's.
const { benchNoop } = proxyActivities<NoopActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Sleeps until `at` (an ISO instant), runs one no-op activity, and returns: the least a timer-driven renewal can cost. */
export async function noopRenewalWorkflow(at: string): Promise<void> {
  const remaining = Date.parse(at) - Date.now();
  if (remaining > 0) await sleep(remaining);
  await benchNoop();
}
