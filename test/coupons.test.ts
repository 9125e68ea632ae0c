import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Coupon, Discount, Event, PromotionCode } from '../db/entities/index.ts';
import { discountForInvoice, recordDiscountApplied } from '../services/discounts/redemptions.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

/**
 * Coupons, promotion codes and discounts (issue #27) through the real API: shapes, validation
 * (400 in the error shape, nothing changed), account and mode isolation, every redemption limit,
 * the invoice contract (discountForInvoice, recordDiscountApplied), and 20 concurrent redemptions
 * of a max_redemptions=5 coupon making exactly 5.
 */
describe('coupons, promotion codes and discounts', () => {
  let engine: TestEngine;
  let other: Tenant;
  const sandbox = () => ({ ...engine.tenant.headers, 'x-sandbox-mode': 'true' });

  beforeAll(async () => {
    engine = await startTestEngine();
    other = await engine.signUp({ name: 'Other' });
  });
  afterAll(() => engine?.close());

  const expectError = (response: { status: number; body: any }, status: number, code: string, words?: string) => {
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body.error).toBe(code);
    if (words) expect(response.body.message).toContain(words);
  };
  let customers = 0;
  async function customer(headers?: Record<string, string>) {
    const created = await engine.call(
      'POST',
      '/v1/customers',
      { email: `c${++customers}@example.com`, name: 'Ada', payment_method: 'pm_card_visa' },
      headers,
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  }
  async function coupon(body: Record<string, unknown>, headers?: Record<string, string>) {
    const created = await engine.call('POST', '/v1/coupons', { percent_off: 10, ...body }, headers);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }
  const eventTypesOf = async (id: string) =>
    (await engine.db.orm.em.fork().find(Event, { accountId: engine.tenant.accountId }, { orderBy: { id: 'asc' } }))
      .filter((event) => (event.data.object as { id?: string }).id === id)
      .map((event) => event.type);

  it('creates, reads, lists, renames and deletes a coupon, with its events', async () => {
    const created = await coupon({
      id: 'LAUNCH20',
      name: 'Launch',
      percent_off: 20,
      duration: 'repeating',
      duration_in_months: 3,
      max_redemptions: 100,
      metadata: { campaign: 'spring' },
    });
    expect(created).toEqual({
      id: 'LAUNCH20',
      object: 'coupon',
      name: 'Launch',
      percent_off: 20,
      amount_off: null,
      currency: null,
      duration: 'repeating',
      duration_in_months: 3,
      max_redemptions: 100,
      redeem_by: null,
      applies_to: { plans: null, products: null },
      times_redeemed: 0,
      valid: true,
      metadata: { campaign: 'spring' },
      livemode: true,
      created_at: expect.any(String),
    });
    const generated = await coupon({ amount_off: 500, currency: 'eur', percent_off: undefined, duration: 'forever' });
    expect(generated).toMatchObject({
      id: expect.stringMatching(/^cpn_[0-9a-z]{26}$/),
      amount_off: 500,
      currency: 'EUR',
      percent_off: null,
      duration: 'forever',
    });
    expect((await engine.call('GET', '/v1/coupons/LAUNCH20')).body).toEqual(created);
    const page = await engine.call('GET', '/v1/coupons?limit=1');
    expect(page.body).toMatchObject({ object: 'list', has_more: true, data: [{ id: generated.id }] });
    const next = await engine.call('GET', `/v1/coupons?limit=1&starting_after=${generated.id}`);
    expect(next.body.data.map((c: { id: string }) => c.id)).toEqual(['LAUNCH20']);
    const back = await engine.call('GET', '/v1/coupons?limit=5&ending_before=LAUNCH20');
    expect(back.body.data.map((c: { id: string }) => c.id)).toEqual([generated.id]);

    const renamed = await engine.call('PATCH', '/v1/coupons/LAUNCH20', {
      name: 'Launch offer',
      metadata: { campaign: '', team: 'growth' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Launch offer', metadata: { team: 'growth' }, percent_off: 20 });
    // Terms never change.
    expectError(
      await engine.call('PATCH', '/v1/coupons/LAUNCH20', { percent_off: 50 }),
      400,
      'invalid_request',
      'percent_off',
    );
    expectError(
      await engine.call('POST', '/v1/coupons', { id: 'LAUNCH20', percent_off: 5 }),
      400,
      'invalid_request',
      'already exists',
    );

    const deleted = await engine.call('DELETE', '/v1/coupons/LAUNCH20');
    expect(deleted.body).toEqual({ id: 'LAUNCH20', object: 'coupon', deleted: true });
    expectError(await engine.call('GET', '/v1/coupons/LAUNCH20'), 404, 'not_found');
    // A deleted coupon's id may be used again (as Stripe).
    await coupon({ id: 'LAUNCH20', percent_off: 15 });
    const rows = await engine.db.orm.em
      .fork()
      .find(Coupon, { id: 'LAUNCH20', accountId: engine.tenant.accountId }, { orderBy: { key: 'asc' } });
    expect(rows.map((r) => [r.percentOff, r.deletedAt !== null])).toEqual([
      ['20', true],
      ['15', false],
    ]);
    expect(await eventTypesOf('LAUNCH20')).toEqual([
      'coupon.created',
      'coupon.updated',
      'coupon.deleted',
      'coupon.created',
    ]);
  });

  it('bad coupons and codes are 400 in the error shape and change nothing', async () => {
    const before = await engine.db.orm.em.fork().count(Coupon, {});
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Basic',
      amount: 1000,
      currency: 'USD',
      interval: 'month',
    });
    const cases: [Record<string, unknown>, string][] = [
      [{ duration: 'once' }, 'percent_off'],
      [{ percent_off: 10, amount_off: 100, currency: 'USD' }, 'percent_off'],
      [{ percent_off: 0 }, 'percent_off'],
      [{ percent_off: 100.5 }, 'percent_off'],
      [{ percent_off: 12.345 }, '2 decimal'],
      [{ amount_off: 100 }, 'currency'],
      [{ amount_off: 100, currency: 'XYZ' }, 'currency'],
      [{ amount_off: 0, currency: 'USD' }, 'amount_off'],
      [{ percent_off: 10, duration: 'repeating' }, 'duration_in_months'],
      [{ percent_off: 10, duration: 'forever', duration_in_months: 3 }, 'duration_in_months'],
      [{ percent_off: 10, redeem_by: '2020-01-01T00:00:00Z' }, 'redeem_by'],
      [{ percent_off: 10, max_redemptions: 0 }, 'max_redemptions'],
      [{ percent_off: 10, id: 'has space' }, 'id'],
      [{ percent_off: 10, applies_to: { plans: ['plan_01jd3x5k8q0m2v7c9r4t6y1w3e'] } }, 'applies_to.plans'],
      [{ percent_off: 10, surprise: true }, 'surprise'],
    ];
    for (const [body, words] of cases)
      expectError(await engine.call('POST', '/v1/coupons', body), 400, 'invalid_request', words);
    expect(await engine.db.orm.em.fork().count(Coupon, {})).toBe(before);
    const scoped = await coupon({ applies_to: { plans: [plan.body.id] } });
    expect(scoped.applies_to).toEqual({ plans: [plan.body.id], products: null });

    const codesBefore = await engine.db.orm.em.fork().count(PromotionCode, {});
    const codeCases: [Record<string, unknown>, number, string][] = [
      [{ coupon: 'NOPE' }, 404, 'No such coupon'],
      [{ coupon: scoped.id, expires_at: '2020-01-01T00:00:00Z' }, 400, 'expires_at'],
      [{ coupon: scoped.id, restrictions: { minimum_amount: 100 } }, 400, 'minimum_amount_currency'],
      [{ coupon: scoped.id, customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }, 404, 'No such customer'],
      [{ coupon: scoped.id, code: 'a b' }, 400, 'code'],
    ];
    for (const [body, status, words] of codeCases)
      expectError(
        await engine.call('POST', '/v1/promotion_codes', body),
        status,
        status === 404 ? 'not_found' : 'invalid_request',
        words,
      );
    expect(await engine.db.orm.em.fork().count(PromotionCode, {})).toBe(codesBefore);
  });

  it('promotion codes: unique whatever their case, looked up by code, deactivated by PATCH', async () => {
    const base = await coupon({ id: 'SPRING', percent_off: 25 });
    const created = await engine.call('POST', '/v1/promotion_codes', {
      coupon: 'SPRING',
      code: 'Spring25',
      max_redemptions: 2,
      restrictions: { first_time_transaction: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      object: 'promotion_code',
      code: 'Spring25',
      coupon: { id: 'SPRING', percent_off: 25 },
      active: true,
      max_redemptions: 2,
      expires_at: null,
      restrictions: { first_time_transaction: true, minimum_amount: null, minimum_amount_currency: null },
      customer: null,
      times_redeemed: 0,
      livemode: true,
    });
    expect(created.body.id).toMatch(/^promo_[0-9a-z]{26}$/);
    expectError(
      await engine.call('POST', '/v1/promotion_codes', { coupon: 'SPRING', code: 'SPRING25' }),
      400,
      'invalid_request',
      'already exists',
    );
    const generated = await engine.call('POST', '/v1/promotion_codes', { coupon: base.id });
    expect(generated.body.code).toMatch(/^[A-Z0-9]{8}$/);
    expect(
      (await engine.call('GET', '/v1/promotion_codes?code=spring25')).body.data.map((p: { id: string }) => p.id),
    ).toEqual([created.body.id]);
    expect((await engine.call('GET', '/v1/promotion_codes?coupon=SPRING')).body.data).toHaveLength(2);
    const off = await engine.call('PATCH', `/v1/promotion_codes/${created.body.id}`, { active: false });
    expect(off.body.active).toBe(false);
    const cus = await customer();
    expectError(
      await engine.call('POST', `/v1/customers/${cus}/discount`, { promotion_code: 'spring25' }),
      400,
      'invalid_request',
      'not active',
    );
    await engine.call('PATCH', `/v1/promotion_codes/${created.body.id}`, { active: true });
    const applied = await engine.call('POST', `/v1/customers/${cus}/discount`, { promotion_code: 'spring25' });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body.discount).toMatchObject({
      object: 'discount',
      coupon: { id: 'SPRING' },
      promotion_code: created.body.id,
      customer: cus,
      subscription: null,
      end: null,
      ended_at: null,
    });
    expect((await engine.call('GET', `/v1/promotion_codes/${created.body.id}`)).body.times_redeemed).toBe(1);
    expect(await eventTypesOf(created.body.id)).toEqual([
      'promotion_code.created',
      'promotion_code.updated',
      'promotion_code.updated',
    ]);
  });

  it('every redemption limit refuses with 400 and counts nothing', async () => {
    const em = () => engine.db.orm.em.fork();
    const cus = await customer();
    const someoneElse = await customer();
    await coupon({ id: 'LIMITS', percent_off: 10 });
    const code = async (body: Record<string, unknown>) =>
      (await engine.call('POST', '/v1/promotion_codes', { coupon: 'LIMITS', ...body })).body;
    const forOther = await code({ customer: someoneElse });
    const once = await code({ max_redemptions: 1 });
    const minimum = await code({ restrictions: { minimum_amount: 5000, minimum_amount_currency: 'USD' } });
    const firstTime = await code({ restrictions: { first_time_transaction: true } });

    expectError(
      await engine.call('POST', `/v1/customers/${cus}/discount`, { promotion_code: forOther.code }),
      400,
      'invalid_request',
      'another customer',
    );
    expectError(
      await engine.call('POST', `/v1/customers/${cus}/discount`, { promotion_code: minimum.code }),
      400,
      'invalid_request',
      'at least $50.00',
    );
    expect((await engine.call('POST', `/v1/customers/${cus}/discount`, { promotion_code: once.id })).status).toBe(200);
    expectError(
      await engine.call('POST', `/v1/customers/${someoneElse}/discount`, { promotion_code: once.code }),
      400,
      'invalid_request',
      'maximum of 1',
    );
    expectError(
      await engine.call('POST', `/v1/customers/${cus}/discount`, { coupon: 'LIMITS', promotion_code: once.code }),
      400,
      'invalid_request',
      'one of the two',
    );
    expectError(
      await engine.call('POST', `/v1/customers/${cus}/discount`, { promotion_code: 'NO-SUCH-CODE' }),
      404,
      'not_found',
    );

    // A customer who has paid before (a paid invoice) cannot use a first-time code.
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Paid',
      amount: 1200,
      currency: 'USD',
      interval: 'month',
    });
    const paying = await customer();
    const sub = await engine.call('POST', '/v1/subscriptions', { customer: paying, plan: plan.body.id });
    expect(sub.body.status, JSON.stringify(sub.body)).toBe('active');
    expectError(
      await engine.call('POST', `/v1/customers/${paying}/discount`, { promotion_code: firstTime.code }),
      400,
      'invalid_request',
      'first purchase',
    );
    // ...and the subscription's 1200 is below the minimum.
    expectError(
      await engine.call('POST', `/v1/subscriptions/${sub.body.id}/discount`, { promotion_code: minimum.code }),
      400,
      'invalid_request',
      '$12.00',
    );

    // A coupon past its max, and a deleted one.
    await coupon({ id: 'ONCEONLY', percent_off: 10, max_redemptions: 1 });
    expect((await engine.call('POST', `/v1/customers/${someoneElse}/discount`, { coupon: 'ONCEONLY' })).status).toBe(
      200,
    );
    expectError(
      await engine.call('POST', `/v1/customers/${paying}/discount`, { coupon: 'ONCEONLY' }),
      400,
      'invalid_request',
      'maximum of 1',
    );
    expect((await engine.call('GET', '/v1/coupons/ONCEONLY')).body).toMatchObject({ times_redeemed: 1, valid: false });
    await coupon({ id: 'GONE', percent_off: 10 });
    await engine.call('DELETE', '/v1/coupons/GONE');
    expectError(await engine.call('POST', `/v1/customers/${paying}/discount`, { coupon: 'GONE' }), 404, 'not_found');
    // An amount_off coupon in another currency than the subscription's.
    await coupon({ id: 'EUROS', amount_off: 300, currency: 'EUR', percent_off: undefined });
    expectError(
      await engine.call('POST', `/v1/subscriptions/${sub.body.id}/discount`, { coupon: 'EUROS' }),
      400,
      'invalid_request',
      'bills in USD',
    );

    const limits = await em().findOneOrFail(Coupon, { id: 'LIMITS', accountId: engine.tenant.accountId });
    expect(limits.timesRedeemed).toBe(1);
    expect(await em().count(Discount, { customerId: paying })).toBe(0);
    expect(await em().count(Discount, { subscriptionId: sub.body.id })).toBe(0);
  });

  it("a customer's and a subscription's discount: shown, replaced, removed, and what an invoice applies", async () => {
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Team',
      amount: 4000,
      currency: 'USD',
      interval: 'month',
    });
    const cus = await customer();
    await coupon({ id: 'CUST10', percent_off: 10, duration: 'forever' });
    await coupon({ id: 'SUB3', percent_off: 30, duration: 'repeating', duration_in_months: 2 });
    await coupon({ id: 'FIVE', amount_off: 500, currency: 'USD', percent_off: undefined, duration: 'once' });
    const own = await engine.call('POST', `/v1/customers/${cus}/discount`, { coupon: 'CUST10' });
    expect(own.status).toBe(200);
    expect((await engine.call('GET', `/v1/customers/${cus}`)).body.discount).toEqual(own.body.discount);
    expect(
      (await engine.call('GET', '/v1/customers?limit=100')).body.data.find((c: { id: string }) => c.id === cus).discount
        .id,
    ).toBe(own.body.discount.id);
    const sub = await engine.call('POST', '/v1/subscriptions', { customer: cus, plan: plan.body.id, coupon: 'SUB3' });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    expect(sub.body.discount).toMatchObject({ coupon: { id: 'SUB3' }, subscription: sub.body.id, customer: cus });
    const start = Date.parse(sub.body.discount.start);
    const end = new Date(start);
    end.setUTCMonth(end.getUTCMonth() + 2);
    expect(Date.parse(sub.body.discount.end)).toBe(end.getTime());
    expect((await engine.call('GET', `/v1/subscriptions/${sub.body.id}`)).body.discount.id).toBe(sub.body.discount.id);
    expect((await engine.call('GET', `/v1/subscriptions?customer=${cus}`)).body.data[0].discount.id).toBe(
      sub.body.discount.id,
    );

    const em = engine.db.orm.em.fork();
    const q = {
      accountId: engine.tenant.accountId,
      livemode: true,
      customerId: cus,
      subscriptionId: sub.body.id,
      currency: 'USD',
    };
    // The subscription's own comes first; after its end, the customer's.
    expect(await discountForInvoice(em, { ...q, at: new Date(start + 1000) })).toMatchObject({
      id: sub.body.discount.id,
      coupon: { id: 'SUB3', percent_off: '30' },
    });
    expect(await discountForInvoice(em, { ...q, subscriptionId: null, at: new Date() })).toMatchObject({
      coupon: { id: 'CUST10', percent_off: '10' },
    });
    // The first invoice (created with the subscription) applied the subscription's discount: 30% of 4000.
    const [first] = (await engine.call('GET', `/v1/invoices?subscription=${sub.body.id}`)).body.data;
    expect(first).toMatchObject({
      subtotal: 4000,
      total: 2800,
      total_discount_amounts: [{ discount: sub.body.discount.id, amount: 1200 }],
    });

    // Replaced: customer.discount.updated; the old one ended.
    const replaced = await engine.call('POST', `/v1/subscriptions/${sub.body.id}/discount`, { coupon: 'FIVE' });
    expect(replaced.body.discount).toMatchObject({ coupon: { id: 'FIVE', amount_off: 500 }, end: null });
    expect(await discountForInvoice(em, { ...q, at: new Date() })).toMatchObject({
      coupon: { id: 'FIVE', amount_off: 500 },
    });
    // An amount_off coupon in another currency than the invoice's applies nothing.
    expect(await discountForInvoice(em, { ...q, currency: 'EUR', at: new Date() })).toBeNull();
    // A once discount ends at the first invoice that applies it; recorded twice for it, once.
    const fiveId = replaced.body.discount.id;
    await em.transactional((tx) =>
      recordDiscountApplied(tx, { discountId: fiveId, invoiceId: 'inv_test_once', at: new Date() }),
    );
    await em.transactional((tx) =>
      recordDiscountApplied(tx, { discountId: fiveId, invoiceId: 'inv_test_once', at: new Date() }),
    );
    expect(await eventTypesOf(fiveId)).toEqual(['customer.discount.updated', 'customer.discount.deleted']);
    expect(await discountForInvoice(engine.db.orm.em.fork(), { ...q, at: new Date() })).toMatchObject({
      coupon: { id: 'CUST10' },
    });
    expect((await engine.call('GET', `/v1/subscriptions/${sub.body.id}`)).body.discount).toBeNull();

    // Removed: customer.discount.deleted; nothing to remove is 404.
    expect((await engine.call('DELETE', `/v1/customers/${cus}/discount`)).body).toEqual({ discount: null });
    expect((await engine.call('GET', `/v1/customers/${cus}`)).body.discount).toBeNull();
    expectError(await engine.call('DELETE', `/v1/customers/${cus}/discount`), 404, 'not_found');
    expect(await discountForInvoice(engine.db.orm.em.fork(), { ...q, at: new Date() })).toBeNull();
    const sub3 = sub.body.discount.id;
    expect(await eventTypesOf(sub3)).toEqual(['customer.discount.created']);
  });

  it("an invoice previewed past a discount's end leaves it alone; one issued after its end ends it", async () => {
    const cus = await customer();
    await coupon({ id: 'TWOMONTHS', percent_off: 10, duration: 'repeating', duration_in_months: 2 });
    const applied = (await engine.call('POST', `/v1/customers/${cus}/discount`, { coupon: 'TWOMONTHS' })).body.discount;
    const q = {
      accountId: engine.tenant.accountId,
      livemode: true,
      customerId: cus,
      subscriptionId: null,
      currency: 'USD',
    };
    const later = new Date(Date.parse(applied.end) + 1000);
    // The upcoming invoice after the end applies nothing, and the discount still applies now.
    expect(await discountForInvoice(engine.db.orm.em.fork(), { ...q, at: later })).toBeNull();
    expect((await engine.call('GET', `/v1/customers/${cus}`)).body.discount.id).toBe(applied.id);
    expect(await discountForInvoice(engine.db.orm.em.fork(), { ...q, at: new Date() })).toMatchObject({
      id: applied.id,
    });
    // Once its end has passed (set back here), the next invoice ends it, dated at its end.
    const em = engine.db.orm.em.fork();
    const row = await em.findOneOrFail(Discount, { id: applied.id });
    row.end = new Date(Date.now() - 60_000);
    await em.flush();
    expect(
      await engine.db.orm.em.fork().transactional((tx) => discountForInvoice(tx, { ...q, at: new Date() })),
    ).toBeNull();
    const ended = await engine.db.orm.em.fork().findOneOrFail(Discount, { id: applied.id });
    expect(ended.endedAt?.getTime()).toBe(row.end.getTime());
    expect(await eventTypesOf(applied.id)).toEqual(['customer.discount.created', 'customer.discount.deleted']);
  });

  it('a coupon or code that cannot be redeemed refuses the subscription and creates nothing', async () => {
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Solo',
      amount: 900,
      currency: 'USD',
      interval: 'month',
    });
    const cus = await customer();
    await coupon({ id: 'USEDUP', percent_off: 10, max_redemptions: 1 });
    expect((await engine.call('POST', `/v1/customers/${await customer()}/discount`, { coupon: 'USEDUP' })).status).toBe(
      200,
    );
    expectError(
      await engine.call('POST', '/v1/subscriptions', { customer: cus, plan: plan.body.id, coupon: 'USEDUP' }),
      400,
      'invalid_request',
      'maximum',
    );
    expectError(
      await engine.call('POST', '/v1/subscriptions', {
        customer: cus,
        plan: plan.body.id,
        coupon: 'USEDUP',
        promotion_code: 'X',
      }),
      400,
      'invalid_request',
      'not both',
    );
    expect((await engine.call('GET', `/v1/subscriptions?customer=${cus}`)).body.data).toEqual([]);
  });

  it('accounts and modes are walls', async () => {
    await coupon({ id: 'MINE', percent_off: 10 });
    const code = (await engine.call('POST', '/v1/promotion_codes', { coupon: 'MINE', code: 'MINECODE' })).body;
    const theirs = await customer({ ...other.headers });
    // The same id and code are free in another account and in the sandbox.
    expect((await engine.call('POST', '/v1/coupons', { id: 'MINE', percent_off: 50 }, other.headers)).status).toBe(201);
    expect((await engine.call('POST', '/v1/coupons', { id: 'MINE', percent_off: 60 }, sandbox())).status).toBe(201);
    expect((await engine.call('GET', '/v1/coupons/MINE', undefined, other.headers)).body.percent_off).toBe(50);
    expect((await engine.call('GET', '/v1/coupons/MINE', undefined, sandbox())).body.percent_off).toBe(60);
    expect((await engine.call('GET', '/v1/coupons/MINE')).body.percent_off).toBe(10);
    expectError(await engine.call('GET', `/v1/promotion_codes/${code.id}`, undefined, other.headers), 404, 'not_found');
    expectError(await engine.call('GET', `/v1/promotion_codes/${code.id}`, undefined, sandbox()), 404, 'not_found');
    expectError(
      await engine.call('PATCH', `/v1/promotion_codes/${code.id}`, { active: false }, other.headers),
      404,
      'not_found',
    );
    // Another account cannot redeem my code for its customer, nor apply to my customer.
    expectError(
      await engine.call('POST', `/v1/customers/${theirs}/discount`, { promotion_code: 'MINECODE' }, other.headers),
      404,
      'not_found',
    );
    const mine = await customer();
    expectError(
      await engine.call('POST', `/v1/customers/${mine}/discount`, { coupon: 'MINE' }, other.headers),
      404,
      'not_found',
    );
    expect(
      (await engine.call('GET', '/v1/coupons', undefined, other.headers)).body.data.map((c: { id: string }) => c.id),
    ).toEqual(['MINE']);
    expect((await engine.call('GET', `/v1/promotion_codes/${code.id}`)).body.times_redeemed).toBe(0);
  });

  it('the portal takes a promotion code for a subscription only where the account allows it', async () => {
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Portal plan',
      amount: 2500,
      currency: 'USD',
      interval: 'month',
    });
    const cus = await customer();
    const sub = await engine.call('POST', '/v1/subscriptions', { customer: cus, plan: plan.body.id });
    await coupon({ id: 'PORTAL15', percent_off: 15, duration: 'forever' });
    const code = (await engine.call('POST', '/v1/promotion_codes', { coupon: 'PORTAL15', code: 'WELCOME15' })).body;
    const link = await engine.call('POST', `/v1/customers/${cus}/portal_link`, {});
    const token = link.body.url.split('#')[1];
    const portal = (method: string, path: string, body?: unknown) =>
      engine.call(method, path, body, { authorization: '', 'x-portal-token': token });
    const apply = () => portal('POST', `/v1/portal/subscriptions/${sub.body.id}/promotion_code`, { code: 'welcome15' });

    // Off by default: 403, nothing redeemed.
    expect((await engine.call('GET', '/v1/settings/customer_portal')).body.promotion_codes).toBe(false);
    expectError(await apply(), 403, 'forbidden', 'promotion codes');
    expect((await portal('GET', '/v1/portal')).body.subscriptions[0].discount).toBeNull();
    const allowed = await engine.call('PATCH', '/v1/settings/customer_portal', { promotion_codes: true });
    expect(allowed.body).toMatchObject({ promotion_codes: true, cancellation: true });

    const applied = await apply();
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body).toMatchObject({
      id: sub.body.id,
      discount: { coupon: { id: 'PORTAL15' }, promotion_code: code.id, subscription: sub.body.id },
    });
    expect((await portal('GET', '/v1/portal')).body.subscriptions[0].discount.coupon.id).toBe('PORTAL15');
    expect((await engine.call('GET', `/v1/subscriptions/${sub.body.id}`)).body.discount.promotion_code).toBe(code.id);
    // A code that does not exist, or another customer's subscription: refused.
    expectError(
      await portal('POST', `/v1/portal/subscriptions/${sub.body.id}/promotion_code`, { code: 'NOPE' }),
      404,
      'not_found',
    );
    const others = await engine.call('POST', '/v1/subscriptions', { customer: await customer(), plan: plan.body.id });
    expectError(
      await portal('POST', `/v1/portal/subscriptions/${others.body.id}/promotion_code`, { code: 'WELCOME15' }),
      404,
      'not_found',
    );
    expectError(
      await engine.call(
        'POST',
        `/v1/portal/subscriptions/${sub.body.id}/promotion_code`,
        { code: 'WELCOME15' },
        { authorization: '' },
      ),
      401,
      'unauthorized',
    );
    expect((await engine.call('GET', `/v1/promotion_codes/${code.id}`)).body.times_redeemed).toBe(1);
    await engine.call('PATCH', '/v1/settings/customer_portal', { promotion_codes: false });
  });

  it('20 concurrent redemptions of a max_redemptions=5 coupon make exactly 5', async () => {
    await coupon({ id: 'RACE5', percent_off: 10, max_redemptions: 5 });
    const code = (
      await engine.call('POST', '/v1/promotion_codes', { coupon: 'RACE5', code: 'RACE', max_redemptions: 20 })
    ).body;
    const targets = await Promise.all(Array.from({ length: 20 }, () => customer()));
    const answers = await Promise.all(
      targets.map((cus, i) =>
        engine.call('POST', `/v1/customers/${cus}/discount`, i % 2 ? { coupon: 'RACE5' } : { promotion_code: 'race' }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 400)).toHaveLength(15);
    for (const refused of answers.filter((a) => a.status === 400))
      expect(refused.body.message).toContain('maximum of 5');
    const em = engine.db.orm.em.fork();
    const row = await em.findOneOrFail(Coupon, { id: 'RACE5', accountId: engine.tenant.accountId });
    expect(row.timesRedeemed).toBe(5);
    expect(await em.count(Discount, { couponKey: row.key })).toBe(5);
    const viaCode = await em.count(Discount, { couponKey: row.key, promotionCodeId: code.id });
    expect((await em.findOneOrFail(PromotionCode, { id: code.id })).timesRedeemed).toBe(viaCode);
  });
});
