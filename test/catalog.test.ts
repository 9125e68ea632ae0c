import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Customer, Plan, Product } from '../db/entities/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;
const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

/**
 * The catalog and its customers: products, plans (archived, never deleted),
 * customers with lists and updates. Every endpoint, every error code, cursors
 * both ways with rows arriving between calls, and the account and mode walls.
 */
describe('catalog and customers', () => {
  let engine: TestEngine;
  let other: Tenant;
  const sandbox = () => ({ ...engine.tenant.headers, 'x-sandbox-mode': 'true' });

  beforeAll(async () => {
    engine = await startTestEngine();
    other = await engine.signUp({ name: 'Other' });
  });
  afterAll(() => engine?.close());

  const expectError = (response: { status: number; body: any }, status: number, code: string) => {
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body.error).toBe(code);
  };
  const count = (entity: typeof Product | typeof Plan | typeof Customer) =>
    engine.db.orm.em.fork().count(entity as typeof Product);

  describe('products', () => {
    it('creates, reads and updates a product field by field', async () => {
      const created = await engine.call('POST', '/v1/products', {
        name: 'Pro',
        description: 'For teams',
        metadata: { tier: 'gold' },
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^prod_[0-9a-z]{26}$/),
        object: 'product',
        name: 'Pro',
        description: 'For teams',
        active: true,
        metadata: { tier: 'gold' },
        livemode: true,
        created_at: iso,
        updated_at: iso,
      });
      const id = created.body.id;
      expect((await engine.call('GET', `/v1/products/${id}`)).body).toEqual(created.body);

      const patched = await engine.call('PATCH', `/v1/products/${id}`, {
        name: 'Pro+',
        description: null,
        metadata: { tier: '', color: 'red' },
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({
        id,
        name: 'Pro+',
        description: null,
        active: true,
        metadata: { color: 'red' },
      });
      // POST does the same, as Stripe's clients expect.
      const archived = await engine.call('POST', `/v1/products/${id}`, { active: false });
      expect(archived.status).toBe(200);
      expect(archived.body).toMatchObject({ id, name: 'Pro+', active: false, metadata: { color: 'red' } });
      expect((await engine.call('GET', `/v1/products/${id}`)).body).toEqual(archived.body);
      const minimal = await engine.call('POST', '/v1/products', { name: 'Bare' });
      expect(minimal.body).toMatchObject({ description: null, metadata: {}, active: true });
    });

    it('refuses bad input with invalid_request and writes nothing', async () => {
      const before = await count(Product);
      expectError(await engine.call('POST', '/v1/products', {}), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/products', { name: '' }), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/products', { name: 'X', price: 5 }), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/products', { name: 'X', active: 'true' }), 400, 'invalid_request');
      const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
      expectError(await engine.call('POST', '/v1/products', { name: 'X', metadata: tooMany }), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/products', { name: 'X', metadata: { k: 1 } }), 400, 'invalid_request');
      expect(await count(Product)).toBe(before);
      const id = (
        await engine.call('POST', '/v1/products', {
          name: 'Y',
          metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])),
        })
      ).body.id;
      expectError(
        await engine.call('PATCH', `/v1/products/${id}`, { metadata: { extra: 'v' } }),
        400,
        'invalid_request',
      );
      expectError(await engine.call('PATCH', `/v1/products/${id}`, { name: null }), 400, 'invalid_request');
      expectError(await engine.call('PATCH', `/v1/products/${id}`, { id: 'prod_x' }), 400, 'invalid_request');
      expect(Object.keys((await engine.call('GET', `/v1/products/${id}`)).body.metadata)).toHaveLength(50);
    });

    it('unknown ids are not_found', async () => {
      expectError(await engine.call('GET', '/v1/products/prod_01jd3x5k8q0m2v7c9r4t6y1w3e'), 404, 'not_found');
      expectError(await engine.call('PATCH', '/v1/products/prod_missing', { name: 'X' }), 404, 'not_found');
      expectError(await engine.call('POST', '/v1/products/prod_missing', { name: 'X' }), 404, 'not_found');
    });
  });

  describe('cursor lists', () => {
    const ids = (response: { body: { data: { id: string }[] } }) => response.body.data.map((row) => row.id);

    it('pages products newest first, both ways, with rows arriving between calls', async () => {
      const account = await engine.signUp({ name: 'Pager' });
      const h = account.headers;
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push((await engine.call('POST', '/v1/products', { name: `P${i}` }, h)).body.id);
      const [p0, p1, p2, p3, p4] = made;

      const first = await engine.call('GET', '/v1/products?limit=2', undefined, h);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: 'list', has_more: true });
      expect(ids(first)).toEqual([p4, p3]);

      // A product arrives between calls: the next page does not shift.
      const p5 = (await engine.call('POST', '/v1/products', { name: 'P5' }, h)).body.id;
      const second = await engine.call('GET', `/v1/products?limit=2&starting_after=${p3}`, undefined, h);
      expect(ids(second)).toEqual([p2, p1]);
      expect(second.body.has_more).toBe(true);
      const third = await engine.call('GET', `/v1/products?limit=2&starting_after=${p1}`, undefined, h);
      expect(ids(third)).toEqual([p0]);
      expect(third.body.has_more).toBe(false);

      // Backwards from the second page: the newer ones, newest first, including the arrival.
      const back = await engine.call('GET', `/v1/products?limit=2&ending_before=${p2}`, undefined, h);
      expect(ids(back)).toEqual([p4, p3]);
      expect(back.body.has_more).toBe(true);
      const front = await engine.call('GET', `/v1/products?limit=2&ending_before=${p4}`, undefined, h);
      expect(ids(front)).toEqual([p5]);
      expect(front.body.has_more).toBe(false);

      // Filter: archived ones only, and the default page of everything.
      await engine.call('PATCH', `/v1/products/${p2}`, { active: false }, h);
      expect(ids(await engine.call('GET', '/v1/products?active=false', undefined, h))).toEqual([p2]);
      expect(ids(await engine.call('GET', '/v1/products?active=true', undefined, h))).toEqual([p5, p4, p3, p1, p0]);
      expect(ids(await engine.call('GET', '/v1/products', undefined, h))).toEqual([p5, p4, p3, p2, p1, p0]);
    });

    it('customers: default limit 20, the email filter, and the same cursors', async () => {
      const account = await engine.signUp({ name: 'Many' });
      const h = account.headers;
      const made: string[] = [];
      for (let i = 0; i < 22; i++)
        made.push(
          (await engine.call('POST', '/v1/customers', { email: i % 2 ? `odd@example.com` : `c${i}@example.com` }, h))
            .body.id,
        );
      const page = await engine.call('GET', '/v1/customers', undefined, h);
      expect(ids(page)).toEqual(made.slice(2).reverse());
      expect(page.body.has_more).toBe(true);
      const rest = await engine.call('GET', `/v1/customers?starting_after=${made[2]}`, undefined, h);
      expect(ids(rest)).toEqual([made[1], made[0]]);
      expect(rest.body.has_more).toBe(false);
      const odd = await engine.call('GET', '/v1/customers?email=odd@example.com&limit=100', undefined, h);
      expect(ids(odd)).toEqual(made.filter((_, i) => i % 2).reverse());
      // Exact and case-sensitive, as Stripe's filter.
      expect(ids(await engine.call('GET', '/v1/customers?email=ODD@example.com', undefined, h))).toEqual([]);
      const back = await engine.call('GET', `/v1/customers?ending_before=${made[0]}&limit=3`, undefined, h);
      expect(ids(back)).toEqual([made[3], made[2], made[1]]);
      expect(back.body.has_more).toBe(true);
    });

    it('refuses out-of-range limits, malformed or double cursors and unknown parameters', async () => {
      for (const path of ['/v1/products', '/v1/plans', '/v1/customers']) {
        expectError(await engine.call('GET', `${path}?limit=0`), 400, 'invalid_request');
        expectError(await engine.call('GET', `${path}?limit=101`), 400, 'invalid_request');
        expectError(await engine.call('GET', `${path}?limit=abc`), 400, 'invalid_request');
        expectError(await engine.call('GET', `${path}?starting_after=nope`), 400, 'invalid_request');
        expectError(
          await engine.call('GET', `${path}?starting_after=txn_01jd3x5k8q0m2v7c9r4t6y1w3e`),
          400,
          'invalid_request',
        );
        expectError(await engine.call('GET', `${path}?unknown=1`), 400, 'invalid_request');
      }
      const p = 'prod_01jd3x5k8q0m2v7c9r4t6y1w3e';
      expectError(
        await engine.call('GET', `/v1/products?starting_after=${p}&ending_before=${p}`),
        400,
        'invalid_request',
      );
      expectError(await engine.call('GET', '/v1/products?active=yes'), 400, 'invalid_request');
      expectError(await engine.call('GET', '/v1/plans?active=1'), 400, 'invalid_request');
      expect((await engine.call('GET', '/v1/products?limit=100')).status).toBe(200);
    });
  });

  describe('plans', () => {
    it('belong to a product of the same account and mode, or to none', async () => {
      const product = (await engine.call('POST', '/v1/products', { name: 'Suite' })).body.id;
      const created = await engine.call('POST', '/v1/plans', {
        name: 'Monthly',
        product,
        amount: 1500,
        currency: 'usd',
        interval: 'month',
        interval_count: 3,
        trial_period_days: 14,
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^plan_[0-9a-z]{26}$/),
        object: 'plan',
        name: 'Monthly',
        product,
        type: 'recurring',
        pricing_scheme: 'per_unit',
        amount: 1500,
        currency: 'USD',
        tiers_mode: null,
        tiers: null,
        package_size: null,
        package_round: null,
        currency_options: {},
        // A licensed price: the usage fields (docs/pricing.md#usage-prices) are empty.
        usage_type: 'licensed',
        meter: null,
        percentage: null,
        fixed_amount_decimal: null,
        free_quantity: null,
        group_by: null,
        dimension_prices: null,
        interval: 'month',
        interval_count: 3,
        trial_period_days: 14,
        active: true,
        livemode: true,
        created_at: iso,
      });
      const alone = await engine.call('POST', '/v1/plans', {
        name: 'Alone',
        amount: 100,
        currency: 'USD',
        interval: 'week',
      });
      expect(alone.body).toMatchObject({ product: null, interval_count: 1, trial_period_days: 0 });

      const before = await count(Plan);
      const foreignProduct = (await engine.call('POST', '/v1/products', { name: 'Theirs' }, other.headers)).body.id;
      const sandboxProduct = (await engine.call('POST', '/v1/products', { name: 'Sandbox' }, sandbox())).body.id;
      const body = { name: 'X', amount: 100, currency: 'USD', interval: 'month' };
      expectError(await engine.call('POST', '/v1/plans', { ...body, product: foreignProduct }), 404, 'not_found');
      expectError(await engine.call('POST', '/v1/plans', { ...body, product: sandboxProduct }), 404, 'not_found');
      expectError(await engine.call('POST', '/v1/plans', { ...body, product: 'prod_missing' }), 404, 'not_found');
      expectError(await engine.call('POST', '/v1/plans', { ...body, product: '' }), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/plans', { ...body, interval: 'fortnight' }), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/plans', { ...body, interval_count: 0 }), 400, 'invalid_request');
      expectError(await engine.call('POST', '/v1/plans', { ...body, amount: 100_000_000 }), 400, 'invalid_request');
      expect(await count(Plan)).toBe(before);
      // In the sandbox, the sandbox product is the one that exists.
      expect(
        (await engine.call('POST', '/v1/plans', { ...body, product: sandboxProduct }, sandbox())).body,
      ).toMatchObject({ product: sandboxProduct, livemode: false });
    });

    it('lists filtered by product and active', async () => {
      const account = await engine.signUp({ name: 'Plans' });
      const h = account.headers;
      const product = (await engine.call('POST', '/v1/products', { name: 'S' }, h)).body.id;
      const body = { amount: 100, currency: 'USD', interval: 'month' };
      const a = (await engine.call('POST', '/v1/plans', { ...body, name: 'a', product }, h)).body.id;
      const b = (await engine.call('POST', '/v1/plans', { ...body, name: 'b' }, h)).body.id;
      const c = (await engine.call('POST', '/v1/plans', { ...body, name: 'c', product }, h)).body.id;
      await engine.call('DELETE', `/v1/plans/${a}`, undefined, h);
      const list = async (query: string) =>
        (await engine.call('GET', `/v1/plans${query}`, undefined, h)).body.data.map((p: { id: string }) => p.id);
      expect(await list('')).toEqual([c, b, a]);
      expect(await list(`?product=${product}`)).toEqual([c, a]);
      expect(await list(`?product=${product}&active=true`)).toEqual([c]);
      expect(await list('?active=false')).toEqual([a]);
      expect(await list('?product=prod_unknown')).toEqual([]);
      expect(await list(`?limit=1&starting_after=${c}`)).toEqual([b]);
    });

    it('are archived, never deleted: readable, still billing their subscriptions, refusing new ones', async () => {
      const customer = (
        await engine.call('POST', '/v1/customers', { email: 'arch@example.com', payment_method: 'pm_card_visa' })
      ).body.id;
      const plan = (
        await engine.call('POST', '/v1/plans', {
          name: 'Old',
          amount: 700,
          currency: 'USD',
          interval: 'month',
          trial_period_days: 3,
        })
      ).body.id;
      const existing = await engine.call('POST', '/v1/subscriptions', { customer_id: customer, plan });
      expect(existing.status).toBe(201);

      const archived = await engine.call('DELETE', `/v1/plans/${plan}`);
      expect(archived.status).toBe(200);
      expect(archived.body).toMatchObject({ id: plan, active: false, amount: 700 });
      expect((await engine.call('DELETE', `/v1/plans/${plan}`)).body.active).toBe(false);
      expect((await engine.call('GET', `/v1/plans/${plan}`)).body).toMatchObject({ id: plan, active: false });
      expect(await engine.db.orm.em.fork().count(Plan, { id: plan })).toBe(1);

      const refused = await engine.call('POST', '/v1/subscriptions', { customer_id: customer, plan });
      expectError(refused, 409, 'plan_archived');
      expect(refused.body.message).toContain(plan);

      // The subscription made before the archive bills on it when its trial ends.
      await engine.env.sleep(4 * day);
      const billed = await eventually(
        () => engine.subscription(existing.body.id),
        (s) => s?.status === 'active',
      );
      expect(billed!.planId).toBe(plan);
      const charges = await engine.charges(existing.body.id);
      expect(charges.map((c) => [c.amount, c.status])).toEqual([[700, 'succeeded']]);

      // Restored, it takes subscriptions again.
      const restored = await engine.call('PATCH', `/v1/plans/${plan}`, { active: true, name: 'Old (back)' });
      expect(restored.body).toMatchObject({ active: true, name: 'Old (back)' });
      expect((await engine.call('POST', '/v1/subscriptions', { customer_id: customer, plan })).status).toBe(201);
      expect((await engine.call('POST', `/v1/plans/${plan}`, { active: false })).body.active).toBe(false);
    });

    it('only name and active change', async () => {
      const plan = (
        await engine.call('POST', '/v1/plans', { name: 'Fixed', amount: 100, currency: 'USD', interval: 'month' })
      ).body.id;
      for (const body of [
        { amount: 200 },
        { currency: 'EUR' },
        { interval: 'year' },
        { active: 'false' },
        { name: '' },
      ]) {
        expectError(await engine.call('PATCH', `/v1/plans/${plan}`, body), 400, 'invalid_request');
      }
      expect((await engine.call('GET', `/v1/plans/${plan}`)).body).toMatchObject({
        amount: 100,
        currency: 'USD',
        interval: 'month',
        active: true,
        name: 'Fixed',
      });
      expectError(await engine.call('PATCH', '/v1/plans/plan_missing', { name: 'x' }), 404, 'not_found');
      expectError(await engine.call('DELETE', '/v1/plans/plan_missing'), 404, 'not_found');
    });
  });

  describe('customers', () => {
    it('updates email, name and payment method; null removes', async () => {
      const created = await engine.call('POST', '/v1/customers', { email: 'ada@example.com', name: 'Ada' });
      const id = created.body.id;
      const patched = await engine.call('PATCH', `/v1/customers/${id}`, {
        email: 'ada@lovelace.example',
        payment_method: 'pm_card_mastercard',
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toEqual({
        ...created.body,
        email: 'ada@lovelace.example',
        payment_method: 'pm_card_mastercard',
        updated_at: iso,
      });
      expect(Date.parse(patched.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));
      // The same method again is accepted (it is how a customer asks for a retry).
      expect((await engine.call('PATCH', `/v1/customers/${id}`, { payment_method: 'pm_card_mastercard' })).status).toBe(
        200,
      );
      const cleared = await engine.call('POST', `/v1/customers/${id}`, { name: null, payment_method: null });
      expect(cleared.body).toMatchObject({ email: 'ada@lovelace.example', name: null, payment_method: null });
      expect((await engine.call('GET', `/v1/customers/${id}`)).body).toEqual(cleared.body);
      expect((await engine.call('PATCH', `/v1/customers/${id}`, {})).body).toMatchObject({
        email: 'ada@lovelace.example',
      });
    });

    it('takes only the sandbox test methods, in every mode', async () => {
      const id = (
        await engine.call('POST', '/v1/customers', { email: 'pm@example.com', payment_method: 'pm_card_visa' })
      ).body.id;
      const before = await count(Customer);
      for (const method of ['pm_card_unknown', 'tok_visa', '']) {
        const response = await engine.call('PATCH', `/v1/customers/${id}`, { payment_method: method });
        expectError(response, 400, 'invalid_request');
        expect(response.body.message).toMatch(/payment_method/);
        expectError(
          await engine.call('POST', '/v1/customers', { email: 'x@example.com', payment_method: method }),
          400,
          'invalid_request',
        );
        expectError(
          await engine.call('POST', '/v1/customers', { email: 'x@example.com', payment_method: method }, sandbox()),
          400,
          'invalid_request',
        );
      }
      expect(await count(Customer)).toBe(before);
      expect((await engine.call('GET', `/v1/customers/${id}`)).body.payment_method).toBe('pm_card_visa');
      for (const method of ['pm_card_chargeDeclined', 'pm_bank_pendingSettles', 'pm_card_expired']) {
        expect(
          (await engine.call('PATCH', `/v1/customers/${id}`, { payment_method: method })).body.payment_method,
        ).toBe(method);
      }
      expectError(await engine.call('PATCH', `/v1/customers/${id}`, { email: 'not-an-email' }), 400, 'invalid_request');
      expectError(await engine.call('PATCH', `/v1/customers/${id}`, { email: null }), 400, 'invalid_request');
      expectError(await engine.call('PATCH', `/v1/customers/${id}`, { livemode: false }), 400, 'invalid_request');
      expectError(await engine.call('PATCH', '/v1/customers/cus_missing', { name: 'x' }), 404, 'not_found');
    });
  });

  describe('isolation', () => {
    it("another account's products, plans and customers are not_found everywhere, and never listed", async () => {
      const product = (await engine.call('POST', '/v1/products', { name: 'Mine' })).body.id;
      const plan = (
        await engine.call('POST', '/v1/plans', {
          name: 'Mine',
          product,
          amount: 100,
          currency: 'USD',
          interval: 'month',
        })
      ).body.id;
      const customer = (await engine.call('POST', '/v1/customers', { email: 'mine@example.com' })).body.id;
      const key = (await engine.call('POST', '/v1/api_keys', { mode: 'live' }, other.headers)).body.secret;
      for (const headers of [
        other.headers,
        { ...other.headers, 'x-sandbox-mode': 'true' },
        { authorization: `Bearer ${key}` },
      ]) {
        for (const [method, path, body] of [
          ['GET', `/v1/products/${product}`],
          ['PATCH', `/v1/products/${product}`, { name: 'pwned' }],
          ['POST', `/v1/products/${product}`, { name: 'pwned' }],
          ['GET', `/v1/plans/${plan}`],
          ['PATCH', `/v1/plans/${plan}`, { name: 'pwned' }],
          ['POST', `/v1/plans/${plan}`, { active: false }],
          ['DELETE', `/v1/plans/${plan}`],
          ['GET', `/v1/customers/${customer}`],
          ['PATCH', `/v1/customers/${customer}`, { name: 'pwned' }],
          ['POST', `/v1/customers/${customer}`, { payment_method: 'pm_card_visa' }],
        ] as [string, string, unknown?][]) {
          expectError(await engine.call(method, path, body, headers), 404, 'not_found');
        }
        for (const [path, id] of [
          ['/v1/products?limit=100', product],
          ['/v1/plans?limit=100', plan],
          ['/v1/customers?limit=100', customer],
          [`/v1/plans?product=${product}`, plan],
        ]) {
          const listed = await engine.call('GET', path!, undefined, headers);
          expect(listed.status).toBe(200);
          expect(listed.body.data.map((row: { id: string }) => row.id)).not.toContain(id);
        }
      }
      expect((await engine.call('GET', `/v1/products/${product}`)).body.name).toBe('Mine');
      expect((await engine.call('GET', `/v1/plans/${plan}`)).body).toMatchObject({ name: 'Mine', active: true });
      expect((await engine.call('GET', `/v1/customers/${customer}`)).body.name).toBeNull();
    });

    it('a sandbox session sees only sandbox rows, a live one only live rows', async () => {
      const account = await engine.signUp({ name: 'Modes' });
      const live = account.headers;
      const test = { ...account.headers, 'x-sandbox-mode': 'true' };
      const rows = async (headers: Record<string, string>) => {
        const product = (await engine.call('POST', '/v1/products', { name: 'P' }, headers)).body;
        const plan = (
          await engine.call(
            'POST',
            '/v1/plans',
            { name: 'P', product: product.id, amount: 100, currency: 'USD', interval: 'month' },
            headers,
          )
        ).body;
        const customer = (await engine.call('POST', '/v1/customers', { email: 'm@example.com' }, headers)).body;
        return { product, plan, customer };
      };
      const l = await rows(live);
      const t = await rows(test);
      expect([l.product.livemode, l.plan.livemode, l.customer.livemode]).toEqual([true, true, true]);
      expect([t.product.livemode, t.plan.livemode, t.customer.livemode]).toEqual([false, false, false]);
      for (const [headers, own] of [
        [live, l],
        [test, t],
      ] as const) {
        expect(
          (await engine.call('GET', '/v1/products', undefined, headers)).body.data.map((r: { id: string }) => r.id),
        ).toEqual([own.product.id]);
        expect(
          (await engine.call('GET', '/v1/plans', undefined, headers)).body.data.map((r: { id: string }) => r.id),
        ).toEqual([own.plan.id]);
        expect(
          (await engine.call('GET', '/v1/customers?email=m@example.com', undefined, headers)).body.data.map(
            (r: { id: string }) => r.id,
          ),
        ).toEqual([own.customer.id]);
      }
      expectError(await engine.call('GET', `/v1/products/${t.product.id}`, undefined, live), 404, 'not_found');
      expectError(await engine.call('PATCH', `/v1/customers/${t.customer.id}`, { name: 'x' }, live), 404, 'not_found');
      expectError(await engine.call('DELETE', `/v1/plans/${l.plan.id}`, undefined, test), 404, 'not_found');
      // A test key is the sandbox too.
      const testKey = (await engine.call('POST', '/v1/api_keys', { mode: 'test' }, live)).body.secret;
      expect(
        (await engine.call('GET', '/v1/plans', undefined, { authorization: `Bearer ${testKey}` })).body.data.map(
          (r: { id: string }) => r.id,
        ),
      ).toEqual([t.plan.id]);
    });
  });
});
