import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const hour = 3_600_000;
const day = 24 * hour;
const errorShape = (code: string) => ({ error: code, message: expect.any(String) });

/** The whole life of subscriptions, driven by workflow timers in skipped time. Each takes seconds of wall time on a quiet machine. */
describe('subscription lifecycle', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const now = () => engine.env.currentTimeMs();
  const get = async (id: string) => (await engine.call('GET', `/v1/subscriptions/${id}`)).body;
  const post = (path: string, body?: unknown) => engine.call('POST', path, body);
  /** Skips time to `instant` (ms) if it is still ahead. */
  async function skipTo(instant: number) {
    const ahead = instant - (await now());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  async function plan(amount: number, interval = 'month', extra: Record<string, unknown> = {}) {
    const created = await post('/v1/plans', {
      name: `Plan ${amount}/${interval}`,
      amount,
      currency: 'USD',
      interval,
      ...extra,
    });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  async function customer(paymentMethod: string | null = 'pm_card_visa') {
    const created = await post('/v1/customers', {
      email: 'grace@example.com',
      name: 'Grace',
      ...(paymentMethod ? { payment_method: paymentMethod } : {}),
    });
    return created.body.id as string;
  }
  async function subscribe(body: Record<string, unknown>) {
    const created = await post('/v1/subscriptions', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }

  it('a trial, then 12 monthly charges on calendar-correct dates from January 31', async () => {
    const wall = Date.now();
    // Start at the next January 1st 00:00 UTC: a 30-day trial ends January 31st.
    const today = new Date(await now());
    await skipTo(Date.UTC(today.getUTCFullYear() + 1, 0, 1));
    const year = new Date(await now()).getUTCFullYear();
    const { customerId, planId } = await seedCustomerAndPlan(engine, { amount: 1500, trial_period_days: 30 });
    const sub = await subscribe({ customer_id: customerId, plan: planId });
    expect(sub.status).toBe('trialing');
    // Real seconds pass while the test sets up: billing keeps the anchor's time of day.
    const timeOfDay = Date.parse(sub.trial_end) - Date.UTC(year, 0, 31);
    expect(timeOfDay).toBeGreaterThanOrEqual(0);
    expect(timeOfDay).toBeLessThan(hour);

    // Just before the 13th billing date (January 31st a year later).
    await skipTo(Date.UTC(year + 1, 0, 30));
    const s = await eventually(
      () => engine.subscription(sub.id),
      (r) => r?.billingCycle === 11,
    );
    const charges = await engine.charges(sub.id);
    expect(charges).toHaveLength(12);
    expect(charges.every((c) => c.amount === 1500 && c.status === 'succeeded')).toBe(true);
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    const expectedStarts = [
      [0, 31],
      [1, leap ? 29 : 28],
      [2, 31],
      [3, 30],
      [4, 31],
      [5, 30],
      [6, 31],
      [7, 31],
      [8, 30],
      [9, 31],
      [10, 30],
      [11, 31],
    ].map(([month, date]) => new Date(Date.UTC(year, month!, date) + timeOfDay).toISOString());
    const invoices = await engine.invoices(sub.id);
    expect(invoices.map((i) => i.periodStart.toISOString())).toEqual(expectedStarts);
    expect(invoices.every((i) => i.status === 'paid')).toBe(true);
    expect(s!.currentPeriodEnd!.toISOString()).toBe(new Date(Date.UTC(year + 1, 0, 31) + timeOfDay).toISOString());
    // Months of skipped time in seconds of wall time: a year of real waiting could never pass this. The bound is
    // loose on purpose (a loaded 2-core machine took 17 s); speed itself is measured by the benchmarks.
    expect(Date.now() - wall).toBeLessThan(60_000);
  });

  it('a trial canceled before it ends: canceled, nothing charged; canceling again is 409', async () => {
    const { customerId, planId } = await seedCustomerAndPlan(engine);
    const sub = await subscribe({ customer_id: customerId, plan: planId, trial_period_days: 14 });
    await engine.env.sleep(3 * day);
    const canceled = await post(`/v1/subscriptions/${sub.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({
      status: 'canceled',
      ended_reason: 'requested',
      canceled_at: expect.any(String),
    });
    expect(await get(sub.id)).toEqual(canceled.body);
    await engine.env.sleep(20 * day);
    expect(await engine.charges(sub.id)).toHaveLength(0);
    expect(await engine.invoices(sub.id)).toHaveLength(0);
    const again = await post(`/v1/subscriptions/${sub.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body).toEqual(errorShape('invalid_state'));
    expect((await post(`/v1/subscriptions/${sub.id}/pause`)).body).toEqual(errorShape('invalid_state'));
  });

  it('a trial that ends with no payment method expires without a charge', async () => {
    const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 7 }, null);
    const sub = await subscribe({ customer_id: customerId, plan: planId });
    await engine.env.sleep(8 * day);
    const expired = await eventually(
      () => get(sub.id),
      (s) => s.status === 'expired',
    );
    expect(expired).toMatchObject({ ended_reason: 'trial_without_payment_method' });
    expect((await engine.charges(sub.id)).filter((c) => c.status === 'succeeded')).toHaveLength(0);
    expect((await engine.invoices(sub.id)).map((i) => i.status)).toEqual(['void']);
  });

  it('an upgrade mid-cycle charges the exact prorated difference now, on proration lines', async () => {
    const basic = await plan(3000);
    const pro = await plan(9000);
    const sub = await subscribe({ customer_id: await customer(), plan: basic, trial_period_days: 0 });
    expect(sub.status).toBe('active');
    const start = Date.parse(sub.current_period_start);
    const end = Date.parse(sub.current_period_end);
    await engine.env.sleep(10 * day + 7 * hour);
    const at = await now();
    const upgraded = await post(`/v1/subscriptions/${sub.id}/update`, { plan: pro });
    expect(upgraded.status, JSON.stringify(upgraded.body)).toBe(200);
    expect(upgraded.body).toMatchObject({
      status: 'active',
      plan: pro,
      pending_plan: null,
      current_period_end: sub.current_period_end,
    });
    // Rounded half up per line, from the test's own arithmetic.
    const fraction = (end - at) / (end - start);
    const credit = Math.round(3000 * fraction);
    const charge = Math.round(9000 * fraction);
    const invoices = await engine.invoices(sub.id);
    const proration = invoices.find((i) => i.id === upgraded.body.latest_invoice)!;
    expect(proration.lines.map((l) => [l.amount, l.proration])).toEqual([
      [-credit, true],
      [charge, true],
    ]);
    expect(proration).toMatchObject({ total: charge - credit, amountPaid: charge - credit, status: 'paid' });
    const charges = await engine.charges();
    expect(charges.find((c) => c.idempotencyKey.startsWith(`${sub.id}:plan_change:`))!.amount).toBe(charge - credit);
    // The next renewal bills the new plan in full.
    await skipTo(end + hour);
    await eventually(
      () => engine.subscription(sub.id),
      (s) => s?.billingCycle === 1,
    );
    expect((await engine.charges(sub.id)).at(-1)!.amount).toBe(9000);
  });

  it('a declined upgrade changes nothing (402 payment_failed)', async () => {
    const basic = await plan(1000);
    const pro = await plan(5000);
    const customerId = await customer();
    const sub = await subscribe({ customer_id: customerId, plan: basic, trial_period_days: 0 });
    await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_chargeDeclined' });
    await engine.env.sleep(5 * day);
    const refused = await post(`/v1/subscriptions/${sub.id}/update`, { plan: pro });
    expect(refused.status).toBe(402);
    expect(refused.body).toEqual(errorShape('payment_failed'));
    expect(await get(sub.id)).toMatchObject({ status: 'active', plan: basic, latest_invoice: sub.latest_invoice });
    expect((await engine.invoices(sub.id)).map((i) => i.status).sort()).toEqual(['paid', 'void']);
  });

  it('a downgrade waits for the next renewal, visible as pending_plan', async () => {
    const pro = await plan(9000);
    const basic = await plan(3000);
    const sub = await subscribe({ customer_id: await customer(), plan: pro, trial_period_days: 0 });
    await engine.env.sleep(4 * day);
    const changed = await engine.call('POST', `/v1/subscriptions/${sub.id}/update`, `plan=${basic}`, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(changed.body).toMatchObject({ plan: pro, pending_plan: basic });
    expect(await engine.charges(sub.id)).toHaveLength(1);
    await skipTo(Date.parse(sub.current_period_end) + hour);
    const renewed = await eventually(
      () => get(sub.id),
      (s) => s.billing_cycle === 1,
    );
    expect(renewed).toMatchObject({ plan: basic, pending_plan: null });
    expect((await engine.charges(sub.id)).map((c) => c.amount)).toEqual([9000, 3000]);
    expect((await post(`/v1/subscriptions/${sub.id}/update`, { plan: basic })).body).toEqual(
      errorShape('invalid_state'),
    );
  });

  it('pause without pause_until stops billing; resume after the paid period starts a new one, charged at once', async () => {
    const sub = await subscribe({ customer_id: await customer(), plan: await plan(2500), trial_period_days: 0 });
    await engine.env.sleep(10 * day);
    const paused = await post(`/v1/subscriptions/${sub.id}/pause`);
    expect(paused.body).toMatchObject({
      status: 'paused',
      pause_collection: { resumes_at: null, reason: 'requested' },
    });
    expect((await post(`/v1/subscriptions/${sub.id}/pause`)).body).toEqual(errorShape('invalid_state'));
    await engine.env.sleep(60 * day);
    expect(await engine.charges(sub.id)).toHaveLength(1);
    const resumedAt = await now();
    const resumed = await post(`/v1/subscriptions/${sub.id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'active', billing_cycle: 1, pause_collection: null });
    expect(Math.abs(Date.parse(resumed.body.current_period_start) - resumedAt)).toBeLessThan(hour);
    expect(await engine.charges(sub.id)).toHaveLength(2);
    expect((await post(`/v1/subscriptions/${sub.id}/resume`)).body).toEqual(errorShape('invalid_state'));
  });

  it('pause with pause_until resumes by itself and the paid period continues', async () => {
    const sub = await subscribe({ customer_id: await customer(), plan: await plan(2500), trial_period_days: 0 });
    await engine.env.sleep(2 * day);
    const until = new Date((await now()) + 5 * day).toISOString();
    const paused = await post(`/v1/subscriptions/${sub.id}/pause`, { pause_until: until });
    expect(paused.body).toMatchObject({ status: 'paused', pause_collection: { resumes_at: until } });
    await engine.env.sleep(6 * day);
    const resumed = await eventually(
      () => get(sub.id),
      (s) => s.status === 'active',
    );
    expect(resumed).toMatchObject({ current_period_end: sub.current_period_end, billing_cycle: 0 });
    expect(await engine.charges(sub.id)).toHaveLength(1);
    await skipTo(Date.parse(sub.current_period_end) + hour);
    await eventually(
      () => engine.subscription(sub.id),
      (s) => s?.billingCycle === 1,
    );
    expect(await engine.charges(sub.id)).toHaveLength(2);
  });

  it('cancel at period end stays active until then, then ends with no further charge', async () => {
    const sub = await subscribe({ customer_id: await customer(), plan: await plan(4000), trial_period_days: 0 });
    await engine.env.sleep(3 * day);
    // As SPEC shows it: key=value parameters.
    const set = await engine.call('POST', `/v1/subscriptions/${sub.id}/cancel`, 'at_period_end=true', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(set.body).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect((await post(`/v1/subscriptions/${sub.id}/cancel`, { at_period_end: true })).body).toEqual(
      errorShape('invalid_state'),
    );
    await skipTo(Date.parse(sub.current_period_end) + day);
    const ended = await eventually(
      () => get(sub.id),
      (s) => s.status === 'canceled',
    );
    expect(Math.abs(Date.parse(ended.canceled_at) - Date.parse(sub.current_period_end))).toBeLessThan(60_000);
    expect(await engine.charges(sub.id)).toHaveLength(1);
    // The customer was told.
    const mail = await eventually(
      async () => engine.mail.messages.filter((m) => m.parsed.subject === '[TEST] Your subscription has been canceled'),
      (m) => m.length > 0,
    );
    expect(mail[0]!.parsed.text).toContain('has been canceled');
  });

  it('cancel now ends at once; an ended subscription takes no messages', async () => {
    const sub = await subscribe({ customer_id: await customer(), plan: await plan(4000), trial_period_days: 0 });
    const canceled = await post(`/v1/subscriptions/${sub.id}/cancel`, { at_period_end: false });
    expect(canceled.body).toMatchObject({ status: 'canceled', cancel_at_period_end: false });
    await skipTo(Date.parse(sub.current_period_end) + day);
    expect(await engine.charges(sub.id)).toHaveLength(1);
    for (const path of ['pause', 'resume', 'cancel'])
      expect((await post(`/v1/subscriptions/${sub.id}/${path}`)).status).toBe(409);
    expect((await post(`/v1/subscriptions/${sub.id}/update`, { plan: sub.plan })).body).toEqual(
      errorShape('invalid_state'),
    );
  });

  it('calendar billing prorates the first partial month and renews on the 1st', async () => {
    const today = new Date(await now());
    await skipTo(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 11));
    const start = await now();
    const sub = await subscribe({
      customer_id: await customer(),
      plan: await plan(3100),
      trial_period_days: 0,
      billing_cycle: 'calendar',
    });
    const startDate = new Date(start);
    const first = Date.UTC(startDate.getUTCFullYear(), startDate.getUTCMonth() + 1, 1);
    const monthStart = Date.UTC(startDate.getUTCFullYear(), startDate.getUTCMonth(), 1);
    expect(sub).toMatchObject({
      status: 'active',
      billing_cycle_mode: 'calendar',
      current_period_end: new Date(first).toISOString(),
    });
    expect((await engine.charges(sub.id))[0]!.amount).toBe(Math.round((3100 * (first - start)) / (first - monthStart)));
    await skipTo(first + hour);
    const renewed = await eventually(
      () => get(sub.id),
      (s) => s.billing_cycle === 1,
    );
    expect(renewed.current_period_start).toBe(new Date(first).toISOString());
    expect((await engine.charges(sub.id)).at(-1)!.amount).toBe(3100);
  });

  it('lists subscriptions with filters and cursors; bad input is 400 and another tenant sees nothing', async () => {
    const other = await engine.signUp();
    const list = await engine.call('GET', '/v1/subscriptions?limit=2&status=canceled');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ object: 'list', has_more: true });
    expect(list.body.data.every((s: { status: string }) => s.status === 'canceled')).toBe(true);
    const next = await engine.call(
      'GET',
      `/v1/subscriptions?limit=2&status=canceled&starting_after=${list.body.data[1].id}`,
    );
    expect(next.body.data[0].id < list.body.data[1].id).toBe(true);
    expect((await engine.call('GET', '/v1/subscriptions?status=sleeping')).body).toEqual(errorShape('invalid_request'));
    expect((await engine.call('GET', '/v1/subscriptions', undefined, other.headers)).body.data).toEqual([]);
    expect(
      (await engine.call('GET', `/v1/subscriptions/${list.body.data[0].id}`, undefined, other.headers)).status,
    ).toBe(404);
    expect(
      (await engine.call('POST', `/v1/subscriptions/${list.body.data[0].id}/cancel`, undefined, other.headers)).status,
    ).toBe(404);
    expect((await post('/v1/subscriptions', { customer_id: 'cus_nope', plan: 'plan_nope' })).body).toEqual(
      errorShape('not_found'),
    );
    const { customerId, planId } = await seedCustomerAndPlan(engine);
    for (const body of [
      { trial_period_days: -1 },
      { billing_cycle: 'lunar' },
      { grace_period_days: 61 },
      { pause_until: '2001-01-01T00:00:00Z' },
      { extra: 1 },
    ]) {
      const refused = await post('/v1/subscriptions', { customer_id: customerId, plan: planId, ...body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('DELETE /v1/account refuses while a subscription is trialing, active or past due, and ends a paused one', async () => {
    const tenant = await engine.signUp();
    const as = (method: string, path: string, body?: unknown) => engine.call(method, path, body, tenant.headers);
    const ok = (await as('POST', '/v1/customers', { email: 'c1@example.com', payment_method: 'pm_card_visa' })).body.id;
    const declined = (
      await as('POST', '/v1/customers', { email: 'c2@example.com', payment_method: 'pm_card_chargeDeclined' })
    ).body.id;
    const monthly = (await as('POST', '/v1/plans', { name: 'M', amount: 1000, currency: 'USD', interval: 'month' }))
      .body.id;
    const trialing = (await as('POST', '/v1/subscriptions', { customer_id: ok, plan: monthly, trial_period_days: 5 }))
      .body;
    const active = (await as('POST', '/v1/subscriptions', { customer_id: ok, plan: monthly })).body;
    const pastDue = (await as('POST', '/v1/subscriptions', { customer_id: declined, plan: monthly })).body;
    expect([trialing.status, active.status, pastDue.status]).toEqual(['trialing', 'active', 'past_due']);
    const paused = (await as('POST', `/v1/subscriptions/${active.id}/pause`)).body;
    expect(paused.status).toBe('paused');
    for (const blocking of [trialing, pastDue]) {
      const refused = await as('DELETE', '/v1/account');
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual(errorShape('active_subscriptions'));
      expect((await as('POST', `/v1/subscriptions/${blocking.id}/cancel`)).status).toBe(200);
    }
    const closed = await as('DELETE', '/v1/account');
    expect(closed.status).toBe(200);
    // The paused subscription ends with the account: its workflow cancels it.
    const ended = await eventually(
      () => engine.subscription(active.id),
      (s) => s?.status === 'canceled',
    );
    expect(ended!.endedReason).toBe('account_closed');
    await engine.env.sleep(60 * day);
    expect(await engine.charges(active.id)).toHaveLength(1);
  });
});
