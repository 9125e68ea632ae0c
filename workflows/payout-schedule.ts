/**
 * payoutScheduleWorkflow: one per account and mode (workflow id
 * `payout-schedule-<account>-<live|test>`), started by PATCH /v1/payout_settings.
 * It plans the next run of the account's schedules (GET /v1/payout_settings),
 * shows it in the Temporal UI (memo `nextPayoutAt`, current details), waits for it
 * with waitUntil — woken at once by the `payoutSettingsChanged` signal, which
 * re-plans — and runs it: each currency due then pays out its available balance
 * to its default destination (or is skipped, saying why: a hold, no destination,
 * under the minimum). After `runsPerExecution` runs it continues as new, so its
 * history stays short. Deterministic code only.
 */
import {
  continueAsNew,
  defineSignal,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
// The schedule's only wait on time: a Temporal timer, or a test clock's time (the same commands without a clock).
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface PayoutScheduleInput {
  accountId: string;
  livemode: boolean;
  /** Runs before continuing as new (default 30). */
  runsPerExecution?: number;
  /** What the last run did, carried over continue-as-new for the UI. */
  lastRun?: string;
  /**
   * A test clock's own schedule (sandbox; workflow id `payout-schedule-<clock id>`): its
   * runs wait for the clock's time, and its activities take the clock's schedules and time.
   */
  testClock?: ClockBinding;
}

/** The account's payout settings changed (or it asks to be looked at again): re-plan now. */
export const payoutScheduleSettingsSignal = defineSignal('payoutSettingsChanged');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function payoutScheduleWorkflow(input: PayoutScheduleInput): Promise<void> {
  const clock = workflowClock(input.testClock);
  let changed = false;
  setHandler(payoutScheduleSettingsSignal, () => {
    changed = true;
  });
  const runsPerExecution = input.runsPerExecution ?? 30;
  let lastRun = input.lastRun ?? 'none yet';
  let runs = 0;
  while (runs < runsPerExecution && !workflowInfo().continueAsNewSuggested) {
    changed = false;
    const plan = await activities.nextScheduledPayout(input.accountId, input.livemode, clock.now().getTime());
    upsertMemo({ nextPayoutAt: plan.nextMs === null ? null : new Date(plan.nextMs).toISOString() });
    setCurrentDetails(`${plan.summary}\nLast run: ${lastRun}`);
    await clock.sleepUntil(plan.nextMs === null ? null : new Date(plan.nextMs), () => changed);
    if (changed || plan.nextMs === null) continue;
    const results = await activities.runScheduledPayouts(input.accountId, input.livemode, plan.nextMs);
    lastRun = `${new Date(plan.nextMs).toISOString()}: ${results.length ? results.map((r) => (r.payoutId ? `${r.currency} ${r.amount} in ${r.payoutId}` : `${r.currency} skipped (${r.skipped})`)).join('; ') : 'nothing due'}`;
    runs++;
  }
  await continueAsNew<typeof payoutScheduleWorkflow>({
    ...input,
    lastRun,
    ...(input.testClock ? { testClock: clock.binding()! } : {}),
  });
}
