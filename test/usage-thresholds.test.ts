/**
 * Progressive billing and usage alerts on the billing period (#28), through the real API on a test clock:
 * a usage subscription (graduated tiers, free units, anniversary periods from the 15th) with
 * billing_thresholds over THREE periods. Each crossing of amount_gte (what the period's usage amounts to
 * and was not yet billed) makes a threshold invoice at once (billing_reason subscription_threshold), charged;
 * the period-end invoice bills only the rest; per period the invoices sum to a reference computed here by
 * hand. A usage alert counts the subscription's billing period (Jan 15 to Feb 15), not the calendar month.
 * Also bad input; the threshold invoice step made twice at the same workflow time answers the same invoice
 * (idempotent); a declined threshold invoice goes into the subscription's dunning and a new card pays it; and a
 * crossing claimed but never signalled (a crash between the two) is billed early once the maintenance sweep
 * re-sends it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { resignalThresholdCrossings } from '../services/usage/threshold-signals.ts';
import { prepareThresholdInvoice } from '../services/usage/thresholds.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { graduatedReference, usageSetup } from './helpers/usage.ts';

const tiers = [
  { upTo: 1000, unit: 2 },
  { upTo: null, unit: 1 },
];
const free = 100;
const reference = (quantity: number) => graduatedReference(quantity, tiers, free).amount;

/** A count meter billed 10 cents a call, on a clock at `frozenTime`. */
const callsSetup = (engine: TestEngine, name: string, frozenTime: string, paymentMethod = 'pm_card_visa') =>
  usageSetup(engine, name, {
    frozenTime,
    paymentMethod,
    meter: { display_name: 'Calls', event_name: 'calls', aggregation: 'count' },
    plan: { name: 'Calls', amount: 10 },
  });

describe('usage thresholds (progressive billing) and alerts on the billing period', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('bills early at each crossing over three periods, the period-end invoices bill the rest, amounts as the reference', async () => {
    const { call, make, advance, clock, customer, meter, plan, invoicesOf, invoicesUntil, ...usage } = await usageSetup(
      engine,
      'Progressive tokens',
      {
        frozenTime: '2033-01-15T00:00:00Z',
        email: 'grace@example.com',
        meter: { display_name: 'Tokens', event_name: 'tokens', aggregation: 'sum', value_property: 'tokens' },
        plan: {
          name: 'Tokens',
          pricing_scheme: 'tiered',
          tiers_mode: 'graduated',
          tiers: [
            { up_to: 1000, unit_amount: 2 },
            { up_to: 'inf', unit_amount: 1 },
          ],
          free_quantity: String(free),
        },
      },
    );
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

    const send = (timestamp: string, tokens: number) => usage.send({ timestamp, payload: { tokens: String(tokens) } });
    const invoices = () => invoicesOf(sub.id);
    // A threshold invoice follows a signal: opened, then charged and settled.
    const untilCount = (count: number) => invoicesUntil(sub.id, count);
    const alertEvents = async () =>
      (await call('GET', '/v1/events?type=billing.alert.triggered')).body.data.filter(
        (e: any) => e.data.object.alert?.id === alert.id || e.data.object.id === alert.id,
      );

    // Period 1: Jan 15 to Feb 15.
    await advance(clock.id, '2033-01-20T00:00:00Z');
    await send('2033-01-19T00:00:00Z', 300); // 200 billed units: 400 < 500, no invoice
    await send('2033-01-19T12:00:00Z', 100); // 300 units: 600 ≥ 500: threshold invoice 1
    let all = await untilCount(2);
    expect(all[1]).toMatchObject({
      total: 600,
      amount_paid: 600,
      status: 'paid',
      period_start: '2033-01-15T00:00:00.000Z',
    });
    expect(all[1].lines.map((l: any) => [l.quantity_decimal, l.amount])).toEqual([['400', 600]]);

    await advance(clock.id, '2033-02-03T00:00:00Z');
    await send('2033-02-02T00:00:00Z', 2700); // 3100 tokens: 3000 units = 1000 × 2 + 2000 × 1 = 4000 cumulative: 3400 more
    all = await untilCount(3);
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
    all = await untilCount(4);
    const period1 = reference(3400);
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
    all = await untilCount(5);
    expect(all).toHaveLength(5);
    expect(all[4].total).toBe(reference(250));

    // Period 3: Mar 15 to Apr 15: a crossing, then the thresholds change (update) and a second crossing.
    await advance(clock.id, '2033-03-20T00:00:00Z');
    await send('2033-03-19T00:00:00Z', 600); // 500 units: 1000 ≥ 500
    all = await untilCount(6);
    expect(all[5]).toMatchObject({ total: 1000, status: 'paid' });
    const updated = await call('POST', `/v1/subscriptions/${sub.id}/update`, {
      billing_thresholds: { amount_gte: 2000 },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.billing_thresholds).toEqual({ amount_gte: 2000, reset_billing_cycle_anchor: false });
    await send('2033-03-19T06:00:00Z', 1000); // 1600 tokens: 1500 units = 2000 + 500 = 2500: 1500 more, under 2000
    expect(await invoices()).toHaveLength(6);
    await send('2033-03-19T07:00:00Z', 600); // 2200 tokens: 2100 units = 3100: 2100 more ≥ 2000
    all = await untilCount(7);
    expect(all[6]).toMatchObject({ total: 2100, status: 'paid' });
    await advance(clock.id, '2033-04-02T00:00:00Z');
    await send('2033-04-01T00:00:00Z', 5);
    await advance(clock.id, '2033-04-15T01:00:00Z');
    all = await untilCount(8);
    expect(all).toHaveLength(8);
    const period3 = reference(2205);
    expect(all[7].total).toBe(period3 - 1000 - 2100);
    expect(all[5].total + all[6].total + all[7].total).toBe(period3);
    expect(all.every((i) => i.status === 'paid')).toBe(true);
    // Why each was made (Stripe's billing_reason), and the list's filter on it.
    expect(all.map((i) => i.billing_reason)).toEqual([
      'subscription_create',
      'subscription_threshold',
      'subscription_threshold',
      'subscription_cycle',
      'subscription_cycle',
      'subscription_threshold',
      'subscription_threshold',
      'subscription_cycle',
    ]);
    const thresholdOnly = await call(
      'GET',
      `/v1/invoices?subscription=${sub.id}&billing_reason=subscription_threshold`,
    );
    expect(thresholdOnly.body.data.map((i: any) => i.id)).toEqual([all[6].id, all[5].id, all[2].id, all[1].id]);
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
    const { make, call, accountId, customer, meter, plan, send } = await callsSetup(
      engine,
      'Threshold retry',
      '2034-01-01T00:00:00Z',
    );
    // A threshold too high for the events: the workflow is never signalled, the step is called here directly.
    const sub = await make('/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 99_999_999 },
    });
    for (let i = 0; i < 3; i++) await send({ timestamp: '2034-01-01T00:00:00Z' });
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

  /** Polls `read` until `done` (30 s at most). */
  const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    const started = Date.now();
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() - started > 30_000) throw new Error(`still ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it("a declined threshold invoice goes into the subscription's dunning, and a new card pays it", async () => {
    const { call, make, advance, clock, customer, plan, send, invoicesUntil } = await callsSetup(
      engine,
      'Threshold dunning',
      '2035-01-01T00:00:00Z',
      'pm_card_chargeDeclined',
    );
    // The first invoice bills nothing (usage in arrears): no charge, so the declining card does not matter yet.
    const sub = await make('/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 30 },
    });
    await advance(clock.id, '2035-01-02T00:00:00Z');
    for (let i = 0; i < 3; i++) await send({ timestamp: '2035-01-01T12:00:00Z' });
    const read = () => call('GET', `/v1/subscriptions/${sub.id}`).then((r) => r.body);
    const pastDue = await until(read, (s) => s.status === 'past_due');
    let all = await invoicesUntil(sub.id, 2, (i) => i.status === 'paid' || i.attempt_count >= 1);
    expect(all[1]).toMatchObject({
      billing_reason: 'subscription_threshold',
      status: 'open',
      total: 30,
      attempt_count: 1,
    });
    expect(pastDue.dunning).toMatchObject({ invoice: all[1].id });
    // A working card: the dunning's retry charges it now, as a declined renewal's.
    const updated = await call('POST', `/v1/customers/${customer.id}`, { payment_method: 'pm_card_visa' });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect((await until(read, (s) => s.status === 'active')).dunning).toBeNull();
    all = await invoicesUntil(sub.id, 2);
    expect(all[1]).toMatchObject({ status: 'paid', amount_paid: 30, attempt_count: 2 });
  });

  it('a crossing claimed but never signalled (a crash between the two) is billed early once the maintenance sweep re-sends it', async () => {
    const { call, make, advance, clock, customer, plan, send, invoicesOf, invoicesUntil } = await callsSetup(
      engine,
      'Threshold crash',
      '2036-01-01T00:00:00Z',
    );
    const sub = await make('/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 30 },
    });
    await advance(clock.id, '2036-01-02T00:00:00Z');
    // The crash: ingestion committed its claim of the period's first crossing, and died before the signal.
    await engine.db.orm.em
      .fork()
      .getConnection()
      .execute(
        `insert into usage_threshold_crossings (subscription_id, period_start, sequence, signalled_at) values (?, ?, 1, now() - interval '5 minutes')`,
        [sub.id, sub.current_period_start],
      );
    // The usage reaches the threshold, but the claim is taken: no signal, nothing billed early.
    for (let i = 0; i < 3; i++) await send({ timestamp: '2036-01-01T12:00:00Z' });
    expect(await invoicesOf(sub.id)).toHaveLength(1);
    const swept = await resignalThresholdCrossings(
      { orm: engine.db.orm, temporal: { client: engine.env.client } },
      60_000,
    );
    expect(swept.failed).toBe(0);
    const all = await invoicesUntil(sub.id, 2);
    expect(all[1]).toMatchObject({ billing_reason: 'subscription_threshold', status: 'paid', total: 30 });
    expect((await call('GET', `/v1/subscriptions/${sub.id}`)).body.current_period_start).toBe(sub.current_period_start);
  });
});
