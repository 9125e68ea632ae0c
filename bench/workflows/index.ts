/**
 * The workflows of `npm run bench:renewals` (bench/renewals.ts), bundled into one
 * workflow bundle so the engine and the baseline run on the same kind of worker:
 * the engine's subscriptionWorkflow, as it ships, and the baseline, a workflow
 * that waits for the same instant and runs one activity that does nothing.
 */
import { proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';

export { subscriptionWorkflow } from '../../workflows/subscription.ts';
// Each paid renewal starts a funds-availability workflow (pending money becomes available at available_on).
export { fundsAvailabilityWorkflow } from '../../workflows/funds-availability.ts';

/** The baseline's activity, added to the worker's activities by bench/renewals-worker.ts. */
export interface NoopActivities {
  benchNoop(): Promise<void>;
}

// The same activity options as subscriptionWorkflow's.
const activityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const;
const { benchNoop } = proxyActivities<NoopActivities>(activityOptions);
const local = proxyLocalActivities<NoopActivities>(activityOptions);

/** Sleeps until `at` (an ISO instant), runs one no-op activity, and returns: the least a timer-driven renewal can cost. */
export async function noopRenewalWorkflow(at: string): Promise<void> {
  const remaining = Date.parse(at) - Date.now();
  if (remaining > 0) await sleep(remaining);
  await benchNoop();
}

/**
 * The floor (BENCH_BASELINE=local): a renewal's own shape with nothing in it. It sleeps until `at`, runs the no-op
 * activity as a LOCAL activity (as subscriptionWorkflow runs renewCycle) and returns: one workflow task after the timer,
 * no activity task. What any renewal of one workflow task costs Temporal and the SDK on this machine, before its
 * database work.
 */
export async function noopLocalRenewalWorkflow(at: string): Promise<void> {
  const remaining = Date.parse(at) - Date.now();
  if (remaining > 0) await sleep(remaining);
  await local.benchNoop();
}
