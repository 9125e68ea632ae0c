import { z } from '@hono/zod-openapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { coerceFormValue, parseForm } from '../api/middleware/body.ts';
import { Customer, IdempotencyKey, Product } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const form = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * Every /v1 POST and PATCH takes `application/x-www-form-urlencoded` as well as JSON
 * (SPEC.md shows key=value bodies), in Stripe's bracket notation, with numbers and
 * booleans read from a form's strings where the schema wants them, while JSON stays
 * strict. Bodies are sent exactly as `curl -d` sends them.
 */
describe('form-encoded bodies', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const expectError = (response: { status: number; body: any }, status: number, code: string) => {
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body.error).toBe(code);
  };
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    engine.call('POST', path, body, { ...form, ...headers });

  it('creates a customer, a plan and a subscription from key=value bodies', async () => {
    const customer = await post(
      '/v1/customers',
      'email=ada%40example.com&name=Ada+Lovelace&payment_method=pm_card_visa',
    );
    expect(customer.status).toBe(201);
    expect(customer.body).toMatchObject({
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      payment_method: 'pm_card_visa',
    });

    const plan = await post(
      '/v1/plans',
      'name=Pro&amount=2000&currency=usd&interval=month&interval_count=3&trial_period_days=0',
    );
    expect(plan.status).toBe(201);
    expect(plan.body).toMatchObject({
      name: 'Pro',
      amount: 2000,
      currency: 'USD',
      interval: 'month',
      interval_count: 3,
      trial_period_days: 0,
    });

    const subscription = await post(
      '/v1/subscriptions',
      `customer_id=${customer.body.id}&plan=${plan.body.id}&trial_period_days=14`,
    );
    expect(subscription.status).toBe(201);
    expect(subscription.body).toMatchObject({ status: 'trialing', customer_id: customer.body.id, plan: plan.body.id });
    expect(Date.parse(subscription.body.trial_end) - Date.parse(subscription.body.trial_start)).toBe(14 * 86_400_000);

    // A charset parameter is fine; a number that is not one is refused by the schema.
    expect(
      (
        await post('/v1/customers', 'email=b%40example.com', {
          'content-type': 'application/x-www-form-urlencoded; charset=UTF-8',
        })
      ).status,
    ).toBe(201);
    for (const amount of ['20.5', '2e3', 'abc', '', '-5', '100000000']) {
      const response = await post('/v1/plans', `name=P&amount=${amount}&currency=USD&interval=month`);
      expectError(response, 400, 'invalid_request');
      expect(response.body.message).toMatch(/^amount: /);
    }
  });

  it('reads booleans (active=true/false) and refuses anything else', async () => {
    const product = await post('/v1/products', 'name=Suite&active=false');
    expect(product.status).toBe(201);
    expect(product.body.active).toBe(false);
    const restored = await engine.call('PATCH', `/v1/products/${product.body.id}`, 'active=true', form);
    expect(restored.body.active).toBe(true);
    const plan = (await post('/v1/plans', 'name=P&amount=100&currency=USD&interval=week')).body.id;
    expect((await post(`/v1/plans/${plan}`, 'active=false')).body.active).toBe(false);
    for (const value of ['yes', '1', 'TRUE', ''])
      expectError(await post(`/v1/plans/${plan}`, `active=${value}`), 400, 'invalid_request');
    expect((await engine.call('GET', `/v1/plans/${plan}`)).body.active).toBe(false);
  });

  it('reads metadata in bracket notation; an empty value clears a nullable field', async () => {
    const product = await post(
      '/v1/products',
      'name=Box&description=Big+box&metadata[order]=42&metadata[note]=a%26b%3Dc&metadata%5Bencoded%5D=yes',
    );
    expect(product.status).toBe(201);
    expect(product.body.metadata).toEqual({ order: '42', note: 'a&b=c', encoded: 'yes' });
    const patched = await engine.call(
      'PATCH',
      `/v1/products/${product.body.id}`,
      'description=&metadata[order]=&metadata[new]=1',
      form,
    );
    expect(patched.body).toMatchObject({ description: null, metadata: { note: 'a&b=c', encoded: 'yes', new: '1' } });

    const customer = (await post('/v1/customers', 'email=c%40example.com&name=C&payment_method=pm_card_visa')).body.id;
    const cleared = await post(`/v1/customers/${customer}`, 'name=&payment_method=');
    expect(cleared.body).toMatchObject({ name: null, payment_method: null });
    expectError(await post(`/v1/customers/${customer}`, 'payment_method=pm_card_bogus'), 400, 'invalid_request');
  });

  it('keeps JSON strict: a string where a number or boolean is expected is refused', async () => {
    const before = await engine.db.orm.em.fork().count(Product);
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'P',
      amount: '2000',
      currency: 'USD',
      interval: 'month',
    });
    expectError(plan, 400, 'invalid_request');
    expect(plan.body.message).toMatch(/^amount: .*number/);
    expectError(
      await engine.call('POST', '/v1/plans', {
        name: 'P',
        amount: 2000,
        currency: 'USD',
        interval: 'month',
        interval_count: '2',
      }),
      400,
      'invalid_request',
    );
    expectError(await engine.call('POST', '/v1/products', { name: 'P', active: 'false' }), 400, 'invalid_request');
    expectError(await engine.call('PATCH', '/v1/customers/cus_x', { name: '' }), 400, 'invalid_request');
    expect(await engine.db.orm.em.fork().count(Product)).toBe(before);
  });

  it('the optional-body endpoints take forms too', async () => {
    const key = await post('/v1/api_keys', 'mode=test&name=ci');
    expect(key.status).toBe(201);
    expect(key.body).toMatchObject({ livemode: false, name: 'ci' });
    expectError(await post('/v1/api_keys', 'mode=sandbox'), 400, 'invalid_request');
    // curl -d '' sends an empty form: no fields, not an unsupported type.
    expect((await post('/v1/api_keys', '')).status).toBe(201);
    const empty = await post('/v1/customers', '');
    expectError(empty, 400, 'invalid_request');
    expect(empty.body.message).toMatch(/^email: /);
  });

  it('refuses malformed forms with 400 and writes nothing', async () => {
    const before = await engine.db.orm.em.fork().count(Customer);
    for (const body of [
      'email=a%40example.com&email=b%40example.com', // repeated key
      'email=a%40example.com&name=%E0%A4%A', // bad percent-encoding
      'email=a%40example.com&name[=x', // unbalanced bracket
      'email=a%40example.com&=x', // no key
      'email=a%40example.com&name=x&name[first]=y', // a value and a container
      'email=a%40example.com&tags[3]=x', // an index that skips ahead
      'email=a%40example.com&tags[][x]=y', // [] not last
      'email=a%40example.com&name=a%00b', // NUL
      `email=a%40example.com&deep${'[x]'.repeat(40)}=1`, // nesting
    ]) {
      expectError(await post('/v1/customers', body), 400, 'invalid_request');
    }
    expectError(await post('/v1/customers', 'email=a%40example.com&surprise=1'), 400, 'invalid_request');
    expect(await engine.db.orm.em.fork().count(Customer)).toBe(before);
  });

  it('other content types are still 415; limits still hold', async () => {
    const body = 'email=a%40example.com';
    expectError(
      await engine.call('POST', '/v1/customers', body, { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await engine.call('POST', '/v1/customers', body, { 'content-type': 'multipart/form-data; boundary=x' }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await engine.call('POST', '/v1/customers', body, {
        'content-type': 'application/x-www-form-urlencoded; charset=latin1',
      }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await post('/v1/customers', `email=a%40example.com&name=${'x'.repeat(engine.config.bodyLimitBytes)}`),
      413,
      'payload_too_large',
    );
  });

  it('Idempotency-Key works with forms: replay, another body refused, JSON keys unaffected', async () => {
    const key = { 'idempotency-key': 'form-key-1' };
    const first = await post('/v1/customers', 'email=idem%40example.com&name=Idem', key);
    expect(first.status).toBe(201);
    const again = await post('/v1/customers', 'email=idem%40example.com&name=Idem', key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await engine.db.orm.em.fork().count(Customer, { email: 'idem@example.com' })).toBe(1);
    expectError(await post('/v1/customers', 'email=idem%40example.com&name=Other', key), 422, 'idempotency_key_reused');

    const jsonKey = { 'idempotency-key': 'json-key-1' };
    const json = await engine.call(
      'POST',
      '/v1/plans',
      { name: 'J', amount: 100, currency: 'USD', interval: 'month' },
      jsonKey,
    );
    const jsonAgain = await engine.call(
      'POST',
      '/v1/plans',
      { name: 'J', amount: 100, currency: 'USD', interval: 'month' },
      jsonKey,
    );
    expect(jsonAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(jsonAgain.body.id).toBe(json.body.id);
    expect(await engine.db.orm.em.fork().count(IdempotencyKey, { key: { $in: ['form-key-1', 'json-key-1'] } })).toBe(2);
  });

  it('the OpenAPI document lists both content types on request bodies', async () => {
    const doc = (await engine.call('GET', '/openapi.json')).body;
    for (const [path, method] of [
      ['/v1/customers', 'post'],
      ['/v1/customers/{id}', 'patch'],
      ['/v1/plans', 'post'],
      ['/v1/products', 'post'],
      ['/v1/subscriptions', 'post'],
    ]) {
      expect(Object.keys(doc.paths[path!][method!].requestBody.content).sort(), `${method} ${path}`).toEqual([
        'application/json',
        'application/x-www-form-urlencoded',
      ]);
    }
  });
});

describe('the form parser', () => {
  it('builds nested values in bracket notation', () => {
    expect(
      parseForm(
        'a=1&b[c]=2&b[d][e]=3&list[]=x&list[]=y&idx[0]=p&idx[1]=q&items[0][plan]=a&items[0][qty]=2&items[1][plan]=b&empty=&flag',
      ),
    ).toEqual({
      a: '1',
      b: { c: '2', d: { e: '3' } },
      list: ['x', 'y'],
      idx: ['p', 'q'],
      items: [{ plan: 'a', qty: '2' }, { plan: 'b' }],
      empty: '',
      flag: '',
    });
    expect(parseForm('q=a+b%2Bc%20d')).toEqual({ q: 'a b+c d' });
    // A key named __proto__ is a plain key: no prototype is touched.
    const hostile = parseForm('m[__proto__][polluted]=x&__proto__[polluted]=y') as Record<
      string,
      Record<string, unknown>
    >;
    expect(Object.keys(hostile.m!)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(hostile))).toEqual(
      JSON.parse('{"m":{"__proto__":{"polluted":"x"}},"__proto__":{"polluted":"y"}}'),
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('coerces by the schema, and only where the schema wants it', () => {
    const schema = z.object({
      n: z.number().int(),
      b: z.boolean().optional(),
      s: z.string(),
      nullable: z.string().nullable().optional(),
      list: z.array(z.number()).optional(),
      map: z.record(z.string(), z.boolean()).optional(),
      nested: z.object({ count: z.number().default(1) }).optional(),
      choice: z.union([z.literal(5), z.string()]).optional(),
    });
    const value = parseForm('n=42&b=false&s=007&nullable=&list[]=1&list[]=2.5&map[x]=true&nested[count]=3&choice=5');
    expect(coerceFormValue(schema, value)).toEqual({
      n: 42,
      b: false,
      s: '007',
      nullable: null,
      list: [1, 2.5],
      map: { x: true },
      nested: { count: 3 },
      choice: 5,
    });
    expect(schema.safeParse(coerceFormValue(schema, parseForm('n=4x&s=1'))).success).toBe(false);
    expect(coerceFormValue(schema, parseForm('n=1&s=a&b=yes'))).toMatchObject({ b: 'yes' });
  });
});
