import { WorkflowNotFoundError } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { encodeTime } from 'ulidx';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { createActivities } from '../activities/index.ts';
import { BalanceTransaction, Charge, LedgerEntry, Payout, Transaction } from '../db/entities/index.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { createSmtpMailer, type Mailer } from '../services/email/mailer.ts';
import type { ReconcileResult } from '../services/maintenance/sweeps.ts';
import { createPayout } from '../services/payouts/rail.ts';
import { onTestClock } from '../services/test-clocks/now.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;
const stuckAfterMs = 2 * minute;

/**
 * Leftovers of issue #24 about money that waits:
 * 1. a dunning retry's and an upgrade's charge leave their pending money to the subscription workflow (no
 *    fundsAvailabilityWorkflow), which makes it available at its available_on;
 * 2. money owned by a subscription workflow an operator terminated is made available by the maintenance
 *    reconciler once due, once;
 * 3. the stuck-payout reconciler handles payouts on test clocks by the wall-clock age of the payout, on the
 *    clock's time.
 * Real PostgreSQL, the real app, the time-skipping Temporal test server and the engine's worker.
 */
describe('money left waiting', () => {
  let engine: TestEngine;
  let mailer: Mailer;
  let activities: ReturnType<typeof createActivities>;
  let activityEnv: MockActivityEnvironment;

  beforeAll(async () => {
    engine = await startTestEngine();
    mailer = createSmtpMailer(engine.mail.url, engine.config.mailFrom);
    activities = createActivities({
      orm: engine.db.orm,
      mailer,
      links: createCustomerLinks({ publicUrl: engine.config.publicUrl, secret: engine.config.auth.secret }),
    });
    // The maintenance activities as the worker runs them (Context.current().client and task queue).
    activityEnv = new MockActivityEnvironment(
      { taskQueue: engine.taskQueue },
      { client: engine.env.client, logger: new DefaultLogger('WARN') },
    );
  });
  afterAll(async () => {
    await engine?.close();
    mailer?.close();
  });

  const em = () => engine.db.orm.em.fork();
  const skipTo = async (instant: number) => {
    const ahead = instant - (await engine.env.currentTimeMs());
    if (ahead > 0) await engine.env.sleep(ahead);
  };
  /** The workflow with this id: its type and status, or null when none was ever started. */
  const workflowOf = async (id: string) => {
    try {
      const described = await engine.env.client.workflow.getHandle(id).describe();
      return { type: described.type, status: described.status.name };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    }
  };
  /** Every pending-money movement of the subscription's payments, with how many fundsAvailabilityWorkflows exist for them. */
  async function moneyOf(subscriptionId: string) {
    const payments = await em().find(
      Transaction,
      { subscriptionId, type: 'payment', status: 'succeeded' },
      { orderBy: { id: 'asc' } },
    );
    const btxns = await em().find(
      BalanceTransaction,
      { source: { $in: payments.map((p) => p.id) } },
      { orderBy: { id: 'asc' } },
    );
    const workflows = await Promise.all(btxns.map((b) => workflowOf(b.id)));
    return {
      btxns,
      byInvoice: new Map(payments.map((p) => [p.invoiceId, btxns.find((b) => b.source === p.id)!])),
      fundsAvailabilityWorkflows: workflows.filter((w) => w?.type === 'fundsAvailabilityWorkflow').length,
    };
  }
  const balanceOf = async (tenant: Tenant) => {
    const body = (await engine.call('GET', '/v1/balance', undefined, tenant.headers)).body;
    const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
    return { available: of(body.available), pending: of(body.pending) };
  };
  const make = async (tenant: Tenant, path: string, body: unknown) => {
    const response = await engine.call('POST', path, body, tenant.headers);
    expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(path.endsWith('/update') ? 200 : 201);
    return response.body;
  };
  /** Replays a workflow's whole history against this code (the new patches must replay too). */
  const replays = async (workflowId: string) => {
    const history = await engine.env.client.workflow.getHandle(workflowId).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: workflowId },
      history,
    );
  };

  it('a dunning retry and an upgrade start no fundsAvailabilityWorkflow: the subscription makes their money available at available_on', async () => {
    const tenant = await engine.signUp({ name: 'Owned retries' });
    const declining = await make(tenant, '/v1/customers', {
      email: 'retry@example.com',
      payment_method: 'pm_card_chargeDeclined',
    });
    const paying = await make(tenant, '/v1/customers', {
      email: 'upgrade@example.com',
      payment_method: 'pm_card_visa',
    });
    const team = await make(tenant, '/v1/plans', { name: 'Team', amount: 4900, currency: 'USD', interval: 'month' });
    const pro = await make(tenant, '/v1/plans', { name: 'Pro', amount: 9900, currency: 'USD', interval: 'month' });

    // Dunning: the first charge is declined; the card is replaced, so the subscription retries at once and recovers.
    const dunned = await make(tenant, '/v1/subscriptions', {
      customer_id: declining.id,
      plan: team.id,
      trial_period_days: 0,
    });
    expect(dunned.status).toBe('past_due');
    const replaced = await engine.call(
      'PATCH',
      `/v1/customers/${declining.id}`,
      { payment_method: 'pm_card_visa' },
      tenant.headers,
    );
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    await eventually(
      () => engine.subscription(dunned.id),
      (s) => s?.status === 'active',
      20_000,
    );
    const retriedAt = await engine.env.currentTimeMs();
    const retries = (
      await em().find(Charge, { idempotencyKey: { $like: `${dunned.id}:%` } }, { orderBy: { createdAt: 'asc' } })
    ).map((c) => [c.idempotencyKey.split(':').at(-1), c.status]);
    expect(retries).toEqual([
      ['1', 'failed'],
      ['2', 'succeeded'],
    ]);

    // Upgrade: the first cycle paid by the renewal (owned, as before), then the prorated difference charged now.
    const upgraded = await make(tenant, '/v1/subscriptions', {
      customer_id: paying.id,
      plan: team.id,
      trial_period_days: 0,
    });
    expect(upgraded.status).toBe('active');
    const changed = await make(tenant, `/v1/subscriptions/${upgraded.id}/update`, { plan: pro.id });
    expect(changed).toMatchObject({ status: 'active', plan: pro.id });
    const upgradedAt = await engine.env.currentTimeMs();
    const upgradeInvoice = changed.latest_invoice as string;

    const retryMoney = await moneyOf(dunned.id);
    const upgradeMoney = await moneyOf(upgraded.id);
    // One movement per successful payment, each pending, owned by its subscription's workflow, and no workflow started for any.
    expect(retryMoney.btxns.map((b) => [b.status, b.amount, b.workflowConfirmedAt !== null])).toEqual([
      ['pending', 4900, true],
    ]);
    expect(upgradeMoney.btxns).toHaveLength(2);
    const upgradeBtxn = upgradeMoney.byInvoice.get(upgradeInvoice)!;
    expect(upgradeBtxn.amount).toBeGreaterThan(0);
    expect(upgradeMoney.btxns.map((b) => [b.status, b.workflowConfirmedAt !== null])).toEqual([
      ['pending', true],
      ['pending', true],
    ]);
    expect(retryMoney.fundsAvailabilityWorkflows).toBe(0);
    expect(upgradeMoney.fundsAvailabilityWorkflows).toBe(0);
    const all = [...retryMoney.btxns, ...upgradeMoney.btxns];
    const net = all.reduce((sum, b) => sum + b.net, 0);
    expect(await balanceOf(tenant)).toEqual({ available: 0, pending: net });
    const entriesBefore = new Map(
      await Promise.all(
        all.map(async (b) => [b.id, await em().count(LedgerEntry, { balanceTransactionId: b.id })] as const),
      ),
    );

    // On time: pending an hour before available_on (two days in the sandbox), available an hour after, each once.
    const retryBtxn = retryMoney.btxns[0]!;
    const wait = 2 * day;
    expect(Math.abs(retryBtxn.availableOn.getTime() - retryBtxn.createdAt.getTime() - wait)).toBeLessThan(5_000);
    await skipTo(Math.min(retriedAt, upgradedAt) + wait - hour);
    expect((await em().findOneOrFail(BalanceTransaction, { id: retryBtxn.id })).status).toBe('pending');
    expect((await em().findOneOrFail(BalanceTransaction, { id: upgradeBtxn.id })).status).toBe('pending');
    await skipTo(Math.max(retriedAt, upgradedAt) + wait + hour);
    await eventually(balanceOf.bind(null, tenant), (b) => b.pending === 0, 20_000);
    expect(await balanceOf(tenant)).toEqual({ available: net, pending: 0 });
    for (const id of [dunned.id, upgraded.id]) {
      const after = await moneyOf(id);
      expect(after.btxns.every((b) => b.status === 'available')).toBe(true);
      expect(after.fundsAvailabilityWorkflows).toBe(0);
      // Each movement moved once: two more entries, pending → available.
      for (const b of after.btxns)
        expect(await em().count(LedgerEntry, { balanceTransactionId: b.id })).toBe(entriesBefore.get(b.id)! + 2);
      await replays(id);
    }
  }, 60_000);

  it('money of a subscription an operator terminated is made available by the reconciler once due, once; a running owner keeps its own', async () => {
    const tenant = await engine.signUp({ name: 'Terminated' });
    const customer = await make(tenant, '/v1/customers', {
      email: 'terminated@example.com',
      payment_method: 'pm_card_visa',
    });
    const plan = await make(tenant, '/v1/plans', { name: 'Team', amount: 3300, currency: 'USD', interval: 'month' });
    const terminated = await make(tenant, '/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      trial_period_days: 0,
    });
    const running = await make(tenant, '/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      trial_period_days: 0,
    });
    const [orphan] = (await moneyOf(terminated.id)).btxns;
    const [kept] = (await moneyOf(running.id)).btxns;
    expect([orphan!.status, kept!.status]).toEqual(['pending', 'pending']);
    expect(orphan!.workflowConfirmedAt).not.toBeNull();

    // `temporal workflow terminate`: the subscription's timer for its money goes with it.
    await engine.env.client.workflow.getHandle(terminated.id).terminate('operator: terminate');
    expect(await workflowOf(terminated.id)).toMatchObject({ status: 'TERMINATED' });
    const reconcile = () =>
      activityEnv.run(activities.reconcileOrphanedFunds, stuckAfterMs) as Promise<ReconcileResult>;

    // Not due yet: left pending (only money past its available_on is looked at).
    const early = await reconcile();
    expect(early.reconciled).toBe(0);
    expect((await em().findOneOrFail(BalanceTransaction, { id: orphan!.id })).status).toBe('pending');

    const entriesBefore = await em().count(LedgerEntry, { balanceTransactionId: orphan!.id });
    // Its available_on passes (wall-clock time, which the reconciler reads: moved back rather than waited for).
    const due = new Date(Date.now() - 5 * minute);
    await em().nativeUpdate(BalanceTransaction, { id: { $in: [orphan!.id, kept!.id] } }, { availableOn: due });
    const first = await reconcile();
    expect(first).toMatchObject({ reconciled: 1, failed: 0 });
    expect(first.checked).toBeGreaterThanOrEqual(2);
    expect((await em().findOneOrFail(BalanceTransaction, { id: orphan!.id })).status).toBe('available');
    // The running subscription's money is its own: left to its timer.
    expect((await em().findOneOrFail(BalanceTransaction, { id: kept!.id })).status).toBe('pending');
    expect(await balanceOf(tenant)).toEqual({ available: orphan!.net, pending: kept!.net });
    const entries = await em().count(LedgerEntry, { balanceTransactionId: orphan!.id });
    expect(entries).toBe(entriesBefore + 2);

    // Again (the next run, or another task queue's reconciler at once): nothing changes.
    const again = await Promise.all([reconcile(), reconcile()]);
    expect(again.map((r) => r.reconciled)).toEqual([0, 0]);
    expect(await em().count(LedgerEntry, { balanceTransactionId: orphan!.id })).toBe(entries);
    expect(await balanceOf(tenant)).toEqual({ available: orphan!.net, pending: kept!.net });
    // No availability workflow was started for it either.
    expect(await workflowOf(orphan!.id)).toBeNull();

    // The running subscription still makes its own money available on its timer, once.
    await skipTo((await engine.env.currentTimeMs()) + 2 * day + hour);
    await eventually(
      () => balanceOf(tenant),
      (b) => b.pending === 0,
      20_000,
    );
    expect(await balanceOf(tenant)).toEqual({ available: orphan!.net + kept!.net, pending: 0 });
    expect(await em().count(LedgerEntry, { balanceTransactionId: kept!.id })).toBe(entries);
  }, 60_000);

  it("money of a terminated subscription on a test clock is due by the clock's time: available once the clock passes available_on, once", async () => {
    const { call, make: post, advance } = await clockTenant(engine, 'Terminated on a clock');
    const clock = await post('/v1/test_clocks', { frozen_time: '2036-02-10T08:00:00Z' });
    const customer = await post('/v1/customers', {
      email: 'clocked-terminated@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const plan = await post('/v1/plans', { name: 'Team', amount: 2100, currency: 'USD', interval: 'month' });
    const sub = await post('/v1/subscriptions', { customer_id: customer.id, plan: plan.id, trial_period_days: 0 });
    expect(sub.status).toBe('active');
    const [btxn] = (await moneyOf(sub.id)).btxns;
    expect(btxn).toMatchObject({ status: 'pending', availableOn: new Date('2036-02-12T08:00:00.000Z') });
    await engine.env.client.workflow.getHandle(sub.id).terminate('operator: terminate');
    const reconcile = () =>
      activityEnv.run(activities.reconcileOrphanedFunds, stuckAfterMs) as Promise<ReconcileResult>;

    // Due in 2036 by the clock, whatever the wall clock says: not yet.
    expect((await reconcile()).reconciled).toBe(0);
    await advance(clock.id, '2036-02-12T07:59:00Z');
    expect((await reconcile()).reconciled).toBe(0);
    expect((await em().findOneOrFail(BalanceTransaction, { id: btxn!.id })).status).toBe('pending');
    const entriesBefore = await em().count(LedgerEntry, { balanceTransactionId: btxn!.id });
    // The clock passes available_on (its subscription no longer runs, so nothing else moves the money): available once.
    await advance(clock.id, '2036-02-13T00:00:00Z');
    expect((await reconcile()).reconciled).toBe(1);
    expect((await reconcile()).reconciled).toBe(0);
    const balance = (await call('GET', '/v1/balance')).body;
    expect(balance.available.find((m: { currency: string }) => m.currency === 'USD').amount).toBe(btxn!.net);
    expect(balance.pending.find((m: { currency: string }) => m.currency === 'USD')?.amount ?? 0).toBe(0);
    expect(await em().count(LedgerEntry, { balanceTransactionId: btxn!.id })).toBe(entriesBefore + 2);
  }, 60_000);

  describe('stuck payouts on test clocks', () => {
    const reconcilePayouts = (olderThanMs: number) =>
      activityEnv.run(activities.reconcileStuckPayouts, olderThanMs) as Promise<ReconcileResult>;
    /** A payout id made `agoMs` ago by the wall clock (ids are ULIDs): a payout the API recorded then, and died before starting its workflow. */
    const idFrom = (agoMs: number) =>
      `po_${encodeTime(Date.now() - agoMs, 10).toLowerCase()}${'0'.repeat(15)}${Math.floor(Math.random() * 10)}`;

    it('a payout on a clock a year ahead is reconciled by its wall-clock age, on the clock, pending only for what is left of its window in clock time', async () => {
      const { call, make: post, advance, accountId } = await clockTenant(engine, 'Clocked payouts');
      await post('/v1/bank_accounts', {
        type: 'us_ach',
        account_holder_name: 'Clocked',
        currency: 'USD',
        routing_number: '110000000',
        account_number: '000123456789',
      });
      await post('/v1/transactions', { account_id: accountId, amount: 5000, currency: 'USD', type: 'credit' });
      const clock = await post('/v1/test_clocks', { frozen_time: '2037-05-01T12:00:00Z' });
      // Created 5 minutes ago by the wall clock, at the clock's time (a year ahead), with no workflow: the API died.
      const payout = await onTestClock({ id: clock.id, now: clock.frozen_time }, () =>
        createPayout(em(), {
          id: idFrom(5 * minute),
          accountId,
          livemode: false,
          amount: 1200,
          currency: 'USD',
          description: null,
          testClockId: clock.id,
        }),
      );
      expect(payout.createdAt.toISOString()).toBe('2037-05-01T12:00:00.000Z');
      // A fresh one on the same clock (by the wall clock): not the reconciler's yet.
      const fresh = await onTestClock({ id: clock.id, now: clock.frozen_time }, () =>
        createPayout(em(), {
          accountId,
          livemode: false,
          amount: 100,
          currency: 'USD',
          description: null,
          testClockId: clock.id,
        }),
      );
      // The clock moves on a day meanwhile: nothing waits for a payout with no workflow.
      await advance(clock.id, '2037-05-02T12:00:00Z');
      expect((await call('GET', `/v1/payouts/${payout.id}`)).body.status).toBe('pending');

      const result = await reconcilePayouts(stuckAfterMs);
      expect(result).toMatchObject({ checked: 1, reconciled: 1, failed: 0 });
      expect(await workflowOf(payout.id)).toMatchObject({ type: 'payoutWorkflow' });
      expect(await workflowOf(fresh.id)).toBeNull();
      // Its cancelable minute ended a day ago on the clock: sent now, without the clock moving, in transit for a day of the clock.
      await eventually(
        async () => (await call('GET', `/v1/payouts/${payout.id}`)).body,
        (p) => p.status === 'in_transit',
        20_000,
      );
      expect((await call('GET', `/v1/payouts/${payout.id}`)).body).toMatchObject({
        status: 'in_transit',
        arrival_date: '2037-05-03T12:00:00.000Z',
      });
      // Bound to its clock: an advance past its arrival pays it, at the clock's time.
      await advance(clock.id, '2037-05-04T00:00:00Z');
      expect((await call('GET', `/v1/payouts/${payout.id}`)).body).toMatchObject({
        status: 'paid',
        paid_at: '2037-05-03T12:00:00.000Z',
      });
      // Once: a second run looks at it no more, and starts nothing.
      const second = await reconcilePayouts(stuckAfterMs);
      expect(second.reconciled).toBe(0);
      expect(await em().count(Payout, { id: payout.id, status: 'paid' })).toBe(1);
    }, 60_000);

    it('a payout on a clock in the past is not taken from the API that is about to start it (young by the wall clock); a clock payout still inside its window waits for the rest on the clock', async () => {
      const { call, make: post, advance, accountId } = await clockTenant(engine, 'Past clocked payouts');
      await post('/v1/bank_accounts', {
        type: 'us_ach',
        account_holder_name: 'Past',
        currency: 'USD',
        routing_number: '110000000',
        account_number: '000123456789',
      });
      await post('/v1/transactions', { account_id: accountId, amount: 5000, currency: 'USD', type: 'credit' });
      const clock = await post('/v1/test_clocks', { frozen_time: '2020-01-01T00:00:00Z' });
      // Just committed by an API that starts its workflow next: created "in 2020", but seconds old.
      const young = await onTestClock({ id: clock.id, now: clock.frozen_time }, () =>
        createPayout(em(), {
          accountId,
          livemode: false,
          amount: 300,
          currency: 'USD',
          description: null,
          testClockId: clock.id,
        }),
      );
      const first = await reconcilePayouts(stuckAfterMs);
      expect(first.reconciled).toBe(0);
      expect(await workflowOf(young.id)).toBeNull();
      expect((await em().findOneOrFail(Payout, { id: young.id })).workflowConfirmedAt).toBeNull();

      // Stuck (5 minutes by the wall clock) but still inside its cancelable minute on the clock (the clock has not moved):
      // started with the rest of its window, it stays pending until the clock passes it.
      const stuck = await onTestClock({ id: clock.id, now: clock.frozen_time }, () =>
        createPayout(em(), {
          id: idFrom(5 * minute),
          accountId,
          livemode: false,
          amount: 400,
          currency: 'USD',
          description: null,
          testClockId: clock.id,
        }),
      );
      expect(await reconcilePayouts(stuckAfterMs)).toMatchObject({ checked: 1, reconciled: 1 });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await call('GET', `/v1/payouts/${stuck.id}`)).body.status).toBe('pending');
      await advance(clock.id, '2020-01-01T00:00:59Z');
      expect((await call('GET', `/v1/payouts/${stuck.id}`)).body.status).toBe('pending');
      await advance(clock.id, '2020-01-01T00:01:00Z');
      expect((await call('GET', `/v1/payouts/${stuck.id}`)).body).toMatchObject({
        status: 'in_transit',
        arrival_date: '2020-01-02T00:01:00.000Z',
      });
    }, 60_000);
  });
});
