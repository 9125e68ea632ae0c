import type { EntityManager } from '@mikro-orm/postgresql';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';

import {
  AccountBalance,
  BankAccount,
  Payout,
  PayoutSettings,
  TestClockPayoutSettings,
} from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { derivedId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import {
  defaultScheduleSettings,
  earliestRun,
  isRunAt,
  nextRunAfter,
  type PayoutInterval,
  scheduleProblem,
  type ScheduleSettings,
  type Weekday,
} from '../../domain/payout-schedule.ts';
import { payoutCurrencies } from '../../domain/payouts.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import { payoutScheduleSettingsSignal, payoutScheduleWorkflow } from '../../workflows/payout-schedule.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import type { TemporalContext } from '../context.ts';
import { bindToClock, taskQueueFor } from '../test-clocks/binding.ts';
import { currentTestClock } from '../test-clocks/now.ts';
import type { Scope } from './bank-accounts.ts';
import { activeHold, createPayout, startPayoutWorkflow } from './rail.ts';
export type { Scope };

/**
 * The schedules of an account in one mode, or a test clock's own (sandbox, `testClockId`):
 * a clock's schedules are apart from the account's, and run on the clock's time.
 */
export type ScheduleScope = Scope & { testClockId?: string | null | undefined };

export type CurrencySchedule = ScheduleSettings & { currency: string };

/** The schedule of each payout currency in one mode (a currency never set: manual). */
export async function loadSchedules(em: EntityManager, scope: ScheduleScope): Promise<CurrencySchedule[]> {
  const rows: Array<PayoutSettings | TestClockPayoutSettings> = scope.testClockId
    ? await em.find(TestClockPayoutSettings, { testClockId: scope.testClockId, accountId: scope.accountId })
    : await em.find(PayoutSettings, { accountId: scope.accountId, livemode: scope.livemode });
  return payoutCurrencies.map((currency) => {
    const row = rows.find((r) => r.currency === currency);
    return row
      ? {
          currency,
          interval: row.interval,
          weeklyAnchor: row.weeklyAnchor ?? null,
          monthlyAnchor: row.monthlyAnchor ?? null,
          delayDays: row.delayDays,
          minimumAmount: Number(row.minimumAmount),
        }
      : { currency, ...defaultScheduleSettings };
  });
}

export interface SchedulePatch {
  currency: string;
  interval?: PayoutInterval | undefined;
  weekly_anchor?: Weekday | null | undefined;
  monthly_anchor?: number | null | undefined;
  delay_days?: number | undefined;
  minimum_amount?: number | undefined;
}

/** Merges a patch over one currency's schedule (a new interval drops the other interval's anchor), or says what is wrong. */
export async function patchSchedule(
  em: EntityManager,
  scope: ScheduleScope,
  patch: SchedulePatch,
): Promise<CurrencySchedule[]> {
  const current = (await loadSchedules(em, scope)).find((s) => s.currency === patch.currency);
  if (!current)
    throw new ApiError(
      'invalid_request',
      `currency: payouts go out in ${payoutCurrencies.join(', ')} only, not ${patch.currency}.`,
    );
  const interval = patch.interval ?? current.interval;
  const next: ScheduleSettings = {
    interval,
    weeklyAnchor:
      patch.weekly_anchor !== undefined
        ? patch.weekly_anchor
        : interval === 'weekly' && current.interval === 'weekly'
          ? current.weeklyAnchor
          : null,
    monthlyAnchor:
      patch.monthly_anchor !== undefined
        ? patch.monthly_anchor
        : interval === 'monthly' && current.interval === 'monthly'
          ? current.monthlyAnchor
          : null,
    delayDays: patch.delay_days ?? current.delayDays,
    minimumAmount: patch.minimum_amount ?? current.minimumAmount,
  };
  const problem = scheduleProblem(next);
  if (problem) throw new ApiError('invalid_request', problem);
  if (scope.testClockId)
    await em.upsert(TestClockPayoutSettings, {
      testClockId: scope.testClockId,
      accountId: scope.accountId,
      currency: patch.currency,
      ...next,
      updatedAt: new Date(),
    });
  else
    await em.upsert(PayoutSettings, {
      accountId: scope.accountId,
      livemode: scope.livemode,
      currency: patch.currency,
      ...next,
      updatedAt: new Date(),
    });
  return loadSchedules(em, scope);
}

export function payoutScheduleWorkflowId(scope: ScheduleScope): string {
  if (scope.testClockId) return `payout-schedule-${scope.testClockId}`;
  return `payout-schedule-${scope.accountId}-${scope.livemode ? 'live' : 'test'}`;
}

/**
 * Starts the account's payoutScheduleWorkflow for this mode if it is not running,
 * and tells it the settings changed (signal-with-start: one per account and mode).
 */
export async function ensurePayoutSchedule(
  { client, taskQueue }: Pick<TemporalContext, 'client' | 'taskQueue'>,
  scope: Scope,
  testClock?: ClockBinding,
): Promise<void> {
  const workflowId = payoutScheduleWorkflowId({ ...scope, testClockId: testClock?.id });
  // A clock's schedule: registered on the clock first (it waits for the schedule to report its next run).
  // A schedule running already reports too, woken by the signal, so the registration never dangles.
  if (testClock) await bindToClock(client, testClock, workflowId);
  await client.workflow.signalWithStart(payoutScheduleWorkflow, {
    workflowId,
    taskQueue: taskQueueFor(taskQueue, testClock),
    args: [{ accountId: scope.accountId, livemode: scope.livemode, ...(testClock ? { testClock } : {}) }],
    signal: payoutScheduleSettingsSignal,
    signalArgs: [],
    staticSummary: `Payout schedule of ${scope.accountId} (${testClock ? `test clock ${testClock.id}` : scope.livemode ? 'live' : 'sandbox'})`,
    typedSearchAttributes: [
      { key: AccountIdKey, value: scope.accountId },
      { key: LivemodeKey, value: scope.livemode },
    ],
  });
}

/**
 * Stops the account's payout schedules in both modes (the account closed): each
 * schedule workflow is canceled and ends there, so no payout is scheduled for a
 * closed account. A mode that never had a schedule has nothing to stop.
 */
export async function stopPayoutSchedules(client: Client, accountId: string): Promise<void> {
  for (const livemode of [false, true]) {
    try {
      await client.workflow.getHandle(payoutScheduleWorkflowId({ accountId, livemode })).cancel();
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}

/** The schedule's next run after `at` (ms) and what it will do, for the workflow's memo and details. */
export async function nextScheduledPayout(
  em: EntityManager,
  scope: ScheduleScope,
  atMs: number,
): Promise<{ nextMs: number | null; summary: string }> {
  const schedules = await loadSchedules(em, scope);
  const next = earliestRun(schedules, new Date(atMs));
  if (!next) return { nextMs: null, summary: 'No payout scheduled: every currency is manual.' };
  const due = schedules.filter((s) => isRunAt(s, next)).map((s) => `${s.currency} (${s.interval})`);
  return { nextMs: next.getTime(), summary: `Next payout ${next.toISOString()}: ${due.join(', ')}.` };
}

export interface ScheduledRunResult {
  currency: string;
  payoutId?: string;
  amount?: number;
  skipped?: string;
}

/**
 * One run of the schedule at `runAtMs` (the workflow's clock): for each currency
 * due then, pays out its available balance (less what was credited within
 * `delay_days`) to its default destination, unless a hold is on the account
 * (skipped, saying which and why), there is no default destination, or the
 * amount is under `minimum_amount` or zero. The payout id is derived from
 * (account, mode, currency, run), so a retried activity makes no second payout.
 */
export async function runScheduledPayouts(
  em: EntityManager,
  temporal: Pick<TemporalContext, 'client' | 'taskQueue'>,
  scopeAndClock: ScheduleScope,
  runAtMs: number,
): Promise<ScheduledRunResult[]> {
  const runAt = new Date(runAtMs);
  const results: ScheduledRunResult[] = [];
  const scope = { accountId: scopeAndClock.accountId, livemode: scopeAndClock.livemode };
  const testClockId = scopeAndClock.testClockId ?? null;
  // A clock's schedule runs in an activity on the clock: its payouts go on the clock, registered at the run's time.
  const binding = testClockId ? { id: testClockId, now: currentTestClock()?.now ?? runAt.toISOString() } : undefined;
  for (const schedule of await loadSchedules(em, scopeAndClock)) {
    if (!isRunAt(schedule, runAt)) continue;
    const { currency } = schedule;
    const id = derivedId(
      'payout',
      `schedule\n${scope.accountId}\n${scope.livemode}\n${currency}\n${runAt.toISOString()}${testClockId ? `\n${testClockId}` : ''}`,
      runAt,
    );
    const existing = await em.findOne(Payout, { id });
    if (existing) {
      await startPayoutWorkflow(temporal, existing.id, binding);
      results.push({ currency, payoutId: existing.id, amount: existing.amount });
      continue;
    }
    const hold = await activeHold(em, { id, ...scope }, runAt);
    if (hold) {
      results.push({ currency, skipped: `held by ${hold.id}: ${hold.reason}` });
      continue;
    }
    const destination = await em.findOne(BankAccount, {
      ...scope,
      currency,
      defaultForCurrency: true,
      deletedAt: null,
    });
    if (!destination) {
      results.push({ currency, skipped: `no default destination for ${currency}` });
      continue;
    }
    const balance = await em.findOne(AccountBalance, { ...scope, currency });
    const available = Number(balance?.available ?? 0);
    let recent = 0;
    if (schedule.delayDays > 0) {
      const since = new Date(runAtMs - schedule.delayDays * 86_400_000);
      const [row] = await em
        .getConnection()
        .execute<
          { sum: string | null }[]
        >(`select sum(net) as sum from balance_transactions where account_id = ? and livemode = ? and currency = ? and status = 'available' and net > 0 and type in ('payment', 'credit') and available_on > ?`, [scope.accountId, scope.livemode, currency, since]);
      recent = Number(row?.sum ?? 0);
    }
    const amount = Math.min(available - recent, 99_999_999);
    if (amount <= 0 || amount < schedule.minimumAmount) {
      results.push({
        currency,
        skipped: `${formatMoney(Math.max(0, amount), currency)} to pay out${schedule.minimumAmount ? `, under the minimum of ${formatMoney(schedule.minimumAmount, currency)}` : ''}`,
      });
      continue;
    }
    try {
      const payout = await createPayout(em, {
        id,
        ...scope,
        amount,
        currency,
        destinationId: destination.id,
        description: `Scheduled ${schedule.interval} payout of ${runAt.toISOString().slice(0, 10)}`,
        automatic: true,
        testClockId,
      });
      await startPayoutWorkflow(temporal, payout.id, binding);
      results.push({ currency, payoutId: payout.id, amount });
    } catch (error) {
      // The balance moved between the read and the debit (a refund, a manual payout): the next run pays what is left.
      if (error instanceof ApiError && error.code === 'insufficient_funds')
        results.push({ currency, skipped: 'the balance changed while paying out; next run' });
      else throw error;
    }
  }
  return results;
}

/** Each currency's schedule with its next run (for GET/PATCH /v1/payout_settings). */
export function withNextRuns(
  schedules: CurrencySchedule[],
  now: Date,
): (CurrencySchedule & { nextRun: Date | null })[] {
  return schedules.map((s) => ({ ...s, nextRun: nextRunAfter(s, now) }));
}
