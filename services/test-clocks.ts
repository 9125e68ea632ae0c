/**
 * Test clocks (sandbox): create, advance, delete, and binding work to a clock.
 * The clock's time lives in its workflow (workflows/test-clock.ts); its row here is
 * what the API reads (`frozen_time`, `status`), written in one transaction with its
 * event. Workflows on a clock take their time from it (workflows/clock-sleep.ts).
 */
import { raw, type EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Customer, Invoice, PaymentRequest, Payout, RecurringPaymentRequest, Subscription, TestClock, TestClockPayoutSettings } from '../db/entities/index.ts';
import { ApiError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { serializeTestClock } from '../objects/test-clock.ts';
import { clockReportSignal, clockTickSignal, type ClockBinding, type ClockReport, type ClockTick } from '../workflows/clock-sleep.ts';
import { advanceClockSignal, testClockQuery, testClockWorkflow } from '../workflows/test-clock.ts';
import { AccountIdKey, LivemodeKey } from '../workflows/search-attributes.ts';
import { recordEvent } from './events.ts';
import { cancelClockPayouts } from './payouts.ts';

/** A clock and everything on it is deleted this long after its creation (as Stripe: 30 days). */
export const testClockLifetimeMs = 30 * 86_400_000;

export interface ClockStarter {
  client: Client;
  taskQueue: string;
}

export async function createTestClock(em: EntityManager, starter: ClockStarter, input: { accountId: string; livemode: boolean; frozenTime: Date; name: string | null }): Promise<TestClock> {
  if (input.livemode) throw new ApiError('livemode_not_allowed', 'Test clocks exist only in the sandbox: send x-sandbox-mode: true, or use a test key.');
  const now = new Date();
  const clock = em.create(TestClock, {
    id: newId('testClock'),
    accountId: input.accountId,
    livemode: false,
    name: input.name,
    frozenTime: input.frozenTime,
    status: 'ready',
    advancingTo: null,
    failure: null,
    deletesAfter: new Date(now.getTime() + testClockLifetimeMs),
    createdAt: now,
    updatedAt: now,
  });
  await em.transactional(async (tx) => {
    tx.persist(clock);
    await tx.flush();
    await recordEvent(tx, { accountId: clock.accountId, livemode: false, type: 'test_clock.created', object: serializeTestClock(clock) });
  });
  await starter.client.workflow.start(testClockWorkflow, {
    workflowId: clock.id,
    taskQueue: starter.taskQueue,
    args: [{ clockId: clock.id, accountId: clock.accountId, frozenTime: clock.frozenTime.toISOString() }],
    staticSummary: `Test clock${clock.name ? ` "${clock.name}"` : ''}`,
    typedSearchAttributes: [
      { key: AccountIdKey, value: clock.accountId },
      { key: LivemodeKey, value: false },
    ],
  });
  return clock;
}

export async function findOwnTestClock(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }): Promise<TestClock> {
  if (scope.livemode) throw new ApiError('livemode_not_allowed', 'Test clocks exist only in the sandbox: send x-sandbox-mode: true, or use a test key.');
  const clock = await em.findOne(TestClock, { id, accountId: scope.accountId, livemode: false });
  if (!clock) throw new ApiError('not_found', `No such test clock: ${id}.`);
  return clock;
}

/** Moves a ready clock forward: recorded `advancing` (with its event), then the clock workflow walks the work due. */
export async function advanceTestClock(em: EntityManager, starter: ClockStarter, clock: TestClock, to: Date): Promise<TestClock> {
  if (clock.status === 'advancing') throw new ApiError('invalid_state', `Test clock ${clock.id} is already advancing; wait until it is ready.`);
  if (clock.status === 'internal_failure') throw new ApiError('invalid_state', `Test clock ${clock.id} failed to advance (${clock.failure}); delete it and start another.`);
  if (to.getTime() <= clock.frozenTime.getTime()) throw new ApiError('invalid_request', `frozen_time: a test clock only moves forward; it is at ${clock.frozenTime.toISOString()}.`);
  await em.transactional(async (tx) => {
    const row = await tx.findOneOrFail(TestClock, { id: clock.id }, { lockMode: 4 /* pessimistic write */ });
    if (row.status !== 'ready') throw new ApiError('invalid_state', `Test clock ${clock.id} is already advancing; wait until it is ready.`);
    row.status = 'advancing';
    row.advancingTo = to;
    row.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, { accountId: row.accountId, livemode: false, type: 'test_clock.advancing', object: serializeTestClock(row) });
    Object.assign(clock, row);
  });
  await starter.client.workflow.getHandle(clock.id).signal(advanceClockSignal, { frozenTime: to.toISOString() });
  return clock;
}

/**
 * The clock workflow's report: it reached `frozenTime` (ready), or failed on the way.
 * Only for the advance under way: a report of an earlier one arriving late (its local
 * activity retried after a timeout on a loaded machine, when the next advance had
 * begun) would mark the next advance `ready` before its work had run.
 */
export async function recordTestClockAdvanced(em: EntityManager, input: { clockId: string; frozenTime: string; failure: string | null }): Promise<void> {
  await em.transactional(async (tx) => {
    const row = await tx.findOne(TestClock, { id: input.clockId }, { lockMode: 4 /* pessimistic write */ });
    if (!row) return; // deleted meanwhile
    if (row.status !== 'advancing') return; // reported already
    if (!input.failure && row.advancingTo?.getTime() !== Date.parse(input.frozenTime)) return; // an earlier advance's report
    row.frozenTime = new Date(input.frozenTime);
    row.status = input.failure ? 'internal_failure' : 'ready';
    row.advancingTo = null;
    row.failure = input.failure ? input.failure.slice(0, 2000) : null;
    row.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, { accountId: row.accountId, livemode: false, type: input.failure ? 'test_clock.internal_failure' : 'test_clock.ready', object: serializeTestClock(row) });
  });
}

/**
 * The binding of new work for `customer` (its clock's id and time), or undefined for a
 * customer not on a clock. Refuses while the clock advances: work created then would
 * start at a time the clock has already left.
 */
export async function clockBindingOf(em: EntityManager, customer: { testClockId?: string | null }): Promise<ClockBinding | undefined> {
  if (!customer.testClockId) return undefined;
  const clock = await em.findOne(TestClock, { id: customer.testClockId });
  if (!clock) throw new ApiError('not_found', `No such test clock: ${customer.testClockId}.`);
  if (clock.status !== 'ready') throw new ApiError('invalid_state', `Test clock ${clock.id} is ${clock.status}; wait until it is ready.`);
  return { id: clock.id, now: clock.frozenTime.toISOString() };
}

export { bindToClock, unbindFromClock } from './clock-binding.ts';

/**
 * The binding of a change to an object already on `clockId` (an API call cancelling its payout, updating
 * its customer): the clock's time, even while it advances (what is recorded then carries the time the clock
 * had reached); undefined once the clock is gone (the wall clock then).
 */
export async function clockTimeOf(em: EntityManager, clockId: string | null | undefined): Promise<ClockBinding | undefined> {
  if (!clockId) return undefined;
  const clock = await em.findOne(TestClock, { id: clockId });
  return clock ? { id: clock.id, now: clock.frozenTime.toISOString() } : undefined;
}

/**
 * A customer on a test clock is updated at the clock's time: the entity's onUpdate stamps the wall
 * clock's, so after the flush (in its transaction) a plain update, which runs no hooks, puts the
 * clock's. The entity itself keeps its flushed value (a later flush would stamp it again): serialize
 * with `updated_at` from the clock, and set `customer.updatedAt` once the transaction is over.
 */
export async function stampClockTime(tx: EntityManager, customer: Customer, testClock: ClockBinding): Promise<void> {
  await tx.nativeUpdate(Customer, { id: customer.id }, { updatedAt: new Date(testClock.now) });
}

/** Ids of the customers on `clockId` (what deleting the clock deletes). */
async function clockCustomerIds(em: EntityManager, accountId: string, clockId: string): Promise<string[]> {
  const rows = await em.find(Customer, { accountId, livemode: false, testClockId: clockId }, { fields: ['id'] });
  return rows.map((r) => r.id);
}

/**
 * A list's condition on `customer_id` for objects on clocks, as a raw SQL fragment keyed into
 * the list's filter (`{ ...where, ...clockCondition(...) }`): with `test_clock`, only that
 * clock's customers' objects; without, none of any clock's (as Stripe), while objects of no
 * customer stay. Live mode has no clocks. A subquery in the list's one statement, not a read
 * of the clock customers' ids before it: a list costs one round trip (bench/RESULTS.md).
 * The tables it filters (transactions, subscriptions, invoices) are read without joins, so
 * `customer_id` is theirs.
 */
export function clockCondition(scope: { accountId: string; livemode: boolean }, testClock: string | undefined): Record<symbol, unknown[]> | null {
  if (scope.livemode) return testClock ? { [raw('false')]: [] } : null;
  const customersOn = 'select c.id from customers as c where c.account_id = ? and c.livemode = false and';
  return testClock
    ? { [raw(`customer_id in (${customersOn} c.test_clock_id = ?)`, [scope.accountId, testClock])]: [] }
    : { [raw(`(customer_id is null or customer_id not in (${customersOn} c.test_clock_id is not null))`, [scope.accountId])]: [] };
}

/**
 * Deletes the clock and every object on it: its workflows end, its customers, subscriptions and invoices go,
 * its payouts not yet ended are canceled and its payout schedules deleted (the sandbox ledger keeps the money that moved).
 */
export async function deleteTestClock(em: EntityManager, client: Client, clock: TestClock): Promise<void> {
  const handle = client.workflow.getHandle(clock.id);
  let workflowIds: string[] = [];
  try {
    workflowIds = (await handle.query(testClockQuery)).workflowIds;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) {
      // The clock is busy (a long advance holds its workflow task): its subscriptions and payment requests are found in the database instead.
      const customers = await clockCustomerIds(em, clock.accountId, clock.id);
      const subscriptions = customers.length > 0 ? await em.find(Subscription, { customerId: { $in: customers } }, { fields: ['id'] }) : [];
      const requests = await em.find(PaymentRequest, { testClockId: clock.id }, { fields: ['id'] });
      const recurring = await em.find(RecurringPaymentRequest, { testClockId: clock.id }, { fields: ['id'] });
      const payouts = await em.find(Payout, { testClockId: clock.id, status: { $in: ['pending', 'in_transit'] } }, { fields: ['id'] });
      workflowIds = [...subscriptions, ...requests, ...recurring, ...payouts].map((r) => r.id);
    }
  }
  // The clock's payout schedule (workflows/payout-schedule.ts), whether or not the clock still knew it.
  workflowIds = [...new Set([...workflowIds, `payout-schedule-${clock.id}`])];
  await handle.terminate('test clock deleted').catch(() => undefined);
  await Promise.all(workflowIds.map((id) => client.workflow.getHandle(id).terminate('test clock deleted').catch(() => undefined)));
  const customerIds = await clockCustomerIds(em, clock.accountId, clock.id);
  // Payouts on the clock not yet ended are canceled (their money back on the balance); its payout schedules go.
  await cancelClockPayouts(em, clock.id);
  await em.nativeDelete(TestClockPayoutSettings, { testClockId: clock.id });
  await em.transactional(async (tx) => {
    if (customerIds.length > 0) {
      // Money stays: transactions, charges and the ledger keep what moved on the sandbox balance.
      await tx.nativeDelete(Subscription, { customerId: { $in: customerIds } });
      await tx.nativeDelete(Invoice, { customerId: { $in: customerIds } });
      await tx.nativeDelete(Customer, { id: { $in: customerIds } });
    }
    const row = await tx.findOne(TestClock, { id: clock.id });
    if (row) {
      await recordEvent(tx, { accountId: clock.accountId, livemode: false, type: 'test_clock.deleted', object: { ...serializeTestClock(row), deleted: true } });
      tx.remove(row);
      await tx.flush();
    }
  });
}

/**
 * The clock's "tick" to the workflows on it, sent by an activity of the clock workflow
 * as direct signals (not signal-external commands: each of those is a transfer task
 * on the server, answered by one more event and one more workflow task of the clock,
 * and a workflow may have only 2,000 of them pending, so an advance over 1,000
 * subscriptions and their availability workflows stalled). Returns the ids of the
 * workflows that no longer exist (they leave the clock).
 */
export async function tickClockWorkflows(client: Client, ids: string[], tick: ClockTick, concurrency = 32): Promise<string[]> {
  const gone: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, ids.length) }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          await client.workflow.getHandle(id).signal(clockTickSignal, tick);
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) gone.push(id);
          else throw error;
        }
      }
    }),
  );
  return gone;
}

/** A bound workflow's report to its clock (by a local activity, for the same reason); a clock deleted meanwhile hears nothing. */
export async function reportToClock(client: Client, clockId: string, report: ClockReport): Promise<void> {
  try {
    await client.workflow.getHandle(clockId).signal(clockReportSignal, report);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

/**
 * Enforces `deletes_after` (the maintenance workflow, every run): each clock past it is
 * deleted with everything on it, as DELETE /v1/test_clocks/{id} does. At most `limit`
 * clocks per call, oldest first. Returns how many were deleted.
 */
export async function deleteExpiredTestClocks(em: EntityManager, client: Client, now = new Date(), limit = 20): Promise<number> {
  const expired = await em.find(TestClock, { deletesAfter: { $lt: now } }, { orderBy: { deletesAfter: 'asc' }, limit });
  for (const clock of expired) await deleteTestClock(em.fork(), client, clock);
  return expired.length;
}
