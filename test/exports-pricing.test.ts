/**
 * Exports and pricing phase 1 (issue #26): plans export with their type and pricing scheme
 * (tiers, package, currency options as JSON), subscriptions with quantity, a waiting
 * quantity and the currency they bill in (the plan's for rows made before subscriptions had
 * one), invoices with each line's plan, quantity, unit amount and amount; the new filters.
 * Real subscriptions billed by the workflow through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Subscription } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('exports of pricing fields', () => {
  let engine: TestEngine;
  const plans: Record<string, any> = {};
  const subs: Record<string, any> = {};
  beforeAll(async () => {
    engine = await startTestEngine();
    const plan = async (key: string, body: Record<string, unknown>) => {
      const created = await engine.call('POST', '/v1/plans', {
        currency: 'USD',
        ...(body.type === 'one_time' ? {} : { interval: 'month' }),
        ...body,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      plans[key] = created.body;
    };
    await plan('seats', { name: 'Seats', amount: 1000, currency_options: { EUR: { amount: 900 } } });
    await plan('tiered', {
      name: 'API',
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 10, unit_amount: 1000 },
        { up_to: 'inf', unit_amount_decimal: '750.5', flat_amount: 500 },
      ],
    });
    await plan('packs', {
      name: 'SMS',
      pricing_scheme: 'package',
      amount: 500,
      package_size: 100,
      package_round: 'down',
    });
    await plan('setup', { name: 'Onboarding', type: 'one_time', amount: 5000 });
    const customer = await engine.call('POST', '/v1/customers', {
      email: 'ada@example.com',
      payment_method: 'pm_card_visa',
    });
    const subscribe = async (key: string, body: Record<string, unknown>) => {
      const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customer.body.id, ...body });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      subs[key] = created.body;
    };
    await subscribe('seats', { items: [{ plan: plans.seats.id, quantity: 12 }, { plan: plans.setup.id }] });
    await subscribe('euro', { plan: plans.seats.id, quantity: 2, currency: 'EUR' });
    await subscribe('tiered', { plan: plans.tiered.id, quantity: 15 });
    await eventually(
      () => engine.invoices(subs.tiered.id),
      (list) => list.length === 1 && list[0]!.status === 'paid',
    );
    // Ten days on: 12 seats become 15 (now, prorated) and the tiered one waits to go down to 5.
    await engine.env.sleep(10 * day);
    expect((await engine.call('POST', `/v1/subscriptions/${subs.seats.id}/update`, { quantity: 15 })).status).toBe(200);
    expect(
      (await engine.call('POST', `/v1/subscriptions/${subs.tiered.id}/update`, { quantity: 5 })).body,
    ).toMatchObject({ pending_quantity: 5 });
    await eventually(
      () => engine.invoices(subs.seats.id),
      (list) => list.length === 2 && list.every((i) => i.status === 'paid'),
    );
  });
  afterAll(() => engine?.close());

  async function exported(body: Record<string, unknown>) {
    const created = await engine.call('POST', '/v1/exports', body);
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    for (let i = 0; i < 200; i++) {
      const res = await engine.call('GET', `/v1/exports/${created.body.id}`);
      if (res.body.status === 'succeeded') {
        const file = await engine.app.request(`/v1/exports/${res.body.id}/file`, { headers: engine.tenant.headers });
        expect(file.status).toBe(200);
        return file.text();
      }
      expect(res.body.status, JSON.stringify(res.body)).not.toBe('failed');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('export did not finish');
  }

  it('plans: type and pricing scheme, tiers, package and currency options; one-time plans have no interval', async () => {
    const csv = (await exported({ resource: 'plans', format: 'csv' })).trimEnd().split('\r\n');
    expect(csv[0]).toBe(
      'id,created,name,active,type,pricing_scheme,amount,currency,amount_formatted,interval,interval_count,tiers_mode,tiers,package_size,package_round,currency_options',
    );
    const rows = JSON.parse(await exported({ resource: 'plans', format: 'json' }));
    const byName = Object.fromEntries(rows.map((r: any) => [r.name, r]));
    expect(byName.Seats).toMatchObject({
      type: 'recurring',
      pricing_scheme: 'per_unit',
      amount: 1000,
      amount_formatted: '10.00',
      interval: 'month',
      interval_count: 1,
      tiers: null,
    });
    expect(JSON.parse(byName.Seats.currency_options)).toEqual({ EUR: expect.objectContaining({ amount: 900 }) });
    expect(byName.API).toMatchObject({
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      package_size: null,
      currency_options: '{}',
    });
    expect(JSON.parse(byName.API.tiers)).toEqual([
      expect.objectContaining({ up_to: 10, unit_amount: 1000 }),
      expect.objectContaining({ up_to: 'inf', unit_amount_decimal: '750.5', flat_amount: 500 }),
    ]);
    expect(byName.SMS).toMatchObject({
      pricing_scheme: 'package',
      amount: 500,
      package_size: 100,
      package_round: 'down',
      tiers_mode: null,
    });
    expect(byName.Onboarding).toMatchObject({
      type: 'one_time',
      pricing_scheme: 'per_unit',
      amount: 5000,
      interval: null,
      interval_count: null,
      active: 'true',
    });

    // Filters by type and scheme; an unknown value is refused naming the ones it takes.
    expect(
      JSON.parse(
        await exported({ resource: 'plans', format: 'json', filters: { type: 'one_time' }, columns: ['name'] }),
      ),
    ).toEqual([{ name: 'Onboarding' }]);
    expect(
      JSON.parse(
        await exported({ resource: 'plans', format: 'json', filters: { pricing_scheme: 'tiered' }, columns: ['name'] }),
      ),
    ).toEqual([{ name: 'API' }]);
    const bad = await engine.call('POST', '/v1/exports', {
      resource: 'plans',
      format: 'csv',
      filters: { pricing_scheme: 'stairs' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('filters.pricing_scheme: one of per_unit, tiered, package.');
  });

  it("subscriptions: quantity, a waiting quantity and the currency they bill in; a row made before currencies shows its plan's", async () => {
    // As a subscription created before pricing schemes: no currency of its own.
    await engine.db.orm.em.fork().nativeUpdate(Subscription, { id: subs.tiered.id }, { currency: null });
    const rows = JSON.parse(
      await exported({
        resource: 'subscriptions',
        format: 'json',
        columns: ['id', 'plan', 'quantity', 'pending_plan', 'pending_quantity', 'currency'],
      }),
    );
    expect(rows).toEqual(
      expect.arrayContaining([
        {
          id: subs.seats.id,
          plan: plans.seats.id,
          quantity: 15,
          pending_plan: null,
          pending_quantity: null,
          currency: 'USD',
        },
        {
          id: subs.euro.id,
          plan: plans.seats.id,
          quantity: 2,
          pending_plan: null,
          pending_quantity: null,
          currency: 'EUR',
        },
        {
          id: subs.tiered.id,
          plan: plans.tiered.id,
          quantity: 15,
          pending_plan: plans.tiered.id,
          pending_quantity: 5,
          currency: 'USD',
        },
      ]),
    );
    expect(rows).toHaveLength(3);
    expect(
      JSON.parse(
        await exported({ resource: 'subscriptions', format: 'json', filters: { currency: 'EUR' }, columns: ['id'] }),
      ),
    ).toEqual([{ id: subs.euro.id }]);
    const csv = (await exported({ resource: 'subscriptions', format: 'csv', columns: ['id', 'quantity', 'currency'] }))
      .trimEnd()
      .split('\r\n');
    expect(csv).toContain(`${subs.euro.id},2,EUR`);
  });

  it('invoices: each line with its plan, quantity, unit amount and amount, in order', async () => {
    const rows = JSON.parse(
      await exported({ resource: 'invoices', format: 'json', columns: ['id', 'subscription', 'total', 'lines'] }),
    );
    const of = (id: string) =>
      rows.filter((r: any) => r.subscription === id).map((r: any) => ({ ...r, lines: JSON.parse(r.lines) }));
    const [first, change] = of(subs.seats.id);
    expect(first.lines).toEqual([
      {
        description: expect.any(String),
        plan: plans.seats.id,
        quantity: 12,
        unit_amount: 1000,
        amount: 12000,
        proration: false,
      },
      {
        description: expect.any(String),
        plan: plans.setup.id,
        quantity: 1,
        unit_amount: 5000,
        amount: 5000,
        proration: false,
      },
    ]);
    expect(first.total).toBe(17000);
    expect(change.lines.map((l: any) => [l.plan, l.quantity, l.proration])).toEqual([
      [plans.seats.id, 12, true],
      [plans.seats.id, 15, true],
    ]);
    expect(change.lines[0].amount).toBeLessThan(0);
    expect(change.lines[0].amount + change.lines[1].amount).toBe(change.total);
    // The tiered line: 15 units, no whole unit amount (10 × 10.00 + 5 × 7.505 + 5.00 = 142.525, invoiced 142.53).
    const [tiered] = of(subs.tiered.id);
    expect(tiered.lines).toEqual([
      {
        description: expect.any(String),
        plan: plans.tiered.id,
        quantity: 15,
        unit_amount: null,
        amount: 14253,
        proration: false,
      },
    ]);
    // The same as the API's lines.
    const api = await engine.call('GET', `/v1/invoices/${tiered.id}`);
    expect(api.body.lines.map((l: any) => [l.plan, l.quantity, l.unit_amount, l.amount])).toEqual(
      tiered.lines.map((l: any) => [l.plan, l.quantity, l.unit_amount, l.amount]),
    );
  });

  it("invoice search and a searched export find invoices by a line's plan and quantity", async () => {
    const search = async (query: string) => {
      const res = await engine.call('GET', `/v1/invoices/search?query=${encodeURIComponent(query)}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.data as any[]).map((i) => i.subscription_id as string);
    };
    // The setup fee's plan is on the first seats invoice only.
    expect(await search(`plan:${plans.setup.id}`)).toEqual([subs.seats.id]);
    // 15 seats: the change's charge line and the tiered invoice; more than 12: the same two.
    expect((await search('quantity:15')).sort()).toEqual([subs.seats.id, subs.tiered.id].sort());
    expect((await search('quantity>=13')).sort()).toEqual([subs.seats.id, subs.tiered.id].sort());
    expect(await search(`plan:${plans.seats.id} AND quantity:2`)).toEqual([subs.euro.id]);
    // A negation: the invoices with no line of the seats plan.
    expect(await search(`-plan:${plans.seats.id}`)).toEqual([subs.tiered.id]);
    const bad = await engine.call('GET', `/v1/invoices/search?query=${encodeURIComponent('quantity~"1"')}`);
    expect(bad.status).toBe(400);
    const rows = JSON.parse(
      await exported({ resource: 'invoices', format: 'json', query: 'quantity>=13', columns: ['subscription'] }),
    );
    expect(rows.map((r: any) => r.subscription).sort()).toEqual([subs.seats.id, subs.tiered.id].sort());
  });
});
