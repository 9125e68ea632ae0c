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
    await eventually(() => engine.invoices(subscriptionId), (list) => list.length === count && list.every((i) => i.status === 'paid'));
    const listed = await engine.call('GET', `/v1/invoices?subscription=${subscriptionId}`, undefined, headers);
    expect(listed.status).toBe(200);
    return [...listed.body.data].reverse() as any[];
  }
  const discountEvents = async (discountId: string) =>
    (await engine.db.orm.em.fork().find(Event, { type: { $like: 'customer.discount.%' } }, { orderBy: { id: 'asc' } })).filter((e) => (e.data.object as { id: string }).id === discountId);
  async function replays(subscriptionId: string) {
    const history = await engine.env.client.workflow.getHandle(subscriptionId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: subscriptionId }, history);
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
    await created('/v1/coupons', { id: 'LAUNCH20', name: 'Launch', percent_off: 20, duration: 'repeating', duration_in_months: 3 });
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
    const plan = await created('/v1/plans', { name: 'Clocked', amount: 3000, currency: 'USD', interval: 'month' }, sandbox());
    const cus = await created('/v1/customers', { email: 'clocked@example.com', payment_method: 'pm_card_visa', test_clock: clock.id }, sandbox());
    await created('/v1/coupons', { id: 'MONTH50', percent_off: 50, duration: 'repeating', duration_in_months: 1 }, sandbox());
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
    const basic = await created('/v1/plans', { name: 'Basic', amount: 1000, currency: 'USD', interval: 'month' }, sandbox());
    const pro = await created('/v1/plans', { name: 'Pro', amount: 3000, currency: 'USD', interval: 'month' }, sandbox());
    const cus = await created('/v1/customers', { email: 'forever@example.com', payment_method: 'pm_card_visa', test_clock: clock.id }, sandbox());
    await created('/v1/coupons', { id: 'FOREVER10', percent_off: 10, duration: 'forever' }, sandbox());
    await created('/v1/coupons', { id: 'FIRST5', amount_off: 500, currency: 'USD', duration: 'once' }, sandbox());
    const forever = await created('/v1/subscriptions', { customer: cus.id, plan: basic.id, coupon: 'FOREVER10' }, sandbox());
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
    const charged = foreverInvoices[1].lines.filter((l: { amount: number }) => l.amount > 0).reduce((sum: number, l: { amount: number }) => sum + l.amount, 0);
    expect(foreverInvoices[1].total_discount_amounts).toEqual([{ discount: forever.discount.id, amount: Math.round(charged / 10) }]);
    expect(foreverInvoices.slice(2).map((i) => [i.subtotal, i.total])).toEqual([
      [3000, 2700],
      [3000, 2700],
    ]);
    expect((await engine.call('GET', `/v1/subscriptions/${forever.id}`, undefined, sandbox())).body.discount.id).toBe(forever.discount.id);

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

  it("a customer's own repeating discount ends lazily at the first invoice after its end, its event dated at the end", async () => {
    const clock = await created('/v1/test_clocks', { frozen_time: '2028-01-01T00:00:00Z' }, sandbox());
    const plan = await created('/v1/plans', { name: 'Team', amount: 2000, currency: 'USD', interval: 'month' }, sandbox());
    const cus = await created('/v1/customers', { email: 'own@example.com', payment_method: 'pm_card_visa', test_clock: clock.id }, sandbox());
    await created('/v1/coupons', { id: 'CUST25', percent_off: 25, duration: 'repeating', duration_in_months: 1 }, sandbox());
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
