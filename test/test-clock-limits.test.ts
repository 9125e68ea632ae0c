import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { defaultTestClockLimits, loadConfig } from '../config.ts';
import { Customer, PaymentRequest, Subscription, TestClock } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

/**
 * Issue #24: test clocks had no limits (44 clocks on one account; one advance of two years over a
 * daily plan, about 730 renewals, kept the worker busy for 128 s while another tenant's creates went
 * from 206 to 813 ms). Now: at most 100 clocks per account, 3 customers per clock (each with at most
 * 3 subscriptions not ended), 10 payment requests per clock, an advance of at most two intervals of
 * the longest recurring price on the clock, each refused with 400 invalid_request and nothing written;
 * and clock work runs on a task queue of its own, so live work never waits behind a clock.
 */
describe('test clock limits (issue #24)', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    // The clock queue's worker is started by the isolation test below, after it has shown live work going on without it.
    engine = await startTestEngine();
    await engine.stopWorker();
    await engine.startWorker({ clocks: false });
  });
  afterAll(() => engine?.close());

  /** A fresh account's sandbox, so each test counts only its own clocks. */
  async function sandboxOf() {
    const tenant = await engine.signUp();
    const headers = { ...tenant.headers, 'x-sandbox-mode': 'true' };
    const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, headers);
    const created = async (path: string, body: unknown) => {
      const response = await call('POST', path, body);
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body;
    };
    return { tenant, call, created };
  }
  const em = () => engine.db.orm.em.fork();

  it('clock work runs on its own task queue: live creates go on while no clock worker runs, and the clock moves once one does', async () => {
    const { call, created } = await sandboxOf();
    const clock = await created('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' });
    const described = await engine.env.client.workflow.getHandle(clock.id).describe();
    expect(described.taskQueue).toBe(`${engine.taskQueue}-clocks`);
    expect(engine.config.clockTaskQueue).toBe(`${engine.taskQueue}-clocks`);

    const advancing = await call('POST', `/v1/test_clocks/${clock.id}/advance`, {
      frozen_time: '2027-01-02T00:00:00Z',
    });
    expect(advancing.status, JSON.stringify(advancing.body)).toBe(200);
    // No worker polls the clock queue: the clock waits there. Live work of another account does not.
    const live = await engine.signUp();
    const customer = await engine.call(
      'POST',
      '/v1/customers',
      { email: 'live@example.com', payment_method: 'pm_card_visa' },
      live.headers,
    );
    const plan = await engine.call(
      'POST',
      '/v1/plans',
      { name: 'Live', amount: 1500, currency: 'USD', interval: 'month' },
      live.headers,
    );
    const started = Date.now();
    const subscription = await engine.call(
      'POST',
      '/v1/subscriptions',
      { customer: customer.body.id, plan: plan.body.id },
      live.headers,
    );
    expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
    expect(subscription.body.status).toBe('active');
    expect(Date.now() - started).toBeLessThan(10_000);
    const liveWorkflow = await engine.env.client.workflow.getHandle(subscription.body.id).describe();
    expect(liveWorkflow.taskQueue).toBe(engine.taskQueue);
    expect((await call('GET', `/v1/test_clocks/${clock.id}`)).body.status).toBe('advancing');

    // The clock queue's worker starts: the clock reaches its time, and work bound to it lands on its queue.
    await engine.startClockWorker();
    for (let i = 0; ; i++) {
      const body = (await call('GET', `/v1/test_clocks/${clock.id}`)).body;
      if (body.status === 'ready') {
        expect(body.frozen_time).toBe('2027-01-02T00:00:00.000Z');
        break;
      }
      if (i > 1000) throw new Error(`clock still ${body.status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const onClock = await created('/v1/customers', {
      email: 'clocked@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const clockPlan = await created('/v1/plans', { name: 'Clocked', amount: 900, currency: 'USD', interval: 'month' });
    const bound = await created('/v1/subscriptions', { customer: onClock.id, plan: clockPlan.id });
    expect((await engine.env.client.workflow.getHandle(bound.id).describe()).taskQueue).toBe(
      `${engine.taskQueue}-clocks`,
    );
  });

  it('the clock queue and the limits come from the configuration, checked at start', () => {
    expect(loadConfig({ NODE_ENV: 'test' })).toMatchObject({
      taskQueue: 'billing',
      clockTaskQueue: 'billing-clocks',
      testClocks: { perAccount: 100, customersPerClock: 3, subscriptionsPerCustomer: 3, paymentRequestsPerClock: 10 },
    });
    expect(loadConfig({ NODE_ENV: 'test', TEMPORAL_TASK_QUEUE: 'live' }).clockTaskQueue).toBe('live-clocks');
    expect(
      loadConfig({ NODE_ENV: 'test', TEMPORAL_CLOCK_TASK_QUEUE: 'sandbox-clocks', TEST_CLOCK_CUSTOMERS: '50' }),
    ).toMatchObject({ clockTaskQueue: 'sandbox-clocks', testClocks: { customersPerClock: 50 } });
    expect(() => loadConfig({ NODE_ENV: 'test', TEMPORAL_CLOCK_TASK_QUEUE: 'billing' })).toThrow(
      /TEMPORAL_CLOCK_TASK_QUEUE must differ/,
    );
    expect(() => loadConfig({ NODE_ENV: 'test', EXPORTS_TASK_QUEUE: 'x', TEMPORAL_CLOCK_TASK_QUEUE: 'x' })).toThrow(
      /TEMPORAL_CLOCK_TASK_QUEUE must differ/,
    );
    expect(() => loadConfig({ NODE_ENV: 'test', TEST_CLOCKS_PER_ACCOUNT: '0' })).toThrow(
      /TEST_CLOCKS_PER_ACCOUNT must be at least 1/,
    );
  });

  it(`an account has at most ${defaultTestClockLimits.perAccount} test clocks`, async () => {
    const { tenant, call } = await sandboxOf();
    for (let i = 0; i < defaultTestClockLimits.perAccount; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          call('POST', '/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z', name: `clock ${i + j}` }),
        ),
      );
      for (const response of batch) expect(response.status, JSON.stringify(response.body)).toBe(201);
    }
    const refused = await call('POST', '/v1/test_clocks', {
      frozen_time: '2027-01-01T00:00:00Z',
      name: 'one too many',
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: 'invalid_request',
      message: expect.stringContaining(`at most ${defaultTestClockLimits.perAccount} test clocks`),
    });
    expect(await em().count(TestClock, { accountId: tenant.accountId })).toBe(defaultTestClockLimits.perAccount);
    // Deleting one makes room for one.
    const [first] = await em().find(TestClock, { accountId: tenant.accountId }, { limit: 1 });
    expect((await call('DELETE', `/v1/test_clocks/${first!.id}`)).status).toBe(200);
    expect((await call('POST', '/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' })).status).toBe(201);
  });

  it('a clock holds at most 3 customers, each with at most 3 subscriptions not ended, and at most 10 payment requests', async () => {
    const { call, created } = await sandboxOf();
    const clock = await created('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' });
    const customers = [];
    for (let i = 0; i < 3; i++)
      customers.push(
        await created('/v1/customers', {
          email: `c${i}@example.com`,
          payment_method: 'pm_card_visa',
          test_clock: clock.id,
        }),
      );
    const fourth = await call('POST', '/v1/customers', { email: 'c3@example.com', test_clock: clock.id });
    expect(fourth.status).toBe(400);
    expect(fourth.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('at most 3 customers') });
    expect(await em().count(Customer, { testClockId: clock.id })).toBe(3);

    const plan = await created('/v1/plans', {
      name: 'Pro',
      amount: 2000,
      currency: 'USD',
      interval: 'month',
      trial_period_days: 14,
    });
    for (let i = 0; i < 3; i++) await created('/v1/subscriptions', { customer: customers[0].id, plan: plan.id });
    const extra = await call('POST', '/v1/subscriptions', { customer: customers[0].id, plan: plan.id });
    expect(extra.status).toBe(400);
    expect(extra.body).toEqual({
      error: 'invalid_request',
      message: expect.stringContaining('at most 3 subscriptions'),
    });
    expect(await em().count(Subscription, { customerId: customers[0].id })).toBe(3);
    // Another customer on the clock has room of its own.
    await created('/v1/subscriptions', { customer: customers[1].id, plan: plan.id });

    const request = {
      type: 'one_time',
      amount: 1200,
      currency: 'USD',
      customer_email: 'payer@example.com',
      expires_in: 3600,
      test_clock: clock.id,
    };
    for (let i = 0; i < 9; i++) await created('/api/v1/payment-requests', request);
    await created('/api/v1/payment-requests', {
      type: 'recurring',
      interval: 'month',
      amount: 500,
      currency: 'USD',
      customer_email: 'monthly@example.com',
      test_clock: clock.id,
    });
    const eleventh = await call('POST', '/api/v1/payment-requests', request);
    expect(eleventh.status).toBe(400);
    expect(eleventh.body).toEqual({
      error: 'invalid_request',
      message: expect.stringContaining('at most 10 payment requests'),
    });
    expect(await em().count(PaymentRequest, { testClockId: clock.id, recurringPaymentRequestId: null })).toBe(9);
  });

  it('one advance goes at most two intervals of the longest recurring price on the clock (two years with none)', async () => {
    const { call, created } = await sandboxOf();
    const clock = await created('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' });
    // Nothing recurring on it: two years.
    const tooFarEmpty = await call('POST', `/v1/test_clocks/${clock.id}/advance`, {
      frozen_time: '2029-01-01T00:00:01Z',
    });
    expect(tooFarEmpty.status).toBe(400);
    expect(tooFarEmpty.body).toEqual({
      error: 'invalid_request',
      message: expect.stringContaining('2029-01-01T00:00:00.000Z at the latest'),
    });

    // A daily plan: two days (the review's two years over a daily plan were about 730 renewals in one advance).
    const customer = await created('/v1/customers', {
      email: 'daily@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const daily = await created('/v1/plans', { name: 'Daily', amount: 100, currency: 'USD', interval: 'day' });
    await created('/v1/subscriptions', { customer: customer.id, plan: daily.id });
    const twoYears = await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: '2029-01-01T00:00:00Z' });
    expect(twoYears.status).toBe(400);
    expect(twoYears.body.error).toBe('invalid_request');
    expect(twoYears.body.message).toContain('every day');
    expect(twoYears.body.message).toContain('2027-01-03T00:00:00.000Z at the latest');
    // Refused: nothing changed.
    expect((await call('GET', `/v1/test_clocks/${clock.id}`)).body).toMatchObject({
      status: 'ready',
      frozen_time: '2027-01-01T00:00:00.000Z',
    });

    // A monthly plan beside it: the longest price decides (two months).
    const monthly = await created('/v1/plans', { name: 'Monthly', amount: 1000, currency: 'USD', interval: 'month' });
    await created('/v1/subscriptions', { customer: customer.id, plan: monthly.id });
    expect(
      (await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: '2027-03-01T00:00:01Z' })).status,
    ).toBe(400);
    const ok = await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: '2027-01-03T00:00:00Z' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.status).toBe('advancing');
  });
});
