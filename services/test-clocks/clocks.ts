import { LockMode } from '@mikro-orm/core';
/**
 * Test clocks (sandbox): create, advance, delete, and binding work to a clock.
 * The clock's time lives in its workflow (workflows/test-clock.ts); its row here is
 * what the API reads (`frozen_time`, `status`), written in one transaction with its
 * event. Workflows on a clock take their time from it (workflows/clock-sleep.ts).
 */
import { type EntityManager, raw } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';

import { defaultTestClockLimits, type TestClockLimits } from '../../config.ts';
import {
  Customer,
  Discount,
  Invoice,
  InvoiceItem,
  PaymentRequest,
  Payout,
  Plan,
  RecurringPaymentRequest,
  Subscription,
  TestClock,
  TestClockPayoutSettings,
} from '../../db/entities/index.ts';
import { addIntervals, type BillingInterval } from '../../domain/billing-calendar.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { endedStatuses } from '../../domain/subscription.ts';
import { serializeTestClock } from '../../objects/test-clock.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import { discountEndWorkflowId } from '../../workflows/discount-end.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import { advanceClockSignal, testClockQuery, testClockWorkflow } from '../../workflows/test-clock.ts';
import type { TemporalContext, WorkflowStartContext } from '../context.ts';
import { recordEvent } from '../events/record.ts';
import { cancelClockPayouts } from '../payouts/rail.ts';
import { clockTaskQueueOf } from './binding.ts';
import { clockEntryIds, openClockRegistry } from './registry.ts';

/** A clock and everything on it is deleted this long after its creation (as Stripe: 30 days). */
export const testClockLifetimeMs = 30 * 86_400_000;

/** What creating and advancing a clock reach: Temporal (`Pick<ServiceContext, 'temporal'>` is one) and the limits. */
export interface ClockContext extends WorkflowStartContext {
  /** config.testClocks; the defaults when unset. */
  limits?: TestClockLimits;
}

/**
 * Limits (docs/testing-your-integration.md#limits), so that one sandbox's clocks cannot keep the
 * worker busy for minutes: how many clocks an account has, what lives on a clock (customers, their
 * subscriptions, payment requests), and how far one advance goes (advanceSpanLimit). Each is
 * refused with 400 `invalid_request` naming the limit, and changes nothing.
 */
const limitsOf = (ctx: { limits?: TestClockLimits }) => ctx.limits ?? defaultTestClockLimits;

/** Holds the clock's row for the rest of `tx`: objects joining a clock are counted one at a time. */
async function lockClockRow(tx: EntityManager, clockId: string): Promise<void> {
  await tx
    .getConnection()
    .execute(`select id from test_clocks where id = ? for update`, [clockId], 'all', tx.getTransactionContext());
}

/**
 * Refuses a new customer on a full clock (`customersPerClock`, 3 as Stripe). Call inside the
 * transaction that writes the customer: the clock's row stays locked until it commits.
 */
export async function reserveClockCustomer(
  tx: EntityManager,
  clockId: string,
  customerId: string,
  limits: TestClockLimits = defaultTestClockLimits,
): Promise<void> {
  await lockClockRow(tx, clockId);
  // Not counting the customer being created (persisted already, it may be flushed before the count).
  const count = await tx.count(Customer, { testClockId: clockId, id: { $ne: customerId } });
  if (count >= limits.customersPerClock) {
    throw new ApiError(
      'invalid_request',
      `test_clock: a test clock holds at most ${limits.customersPerClock} customers, and ${clockId} has ${count}; create another clock for more.`,
    );
  }
}

/** Refuses a subscription for a customer on a clock that already has `subscriptionsPerCustomer` not ended (3 as Stripe). */
export async function checkClockSubscriptionRoom(
  em: EntityManager,
  customer: { id: string; testClockId?: string | null },
  limits: TestClockLimits = defaultTestClockLimits,
): Promise<void> {
  if (!customer.testClockId) return;
  const count = await em.count(Subscription, { customerId: customer.id, status: { $nin: [...endedStatuses] } });
  if (count >= limits.subscriptionsPerCustomer) {
    throw new ApiError(
      'invalid_request',
      `customer: a customer on a test clock has at most ${limits.subscriptionsPerCustomer} subscriptions that have not ended, and ${customer.id} has ${count}; cancel one or use another customer.`,
    );
  }
}

/** Refuses a payment request (one-time or recurring) on a clock that already holds `paymentRequestsPerClock` of them (those a recurring request issued are its own). */
export async function checkClockPaymentRequestRoom(
  em: EntityManager,
  clockId: string,
  limits: TestClockLimits = defaultTestClockLimits,
): Promise<void> {
  const [oneTime, recurring] = await Promise.all([
    em.count(PaymentRequest, { testClockId: clockId, recurringPaymentRequestId: null }),
    em.count(RecurringPaymentRequest, { testClockId: clockId }),
  ]);
  if (oneTime + recurring >= limits.paymentRequestsPerClock) {
    throw new ApiError(
      'invalid_request',
      `test_clock: a test clock holds at most ${limits.paymentRequestsPerClock} payment requests (one-time and recurring), and ${clockId} has ${oneTime + recurring}; create another clock for more.`,
    );
  }
}

const approxMs: Record<BillingInterval['unit'], number> = {
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 30 * 86_400_000,
  year: 365 * 86_400_000,
};

/** With nothing recurring on a clock, an advance goes at most two years (two intervals of a yearly price). */
export const advanceSpanWithoutPrices: BillingInterval = { unit: 'year', count: 1 };

/**
 * The longest recurring price on the clock: the plans of its customers' subscriptions not ended (and a
 * plan change they wait for) and its recurring payment requests still active; null when it has none.
 * (A payout schedule is no price: a daily one does not hold the clock to two days.)
 */
export async function longestClockInterval(
  em: EntityManager,
  clock: Pick<TestClock, 'id' | 'accountId'>,
): Promise<BillingInterval | null> {
  const customers = await clockCustomerIds(em, clock.accountId, clock.id);
  const subscriptions =
    customers.length > 0
      ? await em.find(
          Subscription,
          { customerId: { $in: customers }, status: { $nin: [...endedStatuses] } },
          { fields: ['planId', 'pendingPlanId'] },
        )
      : [];
  const planIds = [
    ...new Set(subscriptions.flatMap((s) => [s.planId, s.pendingPlanId]).filter((id): id is string => !!id)),
  ];
  const plans =
    planIds.length > 0 ? await em.find(Plan, { id: { $in: planIds } }, { fields: ['interval', 'intervalCount'] }) : [];
  const recurring = await em.find(
    RecurringPaymentRequest,
    { testClockId: clock.id, status: 'active' },
    { fields: ['interval', 'intervalCount'] },
  );
  const intervals: BillingInterval[] = [
    // A plan without an interval (a one-off price) recurs not.
    ...plans
      .filter((p) => !!p.interval)
      .map((p) => ({ unit: p.interval as BillingInterval['unit'], count: p.intervalCount ?? 1 })),
    ...recurring.map((r) => ({ unit: r.interval, count: r.intervalCount })),
  ];
  let longest: BillingInterval | null = null;
  for (const interval of intervals)
    if (!longest || approxMs[interval.unit] * interval.count > approxMs[longest.unit] * longest.count)
      longest = interval;
  return longest;
}

/**
 * How far one advance may go (as Stripe): two intervals of the longest recurring price on the clock past
 * its time, or two years when nothing on it recurs. Returns the latest instant and what it was judged on.
 */
export async function advanceSpanLimit(
  em: EntityManager,
  clock: Pick<TestClock, 'id' | 'accountId' | 'frozenTime'>,
): Promise<{ latest: Date; interval: BillingInterval; fromPrice: boolean }> {
  const longest = await longestClockInterval(em, clock);
  const interval = longest ?? advanceSpanWithoutPrices;
  return { latest: addIntervals(clock.frozenTime, interval, 2), interval, fromPrice: longest !== null };
}

const describeInterval = (i: BillingInterval) => (i.count === 1 ? i.unit : `${i.count} ${i.unit}s`);

export async function createTestClock(
  ctx: ClockContext,
  em: EntityManager,
  input: { accountId: string; livemode: boolean; frozenTime: Date; name: string | null },
): Promise<TestClock> {
  if (input.livemode)
    throw new ApiError(
      'livemode_not_allowed',
      'Test clocks exist only in the sandbox: send x-sandbox-mode: true, or use a test key.',
    );
  const { perAccount } = limitsOf(ctx);
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
    // One create at a time per account, so two at once cannot both take the last place.
    await tx
      .getConnection()
      .execute(
        `select pg_advisory_xact_lock(hashtext(?))`,
        [`test_clocks:${input.accountId}`],
        'all',
        tx.getTransactionContext(),
      );
    const count = await tx.count(TestClock, { accountId: input.accountId, livemode: false, id: { $ne: clock.id } });
    if (count >= perAccount) {
      throw new ApiError(
        'invalid_request',
        `An account may have at most ${perAccount} test clocks at once, and this one has ${count}: delete one (DELETE /v1/test_clocks/{id}) before creating another (each is deleted 30 days after its creation anyway).`,
      );
    }
    tx.persist(clock);
    await tx.flush();
    // Its registry (services/test-clocks/registry.ts): work bound to it from now on is written there.
    await openClockRegistry(tx, clock);
    await recordEvent(tx, {
      accountId: clock.accountId,
      livemode: false,
      type: 'test_clock.created',
      object: serializeTestClock(clock),
    });
  });
  await ctx.temporal.client.workflow.start(testClockWorkflow, {
    workflowId: clock.id,
    // The clock's own workflow runs with the work it moves, on the test clock queue (services/test-clocks/binding.ts).
    taskQueue: clockTaskQueueOf(ctx.temporal.taskQueue),
    args: [{ clockId: clock.id, accountId: clock.accountId, frozenTime: clock.frozenTime.toISOString() }],
    staticSummary: `Test clock${clock.name ? ` "${clock.name}"` : ''}`,
    typedSearchAttributes: [
      { key: AccountIdKey, value: clock.accountId },
      { key: LivemodeKey, value: false },
    ],
  });
  return clock;
}

export async function findOwnTestClock(
  em: EntityManager,
  id: string,
  scope: { accountId: string; livemode: boolean },
): Promise<TestClock> {
  if (scope.livemode)
    throw new ApiError(
      'livemode_not_allowed',
      'Test clocks exist only in the sandbox: send x-sandbox-mode: true, or use a test key.',
    );
  const clock = await em.findOne(TestClock, { id, accountId: scope.accountId, livemode: false });
  if (!clock) throw new ApiError('not_found', `No such test clock: ${id}.`);
  return clock;
}

/** Moves a ready clock forward: recorded `advancing` (with its event), then the clock workflow walks the work due. */
export async function advanceTestClock(
  ctx: ClockContext,
  em: EntityManager,
  clock: TestClock,
  to: Date,
): Promise<TestClock> {
  if (clock.status === 'advancing')
    throw new ApiError('invalid_state', `Test clock ${clock.id} is already advancing; wait until it is ready.`);
  if (clock.status === 'internal_failure')
    throw new ApiError(
      'invalid_state',
      `Test clock ${clock.id} failed to advance (${clock.failure}); delete it and start another.`,
    );
  if (to.getTime() <= clock.frozenTime.getTime())
    throw new ApiError(
      'invalid_request',
      `frozen_time: a test clock only moves forward; it is at ${clock.frozenTime.toISOString()}.`,
    );
  const span = await advanceSpanLimit(em, clock);
  if (to.getTime() > span.latest.getTime()) {
    throw new ApiError(
      'invalid_request',
      `frozen_time: one advance may move a test clock at most two intervals of the longest recurring price on it (${span.fromPrice ? `every ${describeInterval(span.interval)}` : 'none: two years'}), so to ${span.latest.toISOString()} at the latest from ${clock.frozenTime.toISOString()}; advance in steps.`,
    );
  }
  await em.transactional(async (tx) => {
    const row = await tx.findOneOrFail(TestClock, { id: clock.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (row.status !== 'ready')
      throw new ApiError('invalid_state', `Test clock ${clock.id} is already advancing; wait until it is ready.`);
    row.status = 'advancing';
    row.advancingTo = to;
    row.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, {
      accountId: row.accountId,
      livemode: false,
      type: 'test_clock.advancing',
      object: serializeTestClock(row),
    });
    Object.assign(clock, row);
  });
  await ctx.temporal.client.workflow.getHandle(clock.id).signal(advanceClockSignal, { frozenTime: to.toISOString() });
  return clock;
}

/**
 * The clock workflow's report: it reached `frozenTime` (ready), or failed on the way.
 * Only for the advance under way: a report of an earlier one arriving late (its local
 * activity retried after a timeout on a loaded machine, when the next advance had
 * begun) would mark the next advance `ready` before its work had run.
 */
export async function recordTestClockAdvanced(
  em: EntityManager,
  input: { clockId: string; frozenTime: string; failure: string | null },
): Promise<void> {
  await em.transactional(async (tx) => {
    const row = await tx.findOne(TestClock, { id: input.clockId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!row) return; // deleted meanwhile
    if (row.status !== 'advancing') return; // reported already
    if (!input.failure && row.advancingTo?.getTime() !== Date.parse(input.frozenTime)) return; // an earlier advance's report
    row.frozenTime = new Date(input.frozenTime);
    row.status = input.failure ? 'internal_failure' : 'ready';
    row.advancingTo = null;
    row.failure = input.failure ? input.failure.slice(0, 2000) : null;
    row.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, {
      accountId: row.accountId,
      livemode: false,
      type: input.failure ? 'test_clock.internal_failure' : 'test_clock.ready',
      object: serializeTestClock(row),
    });
  });
}

/**
 * The binding of new work for `customer` (its clock's id and time), or undefined for a
 * customer not on a clock. Refuses while the clock advances: work created then would
 * start at a time the clock has already left.
 */
export async function clockBindingOf(
  em: EntityManager,
  customer: { testClockId?: string | null },
): Promise<ClockBinding | undefined> {
  if (!customer.testClockId) return undefined;
  const clock = await em.findOne(TestClock, { id: customer.testClockId });
  if (!clock) throw new ApiError('not_found', `No such test clock: ${customer.testClockId}.`);
  if (clock.status !== 'ready')
    throw new ApiError('invalid_state', `Test clock ${clock.id} is ${clock.status}; wait until it is ready.`);
  return { id: clock.id, now: clock.frozenTime.toISOString() };
}

export { bindToClock, clockTaskQueueOf, mainTaskQueueOf, taskQueueFor, unbindFromClock } from './binding.ts';

/**
 * The binding of a change to an object already on `clockId` (an API call cancelling its payout, updating
 * its customer): the clock's time, even while it advances (what is recorded then carries the time the clock
 * had reached); undefined once the clock is gone (the wall clock then).
 */
export async function clockTimeOf(
  em: EntityManager,
  clockId: string | null | undefined,
): Promise<ClockBinding | undefined> {
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
export function clockCondition(
  scope: { accountId: string; livemode: boolean },
  testClock: string | undefined,
): Record<symbol, unknown[]> | null {
  if (scope.livemode) return testClock ? { [raw('false')]: [] } : null;
  const customersOn = 'select c.id from customers as c where c.account_id = ? and c.livemode = false and';
  return testClock
    ? { [raw(`customer_id in (${customersOn} c.test_clock_id = ?)`, [scope.accountId, testClock])]: [] }
    : {
        [raw(`(customer_id is null or customer_id not in (${customersOn} c.test_clock_id is not null))`, [
          scope.accountId,
        ])]: [],
      };
}

/**
 * Deletes the clock and every object on it: its workflows end, its customers, subscriptions and invoices go,
 * its payouts not yet ended are canceled and its payout schedules deleted (the sandbox ledger keeps the money that moved).
 */
export async function deleteTestClock(
  ctx: { temporal: Pick<TemporalContext, 'client'> },
  em: EntityManager,
  clock: TestClock,
): Promise<void> {
  const { client } = ctx.temporal;
  const handle = client.workflow.getHandle(clock.id);
  let workflowIds: string[] = [];
  try {
    workflowIds = (await handle.query(testClockQuery)).workflowIds;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) {
      // The clock is busy (a long advance holds its workflow task): its subscriptions and payment requests are found in the database instead.
      const customers = await clockCustomerIds(em, clock.accountId, clock.id);
      const subscriptions =
        customers.length > 0 ? await em.find(Subscription, { customerId: { $in: customers } }, { fields: ['id'] }) : [];
      const requests = await em.find(PaymentRequest, { testClockId: clock.id }, { fields: ['id'] });
      const recurring = await em.find(RecurringPaymentRequest, { testClockId: clock.id }, { fields: ['id'] });
      const payouts = await em.find(
        Payout,
        { testClockId: clock.id, status: { $in: ['pending', 'in_transit'] } },
        { fields: ['id'] },
      );
      // One-off invoices still collected by their invoice workflow (workflows/invoice.ts, id = the invoice id).
      const oneOff =
        customers.length > 0
          ? await em.find(
              Invoice,
              { customerId: { $in: customers }, subscriptionId: null, status: { $in: ['open', 'uncollectible'] } },
              { fields: ['id'] },
            )
          : [];
      // Customers' own repeating discounts waiting for their end (workflows/discount-end.ts).
      const discounts =
        customers.length > 0
          ? await em.find(
              Discount,
              { customerId: { $in: customers }, subscriptionId: null, endedAt: null, end: { $ne: null } },
              { fields: ['id'] },
            )
          : [];
      workflowIds = [
        ...[...subscriptions, ...requests, ...recurring, ...payouts, ...oneOff].map((r) => r.id),
        ...discounts.map((d) => discountEndWorkflowId(d.id)),
      ];
    }
  }
  // The workflows in the clock's table (a clock whose workflow reads it: services/test-clocks/registry.ts), and its
  // payout schedule (workflows/payout-schedule.ts), whether or not the clock still knew it.
  workflowIds = [
    ...new Set([
      ...workflowIds,
      ...(await clockEntryIds(em, clock.id, clock.accountId)),
      `payout-schedule-${clock.id}`,
    ]),
  ];
  await handle.terminate('test clock deleted').catch(() => undefined);
  await Promise.all(
    workflowIds.map((id) =>
      client.workflow
        .getHandle(id)
        .terminate('test clock deleted')
        .catch(() => undefined),
    ),
  );
  const customerIds = await clockCustomerIds(em, clock.accountId, clock.id);
  // Payouts on the clock not yet ended are canceled (their money back on the balance); its payout schedules go.
  await cancelClockPayouts(em, clock.id);
  await em.nativeDelete(TestClockPayoutSettings, { testClockId: clock.id });
  await em.transactional(async (tx) => {
    if (customerIds.length > 0) {
      // Money stays: transactions, charges and the ledger keep what moved on the sandbox balance.
      await tx.nativeDelete(Subscription, { customerId: { $in: customerIds } });
      await tx.nativeDelete(Invoice, { customerId: { $in: customerIds } });
      await tx.nativeDelete(InvoiceItem, { customerId: { $in: customerIds } });
      await tx.nativeDelete(Customer, { id: { $in: customerIds } });
    }
    const row = await tx.findOne(TestClock, { id: clock.id });
    if (row) {
      await recordEvent(tx, {
        accountId: clock.accountId,
        livemode: false,
        type: 'test_clock.deleted',
        object: { ...serializeTestClock(row), deleted: true },
      });
      tx.remove(row);
      await tx.flush();
    }
  });
}

export { reportToClock, tickClockWorkflows } from './registry.ts';

/**
 * Enforces `deletes_after` (the maintenance workflow, every run): each clock past it is
 * deleted with everything on it, as DELETE /v1/test_clocks/{id} does. At most `limit`
 * clocks per call, oldest first. Returns how many were deleted.
 */
export async function deleteExpiredTestClocks(
  ctx: { temporal: Pick<TemporalContext, 'client'> },
  em: EntityManager,
  now = new Date(),
  limit = 20,
): Promise<number> {
  const expired = await em.find(TestClock, { deletesAfter: { $lt: now } }, { orderBy: { deletesAfter: 'asc' }, limit });
  for (const clock of expired) await deleteTestClock(ctx, em.fork(), clock);
  return expired.length;
}
