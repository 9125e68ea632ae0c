/**
 * Progressive billing and usage alerts on the billing period (#28), through the real API on a test clock:
 * a usage subscription (graduated tiers, free units, anniversary periods from the 15th) with
 * billing_thresholds over THREE periods. Each crossing of amount_gte (what the period's usage amounts to
 * and was not yet billed) makes a threshold invoice at once, charged; the period-end invoice bills only the
 * rest; per period the invoices sum to a reference computed here by hand. A usage alert counts the
 * subscription's billing period (Jan 15 to Feb 15), not the calendar month. Also bad input, and the
 * threshold invoice step made twice at the same workflow time answers the same invoice (idempotent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { prepareThresholdInvoice } from '../services/usage/thresholds.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

/** Graduated tiers with free units, by hand, in whole units and whole cents. */
function reference(quantity: number, free: number, tiers: { upTo: number | null; unit: number }[]): number {
  let left = Math.max(0, quantity - free);
  let previous = 0;
  let total = 0;
  for (const tier of tiers) {
    const room = tier.upTo === null ? left : Math.min(left, tier.upTo - previous);
    total += room * tier.unit;
    left -= room;
    if (tier.upTo !== null) previous = tier.upTo;
    if (left <= 0) break;
  }
  return total;
}

const tiers = [
  { upTo: 1000, unit: 2 },
  { upTo: null, unit: 1 },
];
const free = 100;

describe('usage thresholds (progressive billing) and alerts on the billing period', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('bills early at each crossing over three periods, the period-end invoices bill the rest, amounts as the reference', async () => {
    const { call, make, advance } = await clockTenant(engine, 'Progressive tokens');
    const clock = await make('/v1/test_clocks', { frozen_time: '2033-01-15T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'grace@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const meter = await make('/v1/meters', {
      display_name: 'Tokens',
      event_name: 'tokens',
      aggregation: 'sum',
      value_property: 'tokens',
    });
    const plan = await make('/v1/plans', {
      name: 'Tokens',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 1000, unit_amount: 2 },
        { up_to: 'inf', unit_amount: 1 },
      ],
      free_quantity: String(free),
    });
    // Bad thresholds: 400 and nothing made.
    for (const [thresholds, message] of [
      [{ amount_gte: 0 }, /amount_gte/],
      [{ amount_gte: 500, reset_billing_cycle_anchor: true }, /reset_billing_cycle_anchor: only false/],
      [{ amount_gte: 500, nope: 1 }, /nope|Unrecognized/],
    ] as const) {
      const refused = await call('POST', '/v1/subscriptions', {
        customer_id: customer.id,
        plan: plan.id,
        billing_thresholds: thresholds,
      });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(JSON.stringify(refused.body)).toMatch(message);
    }
    expect((await call('GET', `/v1/subscriptions?customer=${customer.id}`)).body.data).toHaveLength(0);

    const sub = await make('/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 500 },
    });
    expect(sub).toMatchObject({
      current_period_end: '2033-02-15T00:00:00.000Z',
      billing_thresholds: { amount_gte: 500, reset_billing_cycle_anchor: false },
    });
    const read = await call('GET', `/v1/subscriptions/${sub.id}`);
    expect(read.body.billing_thresholds, JSON.stringify(read.body)).toEqual({
      amount_gte: 500,
      reset_billing_cycle_anchor: false,
    });
    // An alert at 3,000 tokens: the billing period (from Jan 15) reaches it on Feb 3, February alone never does.
    const alert = await make('/v1/billing/alerts', {
      alert_type: 'usage_threshold',
      title: '3k tokens',
      usage_threshold: { gte: 3000, meter: meter.id, recurrence: 'one_time' },
    });

    let n = 0;
    const send = async (timestamp: string, tokens: number) => {
      const answer = await call('POST', '/v1/meter_events', {
        event_name: 'tokens',
        customer: customer.id,
        timestamp,
        identifier: `ev-${++n}`,
        payload: { tokens: String(tokens) },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    };
    const invoices = async () =>
      [...(await call('GET', `/v1/invoices?subscription=${sub.id}&limit=100`)).body.data].reverse() as any[];
    /** Waits for the workflow to have made `count` invoices (a threshold invoice follows a signal). */
    const invoicesUntil = async (count: number) => {
      const started = Date.now();
      for (;;) {
        const all = await invoices();
        // The invoice is opened, then charged and settled: wait for the outcome.
        if (all.length >= count && all.every((i) => i.status !== 'open' && i.status !== 'draft')) return all;
        if (Date.now() - started > 30_000) throw new Error(`${all.length} invoices, waited for ${count}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const alertEvents = async () =>
      (await call('GET', '/v1/events?type=billing.alert.triggered')).body.data.filter(
        (e: any) => e.data.object.alert?.id === alert.id || e.data.object.id === alert.id,
      );

    // Period 1: Jan 15 to Feb 15.
    await advance(clock.id, '2033-01-20T00:00:00Z');
    await send('2033-01-19T00:00:00Z', 300); // 200 billed units: 400 < 500, no invoice
    await send('2033-01-19T12:00:00Z', 100); // 300 units: 600 ≥ 500: threshold invoice 1
    let all = await invoicesUntil(2);
    expect(all[1]).toMatchObject({
      total: 600,
      amount_paid: 600,
      status: 'paid',
      period_start: '2033-01-15T00:00:00.000Z',
    });
    expect(all[1].lines.map((l: any) => [l.quantity_decimal, l.amount])).toEqual([['400', 600]]);

    await advance(clock.id, '2033-02-03T00:00:00Z');
    await send('2033-02-02T00:00:00Z', 2700); // 3100 tokens: 3000 units = 1000 × 2 + 2000 × 1 = 4000 cumulative: 3400 more
    all = await invoicesUntil(3);
    expect(all[2]).toMatchObject({ total: 3400, status: 'paid' });
    expect(all[2].lines[0].description).toMatch(
      /usage 3100, 100 free \(600 already billed on threshold invoices this period\)/,
    );
    // The alert counted the billing period (3,100 since Jan 15), though February holds 2,700.
    expect(await alertEvents()).toHaveLength(1);

    await advance(clock.id, '2033-02-11T00:00:00Z');
    await send('2033-02-10T00:00:00Z', 100); // 100 more: under the threshold
    // Inside the grace window after the period's end, a late event of the period counts on its closing invoice.
    await advance(clock.id, '2033-02-15T00:30:00Z');
    await send('2033-02-14T23:00:00Z', 200);
    expect(await invoices()).toHaveLength(3);
    await advance(clock.id, '2033-02-15T01:00:00Z');
    all = await invoicesUntil(4);
    const period1 = reference(3400, free, tiers);
    expect(period1).toBe(4300);
    expect(all[3]).toMatchObject({
      total: period1 - 600 - 3400,
      status: 'paid',
      period_start: '2033-02-15T00:00:00.000Z',
    });
    expect(all[1].total + all[2].total + all[3].total).toBe(period1);

    // Period 2: Feb 15 to Mar 15, under the threshold: billed at its end only.
    await advance(clock.id, '2033-02-20T00:00:00Z');
    await send('2033-02-19T00:00:00Z', 250); // 150 units: 300
    await advance(clock.id, '2033-03-15T01:00:00Z');
    all = await invoicesUntil(5);
    expect(all).toHaveLength(5);
    expect(all[4].total).toBe(reference(250, free, tiers));

    // Period 3: Mar 15 to Apr 15: a crossing, then the thresholds change (update) and a second crossing.
    await advance(clock.id, '2033-03-20T00:00:00Z');
    await send('2033-03-19T00:00:00Z', 600); // 500 units: 1000 ≥ 500
    all = await invoicesUntil(6);
    expect(all[5]).toMatchObject({ total: 1000, status: 'paid' });
    const updated = await call('POST', `/v1/subscriptions/${sub.id}/update`, {
      billing_thresholds: { amount_gte: 2000 },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.billing_thresholds).toEqual({ amount_gte: 2000, reset_billing_cycle_anchor: false });
    await send('2033-03-19T06:00:00Z', 1000); // 1600 tokens: 1500 units = 2000 + 500 = 2500: 1500 more, under 2000
    expect(await invoices()).toHaveLength(6);
    await send('2033-03-19T07:00:00Z', 600); // 2200 tokens: 2100 units = 3100: 2100 more ≥ 2000
    all = await invoicesUntil(7);
    expect(all[6]).toMatchObject({ total: 2100, status: 'paid' });
    await advance(clock.id, '2033-04-02T00:00:00Z');
    await send('2033-04-01T00:00:00Z', 5);
    await advance(clock.id, '2033-04-15T01:00:00Z');
    all = await invoicesUntil(8);
    expect(all).toHaveLength(8);
    const period3 = reference(2205, free, tiers);
    expect(all[7].total).toBe(period3 - 1000 - 2100);
    expect(all[5].total + all[6].total + all[7].total).toBe(period3);
    expect(all.every((i) => i.status === 'paid')).toBe(true);
    // Each invoice made events as any other: invoice.created once per invoice.
    const created = (await call('GET', '/v1/events?type=invoice.created&limit=100')).body.data.filter(
      (e: any) => e.data.object.subscription_id === sub.id || e.data.object.subscription === sub.id,
    );
    expect(created.length).toBe(all.length);

    // Removing the thresholds: "".
    const removed = await call('POST', `/v1/subscriptions/${sub.id}/update`, { billing_thresholds: '' });
    expect(removed.body.billing_thresholds).toBeNull();
  });

  it('makes one threshold invoice per workflow step: the step retried answers the same lines and key', async () => {
    const { make, call, accountId } = await clockTenant(engine, 'Threshold retry');
    const clock = await make('/v1/test_clocks', { frozen_time: '2034-01-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'r@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const meter = await make('/v1/meters', { display_name: 'Calls', event_name: 'calls', aggregation: 'count' });
    const plan = await make('/v1/plans', {
      name: 'Calls',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      amount: 10,
    });
    // A threshold too high for the events: the workflow is never signalled, the step is called here directly.
    const sub = await make('/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 99_999_999 },
    });
    for (let i = 0; i < 3; i++)
      await make(
        '/v1/meter_events',
        { event_name: 'calls', customer: customer.id, timestamp: '2034-01-01T00:00:00Z', identifier: `c-${i}` },
        201,
      );
    expect((await call('GET', `/v1/invoices?subscription=${sub.id}`)).body.data).toHaveLength(1);
    await call('POST', `/v1/subscriptions/${sub.id}/update`, { billing_thresholds: { amount_gte: 30 } });
    const input = {
      accountId,
      livemode: false,
      subscriptionId: sub.id,
      customerId: customer.id,
      periodStart: sub.current_period_start,
      periodEnd: sub.current_period_end,
      asOf: '2034-01-01T00:00:01.000Z',
      stepKey: 'run-1:42',
      items: [
        {
          planId: plan.id,
          name: 'Calls',
          amount: 10,
          currency: 'USD',
          quantity: 1,
          usage: { meterId: meter.id, price: { pricing: { scheme: 'per_unit' as const, amount: 10 } } },
        },
      ],
    };
    const [first, again] = [
      await prepareThresholdInvoice(engine.db.orm, input),
      await prepareThresholdInvoice(engine.db.orm, input),
    ];
    expect(first).toMatchObject({
      sequence: 1,
      amount: 30,
      billingKey: `${sub.id}:threshold:2034-01-01T00:00:00.000Z:1`,
    });
    expect(again).toEqual(first);
    // Later, with nothing more used: nothing to bill, no second sequence.
    expect(
      await prepareThresholdInvoice(engine.db.orm, { ...input, asOf: '2034-01-01T00:00:02.000Z', stepKey: 'run-1:50' }),
    ).toBeNull();
  });
});
