import os from 'node:os';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const day = 86_400_000;

/**
 * Test clocks, as a user's own test drives them: only HTTP calls to the API. Nothing
 * here skips Temporal's time (no env.sleep): the clocks move because they are advanced,
 * which is how they work on the dev server and in production sandboxes too.
 */
describe('test clocks', () => {
  let engine: TestEngine;
  let sandbox: Record<string, string>;
  beforeAll(async () => {
    engine = await startTestEngine();
    sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
  });
  afterAll(() => engine?.close());

  const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, sandbox);
  async function created(path: string, body: unknown) {
    const response = await call('POST', path, body);
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body;
  }
  /** Advances and polls until ready; returns the wall time it took (ms). */
  async function advance(clockId: string, to: string | number): Promise<number> {
    const started = Date.now();
    const answer = await call('POST', `/v1/test_clocks/${clockId}/advance`, { frozen_time: to });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.status).toBe('advancing');
    for (;;) {
      const clock = (await call('GET', `/v1/test_clocks/${clockId}`)).body;
      if (clock.status === 'ready') {
        expect(clock.frozen_time).toBe(new Date(to).toISOString());
        return Date.now() - started;
      }
      expect(clock.status, JSON.stringify(clock)).toBe('advancing');
      if (Date.now() - started > 20_000) throw new Error(`clock ${clockId} still advancing after 20 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const subscription = async (id: string) => (await call('GET', `/v1/subscriptions/${id}`)).body;

  it('live mode has no test clocks', async () => {
    const live = await engine.call('POST', '/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' });
    expect(live.status).toBe(400);
    expect(live.body.error).toBe('livemode_not_allowed');
    expect((await engine.call('GET', '/v1/test_clocks')).body.error).toBe('livemode_not_allowed');
  });

  it('runs a trial, 12 monthly renewals, then dunning to cancel, by advancing a clock', async () => {
    const wallStart = Date.now();
    const clock = await created('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z', name: 'A year of Pro' });
    expect(clock).toMatchObject({
      object: 'test_clock',
      status: 'ready',
      frozen_time: '2027-01-01T00:00:00.000Z',
      name: 'A year of Pro',
      livemode: false,
    });
    expect(Date.parse(clock.deletes_after)).toBeGreaterThan(Date.now());
    const customer = await created('/v1/customers', {
      email: 'clocked@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    expect(customer.test_clock).toBe(clock.id);
    const plan = await created('/v1/plans', {
      name: 'Pro',
      amount: 2000,
      currency: 'USD',
      interval: 'month',
      trial_period_days: 30,
    });
    const sub = await created('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(sub).toMatchObject({
      status: 'trialing',
      trial_start: '2027-01-01T00:00:00.000Z',
      trial_end: '2027-01-31T00:00:00.000Z',
      created_at: '2027-01-01T00:00:00.000Z',
    });

    // Objects on a clock stay out of lists unless asked for.
    expect((await call('GET', '/v1/subscriptions')).body.data.map((s: { id: string }) => s.id)).not.toContain(sub.id);
    expect((await call('GET', '/v1/customers')).body.data.map((c: { id: string }) => c.id)).not.toContain(customer.id);
    expect(
      (await call('GET', `/v1/subscriptions?test_clock=${clock.id}`)).body.data.map((s: { id: string }) => s.id),
    ).toEqual([sub.id]);
    expect(
      (await call('GET', `/v1/customers?test_clock=${clock.id}`)).body.data.map((c: { id: string }) => c.id),
    ).toEqual([customer.id]);

    // A month before the trial ends: nothing happens.
    const timings: number[] = [];
    timings.push(await advance(clock.id, '2027-01-15T00:00:00Z'));
    expect(await subscription(sub.id)).toMatchObject({ status: 'trialing' });

    // Trial end (January 31st), then the 12 renewals: Feb 28, Mar 31, Apr 30, ... Jan 31.
    const dates = ['2027-01-31'];
    for (let m = 1; m <= 12; m++) {
      const last = new Date(Date.UTC(2027, m + 1, 0)); // the last day of month m (0-based), 2027-02-28 first
      dates.push(last.toISOString().slice(0, 10));
    }
    expect(dates.slice(0, 4)).toEqual(['2027-01-31', '2027-02-28', '2027-03-31', '2027-04-30']);
    expect(dates.at(-1)).toBe('2028-01-31');
    for (const [cycle, date] of dates.entries()) {
      timings.push(await advance(clock.id, `${date}T00:00:00Z`));
      const s = await subscription(sub.id);
      expect(s, date).toMatchObject({
        status: 'active',
        billing_cycle: cycle,
        current_period_start: `${date}T00:00:00.000Z`,
      });
      expect(s.updated_at).toBe(`${date}T00:00:00.000Z`);
    }
    const invoices = (await call('GET', `/v1/invoices?subscription=${sub.id}&limit=100`)).body;
    const paid = (invoices.data ?? []).filter((i: { status: string }) => i.status === 'paid');
    expect(paid.length, JSON.stringify(invoices).slice(0, 500)).toBe(13);
    expect(paid.map((i: { created_at: string }) => i.created_at.slice(0, 10)).sort()).toEqual(dates);

    // The card starts declining: the February 29th renewal fails, four attempts, then the grace period, then cancel.
    expect(
      (await call('POST', `/v1/customers/${customer.id}`, { payment_method: 'pm_card_chargeDeclined' })).status,
    ).toBe(200);
    const failed = () =>
      engine.mail.messages.filter(
        (m) => m.envelopeTo.includes('clocked@example.com') && /Payment failed/.test(m.parsed.subject ?? ''),
      );
    timings.push(await advance(clock.id, '2028-02-29T00:00:00Z'));
    expect(await subscription(sub.id)).toMatchObject({ status: 'past_due', billing_cycle: 13 });
    expect(failed()).toHaveLength(1);
    const retries = [
      ['2028-03-01T00:00:00Z', 2], // 24 h
      ['2028-03-03T00:00:00Z', 3], // 3 d
      ['2028-03-07T00:00:00Z', 4], // 7 d
    ] as const;
    for (const [at, attempts] of retries) {
      timings.push(await advance(clock.id, at));
      expect((await subscription(sub.id)).status).toBe('past_due');
      expect(failed().length, at).toBe(attempts);
    }
    // The grace period (7 days by default) after the last attempt: canceled on March 14th.
    timings.push(await advance(clock.id, '2028-03-13T23:00:00Z'));
    expect((await subscription(sub.id)).status).toBe('past_due');
    timings.push(await advance(clock.id, '2028-03-14T00:00:00Z'));
    expect(await subscription(sub.id)).toMatchObject({ status: 'canceled', canceled_at: '2028-03-14T00:00:00.000Z' });
    expect(
      engine.mail.messages.some(
        (m) => m.envelopeTo.includes('clocked@example.com') && /has been canceled/.test(m.parsed.subject ?? ''),
      ),
    ).toBe(true);

    const wall = Date.now() - wallStart;
    console.log(
      `test clock: ${timings.length} advances, each ready in ${Math.min(...timings)}-${Math.max(...timings)} ms (mean ${Math.round(timings.reduce((a, b) => a + b, 0) / timings.length)} ms: ${timings.join(' ')}); the whole run ${wall} ms`,
    );
    // The goal: each advance ready in under 2 s, the whole year in under 15 s, on a machine
    // that is not busy with other work; on a shared, loaded machine (2 cores at load 10+)
    // everything here runs several times slower, so the bounds grow with the load.
    const load = Math.max(1, os.loadavg()[0]! / os.cpus().length);
    const slack = load <= 2 ? 1 : Math.min(4, load / 2);
    for (const t of timings) expect(t).toBeLessThan(2_000 * slack);
    expect(wall).toBeLessThan(15_000 * slack);
  }, 60_000);

  it("two clocks advanced at the same time do not see each other's time", async () => {
    const plan = await created('/v1/plans', {
      name: 'Basic',
      amount: 900,
      currency: 'USD',
      interval: 'month',
      trial_period_days: 10,
    });
    const clocks = await Promise.all(
      ['2030-06-01T00:00:00Z', '2031-01-01T00:00:00Z'].map((t) => created('/v1/test_clocks', { frozen_time: t })),
    );
    const subs = [];
    for (const clock of clocks) {
      const customer = await created('/v1/customers', {
        email: `${clock.id}@example.com`,
        payment_method: 'pm_card_visa',
        test_clock: clock.id,
      });
      subs.push(await created('/v1/subscriptions', { customer_id: customer.id, plan: plan.id }));
    }
    expect(subs.map((s) => s.trial_end)).toEqual(['2030-06-11T00:00:00.000Z', '2031-01-11T00:00:00.000Z']);
    const targets = [Date.parse('2030-06-11T00:00:00Z') + 40 * day, Date.parse('2031-01-11T00:00:00Z') + 5 * day];
    await Promise.all(clocks.map((clock, i) => advance(clock.id, new Date(targets[i]!).toISOString())));
    const [a, b] = await Promise.all(subs.map((s) => subscription(s.id)));
    // The first: trial end June 11th, renewed July 11th; the second: trial end only.
    expect(a).toMatchObject({
      status: 'active',
      billing_cycle: 1,
      current_period_start: '2030-07-11T00:00:00.000Z',
      updated_at: '2030-07-11T00:00:00.000Z',
    });
    expect(b).toMatchObject({
      status: 'active',
      billing_cycle: 0,
      current_period_start: '2031-01-11T00:00:00.000Z',
      updated_at: '2031-01-11T00:00:00.000Z',
    });
  }, 30_000);

  it('moves forward only, one advance at a time, and deletes with everything on it', async () => {
    const clock = await created('/v1/test_clocks', { frozen_time: 1893456000 }); // 2030-01-01, Unix seconds as Stripe takes it
    expect(clock.frozen_time).toBe('2030-01-01T00:00:00.000Z');
    const back = await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: '2029-12-31T00:00:00Z' });
    expect(back.status).toBe(400);
    expect(back.body.error).toBe('invalid_request');
    const listed = (await call('GET', '/v1/test_clocks')).body.data.map((c: { id: string }) => c.id);
    expect(listed).toContain(clock.id);
    const customer = await created('/v1/customers', {
      email: 'gone@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const plan = await created('/v1/plans', { name: 'Gone', amount: 500, currency: 'USD', interval: 'month' });
    const sub = await created('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(sub.status).toBe('active');
    const deleted = await call('DELETE', `/v1/test_clocks/${clock.id}`);
    expect(deleted.body).toEqual({ id: clock.id, object: 'test_clock', deleted: true });
    expect((await call('GET', `/v1/test_clocks/${clock.id}`)).status).toBe(404);
    expect((await call('GET', `/v1/customers/${customer.id}`)).status).toBe(404);
    expect((await call('GET', `/v1/subscriptions/${sub.id}`)).status).toBe(404);
    // Another account never sees a clock.
    const other = await engine.signUp();
    const theirs = await created('/v1/test_clocks', { frozen_time: '2030-01-01T00:00:00Z' });
    expect(
      (
        await engine.call('GET', `/v1/test_clocks/${theirs.id}`, undefined, {
          ...other.headers,
          'x-sandbox-mode': 'true',
        })
      ).status,
    ).toBe(404);
  }, 30_000);
  it('payment requests expire, recurring requests issue and money becomes available on the clock', async () => {
    const tenant = await engine.signUp({ name: 'Clocked Ltd' });
    const headers = { ...tenant.headers, 'x-sandbox-mode': 'true' };
    const as = (method: string, path: string, body?: unknown) => engine.call(method, path, body, headers);
    const make = async (path: string, body: unknown) => {
      const response = await as('POST', path, body);
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body;
    };
    const balance = async () => {
      const body = (await as('GET', '/v1/balance')).body;
      const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
      return { available: of(body.available), pending: of(body.pending) };
    };
    const clock = await make('/v1/test_clocks', { frozen_time: '2032-03-01T00:00:00Z' });
    const run = async (to: string) => {
      const answer = await as('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: to });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      for (let i = 0; i < 500; i++) {
        const c = (await as('GET', `/v1/test_clocks/${clock.id}`)).body;
        if (c.status === 'ready') return c;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('not ready');
    };

    // A one-off request that expires in an hour, on the clock.
    const request = await make('/api/v1/payment-requests', {
      type: 'one_time',
      amount: 1200,
      currency: 'USD',
      customer_email: 'payer@example.com',
      expires_in: 3600,
      test_clock: clock.id,
    });
    expect(request).toMatchObject({
      status: 'pending',
      created_at: '2032-03-01T00:00:00.000Z',
      expires_at: '2032-03-01T01:00:00.000Z',
    });
    // A recurring one, monthly.
    const recurring = await make('/api/v1/payment-requests', {
      type: 'recurring',
      interval: 'month',
      amount: 500,
      currency: 'USD',
      customer_email: 'monthly@example.com',
      test_clock: clock.id,
    });
    // A subscription without a trial, charged at once: its money is pending for two days (of the clock).
    const customer = await make('/v1/customers', {
      email: 'card@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const plan = await make('/v1/plans', { name: 'Bank plan', amount: 3000, currency: 'USD', interval: 'month' });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(sub.created_at).toBe('2032-03-01T00:00:00.000Z');

    await run('2032-03-01T00:59:00Z');
    expect((await as('GET', `/v1/payments/${request.id}`)).body.status).toBe('pending');
    await run('2032-03-01T01:00:00Z');
    expect((await as('GET', `/v1/payments/${request.id}`)).body).toMatchObject({
      status: 'failed',
      updated_at: '2032-03-01T01:00:00.000Z',
    });

    expect(await balance()).toEqual({ available: 0, pending: 3000 });
    await run('2032-03-02T23:59:00Z');
    expect(await balance()).toEqual({ available: 0, pending: 3000 });
    await run('2032-03-03T00:00:00Z'); // available two days after the charge
    expect(await balance()).toEqual({ available: 3000, pending: 0 });

    await run('2032-04-01T00:00:00Z'); // a month later: the recurring request's second period, the subscription's renewal
    const r = (await as('GET', `/api/v1/payment-requests/${recurring.id}`)).body;
    expect(r, JSON.stringify(r)).toMatchObject({ status: 'active' });
    expect(r.latest_payment_request_id).not.toBeNull();
    const latest = (await as('GET', `/v1/payments/${r.latest_payment_request_id}`)).body;
    expect(latest).toMatchObject({ status: 'pending', created_at: '2032-04-01T00:00:00.000Z' });
    expect((await as('GET', `/v1/subscriptions/${sub.id}`)).body).toMatchObject({
      billing_cycle: 1,
      current_period_start: '2032-04-01T00:00:00.000Z',
    });
    // Events of objects on the clock carry its time.
    const events = (await as('GET', '/v1/events?limit=100')).body.data as {
      type: string;
      created_at: string;
      data: { object: { id: string } };
    }[];
    const failedEvent = events.find((e) => e.type === 'payment_request.failed' && e.data.object.id === request.id);
    expect(failedEvent?.created_at).toBe('2032-03-01T01:00:00.000Z');
    expect(events.filter((e) => e.type === 'test_clock.ready').length).toBeGreaterThanOrEqual(5);
  }, 40_000);
});
