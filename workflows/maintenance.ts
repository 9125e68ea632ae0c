/**
 * maintenanceWorkflow: one per namespace and task queue (workflow id
 * `maintenance-<task queue>`), started by every worker process at boot with
 * signal-with-start (ensureMaintenanceWorkflow in services/maintenance/sweeps.ts):
 * the first boot starts it, later boots only hand it their current settings. Every
 * `intervalMs` (5 minutes by default) it runs three activities (see
 * services/maintenance/sweeps.ts):
 * - reconcileStuckPayments: payments left pending with no settlement workflow (the
 *   API died between its commit and the workflow start) are charged again with the
 *   same idempotency key and carried on exactly as the API would have;
 * - reconcileStuckPayouts: pending payouts with no payoutWorkflow get one;
 * - reconcileMissingAvailability: pending balance transactions (a payment's money)
 *   older than a minute with no fundsAvailabilityWorkflow get one;
 * - reconcileMissingDiscountTimers: customers' own repeating discounts of the last hour,
 *   older than a minute, whose end timer (workflows/discount-end.ts) was never started get one;
 * - reconcileOrphanedFunds: pending money owned by a workflow that no longer runs (a
 *   subscription terminated by an operator) is made available once due;
 * - pruneExpiredRows: expired idempotency keys and login attempts older than the
 *   login throttle window are deleted;
 * - sweepOrphanedSubscriptions: the next batch of live subscriptions whose workflow
 *   was terminated, failed or timed out are marked canceled (services/subscriptions/watch.ts);
 * - pruneExpiredExports: the files of exports past their expiry are deleted from storage
 *   (the export becomes `expired`), and temporary files of writers that died are dropped;
 * - deleteExpiredTestClocks: test clocks past their `deletes_after` are deleted with
 *   everything on them (services/test-clocks/clocks.ts);
 * - resignalThresholdCrossings: threshold crossings claimed but not acknowledged by their subscription's
 *   workflow (a crash between the claim and the signal) are signalled again (services/usage/threshold-signals.ts).
 * Its current details (Temporal UI) say what the last run did and when the next is.
 * It continues as new every 100 runs (or when Temporal suggests it). A failing
 * activity is retried a few times, then reported in the details and tried again on
 * the next run: one broken step never stops the others. Deterministic code only.
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineSignal,
  deprecatePatch,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';

export interface MaintenanceSettings {
  /** Time between runs; default 5 minutes (maintenanceDefaults in services/maintenance/sweeps.ts). */
  intervalMs: number;
  /** A pending payment or payout younger than this is left to the API; default 2 minutes. */
  stuckAfterMs: number;
  /** LOGIN_THROTTLE_WINDOW_SECONDS: login attempts older than this are deleted. */
  loginThrottleWindowSeconds: number;
  /** Runs before continue-as-new; default 100. */
  runsPerExecution?: number;
}

export interface MaintenanceInput {
  settings: MaintenanceSettings;
  /** Runs so far, carried over continue-as-new (for the details). */
  runs?: number;
  /** Where the sweep of live subscriptions goes on (carried over continue-as-new). */
  subscriptionCursor?: string | null;
}

/** Live subscriptions checked per run for a closed workflow. */
export const subscriptionSweepBatch = 200;

/** How old a pending balance transaction must be before the reconciler looks for its availability workflow. */
export const availabilityStuckAfterMs = 60_000;

/** A worker's settings at boot; different ones (a changed configuration) are used from a run that starts at once. */
export const maintenanceSettingsSignal = defineSignal<[MaintenanceSettings]>('settings');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

async function attempt<T>(step: () => Promise<T>): Promise<T | string> {
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return error.cause?.message ?? error.message;
  }
}

export async function maintenanceWorkflow(input: MaintenanceInput): Promise<never> {
  let settings = input.settings;
  let changes = 0;
  setHandler(maintenanceSettingsSignal, (next) => {
    // Every worker boot sends its settings; only a change wakes the loop (and the next run uses them).
    if (JSON.stringify(next) === JSON.stringify(settings)) return;
    settings = next;
    changes++;
  });
  let runs = input.runs ?? 0;
  let subscriptionCursor = input.subscriptionCursor ?? null;
  for (let run = 1; ; run++) {
    const payments = await attempt(() => activities.reconcileStuckPayments(settings.stuckAfterMs));
    const payouts = await attempt(() => activities.reconcileStuckPayouts(settings.stuckAfterMs));
    const pruned = await attempt(() => activities.pruneExpiredRows(settings.loginThrottleWindowSeconds));
    // The steps added after the first release each had a patch; they are deprecated (docs/development.md, "Retiring a
    // patch"): every run continues as new within runsPerExecution, so none started before them is open.
    deprecatePatch('sweep-orphaned-subscriptions');
    const swept = await attempt(() =>
      activities.sweepOrphanedSubscriptions({ after: subscriptionCursor, limit: subscriptionSweepBatch }),
    );
    if (typeof swept !== 'string') subscriptionCursor = swept.nextCursor;
    // Pending balance movements whose availability workflow was never started (a crash after the commit): at most a minute old.
    deprecatePatch('funds-availability-reconcile');
    const funds = await attempt(() =>
      activities.reconcileMissingAvailability(Math.min(settings.stuckAfterMs, availabilityStuckAfterMs)),
    );
    // Customers' repeating discounts whose end timer was never started (a crash after the commit).
    deprecatePatch('discount-end-timer-reconcile');
    const discountTimers = await attempt(() =>
      activities.reconcileMissingDiscountTimers(Math.min(settings.stuckAfterMs, availabilityStuckAfterMs)),
    );
    // Pending money whose owning workflow was terminated: made available once due.
    deprecatePatch('orphaned-funds-reconcile');
    const orphaned = await attempt(() => activities.reconcileOrphanedFunds(settings.stuckAfterMs));
    // Expired export files.
    deprecatePatch('prune-expired-exports');
    const exportFiles = await attempt(() => activities.pruneExpiredExports());
    // Test clocks past their deletes_after.
    deprecatePatch('delete-expired-test-clocks');
    const clocks = await attempt(() => activities.deleteExpiredTestClocks());
    // The meter events' partitions and their retention (#28).
    deprecatePatch('usage-partitions');
    const usage = await attempt(() => activities.maintainUsagePartitions());
    // Threshold crossings claimed but never signalled (a crash between the two): signalled again once a minute old (#28).
    const crossings = patched('usage-threshold-resignal')
      ? await attempt(() => activities.resignalThresholdCrossings(availabilityStuckAfterMs))
      : { resent: 0, dropped: 0, failed: 0 };
    runs++;
    const next = new Date(Date.now() + settings.intervalMs).toISOString();
    const part = <T>(value: T | string, text: (v: T) => string) =>
      typeof value === 'string' ? `FAILED (${value})` : text(value);
    setCurrentDetails(
      `Last run at ${new Date(Date.now()).toISOString()} (run ${runs}): ` +
        `reconciled ${part(payments, (r) => `${r.reconciled} payments${r.failed ? ` (${r.failed} failed)` : ''}`)}, ` +
        `${part(payouts, (r) => `${r.reconciled} payouts${r.failed ? ` (${r.failed} failed)` : ''}`)}, ` +
        `${part(funds, (r) => `${r.reconciled} availability timers${r.failed ? ` (${r.failed} failed)` : ''}`)}, ` +
        (typeof discountTimers !== 'string' && discountTimers.reconciled + discountTimers.failed === 0
          ? ''
          : `${part(discountTimers, (r) => `${r.reconciled} discount end timers${r.failed ? ` (${r.failed} failed)` : ''}`)}, `) +
        (typeof orphaned !== 'string' && orphaned.reconciled + orphaned.failed === 0
          ? ''
          : `${part(orphaned, (r) => `${r.reconciled} pending amounts of closed workflows${r.failed ? ` (${r.failed} failed)` : ''}`)}, `) +
        `pruned ${part(pruned, (p) => `${p.idempotencyKeys + p.loginAttempts} rows (${p.idempotencyKeys} idempotency keys, ${p.loginAttempts} login attempts)`)}; ` +
        `checked ${part(swept, (s) => `${s.checked} subscriptions, ${s.marked} marked canceled (workflow closed)`)}; ` +
        `deleted ${part(exportFiles, (e) => `${e.files} expired export files, ${e.temporary} abandoned temporary files`)}; ` +
        (typeof clocks !== 'string' && clocks.deleted === 0
          ? ''
          : `deleted ${part(clocks, (c) => `${c.deleted} expired test clocks`)}; `) +
        (typeof usage !== 'string' && usage.created.length + usage.dropped.length + usage.identifiersPruned === 0
          ? ''
          : `usage ${part(usage, (u) => `partitions +${u.created.length} −${u.dropped.length}, ${u.identifiersPruned} identifiers pruned`)}; `) +
        (typeof crossings !== 'string' && crossings.resent + crossings.dropped + crossings.failed === 0
          ? ''
          : `threshold crossings ${part(crossings, (c) => `${c.resent} re-signalled, ${c.dropped} dropped${c.failed ? `, ${c.failed} failed` : ''}`)}; `) +
        `next at ${next}.`,
    );
    const seen = changes;
    await condition(() => changes !== seen, settings.intervalMs);
    if (run >= (settings.runsPerExecution ?? 100) || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof maintenanceWorkflow>({ settings, runs, subscriptionCursor });
    }
  }
}
