import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CustomerTaxId, Event, type InvoiceLine, TaxRate } from '../db/entities/index.ts';
import { previewAdjustments, useTaxCalculator } from '../services/invoices/adjustments.ts';
import { builtInTaxCalculator, type TaxCalculator } from '../services/taxes/calculator.ts';
import { writeSubscriptionTaxRates } from '../services/taxes/rates.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * Taxes (issue #27, docs/discounts-and-taxes.md#taxes) through the Hono app on real PostgreSQL: tax
 * rates (create, list, deactivate, what never changes, bad input), customers' tax details and tax
 * ids, the mode's default rates, isolation between accounts and modes, and which rates the built-in
 * tax calculator applies to a line (its own, its item's, its subscription's, the account's defaults
 * whose jurisdiction matches the customer; none for exempt and reverse-charge customers).
 */
describe('tax rates', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  const sandbox = () => ({ ...engine.tenant.headers, 'x-sandbox-mode': 'true' });
  const rate = async (body: Record<string, unknown>, headers?: Record<string, string>) => {
    const created = await engine.call('POST', '/v1/tax_rates', body, headers);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; percentage: string };
  };
  const customer = async (body: Record<string, unknown> = {}, headers?: Record<string, string>) => {
    const created = await engine.call(
      'POST',
      '/v1/customers',
      { email: `tax-${Math.random().toString(36).slice(2)}@example.com`, ...body },
      headers,
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; address: unknown; tax_exempt: string };
  };
  const eventsOf = async (id: string) =>
    (await engine.db.orm.em.fork().find(Event, { accountId: engine.tenant.accountId }, { orderBy: { id: 'asc' } }))
      .filter((event) => (event.data.object as { id?: string }).id === id)
      .map((event) => ({ type: event.type, previous: event.data.previous_attributes }));

  it('creates, lists, retrieves and deactivates a rate, with its events', async () => {
    const vat = await engine.call('POST', '/v1/tax_rates', {
      display_name: 'VAT',
      description: 'German VAT',
      percentage: 19,
      inclusive: false,
      country: 'de',
      jurisdiction: 'DE',
      tax_type: 'vat',
      metadata: { ledger: 'VAT-DE' },
    });
    expect(vat.status, JSON.stringify(vat.body)).toBe(201);
    expect(vat.body).toMatchObject({
      object: 'tax_rate',
      display_name: 'VAT',
      description: 'German VAT',
      percentage: '19',
      inclusive: false,
      country: 'DE',
      state: null,
      jurisdiction: 'DE',
      tax_type: 'vat',
      active: true,
      metadata: { ledger: 'VAT-DE' },
      livemode: true,
    });
    expect(vat.body.id).toMatch(/^txr_[0-9a-z]{26}$/);
    // A decimal string keeps its places (at most 4), written once: no trailing zeros.
    const ny = await rate({
      display_name: 'Sales tax',
      percentage: '8.8750',
      inclusive: false,
      country: 'US',
      state: 'ny',
    });
    expect(ny).toMatchObject({ percentage: '8.875', state: 'NY' });
    const gst = await rate({ display_name: 'GST', percentage: '0.0001', inclusive: true });
    expect(gst.percentage).toBe('0.0001');

    const list = await engine.call('GET', '/v1/tax_rates?limit=10');
    expect(list.body.data.map((r: { id: string }) => r.id).slice(0, 3)).toEqual([gst.id, ny.id, vat.body.id]);
    expect((await engine.call('GET', `/v1/tax_rates/${ny.id}`)).body.percentage).toBe('8.875');

    const off = await engine.call('PATCH', `/v1/tax_rates/${ny.id}`, { active: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ active: false, percentage: '8.875' });
    const active = await engine.call('GET', '/v1/tax_rates?active=true&limit=100');
    expect(active.body.data.map((r: { id: string }) => r.id)).not.toContain(ny.id);
    expect(
      (await engine.call('GET', '/v1/tax_rates?active=false')).body.data.map((r: { id: string }) => r.id),
    ).toContain(ny.id);
    expect(
      (await engine.call('GET', '/v1/tax_rates?inclusive=true&limit=100')).body.data.map((r: { id: string }) => r.id),
    ).toEqual([gst.id]);
    // The same change again changes nothing and records nothing.
    expect((await engine.call('PATCH', `/v1/tax_rates/${ny.id}`, { active: false })).status).toBe(200);
    expect(await eventsOf(ny.id)).toEqual([
      { type: 'tax_rate.created', previous: undefined },
      { type: 'tax_rate.updated', previous: { active: true } },
    ]);
  });

  it('percentage and inclusive never change; bad input is 400 in the spec error shape and changes nothing', async () => {
    const vat = await rate({ display_name: 'VAT', percentage: 20, inclusive: true, country: 'GB' });
    for (const body of [{ percentage: 21 }, { inclusive: false }, { display_name: 'x', percentage: '20' }]) {
      const refused = await engine.call('PATCH', `/v1/tax_rates/${vat.id}`, body);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(Object.keys(refused.body).sort()).toEqual(['error', 'message']);
      expect(refused.body.message).toMatch(/cannot change once created/);
    }
    expect((await engine.call('GET', `/v1/tax_rates/${vat.id}`)).body).toMatchObject({
      display_name: 'VAT',
      percentage: '20',
      inclusive: true,
    });

    const before = await engine.db.orm.em.fork().count(TaxRate, { accountId: engine.tenant.accountId });
    const cases: [Record<string, unknown>, string][] = [
      [{ display_name: 'VAT', percentage: 101, inclusive: false }, 'percentage'],
      [{ display_name: 'VAT', percentage: -1, inclusive: false }, 'percentage'],
      [{ display_name: 'VAT', percentage: '19.00001', inclusive: false }, 'percentage'],
      [{ display_name: 'VAT', percentage: 'nineteen', inclusive: false }, 'percentage'],
      [{ display_name: 'VAT', percentage: 1e21, inclusive: false }, 'percentage'],
      [{ display_name: 'VAT', percentage: 19 }, 'inclusive'],
      [{ percentage: 19, inclusive: false }, 'display_name'],
      [{ display_name: 'VAT', percentage: 19, inclusive: false, country: 'XX' }, 'country'],
      [{ display_name: 'VAT', percentage: 19, inclusive: false, country: 'EU' }, 'country'],
      [{ display_name: 'VAT', percentage: 19, inclusive: false, state: 'CA' }, 'country'],
      [{ display_name: 'VAT', percentage: 19, inclusive: false, tax_type: 'tithe' }, 'tax_type'],
      [{ display_name: 'VAT', percentage: 19, inclusive: false, livemode: false }, 'livemode'],
    ];
    for (const [body, words] of cases) {
      const answer = await engine.call('POST', '/v1/tax_rates', body);
      expect(answer.status, JSON.stringify([body, answer.body])).toBe(400);
      expect(answer.body.error).toBe('invalid_request');
      expect(answer.body.message, JSON.stringify(body)).toContain(words);
    }
    expect(await engine.db.orm.em.fork().count(TaxRate, { accountId: engine.tenant.accountId })).toBe(before);
    expect((await engine.call('GET', '/v1/tax_rates/txr_01jd3x5k8q0m2v7c9r4t6y1w3e')).status).toBe(404);
  });

  it('another account and the other mode never see a rate, nor can assign it', async () => {
    const live = await rate({ display_name: 'VAT', percentage: 19, inclusive: false });
    const test = await rate({ display_name: 'VAT (sandbox)', percentage: 19, inclusive: false }, sandbox());
    expect((await engine.call('GET', `/v1/tax_rates/${test.id}`, undefined, sandbox())).status).toBe(200);
    const crossMode = await engine.call('GET', `/v1/tax_rates/${live.id}`, undefined, sandbox());
    expect(crossMode.status).toBe(404);
    expect(crossMode.body.message).toContain('exists in live mode');
    expect(
      (await engine.call('GET', '/v1/tax_rates?limit=100', undefined, sandbox())).body.data.map(
        (r: { id: string }) => r.id,
      ),
    ).toEqual([test.id]);

    const other = await engine.signUp({ name: 'Other' });
    expect((await engine.call('GET', `/v1/tax_rates/${live.id}`, undefined, other.headers)).body).toEqual({
      error: 'not_found',
      message: 'No such tax rate.',
    });
    expect((await engine.call('PATCH', `/v1/tax_rates/${live.id}`, { active: false }, other.headers)).status).toBe(404);
    expect((await engine.call('GET', '/v1/tax_rates', undefined, other.headers)).body.data).toEqual([]);
    const assign = await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [live.id] }, other.headers);
    expect(assign.status).toBe(400);
    expect(assign.body.message).toContain(`no such tax rate in this account and mode: ${live.id}`);
    const assignCrossMode = await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [live.id] }, sandbox());
    expect(assignCrossMode.status).toBe(400);
    expect((await engine.call('GET', '/v1/tax_rates/' + live.id)).body.active).toBe(true);
  });

  it("the mode's default tax rates: active rates of the mode only; each mode its own", async () => {
    const a = await rate({ display_name: 'VAT', percentage: 19, inclusive: false, country: 'DE' });
    const b = await rate({ display_name: 'VAT', percentage: 20, inclusive: false, country: 'FR' });
    const inactive = await rate({
      display_name: 'Old VAT',
      percentage: 16,
      inclusive: false,
      country: 'DE',
      active: false,
    });
    expect((await engine.call('GET', '/v1/settings/tax')).body).toEqual({
      object: 'tax_settings',
      livemode: true,
      default_tax_rates: [],
    });
    const set = await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [a.id, b.id] });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.default_tax_rates).toEqual([a.id, b.id]);
    for (const [ids, words] of [
      [[inactive.id], 'inactive'],
      [[a.id, a.id], 'given twice'],
      [['txr_01jd3x5k8q0m2v7c9r4t6y1w3e'], 'no such tax rate'],
    ] as const) {
      const refused = await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: ids });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toContain(words);
    }
    expect((await engine.call('GET', '/v1/settings/tax')).body.default_tax_rates).toEqual([a.id, b.id]);
    expect((await engine.call('GET', '/v1/settings/tax', undefined, sandbox())).body).toEqual({
      object: 'tax_settings',
      livemode: false,
      default_tax_rates: [],
    });
    // A member reads them but may not change them (as the other settings).
    const email = `tax-member-${Date.now()}@example.com`;
    expect(
      (await engine.call('POST', '/v1/users', { email, password: 'Member!2345-secret', role: 'member' })).status,
    ).toBe(201);
    const member = await engine.login(email, 'Member!2345-secret');
    expect((await engine.call('GET', '/v1/settings/tax', undefined, member.headers)).body.default_tax_rates).toEqual([
      a.id,
      b.id,
    ]);
    expect((await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [] }, member.headers)).status).toBe(
      403,
    );
    // [] clears them.
    expect((await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [] })).body.default_tax_rates).toEqual(
      [],
    );
  });

  it("a customer's address and tax_exempt: on create and update, validated, on the customer object", async () => {
    const plain = await customer();
    expect(plain).toMatchObject({ address: null, tax_exempt: 'none' });
    const de = await customer({
      address: { line1: 'Friedrichstraße 68', city: 'Berlin', postal_code: '10117', country: 'de' },
      tax_exempt: 'reverse',
    });
    expect(de).toMatchObject({
      address: {
        line1: 'Friedrichstraße 68',
        line2: null,
        city: 'Berlin',
        state: null,
        postal_code: '10117',
        country: 'DE',
      },
      tax_exempt: 'reverse',
    });
    const updated = await engine.call('PATCH', `/v1/customers/${de.id}`, {
      address: { country: 'US', state: 'ca' },
      tax_exempt: 'exempt',
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ address: { line1: null, country: 'US', state: 'CA' }, tax_exempt: 'exempt' });
    expect((await engine.call('GET', `/v1/customers/${de.id}`)).body.address.country).toBe('US');
    for (const body of [
      { tax_exempt: 'sometimes' },
      { address: { country: 'Germany' } },
      { address: { country: 'DE', planet: 'Earth' } },
    ]) {
      const refused = await engine.call('PATCH', `/v1/customers/${de.id}`, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
    }
    expect((await engine.call('GET', `/v1/customers/${de.id}`)).body).toMatchObject({
      address: { country: 'US', state: 'CA' },
      tax_exempt: 'exempt',
    });
    const cleared = await engine.call('POST', `/v1/customers/${de.id}`, { address: null, tax_exempt: 'none' });
    expect(cleared.body).toMatchObject({ address: null, tax_exempt: 'none' });
  });

  it("a customer's tax ids: add (validated), list, retrieve, delete, with events; other accounts and modes see none", async () => {
    const cus = await customer({ address: { country: 'DE' } });
    const added = await engine.call('POST', `/v1/customers/${cus.id}/tax_ids`, {
      type: 'eu_vat',
      value: 'de 136 695 976',
    });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toMatchObject({
      object: 'tax_id',
      customer: cus.id,
      type: 'eu_vat',
      value: 'DE136695976',
      country: 'DE',
      livemode: true,
    });
    expect(added.body.id).toMatch(/^txi_[0-9a-z]{26}$/);
    const ein = await engine.call('POST', `/v1/customers/${cus.id}/tax_ids`, { type: 'us_ein', value: '911144442' });
    expect(ein.body.value).toBe('91-1144442');

    for (const [body, words] of [
      [{ type: 'eu_vat', value: 'DE136695977' }, 'check digits'],
      [{ type: 'eu_vat', value: 'XX136695976' }, 'prefix'],
      [{ type: 'gb_vat', value: 'GB980780685' }, 'check digits'],
      [{ type: 'us_ein', value: '07-1144442' }, 'prefix 07'],
      [{ type: 'mars_vat', value: '1' }, 'type'],
      [{ type: 'eu_vat', value: 'DE136695976' }, 'already has'],
    ] as const) {
      const refused = await engine.call('POST', `/v1/customers/${cus.id}/tax_ids`, body);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body.message).toContain(words);
    }
    const list = await engine.call('GET', `/v1/customers/${cus.id}/tax_ids`);
    expect(list.body.data.map((t: { id: string }) => t.id)).toEqual([ein.body.id, added.body.id]);
    expect((await engine.call('GET', `/v1/customers/${cus.id}/tax_ids/${added.body.id}`)).body.value).toBe(
      'DE136695976',
    );

    const other = await engine.signUp({ name: 'Other tax ids' });
    expect((await engine.call('GET', `/v1/customers/${cus.id}/tax_ids`, undefined, other.headers)).status).toBe(404);
    expect(
      (await engine.call('DELETE', `/v1/customers/${cus.id}/tax_ids/${added.body.id}`, undefined, other.headers))
        .status,
    ).toBe(404);
    expect(
      (
        await engine.call(
          'POST',
          `/v1/customers/${cus.id}/tax_ids`,
          { type: 'eu_vat', value: 'DE136695976' },
          sandbox(),
        )
      ).status,
    ).toBe(404);
    const otherCustomer = await customer();
    expect((await engine.call('GET', `/v1/customers/${otherCustomer.id}/tax_ids/${added.body.id}`)).status).toBe(404);

    const deleted = await engine.call('DELETE', `/v1/customers/${cus.id}/tax_ids/${added.body.id}`);
    expect(deleted.body).toEqual({ id: added.body.id, object: 'tax_id', deleted: true });
    expect((await engine.call('DELETE', `/v1/customers/${cus.id}/tax_ids/${added.body.id}`)).status).toBe(404);
    expect(await engine.db.orm.em.fork().count(CustomerTaxId, { customerId: cus.id })).toBe(1);
    expect((await eventsOf(added.body.id)).map((e) => e.type)).toEqual([
      'customer.tax_id.created',
      'customer.tax_id.deleted',
    ]);
  });

  it("the built-in calculator: a line's own rates, else its item's, else the subscription's, else the account defaults matching the customer; none when exempt or reverse", async () => {
    const scope = { accountId: engine.tenant.accountId, livemode: true };
    const de = await rate({ display_name: 'USt', percentage: 19, inclusive: false, country: 'DE' });
    const fr = await rate({ display_name: 'TVA', percentage: 20, inclusive: false, country: 'FR' });
    const ca = await rate({
      display_name: 'CA sales tax',
      percentage: '7.25',
      inclusive: false,
      country: 'US',
      state: 'CA',
    });
    const anywhere = await rate({ display_name: 'Levy', percentage: 1, inclusive: true });
    const retired = await rate({ display_name: 'Old', percentage: 5, inclusive: false });
    const own = await rate({ display_name: 'Own', percentage: 7, inclusive: false });
    const item = await rate({ display_name: 'Item', percentage: 10, inclusive: false });
    const sub = await rate({ display_name: 'Sub', percentage: 3, inclusive: true });
    expect(
      (
        await engine.call('PATCH', '/v1/settings/tax', {
          default_tax_rates: [de.id, fr.id, ca.id, anywhere.id, retired.id],
        })
      ).status,
    ).toBe(200);
    // Deactivated after being made a default: no longer applied as one.
    await engine.call('PATCH', `/v1/tax_rates/${retired.id}`, { active: false });

    const berlin = await customer({ address: { country: 'DE' } });
    const la = await customer({ address: { country: 'US', state: 'CA' } });
    const nyc = await customer({ address: { country: 'US', state: 'NY' } });
    const nowhere = await customer();
    const exempt = await customer({ address: { country: 'DE' }, tax_exempt: 'exempt' });
    const reverse = await customer({ address: { country: 'DE' }, tax_exempt: 'reverse' });
    await engine.call('POST', `/v1/customers/${reverse.id}/tax_ids`, { type: 'eu_vat', value: 'ATU13585627' });

    const calc = (
      customerId: string,
      lines: { plan?: string; tax_rates?: string[] }[],
      subscriptionId: string | null = null,
    ) =>
      builtInTaxCalculator.calculate(engine.db.orm.em.fork(), {
        ...scope,
        customerId,
        subscriptionId,
        currency: 'EUR',
        lines: lines.map((line) => ({
          amount: 1000,
          plan: line.plan ?? null,
          product: null,
          ...(line.tax_rates ? { tax_rates: line.tax_rates } : {}),
        })),
      });
    const ids = (result: Awaited<ReturnType<typeof calc>>) =>
      result.line_tax_rates.map((rates) => rates.map((r) => r.id));

    // The account's defaults by jurisdiction: a country's rate for customers there, a state's for customers in it, a rate without a country for all.
    expect(ids(await calc(berlin.id, [{}]))).toEqual([[de.id, anywhere.id]]);
    expect(ids(await calc(la.id, [{}]))).toEqual([[ca.id, anywhere.id]]);
    expect(ids(await calc(nyc.id, [{}]))).toEqual([[anywhere.id]]);
    expect(ids(await calc(nowhere.id, [{}]))).toEqual([[anywhere.id]]);
    const berlinResult = await calc(berlin.id, [{}]);
    expect(berlinResult).toMatchObject({
      tax_exempt: 'none',
      customer_address: { country: 'DE', state: null },
      customer_tax_ids: [],
    });
    expect(berlinResult.line_tax_rates[0]![0]).toEqual({
      id: de.id,
      display_name: 'USt',
      percentage: '19',
      inclusive: false,
      country: 'DE',
      state: null,
    });

    // A line's own rates (a one-off invoice item's) win over everything.
    expect(ids(await calc(berlin.id, [{ tax_rates: [own.id] }, {}]))).toEqual([[own.id], [de.id, anywhere.id]]);

    // A subscription's item rates, then its defaults (its projection row not written yet: the plans its rates were set with).
    const subscriptionId = 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e';
    await engine.db.orm.em.fork().transactional((tx) =>
      writeSubscriptionTaxRates(tx, scope, subscriptionId, {
        defaultTaxRates: [sub.id],
        items: [{ id: 'si_01jd3x5k8q0m2v7c9r4t6y1w3e', plan: 'plan_a', taxRates: [item.id] }],
      }),
    );
    expect(
      ids(await calc(berlin.id, [{ plan: 'plan_a' }, { plan: 'plan_b' }, { tax_rates: [own.id] }], subscriptionId)),
    ).toEqual([[item.id], [sub.id], [own.id]]);

    // Exempt and reverse-charge customers: no rates at all; the tax ids come along for the invoice.
    expect(ids(await calc(exempt.id, [{}, { tax_rates: [own.id] }]))).toEqual([[], []]);
    const reversed = await calc(reverse.id, [{ plan: 'plan_a' }], subscriptionId);
    expect(reversed).toMatchObject({
      tax_exempt: 'reverse',
      line_tax_rates: [[]],
      customer_tax_ids: [{ type: 'eu_vat', value: 'ATU13585627' }],
    });

    // Another mode's defaults are not this mode's.
    const sandboxCustomer = await customer({ address: { country: 'DE' } }, sandbox());
    const sandboxResult = await builtInTaxCalculator.calculate(engine.db.orm.em.fork(), {
      accountId: scope.accountId,
      livemode: false,
      customerId: sandboxCustomer.id,
      subscriptionId: null,
      currency: 'EUR',
      lines: [{ amount: 1000, plan: null, product: null }],
    });
    expect(sandboxResult.line_tax_rates).toEqual([[]]);
  });

  it('a plugged-in tax calculator (the TaxCalculator seam) decides the rates of an invoice instead of the built-in one', async () => {
    const ny = await customer({ address: { country: 'US', state: 'NY' } });
    const asked: string[] = [];
    // A stand-in for a merchant's tax service, as docs/discounts-and-taxes.md "Plugging in a tax service" writes one: no service is called.
    const plugged: TaxCalculator = {
      async calculate(tx, input) {
        const base = await builtInTaxCalculator.calculate(tx, input);
        asked.push(`${input.customerId}:${base.customer_address.country}/${base.customer_address.state}`);
        const rate = {
          id: 'txr_service_ny',
          display_name: 'NY sales tax',
          percentage: '8.875',
          inclusive: false,
          country: 'US',
          state: 'NY',
        };
        return { ...base, line_tax_rates: input.lines.map(() => [rate]) };
      },
    };
    // What every invoice issued and every preview asks (services/invoices/adjustments.ts adjustLines), on the real database.
    const parties = {
      accountId: engine.tenant.accountId,
      livemode: true,
      customerId: ny.id,
      subscriptionId: null,
      currency: 'USD',
      at: new Date(),
    };
    const lines: InvoiceLine[] = [
      {
        description: 'Workshop',
        amount: 10000,
        quantity: 1,
        period_start: '2026-11-01T00:00:00.000Z',
        period_end: '2026-11-01T00:00:00.000Z',
      },
    ];
    // What the built-in calculator decides for this invoice (the rates earlier tests of this file left on the account).
    const builtIn = (await previewAdjustments(engine.db.orm.em.fork(), parties, lines, false)).totals;
    expect(builtIn.tax).not.toBe(888);
    useTaxCalculator(plugged);
    try {
      const adjusted = await previewAdjustments(engine.db.orm.em.fork(), parties, lines, false);
      expect(adjusted.totals).toMatchObject({
        subtotal: 10000,
        tax: 888,
        total: 10888,
        total_tax_amounts: [{ tax_rate: 'txr_service_ny', display_name: 'NY sales tax', amount: 888 }],
      });
      expect(asked).toEqual([`${ny.id}:US/NY`]);
    } finally {
      useTaxCalculator(undefined);
    }
    // Back to the built-in calculator: the same totals as before the plug.
    expect((await previewAdjustments(engine.db.orm.em.fork(), parties, lines, false)).totals).toEqual(builtIn);
  });
});

/**
 * Taxes on real invoices (the lead's wiring: services/invoices/adjustments.ts asks the tax calculator):
 * a German customer's subscription invoice with a 19% exclusive DE rate shows the tax; a
 * reverse-charge customer's shows none and its receipt carries the legal note; a subscription's own
 * default and item rates win over the account's; a change through /v1/subscriptions/{id}/tax_rates
 * shows on the upcoming invoice.
 */
describe('taxes on subscription invoices', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const post = async (path: string, body: Record<string, unknown>, status = 201) => {
    const answer = await engine.call('POST', path, body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    return answer.body;
  };
  const invoicesOf = async (subscription: string) =>
    (await engine.call('GET', `/v1/invoices?subscription=${subscription}`)).body.data as Record<string, any>[];

  it('a German customer pays 19% VAT on top; a reverse-charge customer pays none and reads the note', async () => {
    const vat = await post('/v1/tax_rates', {
      display_name: 'USt',
      percentage: 19,
      inclusive: false,
      country: 'DE',
      tax_type: 'vat',
    });
    const fr = await post('/v1/tax_rates', {
      display_name: 'TVA',
      percentage: 20,
      inclusive: false,
      country: 'FR',
      tax_type: 'vat',
    });
    expect((await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [vat.id, fr.id] })).status).toBe(200);
    const plan = await post('/v1/plans', { name: 'Team', amount: 2000, currency: 'EUR', interval: 'month' });

    const berlin = await post('/v1/customers', {
      email: 'kunde@example.de',
      name: 'Kunde GmbH',
      payment_method: 'pm_card_visa',
      address: { line1: 'Friedrichstraße 68', city: 'Berlin', postal_code: '10117', country: 'DE' },
    });
    const sub = await post('/v1/subscriptions', { customer_id: berlin.id, plan: plan.id });
    const [invoice] = await invoicesOf(sub.id);
    expect(invoice).toMatchObject({
      subtotal: 2000,
      total_excluding_tax: 2000,
      tax: 380,
      total: 2380,
      amount_due: 2380,
      customer_tax_exempt: 'none',
      customer_address: { country: 'DE', state: null },
    });
    expect(invoice!.total_tax_amounts).toEqual([
      expect.objectContaining({
        tax_rate: vat.id,
        percentage: '19',
        inclusive: false,
        taxable_amount: 2000,
        amount: 380,
      }),
    ]);
    expect(invoice!.lines[0].tax_amounts).toEqual([expect.objectContaining({ tax_rate: vat.id, amount: 380 })]);

    // An Austrian business with a VAT number, reverse charge: no tax, and the note on its receipt.
    const vienna = await post('/v1/customers', {
      email: 'rechnung@example.at',
      name: 'Firma AG',
      payment_method: 'pm_card_visa',
      address: { country: 'AT' },
      tax_exempt: 'reverse',
    });
    await post(`/v1/customers/${vienna.id}/tax_ids`, { type: 'eu_vat', value: 'ATU13585627' });
    const reverse = await post('/v1/subscriptions', {
      customer_id: vienna.id,
      plan: plan.id,
      default_tax_rates: [vat.id],
    });
    const [reversed] = await invoicesOf(reverse.id);
    expect(reversed).toMatchObject({
      subtotal: 2000,
      tax: 0,
      total: 2000,
      total_tax_amounts: [],
      customer_tax_exempt: 'reverse',
      customer_tax_ids: [{ type: 'eu_vat', value: 'ATU13585627' }],
    });
    const receipt = await eventually(
      async () =>
        engine.mail.messages.find(
          (m) => m.envelopeTo.includes('rechnung@example.at') && m.parsed.subject?.includes('Receipt'),
        ),
      (m) => m !== undefined,
      15_000,
    );
    expect(receipt!.parsed.text).toContain(
      'Reverse charge: VAT to be accounted for by the recipient (Article 196, Council Directive 2006/112/EC)',
    );
  });

  it("a subscription's default and item tax rates win over the account's; a change shows on the upcoming invoice", async () => {
    const standard = await post('/v1/tax_rates', { display_name: 'VAT', percentage: 20, inclusive: false });
    const reduced = await post('/v1/tax_rates', { display_name: 'VAT (reduced)', percentage: '5.5', inclusive: false });
    const included = await post('/v1/tax_rates', { display_name: 'GST', percentage: 10, inclusive: true });
    const seats = await post('/v1/plans', { name: 'Seats', amount: 1000, currency: 'EUR', interval: 'month' });
    const books = await post('/v1/plans', { name: 'E-books', amount: 2000, currency: 'EUR', interval: 'month' });
    const customer = await post('/v1/customers', {
      email: 'items@example.fr',
      payment_method: 'pm_card_visa',
      address: { country: 'FR' },
    });

    // A rate not of this account and mode, or inactive, is refused before anything starts.
    const inactive = await post('/v1/tax_rates', {
      display_name: 'Old',
      percentage: 1,
      inclusive: false,
      active: false,
    });
    for (const body of [
      { default_tax_rates: [inactive.id] },
      { items: [{ plan: seats.id, tax_rates: ['txr_01jd3x5k8q0m2v7c9r4t6y1w3e'] }] },
    ]) {
      const refused = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customer.id,
        items: [{ plan: seats.id }],
        ...body,
      });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    }
    expect((await engine.call('GET', `/v1/subscriptions?customer=${customer.id}`)).body.data).toEqual([]);

    const sub = await post('/v1/subscriptions', {
      customer_id: customer.id,
      items: [
        { plan: seats.id, quantity: 2 },
        { plan: books.id, tax_rates: [reduced.id] },
      ],
      default_tax_rates: [standard.id],
    });
    const [first] = await invoicesOf(sub.id);
    // Seats: 2000 + 20% = 400; e-books: 2000 + 5.5% = 110.
    expect(
      first!.lines.map((l: { tax_amounts?: { tax_rate: string; amount: number }[] }) =>
        l.tax_amounts?.map((t) => [t.tax_rate, t.amount]),
      ),
    ).toEqual([[[standard.id, 400]], [[reduced.id, 110]]]);
    expect(first).toMatchObject({ subtotal: 4000, tax: 510, total: 4510 });

    const taxRates = await engine.call('GET', `/v1/subscriptions/${sub.id}/tax_rates`);
    const booksItem = taxRates.body.items[0].id as string;
    expect(taxRates.body).toEqual({
      object: 'subscription_tax_rates',
      subscription: sub.id,
      default_tax_rates: [standard.id],
      items: [{ id: booksItem, tax_rates: [reduced.id] }],
    });
    const items = (await engine.call('GET', `/v1/subscription_items?subscription=${sub.id}`)).body.data;
    expect(items.map((i: { plan: string; tax_rates: string[] }) => [i.plan, i.tax_rates])).toEqual([
      [seats.id, []],
      [books.id, [reduced.id]],
    ]);

    // Prices include GST from now on for the defaults; the e-books item keeps its own rate.
    const changed = await engine.call('POST', `/v1/subscriptions/${sub.id}/tax_rates`, {
      default_tax_rates: [included.id],
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.default_tax_rates).toEqual([included.id]);
    const upcoming = await engine.call('GET', `/v1/invoices/upcoming?subscription=${sub.id}`);
    expect(upcoming.status, JSON.stringify(upcoming.body)).toBe(200);
    // 2000 including 10%: 1818 + 182.
    expect(
      upcoming.body.lines.map((l: { tax_amounts?: { tax_rate: string; amount: number }[] }) =>
        l.tax_amounts?.map((t) => [t.tax_rate, t.amount]),
      ),
    ).toEqual([[[included.id, 182]], [[reduced.id, 110]]]);
    expect(upcoming.body).toMatchObject({ subtotal: 4000, tax: 292, total_excluding_tax: 3818, total: 4110 });

    // An item's rates alone: no workflow message; bad ones change nothing.
    const patched = await engine.call('PATCH', `/v1/subscription_items/${booksItem}`, { tax_rates: [] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.tax_rates).toEqual([]);
    for (const [path, body] of [
      [`/v1/subscription_items/${booksItem}`, { tax_rates: [inactive.id] }],
      [`/v1/subscription_items/${booksItem}`, { tax_rates: [reduced.id, reduced.id] }],
    ] as const) {
      const refused = await engine.call('PATCH', path, body);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    }
    for (const body of [
      { default_tax_rates: [inactive.id] },
      { items: [{ id: 'si_01jd3x5k8q0m2v7c9r4t6y1w3e', tax_rates: [] }] },
      {},
    ]) {
      const refused = await engine.call('POST', `/v1/subscriptions/${sub.id}/tax_rates`, body);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    }
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}/tax_rates`)).body).toEqual({
      object: 'subscription_tax_rates',
      subscription: sub.id,
      default_tax_rates: [included.id],
      items: [],
    });
    const other = await engine.signUp({ name: 'Other subs' });
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}/tax_rates`, undefined, other.headers)).status).toBe(
      404,
    );
    expect(
      (await engine.call('POST', `/v1/subscriptions/${sub.id}/tax_rates`, { default_tax_rates: [] }, other.headers))
        .status,
    ).toBe(404);
  });

  it("customers' country and tax_exempt in customer search and customer exports", async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const de = await post('/v1/customers', {
      email: `de-${tag}@example.de`,
      address: { country: 'DE' },
      tax_exempt: 'reverse',
    });
    const fr = await post('/v1/customers', { email: `fr-${tag}@example.fr`, address: { country: 'FR' } });
    const none = await post('/v1/customers', { email: `none-${tag}@example.com` });
    const search = async (query: string) => {
      const answer = await engine.call(
        'GET',
        `/v1/customers/search?query=${encodeURIComponent(`${query} AND email~"${tag}"`)}`,
      );
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.data.map((c: { id: string }) => c.id).sort();
    };
    expect(await search('country:DE')).toEqual([de.id]);
    expect(await search('country:null')).toEqual([none.id]);
    expect(await search('tax_exempt:reverse')).toEqual([de.id]);
    expect(await search('tax_exempt:none')).toEqual([fr.id, none.id].sort());
    expect(
      (await engine.call('GET', `/v1/customers/search?query=${encodeURIComponent('tax_exempt:sometimes')}`)).status,
    ).toBe(400);

    const created = await engine.call('POST', '/v1/exports', {
      resource: 'customers',
      format: 'csv',
      columns: ['email', 'country', 'tax_exempt'],
      query: `email~"${tag}"`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const done = await eventually(
      async () => (await engine.call('GET', `/v1/exports/${created.body.id}`)).body,
      (e) => e.status === 'succeeded' || e.status === 'failed',
      30_000,
    );
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const file = await engine.app.request(`/v1/exports/${done.id}/file`, { headers: engine.tenant.headers });
    const rows = (await file.text()).trimEnd().split('\r\n');
    expect(rows[0]).toBe('email,country,tax_exempt');
    expect(rows.slice(1).sort()).toEqual(
      [`de-${tag}@example.de,DE,reverse`, `fr-${tag}@example.fr,FR,none`, `none-${tag}@example.com,,none`].sort(),
    );
  });

  it("an invoice item's tax_rates: checked, stored, shown, and applied on a one-off invoice beside the account's default for an item without", async () => {
    const rate = await post('/v1/tax_rates', { display_name: 'Service tax', percentage: 8, inclusive: false });
    const customer = await post('/v1/customers', { email: 'one-off@example.com' });
    const item = await post('/v1/invoice_items', {
      customer: customer.id,
      amount: 5000,
      currency: 'USD',
      description: 'Workshop',
      tax_rates: [rate.id],
    });
    expect(item.tax_rates).toEqual([rate.id]);
    const refused = await engine.call('POST', '/v1/invoice_items', {
      customer: customer.id,
      amount: 5000,
      currency: 'USD',
      description: 'Workshop',
      tax_rates: ['txr_01jd3x5k8q0m2v7c9r4t6y1w3e'],
    });
    expect(refused.status).toBe(400);
    expect((await engine.call('PATCH', `/v1/invoice_items/${item.id}`, { tax_rates: [] })).body.tax_rates).toEqual([]);

    // On a one-off invoice: an item's own rate, and the account's default matching the customer for an item without.
    const de = await post('/v1/tax_rates', { display_name: 'USt', percentage: 19, inclusive: false, country: 'DE' });
    expect((await engine.call('PATCH', '/v1/settings/tax', { default_tax_rates: [de.id] })).status).toBe(200);
    const berlin = await post('/v1/customers', { email: 'one-off@example.de', address: { country: 'DE' } });
    const own = await post('/v1/invoice_items', {
      customer: berlin.id,
      amount: 5000,
      currency: 'EUR',
      description: 'Workshop',
      tax_rates: [rate.id],
    });
    await post('/v1/invoice_items', { customer: berlin.id, amount: 2000, currency: 'EUR', description: 'Travel' });
    const draft = await post('/v1/invoices', {
      customer: berlin.id,
      collection_method: 'send_invoice',
      days_until_due: 30,
    });
    const finalized = await engine.call('POST', `/v1/invoices/${draft.id}/finalize`);
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(200);
    const invoice = (await engine.call('GET', `/v1/invoices/${draft.id}`)).body;
    const byDescription = Object.fromEntries(
      invoice.lines.map((l: { description: string; tax_amounts?: { tax_rate: string; amount: number }[] }) => [
        l.description,
        l.tax_amounts?.map((t) => [t.tax_rate, t.amount]),
      ]),
    );
    expect(byDescription).toEqual({ Workshop: [[rate.id, 400]], Travel: [[de.id, 380]] });
    expect(invoice).toMatchObject({ subtotal: 7000, tax: 780, total: 7780 });
    expect(own.tax_rates).toEqual([rate.id]);
  });
});
