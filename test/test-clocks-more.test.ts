import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TestClock } from '../db/entities/index.ts';
import { deleteExpiredTestClocks, testClockLifetimeMs } from '../services/test-clocks/clocks.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

/**
 * Test clocks, the parts test/test-clocks.test.ts does not drive: webhook retries on a
 * clock, deletes_after, ... Only HTTP calls (and, for deletes_after, the maintenance step
 * called directly with the wall clock 30 days on) to the API and a real webhook receiver; no Temporal time is
 * skipped (the clocks move because they are advanced).
 */
describe('test clocks (webhooks, ...)', () => {
  let engine: TestEngine;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    engine = await startTestEngine();
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await engine?.close();
  });

  const tenant = (name: string) => clockTenant(engine, name);

  it("retries a failed webhook delivery on the clock's time, and the clock waits for the retries", async () => {
    const { call, make, advance } = await tenant('Hooked on a clock');
    // The receiver fails the first three deliveries of this path, then takes them.
    let seen = 0;
    receiver.respond = (r) => (r.path === '/clocked' ? (++seen <= 3 ? 500 : 200) : 200);
    const endpoint = await make('/v1/webhooks', { url: receiver.url('/clocked'), events: ['invoice.paid'] });
    const clock = await make('/v1/test_clocks', { frozen_time: '2033-05-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'hooked@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const plan = await make('/v1/plans', { name: 'Hooked', amount: 1500, currency: 'USD', interval: 'month' });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(sub).toMatchObject({ status: 'active', created_at: '2033-05-01T00:00:00.000Z' });

    // The first attempt goes at once (at the clock's time) and fails; the retry waits for the clock, however long the wall clock runs.
    await receiver.waitFor(1, (r) => r.path === '/clocked');
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.received.filter((r) => r.path === '/clocked')).toHaveLength(1);

    // An hour on: attempts 2 (5 s later), 3 (1 min after that) and 4 (5 min after that, which succeeds), all before `ready`.
    await advance(clock.id, '2033-05-01T01:00:00Z');
    const got = receiver.received.filter((r) => r.path === '/clocked');
    expect(got.map((r) => r.status)).toEqual([500, 500, 500, 200]);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const deliveries = (await call('GET', `/v1/webhooks/${endpoint.id}/deliveries`)).body.data as {
      status: string;
      attempts: { attempt: number; attempted_at: string; status_code: number | null }[];
    }[];
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.status).toBe('succeeded');
    expect(deliveries[0]!.attempts.map((a) => [a.attempt, a.attempted_at, a.status_code])).toEqual([
      [1, '2033-05-01T00:00:00.000Z', 500],
      [2, '2033-05-01T00:00:05.000Z', 500],
      [3, '2033-05-01T00:01:05.000Z', 500],
      [4, '2033-05-01T00:06:05.000Z', 200],
    ]);
    // Nothing more is due: the next advance sends nothing.
    await advance(clock.id, '2033-05-02T00:00:00Z');
    expect(receiver.received.filter((r) => r.path === '/clocked')).toHaveLength(4);
  }, 60_000);

  /** The clock workflow's 1 ms timers (the wait, after an instant's webhook hand-off, for registrations made during it). */
  async function oneMsTimers(clockId: string): Promise<number> {
    const history = await engine.env.client.workflow.getHandle(clockId).fetchHistory();
    return (history.events ?? []).filter((e) => {
      const timeout = e.timerStartedEventAttributes?.startToFireTimeout;
      // seconds: a Long (or unset), nanos: a number.
      return timeout && String(timeout.seconds ?? 0) === '0' && timeout.nanos === 1_000_000;
    }).length;
  }

  /** A clock at 2033-06-01 with one customer's 10-day trial of a 12.00 monthly plan on it. */
  async function trialOnClock(t: { make: (url: string, body: unknown) => Promise<any> }, email: string) {
    const clock = await t.make('/v1/test_clocks', { frozen_time: '2033-06-01T00:00:00Z' });
    const customer = await t.make('/v1/customers', { email, payment_method: 'pm_card_visa', test_clock: clock.id });
    const plan = await t.make('/v1/plans', {
      name: 'Trial',
      amount: 1200,
      currency: 'USD',
      interval: 'month',
      trial_period_days: 10,
    });
    await t.make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    return clock;
  }

  it('waits for the retries of a delivery failing during the hand-off of its instant (issue #24), and ends an instant with no delivery pending without a timer (issue #29)', async () => {
    // A trial ends inside the advance: its invoice.paid is recorded by the instant's work and its delivery fails
    // while the clock waits for the hand-off, so the clock hears of its retry workflow only after that wait.
    const hooked = await tenant('Hooked at the trial end');
    let seen = 0;
    receiver.respond = (r) => (r.path === '/trial-end' ? (++seen <= 2 ? 500 : 200) : 200);
    const clock = await trialOnClock(hooked, 'trial@example.com');
    // Made after the subscription: only the events of the advance reach it.
    await hooked.make('/v1/webhooks', { url: receiver.url('/trial-end'), events: ['invoice.paid'] });
    await hooked.advance(clock.id, '2033-06-11T01:00:00Z');
    // Attempts 1 (at the trial end), 2 (5 s later) and 3 (a minute after that), all before `ready`.
    expect(receiver.received.filter((r) => r.path === '/trial-end').map((r) => r.status)).toEqual([500, 500, 200]);
    // Without the 1 ms timer the clock of before the table needed (patch test-clock-sleep-only-if-bound): the retry's
    // registration is a row in the clock's table, written before its event was marked handed on, so the clock's next
    // step sees it (patch test-clock-registry-in-table, services/test-clocks/registry.ts).
    expect(await oneMsTimers(clock.id)).toBe(0);

    // The same advance on an account without endpoints: no delivery, so no timer after any instant's hand-off.
    const quiet = await tenant('No endpoints');
    const quietClock = await trialOnClock(quiet, 'quiet@example.com');
    await quiet.advance(quietClock.id, '2033-06-11T01:00:00Z');
    const invoices = (await quiet.call('GET', `/v1/invoices?test_clock=${quietClock.id}`)).body.data as {
      status: string;
    }[];
    expect(invoices.filter((i) => i.status === 'paid').length).toBeGreaterThan(0);
    expect(await oneMsTimers(quietClock.id)).toBe(0);
  }, 90_000);

  it('deletes a clock and everything on it once deletes_after has passed', async () => {
    const { call, make } = await tenant('Expiring clocks');
    const old = await make('/v1/test_clocks', { frozen_time: '2034-01-01T00:00:00Z', name: 'old' });
    const customer = await make('/v1/customers', {
      email: 'expiring@example.com',
      payment_method: 'pm_card_visa',
      test_clock: old.id,
    });
    const plan = await make('/v1/plans', { name: 'Expiring', amount: 700, currency: 'USD', interval: 'month' });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    // The documented period: 30 days of wall time after the clock was made.
    expect(Date.parse(old.deletes_after) - Date.parse(old.created_at)).toBe(testClockLifetimeMs);
    expect(testClockLifetimeMs).toBe(30 * 86_400_000);
    // A second clock, made later, whose deletes_after has not come yet when the first one's has.
    const young = await make('/v1/test_clocks', { frozen_time: '2034-01-01T00:00:00Z', name: 'young' });
    await engine.db.orm.em
      .fork()
      .nativeUpdate(TestClock, { id: young.id }, { deletesAfter: new Date(Date.parse(old.deletes_after) + 60_000) });

    // At its deletes_after it stays (deleted only once that has passed); the clocks of the earlier tests here, made
    // before it (some a few ms before), go now, so the count below is this clock's alone.
    await deleteExpiredTestClocks(
      { temporal: { client: engine.env.client } },
      engine.db.orm.em.fork(),
      new Date(Date.parse(old.deletes_after)),
    );
    expect((await call('GET', `/v1/test_clocks/${old.id}`)).status).toBe(200);
    // Past it: the old clock goes with its customer, subscription (and its workflow); the young one stays.
    expect(
      await deleteExpiredTestClocks(
        { temporal: { client: engine.env.client } },
        engine.db.orm.em.fork(),
        new Date(Date.parse(old.deletes_after) + 1_000),
      ),
    ).toBe(1);
    expect((await call('GET', `/v1/test_clocks/${old.id}`)).status).toBe(404);
    expect((await call('GET', `/v1/customers/${customer.id}`)).status).toBe(404);
    expect((await call('GET', `/v1/subscriptions/${sub.id}`)).status).toBe(404);
    const described = await engine.env.client.workflow
      .getHandle(sub.id)
      .describe()
      .catch((error) => (error instanceof WorkflowNotFoundError ? null : Promise.reject(error)));
    expect(described?.status.name).toBe('TERMINATED');
    expect((await call('GET', `/v1/test_clocks/${young.id}`)).body).toMatchObject({ id: young.id, status: 'ready' });
    const events = (await call('GET', '/v1/events?limit=100')).body.data as {
      type: string;
      data: { object: { id: string } };
    }[];
    expect(events.some((e) => e.type === 'test_clock.deleted' && e.data.object.id === old.id)).toBe(true);
  }, 30_000);

  it('lists of payment requests and transactions leave clock objects out unless test_clock is given', async () => {
    const { call, make, accountId, liveHeaders } = await tenant('Listed on a clock');
    const clock = await make('/v1/test_clocks', { frozen_time: '2035-02-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'listed@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const plan = await make('/v1/plans', { name: 'Listed', amount: 1100, currency: 'USD', interval: 'month' });
    await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    const onClock = await make('/api/v1/payment-requests', {
      type: 'one_time',
      amount: 800,
      currency: 'USD',
      customer_email: 'clocked-payer@example.com',
      test_clock: clock.id,
    });
    const offClock = await make('/api/v1/payment-requests', {
      type: 'one_time',
      amount: 900,
      currency: 'USD',
      customer_email: 'payer@example.com',
    });
    const payment = await make('/v1/transactions', {
      account_id: accountId,
      amount: 2500,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_card_visa',
    });
    const ids = async (path: string) => ((await call('GET', path)).body.data as { id: string }[]).map((x) => x.id);

    expect(await ids('/v1/payments')).toEqual([offClock.id]);
    expect(await ids(`/v1/payments?test_clock=${clock.id}`)).toEqual([onClock.id]);
    const clockTransactions = await ids(`/v1/transactions?test_clock=${clock.id}`);
    expect(clockTransactions.length).toBeGreaterThanOrEqual(1); // the subscription's first charge
    const listed = await ids('/v1/transactions');
    expect(listed).toContain(payment.id);
    expect(listed.filter((id) => clockTransactions.includes(id))).toEqual([]);
    // Live mode has no clocks: the filter finds nothing there.
    const live = await engine.call('GET', `/v1/transactions?test_clock=${clock.id}`, undefined, liveHeaders);
    expect(live.status).toBe(200);
    expect(live.body.data).toEqual([]);
  }, 30_000);

  it("a payment made with POST /v1/transactions for a customer on a clock takes the clock's time", async () => {
    const { call, make, advance, accountId } = await tenant('Paid on a clock');
    const clock = await make('/v1/test_clocks', { frozen_time: '2036-07-01T12:00:00Z' });
    const customer = await make('/v1/customers', { email: 'payer-on-clock@example.com', test_clock: clock.id });
    const balance = async () => {
      const body = (await call('GET', '/v1/balance')).body;
      const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
      return { available: of(body.available), pending: of(body.pending) };
    };
    const payment = await make('/v1/transactions', {
      account_id: accountId,
      amount: 4200,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_card_visa',
      customer: customer.id,
    });
    expect(payment).toMatchObject({ status: 'succeeded', created_at: '2036-07-01T12:00:00.000Z' });
    expect(
      (await call('GET', `/v1/transactions?test_clock=${clock.id}`)).body.data.map((t: { id: string }) => t.id),
    ).toEqual([payment.id]);
    // Pending for two days of the clock, however long the wall clock runs.
    expect(await balance()).toEqual({ available: 0, pending: 4200 });
    await advance(clock.id, '2036-07-03T11:59:00Z');
    expect(await balance()).toEqual({ available: 0, pending: 4200 });
    await advance(clock.id, '2036-07-03T12:00:00Z');
    expect(await balance()).toEqual({ available: 4200, pending: 0 });
    // Bad input changes nothing: another account's customer, a customer on a non-payment.
    const other = await engine.signUp({ name: 'Someone else' });
    const theirs = (
      await engine.call(
        'POST',
        '/v1/customers',
        { email: 'theirs@example.com' },
        { ...other.headers, 'x-sandbox-mode': 'true' },
      )
    ).body;
    const refused = await call('POST', '/v1/transactions', {
      account_id: accountId,
      amount: 100,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_card_visa',
      customer: theirs.id,
    });
    expect(refused.status).toBe(404);
    expect(refused.body.error).toBe('not_found');
    const credit = await call('POST', '/v1/transactions', {
      account_id: accountId,
      amount: 100,
      currency: 'USD',
      type: 'credit',
      customer: customer.id,
    });
    expect(credit.status).toBe(400);
    expect(await balance()).toEqual({ available: 4200, pending: 0 });
  }, 40_000);
});
