/**
 * Pricing schemes billed by the subscription workflow, in skipped time, through the real API:
 * seats (per_unit × quantity), graduated and volume tiers, a setup fee on the first invoice
 * only, a price in another currency, a plan change that keeps the seats; and the 400s that
 * refuse what is not billed (recurring items of different intervals, a one-time plan as the plan)
 * and any change to a plan's price.
 */
import { Worker } from '@temporalio/worker';
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { Plan } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('pricing schemes on subscriptions', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const post = (path: string, body?: unknown) => engine.call('POST', path, body);
  async function plan(body: Record<string, unknown>) {
    const created = await post('/v1/plans', {
      currency: 'USD',
      ...(body.type === 'one_time' ? {} : { interval: 'month' }),
      ...body,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }
  async function customer() {
    const created = await post('/v1/customers', {
      email: 'lin@example.com',
      name: 'Lin',
      payment_method: 'pm_card_visa',
    });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  async function subscribe(body: Record<string, unknown>) {
    const created = await post('/v1/subscriptions', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }
  /** Replays a subscription's whole history against this code: the new paths (setup fees, quantities) are deterministic. */
  async function replays(subscriptionId: string) {
    const history = await engine.env.client.workflow.getHandle(subscriptionId).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: subscriptionId },
      history,
    );
  }
  /** The subscription's invoices through the API, oldest first, once there are `count`, all paid. */
  async function invoicesOf(subscriptionId: string, count: number) {
    await eventually(
      () => engine.invoices(subscriptionId),
      (list) => list.length === count && list.every((i) => i.status === 'paid'),
    );
    const listed = await engine.call('GET', `/v1/invoices?subscription=${subscriptionId}`);
    expect(listed.status).toBe(200);
    return [...listed.body.data].reverse() as any[];
  }

  it('12 seats at 15.00 invoice and charge 12 × 15.00 = 180.00 every month; the subscription shows its quantity and item', async () => {
    const seats = await plan({ name: 'Team seats', amount: 1500 });
    expect(seats).toMatchObject({
      pricing_scheme: 'per_unit',
      type: 'recurring',
      amount: 1500,
      tiers: null,
      tiers_mode: null,
      currency_options: {},
    });
    const sub = await subscribe({ customer_id: await customer(), plan: seats.id, quantity: 12 });
    expect(sub).toMatchObject({
      status: 'active',
      plan: seats.id,
      quantity: 12,
      currency: 'USD',
      items: [{ object: 'subscription_item', id: `si_${sub.id.slice(4)}`, plan: seats.id, quantity: 12 }],
    });
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}`)).body).toEqual(sub);

    await engine.env.sleep(31 * day);
    const [first, renewal] = await invoicesOf(sub.id, 2);
    for (const invoice of [first, renewal]) {
      expect(invoice.lines).toEqual([
        expect.objectContaining({
          description: 'Team seats',
          plan: seats.id,
          quantity: 12,
          unit_amount: 1500,
          amount: 18000,
          breakdown: null,
          proration: false,
        }),
      ]);
      expect(invoice).toMatchObject({ subtotal: 18000, total: 18000, amount_paid: 18000 });
    }
    const charges = await engine.charges(sub.id);
    expect(charges.map((c) => [c.amount, c.status])).toEqual([
      [18000, 'succeeded'],
      [18000, 'succeeded'],
    ]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });

  // 10.00 a unit up to 10, then 7.505 a unit and a 5.00 flat fee (docs/pricing.md).
  const apiTiers = [
    { up_to: 10, unit_amount: 1000 },
    { up_to: 'inf', unit_amount_decimal: '750.5', flat_amount: 500 },
  ];

  it('graduated tiers: 15 units = 10 × 10.00 + 5 × 7.505 + 5.00 = 142.525, invoiced 142.53 with the tiers on the line', async () => {
    const graduated = await plan({
      name: 'API calls',
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: apiTiers,
    });
    expect(graduated).toMatchObject({
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      // What one unit costs under the tiers.
      amount: 1000,
      tiers: [
        { up_to: 10, unit_amount: 1000, unit_amount_decimal: null, flat_amount: null },
        { up_to: 'inf', unit_amount: null, unit_amount_decimal: '750.5', flat_amount: 500 },
      ],
    });
    const sub = await subscribe({ customer_id: await customer(), plan: graduated.id, quantity: 15 });
    const [invoice] = await invoicesOf(sub.id, 1);
    expect(invoice.lines).toEqual([
      expect.objectContaining({
        description: 'API calls',
        quantity: 15,
        // 14253 is not 15 × a whole unit amount: the tiers say how it was made.
        unit_amount: null,
        amount: 14253,
        breakdown: [
          {
            tier: 0,
            from_unit: 1,
            up_to: 10,
            quantity: 10,
            unit_amount_decimal: '1000',
            flat_amount: 0,
            amount_decimal: '10000',
          },
          {
            tier: 1,
            from_unit: 11,
            up_to: null,
            quantity: 5,
            unit_amount_decimal: '750.5',
            flat_amount: 500,
            amount_decimal: '4252.5',
          },
        ],
      }),
    ]);
    expect(invoice.total).toBe(14253);
    expect((await engine.charges(sub.id)).map((c) => c.amount)).toEqual([14253]);
    // The PDF prints the tiers under the line, and no unit price for it.
    const response = await engine.app.request(`/v1/invoices/${invoice.id}/pdf`, { headers: engine.tenant.headers });
    expect(response.status).toBe(200);
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(await response.arrayBuffer())), {
      mergePages: true,
    });
    const flat = text.replace(/\s+/g, ' ');
    for (const expected of [
      'API calls',
      'Units 1–10: 10 × $10.00',
      'Units 11 and up: 5 × $7.505 + $5.00 flat',
      '15 $142.53',
      'Subtotal $142.53',
    ])
      expect(flat, expected).toContain(expected);
  });

  it('volume tiers: 15 units all at the tier 15 falls in: 15 × 7.505 + 5.00 = 117.575, invoiced 117.58; 10 units: 100.00', async () => {
    const volume = await plan({ name: 'Storage', pricing_scheme: 'tiered', tiers_mode: 'volume', tiers: apiTiers });
    const fifteen = await subscribe({ customer_id: await customer(), plan: volume.id, quantity: 15 });
    const ten = await subscribe({ customer_id: await customer(), plan: volume.id, quantity: 10 });
    const [a] = await invoicesOf(fifteen.id, 1);
    const [b] = await invoicesOf(ten.id, 1);
    expect(a.lines[0]).toMatchObject({
      quantity: 15,
      unit_amount: null,
      amount: 11758,
      breakdown: [{ tier: 1, quantity: 15, amount_decimal: '11757.5' }],
    });
    expect(b.lines[0]).toMatchObject({
      quantity: 10,
      unit_amount: 1000,
      amount: 10000,
      breakdown: [{ tier: 0, quantity: 10 }],
    });
  });

  it('a setup fee is on the first invoice only; the renewal bills the seats alone', async () => {
    const seats = await plan({ name: 'Seats', amount: 2000 });
    const setup = await plan({ name: 'Onboarding', type: 'one_time', amount: 5000 });
    expect(setup).toMatchObject({ type: 'one_time', interval: null, interval_count: null, amount: 5000 });
    const sub = await subscribe({
      customer_id: await customer(),
      items: [{ plan: seats.id, quantity: 3 }, { plan: setup.id }],
    });
    // The setup fee is not an item of the subscription: it was for the first invoice.
    expect(sub.items).toEqual([
      { object: 'subscription_item', id: expect.stringMatching(/^si_/), plan: seats.id, quantity: 3 },
    ]);
    await engine.env.sleep(31 * day);
    const [first, renewal] = await invoicesOf(sub.id, 2);
    expect(first.lines.map((l: any) => [l.description, l.plan, l.quantity, l.unit_amount, l.amount])).toEqual([
      ['Seats', seats.id, 3, 2000, 6000],
      ['Onboarding', setup.id, 1, 5000, 5000],
    ]);
    expect(first.total).toBe(11000);
    expect(renewal.lines.map((l: any) => [l.plan, l.amount])).toEqual([[seats.id, 6000]]);
    expect(renewal.total).toBe(6000);
    expect((await engine.charges(sub.id)).map((c) => c.amount)).toEqual([11000, 6000]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });

  it('with a trial, the setup fee is on the invoice at the trial end, then never again', async () => {
    const seats = await plan({ name: 'Seats', amount: 2000 });
    const setup = await plan({ name: 'Onboarding', type: 'one_time', amount: 5000 });
    const sub = await subscribe({
      customer_id: await customer(),
      items: [
        { plan: seats.id, quantity: 2 },
        { plan: setup.id, quantity: 2 },
      ],
      trial_period_days: 7,
    });
    expect(sub).toMatchObject({ status: 'trialing', quantity: 2 });
    expect(await engine.invoices(sub.id)).toEqual([]);
    await engine.env.sleep(8 * day);
    const [first] = await invoicesOf(sub.id, 1);
    expect(first.lines.map((l: any) => [l.plan, l.quantity, l.amount])).toEqual([
      [seats.id, 2, 4000],
      [setup.id, 2, 10000],
    ]);
    await engine.env.sleep(31 * day);
    const [, renewal] = await invoicesOf(sub.id, 2);
    expect(renewal.lines.map((l: any) => [l.plan, l.amount])).toEqual([[seats.id, 4000]]);
    expect((await engine.charges(sub.id)).map((c) => c.amount)).toEqual([14000, 4000]);
    await replays(sub.id);
  });

  it('a price in another currency: currency EUR bills the EUR amount', async () => {
    const seats = await plan({ name: 'Seats (USD, EUR)', amount: 2000, currency_options: { eur: { amount: 1800 } } });
    expect(seats.currency_options).toEqual({ EUR: { amount: 1800, tiers: null } });
    const sub = await subscribe({ customer_id: await customer(), plan: seats.id, quantity: 2, currency: 'EUR' });
    expect(sub).toMatchObject({ currency: 'EUR', quantity: 2 });
    const [invoice] = await invoicesOf(sub.id, 1);
    expect(invoice).toMatchObject({ currency: 'EUR', total: 3600 });
    expect((await engine.charges(sub.id)).map((c) => [c.amount, c.currency])).toEqual([[3600, 'EUR']]);
    const refused = await post('/v1/subscriptions', { customer_id: await customer(), plan: seats.id, currency: 'GBP' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe(`currency: plan ${seats.id} has no price in GBP (it bills in USD, EUR).`);
  });

  it('an upgrade keeps the seats: both proration lines are 12 seats, prorated once each', async () => {
    const basic = await plan({ name: 'Basic', amount: 1000 });
    const pro = await plan({ name: 'Pro', amount: 1500 });
    const sub = await subscribe({ customer_id: await customer(), plan: basic.id, quantity: 12 });
    await engine.env.sleep(10 * day);
    const upgraded = await post(`/v1/subscriptions/${sub.id}/update`, { plan: pro.id });
    expect(upgraded.status, JSON.stringify(upgraded.body)).toBe(200);
    expect(upgraded.body).toMatchObject({ plan: pro.id, quantity: 12, items: [{ plan: pro.id, quantity: 12 }] });
    const [, change] = await invoicesOf(sub.id, 2);
    const [credit, charge] = change.lines;
    expect(credit).toMatchObject({ plan: basic.id, quantity: 12, proration: true });
    expect(charge).toMatchObject({ plan: pro.id, quantity: 12, proration: true });
    // Each line prorates the whole 12-seat amount: -12,000 and 18,000 times the same remaining fraction.
    const fraction =
      (Date.parse(change.lines[0].period_end) - Date.parse(change.lines[0].period_start)) /
      (Date.parse(sub.current_period_end) - Date.parse(sub.current_period_start));
    expect(Math.abs(credit.amount + 12000 * fraction)).toBeLessThanOrEqual(0.5);
    expect(Math.abs(charge.amount - 18000 * fraction)).toBeLessThanOrEqual(0.5);
    expect(change.total).toBe(credit.amount + charge.amount);
    // The renewal bills 12 seats of the new plan.
    await engine.env.sleep(22 * day);
    const [, , renewal] = await invoicesOf(sub.id, 3);
    expect(renewal.lines[0]).toMatchObject({ plan: pro.id, quantity: 12, unit_amount: 1500, amount: 18000 });
  });

  it('quantity changes: more seats now, prorated on one invoice; fewer at the renewal; the same again drops the wait', async () => {
    const seats = await plan({ name: 'Seats', amount: 1000 });
    const sub = await subscribe({ customer_id: await customer(), plan: seats.id, quantity: 12 });
    await engine.env.sleep(10 * day);
    const more = await post(`/v1/subscriptions/${sub.id}/update`, { quantity: 15 });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect(more.body).toMatchObject({
      plan: seats.id,
      quantity: 15,
      pending_plan: null,
      pending_quantity: null,
      items: [{ plan: seats.id, quantity: 15 }],
    });
    const [, change] = await invoicesOf(sub.id, 2);
    const [credit, charge] = change.lines;
    expect([credit.quantity, charge.quantity, credit.plan, charge.plan]).toEqual([12, 15, seats.id, seats.id]);
    const fraction =
      (Date.parse(credit.period_end) - Date.parse(credit.period_start)) /
      (Date.parse(sub.current_period_end) - Date.parse(sub.current_period_start));
    expect(Math.abs(credit.amount + 12000 * fraction)).toBeLessThanOrEqual(0.5);
    expect(Math.abs(charge.amount - 15000 * fraction)).toBeLessThanOrEqual(0.5);
    expect((await engine.charges(sub.id)).map((c) => c.amount)).toEqual([12000, credit.amount + charge.amount]);

    // The same quantity again: nothing to change.
    const same = await post(`/v1/subscriptions/${sub.id}/update`, { quantity: 15 });
    expect(same.status).toBe(409);
    expect(same.body).toEqual({ error: 'invalid_state', message: `The subscription is already on ${seats.id} × 15.` });
    // Fewer seats wait for the renewal; asking for the current quantity drops the wait; fewer again waits again.
    const fewer = await post(`/v1/subscriptions/${sub.id}/update`, { quantity: 5 });
    expect(fewer.body).toMatchObject({ quantity: 15, pending_plan: seats.id, pending_quantity: 5 });
    expect((await post(`/v1/subscriptions/${sub.id}/update`, { quantity: 15 })).body).toMatchObject({
      quantity: 15,
      pending_plan: null,
      pending_quantity: null,
    });
    expect((await post(`/v1/subscriptions/${sub.id}/update`, { plan: seats.id, quantity: 5 })).body).toMatchObject({
      pending_quantity: 5,
    });
    expect((await engine.charges(sub.id)).length).toBe(2);

    await engine.env.sleep(21 * day);
    const [, , renewal] = await invoicesOf(sub.id, 3);
    expect(renewal.lines).toEqual([
      expect.objectContaining({ plan: seats.id, quantity: 5, unit_amount: 1000, amount: 5000, proration: false }),
    ]);
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}`)).body).toMatchObject({
      quantity: 5,
      pending_plan: null,
      pending_quantity: null,
      items: [{ quantity: 5 }],
    });
    const refused = await post(`/v1/subscriptions/${sub.id}/update`, {});
    expect(refused.body).toEqual({
      error: 'invalid_request',
      message: 'plan: required (or quantity, or billing_thresholds)',
    });
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
    await replays(sub.id);
  });

  it('MRR counts what a subscription bills: its quantity, its tiers and its currency', async () => {
    // A fresh account: its MRR is only these subscriptions'.
    const tenant = await engine.signUp({ email: 'mrr@example.com', name: 'Mrr Inc' });
    const as = (path: string, body?: unknown) =>
      engine.call(body === undefined ? 'GET' : 'POST', path, body, tenant.headers);
    const made = async (path: string, body: unknown) => {
      const created = await as(path, body);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body.id as string;
    };
    const cus = await made('/v1/customers', { email: 'ops@example.com', payment_method: 'pm_card_visa' });
    const seats = await made('/v1/plans', {
      name: 'Seats',
      amount: 1500,
      currency: 'USD',
      interval: 'month',
      currency_options: { EUR: { amount: 1800 } },
    });
    const api = await made('/v1/plans', {
      name: 'API',
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: apiTiers,
      currency: 'USD',
      interval: 'year',
    });
    await made('/v1/subscriptions', { customer_id: cus, plan: seats, quantity: 12 });
    await made('/v1/subscriptions', { customer_id: cus, plan: seats, quantity: 2, currency: 'EUR' });
    await made('/v1/subscriptions', { customer_id: cus, plan: api, quantity: 15 });
    const now = await engine.env.currentTimeMs();
    const report = await as(
      `/v1/reports/mrr?interval=day&from=${new Date(now - day).toISOString()}&to=${new Date(now + day).toISOString()}`,
    );
    expect(report.status).toBe(200);
    const last = (currency: string) =>
      report.body.data.find((series: any) => series.currency === currency)?.points.at(-1);
    // 12 × 15.00 monthly, and 142.53 a year (15 units of the graduated tiers) ÷ 12 = 11.8775: 180.00 + 11.88.
    expect(last('USD')).toMatchObject({ mrr: 18000 + 1188, subscriptions: 2 });
    expect(last('EUR')).toMatchObject({ mrr: 3600, subscriptions: 1 });
  });

  it('refuses what it does not bill, and changes nothing', async () => {
    const seats = await plan({ name: 'Seats', amount: 2000 });
    const yearly = await plan({ name: 'Yearly add-on', amount: 5000, interval: 'year' });
    const setup = await plan({ name: 'Setup', type: 'one_time', amount: 5000 });
    const cus = await customer();
    const before = (await engine.call('GET', '/v1/subscriptions?limit=100')).body.data.length;
    const cases: [Record<string, unknown>, string][] = [
      [
        { customer_id: cus, items: [{ plan: seats.id, quantity: 2 }, { plan: yearly.id }] },
        `items: every recurring item shares the subscription's billing period, and ${yearly.id} bills every 1 year while ${seats.id} bills every 1 month. Make a subscription per interval.`,
      ],
      [{ customer_id: cus, plan: setup.id }, `plan: a subscription needs one recurring plan; ${setup.id} is one_time.`],
      [
        { customer_id: cus, items: [{ plan: setup.id }] },
        `items: a subscription needs one recurring plan; ${setup.id} is one_time.`,
      ],
      [
        { customer_id: cus, items: [{ plan: seats.id }, { plan: seats.id }] },
        `items: plan ${seats.id} is given twice; give it once with its quantity.`,
      ],
      [
        { customer_id: cus, plan: seats.id, items: [{ plan: seats.id }] },
        'items: give plan (with quantity) or items, not both',
      ],
      [
        { customer_id: cus, items: [{ plan: seats.id }], quantity: 2 },
        "quantity: with items, each item's quantity says it",
      ],
      [{ customer_id: cus, plan: seats.id, quantity: 0 }, 'quantity: Too small: expected number to be >=1'],
      [
        { customer_id: cus, plan: seats.id, quantity: 50_000 },
        `quantity: 50000 of plan ${seats.id} amounts to $1,000,000.00, above the largest charge ($999,999.99).`,
      ],
      [
        {
          customer_id: cus,
          items: [
            { plan: seats.id, quantity: 40_000 },
            { plan: setup.id, quantity: 5_000 },
          ],
        },
        'items: the first invoice would be $1,050,000.00, above the largest charge ($999,999.99).',
      ],
    ];
    for (const [body, message] of cases) {
      const refused = await post('/v1/subscriptions', body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body).toEqual({ error: 'invalid_request', message });
    }
    expect((await engine.call('GET', '/v1/subscriptions?limit=100')).body.data.length).toBe(before);
  });

  it("plans: bad schemes are 400 with every problem named; a used plan's price never changes", async () => {
    const bad: [Record<string, unknown>, string][] = [
      [
        {
          name: 'x',
          pricing_scheme: 'tiered',
          tiers_mode: 'graduated',
          tiers: [
            { up_to: 10, unit_amount: 1 },
            { up_to: 5, unit_amount: 1 },
          ],
        },
        'tiers[1].up_to: tiers must ascend; 5 is not above the previous tier\'s 10. tiers[1].up_to: the last tier must be "inf" (it takes every quantity above 10); got 5.',
      ],
      [
        { name: 'x', pricing_scheme: 'tiered', tiers: [{ up_to: 'inf', unit_amount: 1 }] },
        'tiers_mode: required for a tiered plan (graduated or volume).',
      ],
      [
        {
          name: 'x',
          pricing_scheme: 'tiered',
          tiers_mode: 'volume',
          amount: 100,
          tiers: [{ up_to: 'inf', unit_amount: 1 }],
        },
        'amount: a tiered plan is priced by its tiers; leave amount out.',
      ],
      [
        {
          name: 'x',
          pricing_scheme: 'tiered',
          tiers_mode: 'volume',
          tiers: [{ up_to: 'inf', unit_amount: 1, unit_amount_decimal: '1.5' }],
        },
        'tiers[0]: give exactly one of unit_amount and unit_amount_decimal, not both.',
      ],
      [
        { name: 'x', amount: 100, tiers_mode: 'volume' },
        'tiers_mode: only a tiered plan takes it (pricing_scheme is per_unit).',
      ],
      [
        { name: 'x', pricing_scheme: 'package', amount: 500 },
        'package_size: required for a package plan. package_size: must be an integer from 1 to 1000000000.',
      ],
      [
        { name: 'x', amount: 100, type: 'one_time', interval: 'month' },
        'interval: a one_time plan has no interval (it is charged once, on the first invoice).',
      ],
      [{ name: 'x', pricing_scheme: 'per_unit' }, 'amount: required for a per_unit plan.'],
      [
        { name: 'x', amount: 100, currency_options: { USD: { amount: 5 }, XYZ: { amount: 5 } } },
        "currency_options.USD: the plan's own currency is priced by the plan itself. currency_options.XYZ: not an ISO 4217 currency code.",
      ],
    ];
    for (const [body, message] of bad) {
      const refused = await post('/v1/plans', {
        currency: 'USD',
        ...(body.type === 'one_time' ? {} : { interval: 'month' }),
        ...body,
      });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body).toEqual({ error: 'invalid_request', message });
    }

    const used = await plan({
      name: 'Used',
      pricing_scheme: 'tiered',
      tiers_mode: 'volume',
      tiers: [{ up_to: 'inf', unit_amount: 700 }],
    });
    await subscribe({ customer_id: await customer(), plan: used.id, quantity: 2 });
    for (const change of [
      { amount: 1 },
      { tiers: [{ up_to: 'inf', unit_amount: 1 }] },
      { currency: 'EUR' },
      { pricing_scheme: 'per_unit', name: 'Renamed' },
    ]) {
      for (const method of ['PATCH', 'POST']) {
        const refused = await engine.call(method, `/v1/plans/${used.id}`, change);
        expect(refused.status).toBe(400);
        expect(refused.body.message).toMatch(/a plan's price never changes once created/);
      }
    }
    const row = await engine.db.orm.em.fork().findOneOrFail(Plan, { id: used.id });
    expect({ name: row.name, amount: row.amount, tiers: row.tiers, scheme: row.pricingScheme }).toEqual({
      name: 'Used',
      amount: 700,
      tiers: [{ up_to: 'inf', unit_amount: 700 }],
      scheme: 'tiered',
    });
    // Name and active still change.
    expect((await engine.call('PATCH', `/v1/plans/${used.id}`, { name: 'Used (2026)' })).body).toMatchObject({
      name: 'Used (2026)',
      amount: 700,
    });
  });
});
