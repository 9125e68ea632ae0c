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
import { condition, continueAsNew, defineSignal, proxyActivities, setCurrentDetails, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export interface PayoutScheduleInput {
  accountId: string;
  livemode: boolean;
  /** Runs before continuing as new (default 30). */
  runsPerExecution?: number;
  /** What the last run did, carried over continue-as-new for the UI. */
  lastRun?: string;
}

/** The account's payout settings changed (or it asks to be looked at again): re-plan now. */
export const payoutScheduleSettingsSignal = defineSignal('payoutSettingsChanged');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/**
 * Waits until `instant` (ms since the epoch on the workflow's clock; null: no
 * end) or until `wake()` turns true. The schedule's only wait on time: a test
 * clock can stand in for it here.
 */
export async function waitUntil(instant: number | null, wake: () => boolean): Promise<void> {
  if (instant === null) {
    await condition(wake);
    return;
  }
  const ms = instant - Date.now();
  if (ms > 0) await condition(wake, ms);
}

export async function payoutScheduleWorkflow(input: PayoutScheduleInput): Promise<void> {
  let changed = false;
  setHandler(payoutScheduleSettingsSignal, () => {
    changed = true;
  });
  const runsPerExecution = input.runsPerExecution ?? 30;
  let lastRun = input.lastRun ?? 'none yet';
  let runs = 0;
  while (runs < runsPerExecution && !workflowInfo().continueAsNewSuggested) {
    changed = false;
    const plan = await activities.nextScheduledPayout(input.accountId, input.livemode, Date.now());
    upsertMemo({ nextPayoutAt: plan.nextMs === null ? null : new Date(plan.nextMs).toISOString() });
    setCurrentDetails(`${plan.summary}\nLast run: ${lastRun}`);
    await waitUntil(plan.nextMs, () => changed);
    if (changed || plan.nextMs === null) continue;
    const results = await activities.runScheduledPayouts(input.accountId, input.livemode, plan.nextMs);
    lastRun = `${new Date(plan.nextMs).toISOString()}: ${results.length ? results.map((r) => (r.payoutId ? `${r.currency} ${r.amount} in ${r.payoutId}` : `${r.currency} skipped (${r.skipped})`)).join('; ') : 'nothing due'}`;
    runs++;
  }
  await continueAsNew<typeof payoutScheduleWorkflow>({ ...input, lastRun });
}
