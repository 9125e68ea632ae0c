/**
 * GET /v1/reports/revenue and /v1/reports/mrr (services/reports/dashboard-charts.ts): aggregates in SQL
 * checked against known rows (ledger balance transactions, plans and subscriptions written
 * with fixed dates), against real payments and a real subscription made through the API,
 * per currency and mode, one account only, and refusing bad ranges.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, Plan, Subscription } from '../db/entities/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

describe('reports', () => {
  let engine: TestEngine;
  let a: Tenant;
  let b: Tenant;
  const sandbox = { 'x-sandbox-mode': 'true' };
  beforeAll(async () => {
    engine = await startTestEngine();
    a = await engine.signUp();
    b = await engine.signUp();
    const em = engine.db.orm.em.fork();
    let n = 0;
    const btxn = (
      tenant: Tenant,
      type: string,
      amount: number,
      currency: string,
      at: string,
      fee = 0,
      livemode = true,
    ) => {
      const createdAt = new Date(at);
      return em.insert(BalanceTransaction, {
        id: `btxn_report_${n++}`,
        accountId: tenant.accountId,
        livemode,
        type: type as BalanceTransaction['type'],
        source: `txn_report_${n}`,
        amount,
        fee,
        net: amount - fee,
        currency,
        status: 'available',
        availableOn: createdAt,
        refundedFromPending: 0,
        createdAt,
      });
    };
    await btxn(a, 'payment', 5000, 'USD', '2026-01-15T10:00:00Z', 100);
    await btxn(a, 'payment', 3000, 'USD', '2026-01-20T23:59:59Z');
    await btxn(a, 'refund', -1000, 'USD', '2026-01-21T00:00:00Z');
    await btxn(a, 'payout', -4000, 'USD', '2026-02-10T00:00:00Z'); // not revenue
    await btxn(a, 'payment', 7000, 'EUR', '2026-03-02T12:00:00Z');
    await btxn(a, 'payment', 999, 'USD', '2026-01-15T10:00:00Z', 0, false); // the sandbox's
    await btxn(b, 'payment', 123_456, 'USD', '2026-01-15T10:00:00Z'); // another account's

    const plan = async (
      tenant: Tenant,
      amount: number,
      currency: string,
      interval: string,
      intervalCount = 1,
      livemode = true,
    ) => {
      const id = `plan_report_${n++}`;
      await em.insert(Plan, {
        id,
        name: id,
        amount,
        currency,
        interval: interval as Plan['interval'],
        intervalCount,
        accountId: tenant.accountId,
        livemode,
        createdAt: new Date('2025-01-01T00:00:00Z'),
      });
      return id;
    };
    const subscription = async (
      tenant: Tenant,
      planId: string,
      s: { created: string; trialEnd?: string; canceledAt?: string; status?: string; livemode?: boolean },
    ) =>
      em.insert(Subscription, {
        id: `sub_report_${n++}`,
        customerId: 'cus_report',
        planId,
        status: (s.status ?? 'active') as Subscription['status'],
        trialEnd: s.trialEnd ? new Date(s.trialEnd) : null,
        canceledAt: s.canceledAt ? new Date(s.canceledAt) : null,
        accountId: tenant.accountId,
        livemode: s.livemode ?? true,
        version: 1,
        createdAt: new Date(s.created),
        updatedAt: new Date(s.created),
      });
    await subscription(a, await plan(a, 2000, 'USD', 'month'), { created: '2026-01-10T00:00:00Z' });
    // A yearly plan: 12000 / 12 = 1000 a month, once its trial ends on March 15.
    await subscription(a, await plan(a, 12_000, 'USD', 'year'), {
      created: '2026-02-15T00:00:00Z',
      trialEnd: '2026-03-15T00:00:00Z',
    });
    // Every two weeks: 1000 × 52 / 12 / 2 = 2166.67 a month, until canceled on March 10.
    await subscription(a, await plan(a, 1000, 'USD', 'week', 2), {
      created: '2025-12-01T00:00:00Z',
      canceledAt: '2026-03-10T00:00:00Z',
      status: 'canceled',
    });
    // Quarterly in EUR: 5000 / 3 = 1666.67 a month.
    await subscription(a, await plan(a, 5000, 'EUR', 'month', 3), { created: '2026-01-01T00:00:00Z' });
    // A trial that expired without converting never counts.
    await subscription(a, await plan(a, 9000, 'USD', 'month'), {
      created: '2026-01-05T00:00:00Z',
      trialEnd: '2026-02-04T00:00:00Z',
      canceledAt: '2026-02-04T00:00:00Z',
      status: 'expired',
    });
    await subscription(a, await plan(a, 777, 'USD', 'month', 1, false), {
      created: '2026-01-01T00:00:00Z',
      livemode: false,
    });
    await subscription(b, await plan(b, 50_000, 'USD', 'month'), { created: '2026-01-01T00:00:00Z' });
  });
  afterAll(async () => engine?.close());

  const get = (tenant: Tenant, path: string, headers: Record<string, string> = {}) =>
    engine.call('GET', path, undefined, { ...tenant.headers, ...headers });

  it('revenue per month: payments, refunds and fees per currency, every month present, payouts and the sandbox left out', async () => {
    const report = await get(a, '/v1/reports/revenue?interval=month&from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z');
    expect(report.status).toBe(200);
    expect(report.body).toMatchObject({
      object: 'report',
      report: 'revenue',
      interval: 'month',
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-04-01T00:00:00.000Z',
      livemode: true,
    });
    const zero = (period_start: string) => ({ period_start, gross: 0, refunded: 0, fees: 0, net: 0, payments: 0 });
    expect(report.body.data).toEqual([
      {
        currency: 'EUR',
        points: [
          zero('2026-01-01T00:00:00.000Z'),
          zero('2026-02-01T00:00:00.000Z'),
          { period_start: '2026-03-01T00:00:00.000Z', gross: 7000, refunded: 0, fees: 0, net: 7000, payments: 1 },
        ],
      },
      {
        currency: 'USD',
        points: [
          { period_start: '2026-01-01T00:00:00.000Z', gross: 8000, refunded: 1000, fees: 100, net: 6900, payments: 2 },
          zero('2026-02-01T00:00:00.000Z'),
          zero('2026-03-01T00:00:00.000Z'),
        ],
      },
    ]);
  });

  it('revenue per day: buckets are UTC days (23:59:59 and 00:00:00 fall on either side)', async () => {
    const report = await get(a, '/v1/reports/revenue?interval=day&from=2026-01-20T00:00:00Z&to=2026-01-22T00:00:00Z');
    expect(report.body.data).toEqual([
      {
        currency: 'USD',
        points: [
          { period_start: '2026-01-20T00:00:00.000Z', gross: 3000, refunded: 0, fees: 0, net: 3000, payments: 1 },
          { period_start: '2026-01-21T00:00:00.000Z', gross: 0, refunded: 1000, fees: 0, net: -1000, payments: 0 },
        ],
      },
    ]);
  });

  it('MRR at the end of each month: trials excluded until they end, canceled ones until their end, plans brought to a month', async () => {
    const report = await get(a, '/v1/reports/mrr?interval=month&from=2026-01-01T00:00:00Z&to=2026-05-01T00:00:00Z');
    expect(report.status).toBe(200);
    expect(report.body).toMatchObject({ object: 'report', report: 'mrr', livemode: true });
    const point = (period_start: string, at: string, mrr: number, subscriptions: number) => ({
      period_start: `${period_start}T00:00:00.000Z`,
      at: `${at}T00:00:00.000Z`,
      mrr,
      subscriptions,
    });
    expect(report.body.data).toEqual([
      {
        currency: 'EUR',
        points: [
          point('2026-01-01', '2026-02-01', 1667, 1),
          point('2026-02-01', '2026-03-01', 1667, 1),
          point('2026-03-01', '2026-04-01', 1667, 1),
          point('2026-04-01', '2026-05-01', 1667, 1),
        ],
      },
      {
        currency: 'USD',
        // 2000 + 2166.67 while the fortnightly one lives; 2000 + 1000 once the yearly trial is over and the fortnightly one is canceled.
        points: [
          point('2026-01-01', '2026-02-01', 4167, 2),
          point('2026-02-01', '2026-03-01', 4167, 2),
          point('2026-03-01', '2026-04-01', 3000, 2),
          point('2026-04-01', '2026-05-01', 3000, 2),
        ],
      },
    ]);
    // The last bucket is measured at `to`, not at its end.
    const mid = await get(a, '/v1/reports/mrr?interval=month&from=2026-03-01T00:00:00Z&to=2026-03-12T00:00:00Z');
    expect(mid.body.data.find((d: { currency: string }) => d.currency === 'USD').points).toEqual([
      { period_start: '2026-03-01T00:00:00.000Z', at: '2026-03-12T00:00:00.000Z', mrr: 2000, subscriptions: 1 },
    ]);
  });

  it('one account and one mode: the sandbox and another account see only their own', async () => {
    const sandboxMrr = await get(
      a,
      '/v1/reports/mrr?interval=month&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z',
      sandbox,
    );
    expect(sandboxMrr.body).toMatchObject({
      livemode: false,
      data: [{ currency: 'USD', points: [{ mrr: 777, subscriptions: 1 }] }],
    });
    const sandboxRevenue = await get(
      a,
      '/v1/reports/revenue?interval=month&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z',
      sandbox,
    );
    expect(sandboxRevenue.body.data).toEqual([
      {
        currency: 'USD',
        points: [{ period_start: '2026-01-01T00:00:00.000Z', gross: 999, refunded: 0, fees: 0, net: 999, payments: 1 }],
      },
    ]);
    const theirs = await get(b, '/v1/reports/revenue?interval=month&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z');
    expect(theirs.body.data).toEqual([
      {
        currency: 'USD',
        points: [
          { period_start: '2026-01-01T00:00:00.000Z', gross: 123_456, refunded: 0, fees: 0, net: 123_456, payments: 1 },
        ],
      },
    ]);
    expect((await engine.call('GET', '/v1/reports/revenue', undefined, { authorization: '' })).status).toBe(401);
  });

  it('counts real payments, refunds and a real subscription made through the API, by default over the last 30 days', async () => {
    const c = await engine.signUp();
    const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, c.headers);
    const paid = await call('POST', '/v1/transactions', {
      account_id: c.accountId,
      currency: 'USD',
      amount: 5000,
      type: 'payment',
      payment_method: 'pm_card_visa',
    });
    expect(paid.status).toBe(201);
    expect(
      (
        await call('POST', '/v1/transactions', {
          account_id: c.accountId,
          currency: 'USD',
          amount: 2000,
          type: 'refund',
          source_transaction: paid.body.id,
        })
      ).status,
    ).toBe(201);
    const customer = await call('POST', '/v1/customers', { email: 'ada@example.com', payment_method: 'pm_card_visa' });
    const plan = await call('POST', '/v1/plans', { name: 'Pro', amount: 2500, currency: 'USD', interval: 'month' });
    const subscription = await call('POST', '/v1/subscriptions', { customer_id: customer.body.id, plan: plan.body.id });
    expect(subscription.status).toBe(201);
    // Its created_at is its workflow's clock: here the time-skipping test server this file shares with
    // earlier ones, which may have skipped years ahead (in production, the wall clock). The default
    // range ends at the wall clock's now, so the row is dated now.
    await engine.db.orm.em
      .getConnection()
      .execute('update subscriptions set created_at = now() where id = ?', [subscription.body.id]);

    const revenue = await call('GET', '/v1/reports/revenue');
    expect(revenue.status).toBe(200);
    expect(revenue.body.interval).toBe('day');
    const usd = revenue.body.data.find((d: { currency: string }) => d.currency === 'USD').points;
    expect(usd.length).toBeGreaterThanOrEqual(30);
    // The subscription's first invoice was charged too: 5000 + 2500 paid, 2000 refunded.
    expect(usd.at(-1)).toMatchObject({ gross: 7500, refunded: 2000, net: 5500, payments: 2 });
    expect(usd.slice(0, -1).every((p: { gross: number }) => p.gross === 0)).toBe(true);

    const mrr = await call('GET', '/v1/reports/mrr');
    expect(mrr.body.data).toHaveLength(1);
    expect(mrr.body.data[0].points.at(-1)).toMatchObject({ mrr: 2500, subscriptions: 1 });
    expect(mrr.body.data[0].points[0]).toMatchObject({ mrr: 0, subscriptions: 0 });
  });

  it('refuses bad ranges and intervals in the spec shape', async () => {
    const cases: [string, RegExp][] = [
      ['/v1/reports/revenue?interval=week', /interval/],
      ['/v1/reports/revenue?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', /before to/],
      ['/v1/reports/mrr?interval=day&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', /at most 400 days/],
      ['/v1/reports/mrr?from=yesterday', /from/],
      ['/v1/reports/mrr?currency=USD', /currency|unrecognized/i],
    ];
    for (const [path, message] of cases) {
      const answer = await get(a, path);
      expect(answer.status, path).toBe(400);
      expect(answer.body.error, path).toBe('invalid_request');
      expect(answer.body.message, path).toMatch(message);
    }
  });
});
