/**
 * Customers' `currency` (docs/pricing.md#currencies), through the real API, workflow, PostgreSQL and Temporal test
 * server: set on create and update (upper-cased, removable, a bad code refused), shown on the customer and its list;
 * when POST /v1/subscriptions names no currency, the customer's chooses among the plans' currency_options (billed and
 * charged in it), a plan not priced in it is a 400 naming the plan with nothing created, an explicit currency still
 * wins, and a customer without one bills in the plan's own; the same for invoice items priced from a plan and for a
 * one-off invoice with nothing else to take its currency from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('customer currency', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const post = (path: string, body?: unknown) => engine.call('POST', path, body);
  async function plan(body: Record<string, unknown>) {
    const created = await post('/v1/plans', { currency: 'USD', interval: 'month', ...body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  }
  async function customer(currency?: string | null) {
    const created = await post('/v1/customers', {
      email: 'mei@example.com',
      name: 'Mei',
      payment_method: 'pm_card_visa',
      ...(currency === undefined ? {} : { currency }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  }
  const subscriptionsOf = async (customerId: string) =>
    (await engine.call('GET', `/v1/subscriptions?customer=${customerId}`)).body.data as unknown[];

  it('is set on create and update, upper-cased, removable, refused when not an ISO code, and shown everywhere', async () => {
    const created = await post('/v1/customers', { email: 'eu@example.com', currency: 'eur' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ object: 'customer', currency: 'EUR' });
    const id = created.body.id as string;
    expect((await engine.call('GET', `/v1/customers/${id}`)).body.currency).toBe('EUR');
    expect(
      (await engine.call('GET', '/v1/customers?limit=100')).body.data.find((c: { id: string }) => c.id === id).currency,
    ).toBe('EUR');

    const changed = await engine.call('PATCH', `/v1/customers/${id}`, { currency: 'gbp' });
    expect(changed.status).toBe(200);
    expect(changed.body.currency).toBe('GBP');
    // Fields left out stay; null removes it; a form body's empty value too.
    expect((await engine.call('PATCH', `/v1/customers/${id}`, { name: 'Renamed' })).body).toMatchObject({
      name: 'Renamed',
      currency: 'GBP',
    });
    expect((await engine.call('PATCH', `/v1/customers/${id}`, { currency: null })).body.currency).toBeNull();
    await engine.call('PATCH', `/v1/customers/${id}`, { currency: 'JPY' });
    const form = await engine.call('POST', `/v1/customers/${id}`, 'currency=', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status, JSON.stringify(form.body)).toBe(200);
    expect(form.body.currency).toBeNull();

    for (const bad of ['XYZ', 'EURO', 12]) {
      const refused = await post('/v1/customers', { email: 'bad@example.com', currency: bad });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ error: 'invalid_request' });
      expect(refused.body.message).toContain('currency');
      const refusedUpdate = await engine.call('PATCH', `/v1/customers/${id}`, { currency: bad });
      expect(refusedUpdate.status).toBe(400);
    }
    expect((await engine.call('GET', `/v1/customers/${id}`)).body.currency).toBeNull();
    // A customer made without one has none.
    expect((await engine.call('GET', `/v1/customers/${await customer()}`)).body.currency).toBeNull();
  });

  it("chooses a subscription's currency among the plans' currency_options when the request names none", async () => {
    const seats = await plan({ name: 'Seats (USD, EUR)', amount: 2000, currency_options: { EUR: { amount: 1800 } } });
    const eur = await customer('EUR');
    const created = await post('/v1/subscriptions', { customer_id: eur, plan: seats, quantity: 2 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ status: 'active', currency: 'EUR', quantity: 2 });
    await eventually(
      () => engine.invoices(created.body.id),
      (list) => list.length === 1 && list[0]!.status === 'paid',
    );
    const [invoice] = (await engine.call('GET', `/v1/invoices?subscription=${created.body.id}`)).body.data;
    expect(invoice).toMatchObject({ currency: 'EUR', total: 3600 });
    expect((await engine.charges(created.body.id)).map((c) => [c.amount, c.currency])).toEqual([[3600, 'EUR']]);

    // An explicit currency still wins over the customer's.
    const usd = await post('/v1/subscriptions', { customer_id: await customer('EUR'), plan: seats, currency: 'USD' });
    expect(usd.status, JSON.stringify(usd.body)).toBe(201);
    expect(usd.body.currency).toBe('USD');

    // No customer currency: the plan's own, as before.
    const plain = await post('/v1/subscriptions', { customer_id: await customer(), plan: seats });
    expect(plain.status).toBe(201);
    expect(plain.body.currency).toBe('USD');

    // Items: every plan must be priced in it, the setup fee too.
    const support = await plan({
      name: 'Support (USD, EUR)',
      amount: 4900,
      currency_options: { EUR: { amount: 4500 } },
    });
    const setup = await plan({
      name: 'Onboarding (USD, EUR)',
      type: 'one_time',
      interval: undefined,
      amount: 10000,
      currency_options: { EUR: { amount: 9000 } },
    });
    const items = await post('/v1/subscriptions', {
      customer_id: await customer('eur'),
      items: [{ plan: seats, quantity: 3 }, { plan: support }, { plan: setup }],
    });
    expect(items.status, JSON.stringify(items.body)).toBe(201);
    expect(items.body.currency).toBe('EUR');
    await eventually(
      () => engine.invoices(items.body.id),
      (list) => list.length === 1 && list[0]!.status === 'paid',
    );
    const [first] = (await engine.call('GET', `/v1/invoices?subscription=${items.body.id}`)).body.data;
    expect(first).toMatchObject({ currency: 'EUR', total: 3 * 1800 + 4500 + 9000 });
  });

  it('refuses a customer currency a plan has no price in with a 400 naming the plan, and creates nothing', async () => {
    const seats = await plan({ name: 'Seats (USD, EUR)', amount: 2000, currency_options: { EUR: { amount: 1800 } } });
    const usdOnly = await plan({ name: 'Support (USD only)', amount: 4900 });
    const gbp = await customer('GBP');
    const refused = await post('/v1/subscriptions', { customer_id: gbp, plan: seats });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: 'invalid_request',
      message: `currency: customer ${gbp} is billed in GBP, and plan ${seats} has no price in GBP (it bills in USD, EUR). Give currency to bill in one of those, or use a plan priced in GBP.`,
    });
    const eur = await customer('EUR');
    const second = await post('/v1/subscriptions', { customer_id: eur, items: [{ plan: seats }, { plan: usdOnly }] });
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_request');
    expect(second.body.message).toContain(`plan ${usdOnly} has no price in EUR (it bills in USD)`);
    expect(await subscriptionsOf(gbp)).toEqual([]);
    expect(await subscriptionsOf(eur)).toEqual([]);
    expect(await engine.charges()).not.toContainEqual(expect.objectContaining({ customerId: gbp }));
    // Naming a currency the plans have is the way out.
    const named = await post('/v1/subscriptions', { customer_id: gbp, plan: seats, currency: 'USD' });
    expect(named.status, JSON.stringify(named.body)).toBe(201);
    expect(named.body.currency).toBe('USD');
  });

  it('prices an invoice item from a plan in the customer currency, and a one-off invoice takes it when nothing else gives one', async () => {
    const workshop = await plan({
      name: 'Workshop (USD, EUR)',
      type: 'one_time',
      interval: undefined,
      amount: 15000,
      currency_options: { EUR: { amount: 13500 } },
    });
    const eur = await customer('EUR');
    const item = await post('/v1/invoice_items', { customer: eur, plan: workshop, quantity: 2 });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    expect(item.body).toMatchObject({
      currency: 'EUR',
      amount: 27000,
      unit_amount: 13500,
      quantity: 2,
      plan: workshop,
    });
    // An explicit currency wins; an amount still needs its own currency.
    const usd = await post('/v1/invoice_items', { customer: eur, plan: workshop, currency: 'USD' });
    expect(usd.body).toMatchObject({ currency: 'USD', amount: 15000 });
    const noCurrency = await post('/v1/invoice_items', { customer: eur, amount: 500, description: 'Fee' });
    expect(noCurrency.status).toBe(400);
    expect(noCurrency.body.message).toBe('currency: required with amount or unit_amount.');

    const chf = await customer('CHF');
    const refused = await post('/v1/invoice_items', { customer: chf, plan: workshop });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_request');
    expect(refused.body.message).toContain(`plan ${workshop} has no price in CHF (it bills in USD, EUR)`);
    expect((await engine.call('GET', `/v1/invoice_items?customer=${chf}`)).body.data).toEqual([]);

    // A one-off invoice with no currency and no pending item: the customer's.
    const draft = await post('/v1/invoices', { customer: chf });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    expect(draft.body).toMatchObject({ status: 'draft', currency: 'CHF' });
    const none = await post('/v1/invoices', { customer: await customer() });
    expect(none.status).toBe(400);
    expect(none.body.message).toBe(
      'currency: required when no pending invoice item of the customer gives it and the customer has no currency.',
    );
  });
});
