/**
 * Discounts over time (issue #27), billed by the subscription workflow through the real API:
 * a 20% repeating coupon for 3 months gives three discounted invoices then full price, and its
 * end is recorded on time by the workflow's timer (customer.discount.deleted at `end`), in
 * skipped time and on a test clock, between two renewals too; a forever coupon survives a plan
 * change; a once coupon hits only the first invoice. Each history replays against this code.
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { Discount, Event } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('discounts over time', () => {
  let engine: TestEngine;
  const sandbox = () => ({ ...engine.tenant.headers, 'x-sandbox-mode': 'true' });
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  async function created(path: string, body: Record<string, unknown>, headers?: Record<string, string>) {
    const answer = await engine.call('POST', path, body, headers);
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    return answer.body;
  }
  /** A subscription's invoices through the API, oldest first, once there are `count`, all paid. */
  async function invoicesOf(subscriptionId: string, count: number, headers?: Record<string, string>) {
    await eventually(
      () => engine.invoices(subscriptionId),
      (list) => list.length === count && list.every((i) => i.status === 'paid'),
    );
    const listed = await engine.call('GET', `/v1/invoices?subscription=${subscriptionId}`, undefined, headers);
    expect(listed.status).toBe(200);
    return [...listed.body.data].reverse() as any[];
  }
  const discountEvents = async (discountId: string) =>
    (
      await engine.db.orm.em.fork().find(Event, { type: { $like: 'customer.discount.%' } }, { orderBy: { id: 'asc' } })
    ).filter((e) => (e.data.object as { id: string }).id === discountId);
  async function replays(subscriptionId: string) {
    const history = await engine.env.client.workflow.getHandle(subscriptionId).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: subscriptionId },
      history,
    );
  }
  async function advance(clockId: string, to: string) {
    const answer = await engine.call('POST', `/v1/test_clocks/${clockId}/advance`, { frozen_time: to }, sandbox());
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await eventually(
      async () => (await engine.call('GET', `/v1/test_clocks/${clockId}`, undefined, sandbox())).body,
      (clock) => clock.status === 'ready',
    );
  }

  // First in the file: without a clock, workflow time is the wall clock's only until a test skips time.
  it('a 20% coupon repeating for 3 months: three discounted renewals, then full price; its end recorded at end by the timer', async () => {
    const plan = await created('/v1/plans', { name: 'Pro', amount: 1000, currency: 'USD', interval: 'month' });
    const cus = await created('/v1/customers', { email: 'launch@example.com', payment_method: 'pm_card_visa' });
    await created('/v1/coupons', {
      id: 'LAUNCH20',
      name: 'Launch',
      percent_off: 20,
      duration: 'repeating',
      duration_in_months: 3,
    });
    const sub = await created('/v1/subscriptions', { customer: cus.id, plan: plan.id, coupon: 'LAUNCH20' });
    expect(sub.discount).toMatchObject({ coupon: { id: 'LAUNCH20' }, subscription: sub.id, ended_at: null });
    const end = sub.discount.end as string;

    await engine.env.sleep(4 * 31 * day);
    const invoices = await invoicesOf(sub.id, 5);
    expect(invoices.map((i) => [i.subtotal, i.total, i.amount_paid])).toEqual([
      [1000, 800, 800],
      [1000, 800, 800],
      [1000, 800, 800],
      [1000, 1000, 1000],
      [1000, 1000, 1000],
    ]);
    expect(invoices[0].total_discount_amounts).toEqual([{ discount: sub.discount.id, amount: 200 }]);
    expect(invoices[3].total_discount_amounts).toEqual([]);
    const charges = await engine.charges(sub.id);
    expect(charges.map((c) => c.amount).sort()).toEqual([1000, 1000, 800, 800, 800].sort());

    // Ended by the workflow's timer, at its end (the event dated then), before the full-price renewal's invoice.
    const events = await discountEvents(sub.discount.id);
    expect(events.map((e) => e.type)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
    expect((events[1]!.data.object as { ended_at: string }).ended_at).toBe(end);
    expect(events[1]!.createdAt.toISOString() <= invoices[3].created_at).toBe(true);
    const row = await engine.db.orm.em.fork().findOneOrFail(Discount, { id: sub.discount.id });
    expect(row.endedAt?.toISOString()).toBe(end);
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}`)).body.discount).toBeNull();
    await replays(sub.id);
  });

  it('on a test clock: a repeating discount added mid-period ends at its end between two renewals, by the timer', async () => {
    const clock = await created('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' }, sandbox());
    const plan = await created(
      '/v1/plans',
      { name: 'Clocked', amount: 3000, currency: 'USD', interval: 'month' },
      sandbox(),
    );
    const cus = await created(
      '/v1/customers',
      { email: 'clocked@example.com', payment_method: 'pm_card_visa', test_clock: clock.id },
      sandbox(),
    );
    await created(
      '/v1/coupons',
      { id: 'MONTH50', percent_off: 50, duration: 'repeating', duration_in_months: 1 },
      sandbox(),
    );
    const sub = await created('/v1/subscriptions', { customer: cus.id, plan: plan.id }, sandbox());
    expect(sub.discount).toBeNull();

    await advance(clock.id, '2027-01-11T00:00:00Z');
    const applied = await created(`/v1/subscriptions/${sub.id}/discount`, { coupon: 'MONTH50' }, sandbox());
    expect(applied.discount).toMatchObject({ start: '2027-01-11T00:00:00.000Z', end: '2027-02-11T00:00:00.000Z' });

    // The February renewal applies it; the end comes on February 11th with no invoice then.
    await advance(clock.id, '2027-02-01T00:00:00Z');
    await advance(clock.id, '2027-02-10T00:00:00Z');
    expect((await discountEvents(applied.discount.id)).map((e) => e.type)).toEqual(['customer.discount.created']);
    await advance(clock.id, '2027-02-12T00:00:00Z');
    const events = await discountEvents(applied.discount.id);
    expect(events.map((e) => e.type)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
    expect(events[1]!.createdAt.toISOString()).toBe('2027-02-11T00:00:00.000Z');
    expect(events[1]!.testClockId).toBe(clock.id);

    await advance(clock.id, '2027-03-01T00:00:00Z');
    const invoices = await invoicesOf(sub.id, 3, sandbox());
    expect(invoices.map((i) => i.total)).toEqual([3000, 1500, 3000]);
    await replays(sub.id);
  });

  it('on a test clock: a forever coupon survives a plan change; a once coupon hits only the first invoice', async () => {
    const clock = await created('/v1/test_clocks', { frozen_time: '2027-06-01T00:00:00Z' }, sandbox());
    const basic = await created(
      '/v1/plans',
      { name: 'Basic', amount: 1000, currency: 'USD', interval: 'month' },
      sandbox(),
    );
    const pro = await created(
      '/v1/plans',
      { name: 'Pro', amount: 3000, currency: 'USD', interval: 'month' },
      sandbox(),
    );
    const cus = await created(
      '/v1/customers',
      { email: 'forever@example.com', payment_method: 'pm_card_visa', test_clock: clock.id },
      sandbox(),
    );
    await created('/v1/coupons', { id: 'FOREVER10', percent_off: 10, duration: 'forever' }, sandbox());
    await created('/v1/coupons', { id: 'FIRST5', amount_off: 500, currency: 'USD', duration: 'once' }, sandbox());
    const forever = await created(
      '/v1/subscriptions',
      { customer: cus.id, plan: basic.id, coupon: 'FOREVER10' },
      sandbox(),
    );
    const once = await created('/v1/subscriptions', { customer: cus.id, plan: basic.id, coupon: 'FIRST5' }, sandbox());
    expect(forever.discount.end).toBeNull();

    await advance(clock.id, '2027-06-15T00:00:00Z');
    const changed = await engine.call('POST', `/v1/subscriptions/${forever.id}/update`, { plan: pro.id }, sandbox());
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await advance(clock.id, '2027-07-01T00:00:00Z');
    await advance(clock.id, '2027-08-01T00:00:00Z');

    const foreverInvoices = await invoicesOf(forever.id, 4, sandbox());
    // First invoice 1000 − 10%; the upgrade's prorated invoice is discounted too; both renewals on Pro: 3000 − 10%.
    expect(foreverInvoices[0].total).toBe(900);
    // (a credit line is never discounted: 10% of the charged Pro line)
    const charged = foreverInvoices[1].lines
      .filter((l: { amount: number }) => l.amount > 0)
      .reduce((sum: number, l: { amount: number }) => sum + l.amount, 0);
    expect(foreverInvoices[1].total_discount_amounts).toEqual([
      { discount: forever.discount.id, amount: Math.round(charged / 10) },
    ]);
    expect(foreverInvoices.slice(2).map((i) => [i.subtotal, i.total])).toEqual([
      [3000, 2700],
      [3000, 2700],
    ]);
    expect((await engine.call('GET', `/v1/subscriptions/${forever.id}`, undefined, sandbox())).body.discount.id).toBe(
      forever.discount.id,
    );

    const onceInvoices = await invoicesOf(once.id, 3, sandbox());
    expect(onceInvoices.map((i) => i.total)).toEqual([500, 1000, 1000]);
    // The first invoice used it up before the create answered: the subscription shows none.
    expect(once.discount).toBeNull();
    const onceDiscount = await engine.db.orm.em.fork().findOneOrFail(Discount, { subscriptionId: once.id });
    expect(onceDiscount.endedAt?.toISOString()).toBe('2027-06-01T00:00:00.000Z');
    const events = await discountEvents(onceDiscount.id);
    expect(events.map((e) => e.type)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
    expect(events[1]!.createdAt.toISOString()).toBe('2027-06-01T00:00:00.000Z');
    await replays(forever.id);
    await replays(once.id);
  });

  it("a customer's own 3-month repeating discount ends at its end by its own timer, in skipped time and on a test clock", async () => {
    // Skipped time, no clock: nothing invoices the customer, the timer alone ends it.
    const cus = await created('/v1/customers', { email: 'own-timer@example.com' });
    await created('/v1/coupons', { id: 'OWN3', percent_off: 15, duration: 'repeating', duration_in_months: 3 });
    const { discount } = await created(`/v1/customers/${cus.id}/discount`, { coupon: 'OWN3' });
    const handle = engine.env.client.workflow.getHandle(`discount-end-${discount.id}`);
    await engine.env.sleep(new Date(discount.end).getTime() - (await engine.env.currentTimeMs()) + day);
    await handle.result();
    const events = await discountEvents(discount.id);
    expect(events.map((e) => e.type)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
    expect((events[1]!.data.object as { ended_at: string }).ended_at).toBe(discount.end);
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: handle.workflowId },
      await handle.fetchHistory(),
    );

    // On a test clock: not before its end; when the clock passes it, ended and recorded at the end, on the clock.
    const clock = await created('/v1/test_clocks', { frozen_time: '2029-01-11T00:00:00Z' }, sandbox());
    const clocked = await created('/v1/customers', { email: 'own-clock@example.com', test_clock: clock.id }, sandbox());
    await created(
      '/v1/coupons',
      { id: 'OWN3', percent_off: 15, duration: 'repeating', duration_in_months: 3 },
      sandbox(),
    );
    const applied = (await created(`/v1/customers/${clocked.id}/discount`, { coupon: 'OWN3' }, sandbox())).discount;
    expect(applied).toMatchObject({ start: '2029-01-11T00:00:00.000Z', end: '2029-04-11T00:00:00.000Z' });
    await advance(clock.id, '2029-04-10T00:00:00Z');
    expect((await discountEvents(applied.id)).map((e) => e.type)).toEqual(['customer.discount.created']);
    await advance(clock.id, '2029-04-12T00:00:00Z');
    const onClock = await discountEvents(applied.id);
    expect(onClock.map((e) => e.type)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
    expect(onClock[1]!.createdAt.toISOString()).toBe('2029-04-11T00:00:00.000Z');
    expect(onClock[1]!.testClockId).toBe(clock.id);
    expect((await engine.call('GET', `/v1/customers/${clocked.id}`, undefined, sandbox())).body.discount).toBeNull();
  });

  it("a customer's discount replaced before its end: the old one's timer changes nothing", async () => {
    const clock = await created('/v1/test_clocks', { frozen_time: '2030-01-01T00:00:00Z' }, sandbox());
    const cus = await created('/v1/customers', { email: 'replaced@example.com', test_clock: clock.id }, sandbox());
    await created(
      '/v1/coupons',
      { id: 'FIRST1', percent_off: 10, duration: 'repeating', duration_in_months: 1 },
      sandbox(),
    );
    await created(
      '/v1/coupons',
      { id: 'SECOND2', percent_off: 20, duration: 'repeating', duration_in_months: 2 },
      sandbox(),
    );
    const first = (await created(`/v1/customers/${cus.id}/discount`, { coupon: 'FIRST1' }, sandbox())).discount;
    await advance(clock.id, '2030-01-15T00:00:00Z');
    const second = (await created(`/v1/customers/${cus.id}/discount`, { coupon: 'SECOND2' }, sandbox())).discount;
    await advance(clock.id, '2030-02-02T00:00:00Z');
    expect(await engine.env.client.workflow.getHandle(`discount-end-${first.id}`).result()).toEqual({ ended: false });
    const firstEvents = await discountEvents(first.id);
    // Replaced on January 15th (customer.discount.updated carries the new one); nothing recorded at its own end.
    expect(firstEvents.map((e) => e.type)).toEqual(['customer.discount.created']);
    expect((await engine.db.orm.em.fork().findOneOrFail(Discount, { id: first.id })).endedAt?.toISOString()).toBe(
      '2030-01-15T00:00:00.000Z',
    );
    expect((await engine.call('GET', `/v1/customers/${cus.id}`, undefined, sandbox())).body.discount).toMatchObject({
      id: second.id,
      ended_at: null,
    });
  });

  it("a customer's own repeating discount ends at its end (timer or the first invoice after it, once), its event dated at the end", async () => {
    const clock = await created('/v1/test_clocks', { frozen_time: '2028-01-01T00:00:00Z' }, sandbox());
    const plan = await created(
      '/v1/plans',
      { name: 'Team', amount: 2000, currency: 'USD', interval: 'month' },
      sandbox(),
    );
    const cus = await created(
      '/v1/customers',
      { email: 'own@example.com', payment_method: 'pm_card_visa', test_clock: clock.id },
      sandbox(),
    );
    await created(
      '/v1/coupons',
      { id: 'CUST25', percent_off: 25, duration: 'repeating', duration_in_months: 1 },
      sandbox(),
    );
    const applied = await created(`/v1/customers/${cus.id}/discount`, { coupon: 'CUST25' }, sandbox());
    expect(applied.discount).toMatchObject({ subscription: null, end: '2028-02-01T00:00:00.000Z' });
    const sub = await created('/v1/subscriptions', { customer: cus.id, plan: plan.id }, sandbox());
    // The subscription has no discount of its own: the customer's applies.
    expect(sub.discount).toBeNull();
    await advance(clock.id, '2028-02-01T00:00:00Z');
    const invoices = await invoicesOf(sub.id, 2, sandbox());
    expect(invoices.map((i) => i.total)).toEqual([1500, 2000]);
    const events = await discountEvents(applied.discount.id);
    expect(events.map((e) => e.type)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
    expect((events[1]!.data.object as { ended_at: string }).ended_at).toBe('2028-02-01T00:00:00.000Z');
  });
});
