/**
 * The maintenance workflow's activities (workflows/maintenance.ts): close the
 * "committed, but the process died before the workflow started" gaps, and prune
 * rows nobody reads any more.
 *
 * A payment or payout that is still `pending` a few minutes after it was created
 * (`olderThanMs`, 2 minutes by default, so the API's own path is never raced) and
 * has not been checked yet is looked up in Temporal by its workflow id (= its own
 * id). A workflow that exists (running or closed) is left alone; none means the
 * API died between its commit and its workflow start, and the reconciler does what
 * the API would have done next, with the API's own code (services/money/payments.ts,
 * services/payouts/rail.ts). Either way the row is then marked `workflow_confirmed_at`,
 * so each pending row costs one lookup, once, however long it stays pending (a bank
 * debit: a day). A row that fails is logged, left unmarked and tried again on the
 * next run.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import { encodeTime } from 'ulidx';

import {
  BalanceTransaction,
  Customer,
  Discount,
  IdempotencyKey,
  LoginAttempt,
  Payout,
  Transaction,
} from '../../db/entities/index.ts';
import { idPrefixes } from '../../domain/ids.ts';
import { payoutPendingMs } from '../../domain/payouts.ts';
import { discountEndWorkflowId } from '../../workflows/discount-end.ts';
import {
  type MaintenanceSettings,
  maintenanceSettingsSignal,
  maintenanceWorkflow,
} from '../../workflows/maintenance.ts';
import type { ServiceContext, TemporalContext, WorkflowStartContext } from '../context.ts';
import { startDiscountEndTimer } from '../discounts/customer-discount-end.ts';
import { startFundsAvailability } from '../money/balances.ts';
import { makeFundsAvailable } from '../money/ledger.ts';
import { chargePendingPayment } from '../money/payments.ts';
import { completeRefund } from '../money/refunds.ts';
import { startPayoutWorkflow } from '../payouts/rail.ts';
import { clockTimeOf } from '../test-clocks/clocks.ts';
import { onTestClock } from '../test-clocks/now.ts';

/** Defaults of the maintenance workflow (its input can change them). */
export const maintenanceDefaults = {
  /** How often the maintenance workflow runs its activities. */
  intervalMs: 5 * 60_000,
  /** How old a pending payment or payout must be before the reconciler looks at it. */
  stuckAfterMs: 2 * 60_000,
};

export const maintenanceWorkflowId = (taskQueue: string) => `maintenance-${taskQueue}`;

/**
 * Starts the maintenance workflow of this task queue unless it runs already, and
 * hands it these settings either way (signal-with-start: atomic, so N workers
 * booting at once start it once, and a worker booted with a changed configuration,
 * e.g. LOGIN_THROTTLE_WINDOW_SECONDS, updates the running one). Called by every
 * worker process at boot (worker.ts, dev/start.ts).
 */
export async function ensureMaintenanceWorkflow(
  ctx: WorkflowStartContext,
  settings: Pick<MaintenanceSettings, 'loginThrottleWindowSeconds'> & Partial<MaintenanceSettings>,
): Promise<{ workflowId: string; runId: string }> {
  const { client, taskQueue } = ctx.temporal;
  const full: MaintenanceSettings = {
    intervalMs: maintenanceDefaults.intervalMs,
    stuckAfterMs: maintenanceDefaults.stuckAfterMs,
    ...settings,
  };
  const signalWithStart = () =>
    client.workflow.signalWithStart(maintenanceWorkflow, {
      workflowId: maintenanceWorkflowId(taskQueue),
      taskQueue,
      args: [{ settings: full }],
      signal: maintenanceSettingsSignal,
      signalArgs: [full],
      staticSummary: `Maintenance of task queue ${taskQueue}: stuck payments and payouts, expired rows`,
    });
  let handle;
  try {
    handle = await signalWithStart();
  } catch (error) {
    // Another worker started it a moment ago (a server may answer a concurrent signal-with-start so): signal that one.
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    handle = await signalWithStart();
  }
  return { workflowId: handle.workflowId, runId: handle.signaledRunId };
}

/** Rows per reconcile run (the next run continues) and per prune statement (pruning loops until done). */
export const reconcileBatchSize = 100;
export const pruneBatchSize = 1000;

export interface ReconcileResult {
  /** Pending rows looked up in Temporal this run. */
  checked: number;
  /** Of those, the ones with no workflow, which the reconciler took over (a charge recorded, a workflow started). */
  reconciled: number;
  /** Rows that failed (logged; tried again on the next run). */
  failed: number;
}

export interface PruneResult {
  idempotencyKeys: number;
  loginAttempts: number;
}

interface Log {
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
}

/** Whether a workflow with this id exists in the namespace (running or closed, within retention). */
async function workflowExists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/**
 * The reconcile loop of every "committed, but its workflow never started" sweep (payments, payouts, pending
 * money): each row's workflow (id = the row's id) is looked up; none means the process died between its commit
 * and its start, and `takeOver` does what it would have done next (and logs it). Either way `confirm` then marks
 * the row (`workflow_confirmed_at`), so it costs one lookup, once. A row that throws is counted, logged by
 * `failure`, left unmarked and tried again on the next run.
 */
async function takeOverRowsWithoutWorkflow<Row extends { id: string }>(
  client: Client,
  rows: readonly Row[],
  step: {
    takeOver(row: Row): Promise<void>;
    confirm(row: Row): Promise<unknown>;
    failure(row: Row, error: unknown): void;
  },
): Promise<ReconcileResult> {
  const result: ReconcileResult = { checked: rows.length, reconciled: 0, failed: 0 };
  for (const row of rows) {
    try {
      if (!(await workflowExists(client, row.id))) {
        await step.takeOver(row);
        result.reconciled++;
      }
      await step.confirm(row);
    } catch (error) {
      result.failed++;
      step.failure(row, error);
    }
  }
  return result;
}

/**
 * Payments (`type payment`) still pending after `olderThanMs` with no settlement
 * workflow. The charge is made again with the SAME idempotency key
 * (`<transaction id>:payment`): the PaymentProcessor contract returns the first
 * outcome for a repeated key (the sandbox processor keeps its own book), so a charge
 * the API made is not made twice. A charge that never reached the processor (the API
 * died right after its commit) is made now: that is exactly what the API would have
 * done next. Then, like the API: a pending outcome starts paymentSettlementWorkflow
 * (idempotently), a final one is recorded (money posted once, under a row lock).
 * Every pending payment row comes from that one path (services/money/payments.ts payByCard: payment
 * requests and subscriptions record only final outcomes), so the key is always right.
 */
export async function reconcileStuckPayments(
  ctx: Pick<ServiceContext, 'processors'> & WorkflowStartContext,
  em: EntityManager,
  olderThanMs: number,
  log?: Log,
): Promise<ReconcileResult> {
  const { processors } = ctx;
  const { client } = ctx.temporal;
  const rows = await em.find(
    Transaction,
    {
      status: 'pending',
      type: 'payment',
      workflowConfirmedAt: null,
      createdAt: { $lt: new Date(Date.now() - olderThanMs) },
    },
    { orderBy: { createdAt: 'asc', id: 'asc' }, limit: reconcileBatchSize },
  );
  const result = await takeOverRowsWithoutWorkflow(client, rows, {
    async takeOver(row) {
      // The same charge (same idempotency key) and settlement as the API's takeover of a pending payment.
      const after = await chargePendingPayment(ctx, row, em.fork());
      log?.info('reconciled a stuck payment', { transactionId: row.id, status: after.status });
    },
    // A payment recorded final just now leaves the partial index by its status; one still pending is marked.
    confirm: (row) =>
      em.nativeUpdate(Transaction, { id: row.id, status: 'pending' }, { workflowConfirmedAt: new Date() }),
    failure: (row, error) =>
      log?.warn('could not reconcile a stuck payment', { transactionId: row.id, error: String(error) }),
  });
  // Refunds of a charge left pending (the process died between reserving and recording them): the processor's
  // refund again with the same key (`<refund id>:refund`: the first answer comes back), then recorded (services/money/refunds.ts).
  const refunds = await em.find(
    Transaction,
    {
      status: 'pending',
      type: 'refund',
      sourceTransactionId: { $ne: null },
      workflowConfirmedAt: null,
      createdAt: { $lt: new Date(Date.now() - olderThanMs) },
    },
    { orderBy: { createdAt: 'asc', id: 'asc' }, limit: reconcileBatchSize },
  );
  result.checked += refunds.length;
  for (const row of refunds) {
    try {
      const after = await completeRefund(em.fork(), processors.forMode(row.livemode), row.id);
      result.reconciled++;
      log?.info('reconciled a stuck refund', { transactionId: row.id, status: after.status });
    } catch (error) {
      result.failed++;
      log?.warn('could not reconcile a stuck refund', { transactionId: row.id, error: String(error) });
    }
  }
  return result;
}

/**
 * Payouts still pending after `olderThanMs` with no payoutWorkflow: started now (idempotently), as the API would
 * have, pending only for what is left of their cancelable window (payoutPendingMs from `created_at`), so a payout
 * is sent when it would have been.
 *
 * A payout on a test clock is stamped with the clock's time (`created_at` may be a year ahead of the wall clock,
 * or behind it), so its age is read from its id instead (a ULID: the wall clock's time of its creation), the same
 * `olderThanMs` as any payout. It goes back on its clock at the clock's current time, and its window is the
 * clock's: a clock advanced past it meanwhile sends it at once; one not yet past waits on the clock for the rest.
 * (A deleted clock canceled its payouts: none are left pending.)
 */
export async function reconcileStuckPayouts(
  ctx: WorkflowStartContext,
  em: EntityManager,
  olderThanMs: number,
  log?: Log,
): Promise<ReconcileResult> {
  const { client } = ctx.temporal;
  const cutoff = Date.now() - olderThanMs;
  const rows = await em.find(
    Payout,
    {
      status: 'pending',
      workflowConfirmedAt: null,
      $or: [
        { testClockId: null, createdAt: { $lt: new Date(cutoff) } },
        {
          testClockId: { $ne: null },
          id: { $lt: `${idPrefixes.payout}_${encodeTime(Math.max(cutoff, 0), 10).toLowerCase()}` },
        },
      ],
    },
    { orderBy: { createdAt: 'asc', id: 'asc' }, limit: reconcileBatchSize, fields: ['id', 'testClockId', 'createdAt'] },
  );
  return takeOverRowsWithoutWorkflow(client, rows, {
    async takeOver(row) {
      const testClock = await clockTimeOf(em, row.testClockId);
      const now = testClock ? Date.parse(testClock.now) : Date.now();
      await startPayoutWorkflow(
        ctx.temporal,
        row.id,
        testClock,
        Math.max(0, row.createdAt.getTime() + payoutPendingMs - now),
      );
      log?.info('reconciled a stuck payout', { payoutId: row.id });
    },
    confirm: (row) => em.nativeUpdate(Payout, { id: row.id, status: 'pending' }, { workflowConfirmedAt: new Date() }),
    failure: (row, error) =>
      log?.warn('could not reconcile a stuck payout', { payoutId: row.id, error: String(error) }),
  });
}

/**
 * Pending balance transactions (a payment's money waiting for its available_on)
 * older than `olderThanMs` whose fundsAvailabilityWorkflow does not exist: the
 * process that committed them died before starting it. Started now
 * (idempotently, REJECT_DUPLICATE), sleeping only what is left until available_on.
 * Each row is then marked `workflow_confirmed_at`, so it costs one lookup, once.
 */
export async function reconcileMissingAvailability(
  ctx: WorkflowStartContext,
  em: EntityManager,
  olderThanMs: number,
  log?: Log,
): Promise<ReconcileResult> {
  const { client } = ctx.temporal;
  const rows = await em.find(
    BalanceTransaction,
    { status: 'pending', workflowConfirmedAt: null, createdAt: { $lt: new Date(Date.now() - olderThanMs) } },
    { orderBy: { createdAt: 'asc', id: 'asc' }, limit: reconcileBatchSize, fields: ['id', 'availableOn'] },
  );
  return takeOverRowsWithoutWorkflow(client, rows, {
    async takeOver(row) {
      await startFundsAvailability(ctx, row);
      log?.info('started a missing availability workflow', { balanceTransactionId: row.id });
    },
    confirm: (row) =>
      em.nativeUpdate(BalanceTransaction, { id: row.id, status: 'pending' }, { workflowConfirmedAt: new Date() }),
    failure: (row, error) =>
      log?.warn('could not reconcile a pending balance transaction', {
        balanceTransactionId: row.id,
        error: String(error),
      }),
  });
}

/**
 * Pending money owned by a workflow that no longer runs. A subscription's workflow makes the money it collected
 * (renewals, dunning retries, upgrades) available on its own timer, and the rows are written owned
 * (`workflow_confirmed_at`), so reconcileMissingAvailability leaves them alone. An operator who terminates that
 * workflow (`temporal workflow terminate`), or a workflow that fails or times out, takes the timer with it; so
 * does a fundsAvailabilityWorkflow terminated before its time. This finds such money once it is due and makes it
 * available.
 *
 * Only rows past due are read (their available_on more than `olderThanMs` ago; on a test clock, at or before the
 * clock's time), through a partial index, so money waiting for its day costs nothing however much there is. Each
 * is checked against its owners: its fundsAvailabilityWorkflow (workflow id = its id) and the subscription
 * workflow of its payment (workflow id = the subscription id). While either runs, it is theirs (a workflow late
 * on its timer, a worker that was down). Otherwise makeFundsAvailable moves it, under its row lock and only while
 * it is still pending: a second run, or a second reconciler on another task queue, finds it available and
 * changes nothing. Money on a test clock is moved on the clock's time. Money that is not yet due stays pending
 * until a run after its available_on.
 */
export async function reconcileOrphanedFunds(
  ctx: { temporal: Pick<TemporalContext, 'client'> },
  em: EntityManager,
  olderThanMs: number,
  log?: Log,
): Promise<ReconcileResult> {
  const { client } = ctx.temporal;
  // Money off clocks, due by the wall clock (a range of the partial index); money on a clock, due by the clock's
  // time (a clock's account's sandbox rows, through the account's index: clocks are few and small).
  const rows = await em
    .getConnection()
    .execute<{ id: string; subscription_id: string | null; test_clock_id: string | null }[]>(
      `(select b.id, t.subscription_id, null::text as test_clock_id
        from balance_transactions b
        left join transactions t on t.id = b.source
        left join customers c on c.id = t.customer_id
       where b.status = 'pending' and b.workflow_confirmed_at is not null and b.available_on <= ? and c.test_clock_id is null
       order by b.available_on, b.id
       limit ?)
     union all
     (select b.id, t.subscription_id, k.id as test_clock_id
        from test_clocks k
        join balance_transactions b on b.account_id = k.account_id and b.livemode = false
        join transactions t on t.id = b.source
        join customers c on c.id = t.customer_id and c.test_clock_id = k.id
       where b.status = 'pending' and b.workflow_confirmed_at is not null and b.available_on <= k.frozen_time
       order by b.available_on, b.id
       limit ?)`,
      [new Date(Date.now() - olderThanMs), reconcileBatchSize, reconcileBatchSize],
    );
  const result: ReconcileResult = { checked: rows.length, reconciled: 0, failed: 0 };
  // A subscription's rows share its workflow: described once per run.
  const running = new Map<string, Promise<boolean>>();
  const isRunning = (workflowId: string) => {
    if (!running.has(workflowId)) running.set(workflowId, workflowRunning(client, workflowId));
    return running.get(workflowId)!;
  };
  for (const row of rows) {
    try {
      if (await isRunning(row.id)) continue;
      if (row.subscription_id && (await isRunning(row.subscription_id))) continue;
      const moved = await onTestClock(await clockTimeOf(em, row.test_clock_id), () =>
        makeFundsAvailable(em.fork(), row.id),
      );
      if (moved) {
        result.reconciled++;
        log?.warn('made pending money available: the workflow that owned it is no longer running', {
          balanceTransactionId: row.id,
          subscriptionId: row.subscription_id,
        });
      }
    } catch (error) {
      result.failed++;
      log?.warn('could not reconcile pending money of a closed workflow', {
        balanceTransactionId: row.id,
        error: String(error),
      });
    }
  }
  return result;
}

/** How far back reconcileMissingDiscountTimers looks (by the discount id's creation time): twelve runs at the default interval. */
export const discountTimerLookBackMs = 60 * 60_000;
/** Most discounts one run starts timers for (the window is read in pages of reconcileBatchSize). */
export const discountTimerRunLimit = 2_000;

/**
 * Customers' own repeating discounts (an `end`, not ended, neither a subscription's nor an invoice's) made
 * between `discountTimerLookBackMs` and `olderThanMs` ago whose end timer (workflows/discount-end.ts,
 * `discount-end-<di_…>`) may never have started: the API died between the discount's commit and the start.
 * Started now, as the API would have (startDiscountEndTimer: REJECT_DUPLICATE, so a timer that exists,
 * running or closed, is left as it is and the start costs one RPC), on the customer's test clock when it has
 * one, at the clock's current time. Age is read from the id (a ULID: the wall clock's time of creation), as a
 * discount on a test clock carries the clock's time: so the window is the same for every discount, and each
 * costs at most a look-back's worth of runs (12 by default), not one RPC per run for as long as it lasts. A
 * discount older than the window whose timer is missing is still ended, lazily, by its next invoice at or
 * after its end (services/discounts/redemptions.ts discountForInvoice).
 */
export async function reconcileMissingDiscountTimers(
  ctx: WorkflowStartContext,
  em: EntityManager,
  olderThanMs: number,
  log?: Log,
): Promise<ReconcileResult> {
  const { client } = ctx.temporal;
  const now = Date.now();
  const idAt = (ms: number) => `${idPrefixes.discount}_${encodeTime(Math.max(ms, 0), 10).toLowerCase()}`;
  const result: ReconcileResult = { checked: 0, reconciled: 0, failed: 0 };
  // Ids sort by creation; `di_<time part>` sorts before every id made at that millisecond or later.
  let after = idAt(now - discountTimerLookBackMs);
  const before = idAt(now - olderThanMs);
  while (result.checked < discountTimerRunLimit) {
    const rows = await em.find(
      Discount,
      { id: { $gt: after, $lt: before }, end: { $ne: null }, endedAt: null, subscriptionId: null, invoiceId: null },
      {
        orderBy: { id: 'asc' },
        limit: reconcileBatchSize,
        fields: ['id', 'accountId', 'livemode', 'customerId', 'end', 'subscriptionId', 'invoiceId'],
      },
    );
    if (rows.length === 0) break;
    for (const row of rows) {
      result.checked++;
      try {
        const customer = await em.findOne(
          Customer,
          { id: row.customerId, accountId: row.accountId, livemode: row.livemode },
          { fields: ['id', 'testClockId'] },
        );
        const testClock = await clockTimeOf(em, customer?.testClockId);
        // Looked up first: a start refused as a duplicate would unbind the existing timer from its test clock.
        if (await workflowExists(client, discountEndWorkflowId(row.id))) continue;
        await startDiscountEndTimer(ctx, row, testClock);
        result.reconciled++;
        log?.info('started a missing discount end timer', { discountId: row.id });
      } catch (error) {
        result.failed++;
        log?.warn('could not start a discount end timer', { discountId: row.id, error: String(error) });
      }
    }
    if (rows.length < reconcileBatchSize) break;
    after = rows[rows.length - 1]!.id;
  }
  return result;
}

/** Whether a workflow with this id runs now (its latest run); false when closed or unknown. */
async function workflowRunning(client: Client, workflowId: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/**
 * Deletes idempotency keys past their expiry (the middleware would only overwrite
 * them) and login attempts older than the login throttle window (the throttle only
 * counts attempts inside it), `batchSize` rows per statement so no statement holds
 * many locks or runs long. The outer `expires_at` condition is re-checked on a row a
 * request renewed meanwhile (PostgreSQL re-evaluates it on the newer row version),
 * so a key reused at that moment is kept.
 */
export async function pruneExpiredRows(
  em: EntityManager,
  loginThrottleWindowSeconds: number,
  batchSize = pruneBatchSize,
): Promise<PruneResult> {
  const connection = em.getConnection();
  const deleteAll = async (sql: string, params: unknown[]) => {
    let total = 0;
    for (;;) {
      const result = await connection.execute<{ affectedRows: number }>(sql, [...params, batchSize, ...params], 'run');
      total += result.affectedRows;
      if (result.affectedRows < batchSize) return total;
    }
  };
  const now = new Date();
  const keys = em.getMetadata(IdempotencyKey).tableName;
  const attempts = em.getMetadata(LoginAttempt).tableName;
  return {
    idempotencyKeys: await deleteAll(
      `delete from ${keys} where id in (select id from ${keys} where expires_at < ? limit ?) and expires_at < ?`,
      [now],
    ),
    loginAttempts: await deleteAll(
      `delete from ${attempts} where id in (select id from ${attempts} where created_at < ? limit ?) and created_at < ?`,
      [new Date(now.getTime() - loginThrottleWindowSeconds * 1000)],
    ),
  };
}
