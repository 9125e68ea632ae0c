import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCustomerLinks } from '../domain/customer-links.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

/**
 * Payouts on test clocks, and the events API calls record for objects on a clock, over
 * HTTP only (as an integrator's own test would): a clock's daily payout schedule pays
 * out the money a customer on the clock paid once it is available, pending → in_transit
 * → paid as the clock is advanced, every timestamp the clock's; a payout made with
 * `test_clock`; the errors; lists; deleting the clock. No Temporal time is skipped: the
 * clocks move because they are advanced, and wall-clock waits show nothing moves without.
 */
describe('test clocks: payouts, and events recorded by the API', () => {
  let engine: TestEngine;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    engine = await startTestEngine();
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await engine?.close();
  });

  async function tenant(name: string) {
    const tenant = await clockTenant(engine, name);
    const { call } = tenant;
    const balance = async () => {
      const body = (await call('GET', '/v1/balance')).body;
      const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
      return { available: of(body.available), pending: of(body.pending) };
    };
    const payouts = async (query = '') => (await call('GET', `/v1/payouts${query}`)).body.data as Record<string, any>[];
    return { ...tenant, balance, payouts };
  }

  it("a clock's daily payout schedule pays out what a customer on the clock paid, pending → in_transit → paid as the clock moves", async () => {
    const { call, make, advance, balance, payouts, accountId } = await tenant('Paid out on a clock');
    await make('/v1/bank_accounts', {
      type: 'us_ach',
      account_holder_name: 'Clocked',
      currency: 'USD',
      routing_number: '110000000',
      account_number: '000123456789',
    });
    const clock = await make('/v1/test_clocks', { frozen_time: '2037-03-01T12:00:00Z', name: 'payouts' });
    const customer = await make('/v1/customers', { email: 'payout-payer@example.com', test_clock: clock.id });
    const payment = await make('/v1/transactions', {
      account_id: accountId,
      amount: 4200,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_card_visa',
      customer: customer.id,
    });
    expect(payment.created_at).toBe('2037-03-01T12:00:00.000Z');

    // The clock's own daily schedule; the account's stays manual.
    const settings = await call('PATCH', '/v1/payout_settings', {
      currency: 'USD',
      interval: 'daily',
      test_clock: clock.id,
    });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);
    expect(settings.body.test_clock).toBe(clock.id);
    expect(settings.body.schedules.find((s: { currency: string }) => s.currency === 'USD')).toMatchObject({
      interval: 'daily',
      next_payout_at: '2037-03-02T00:00:00.000Z',
    });
    const accountSettings = (await call('GET', '/v1/payout_settings')).body;
    expect(accountSettings.test_clock).toBeUndefined();
    expect(accountSettings.schedules.find((s: { currency: string }) => s.currency === 'USD').interval).toBe('manual');
    expect((await call('GET', `/v1/payout_settings?test_clock=${clock.id}`)).body.schedules[0]).toMatchObject({
      currency: 'USD',
      interval: 'daily',
    });

    // Nothing runs on the wall clock.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await payouts(`?test_clock=${clock.id}`)).toEqual([]);

    // Mar 2 and Mar 3 00:00: nothing available yet (the payment becomes available on Mar 3 12:00), so no payout.
    await advance(clock.id, '2037-03-03T12:00:00Z');
    expect(await payouts(`?test_clock=${clock.id}`)).toEqual([]);
    expect(await balance()).toEqual({ available: 4200, pending: 0 });

    // Mar 4 00:00: the run pays out the 4,200 available; the payout is pending (1 minute) at the clock's time.
    await advance(clock.id, '2037-03-04T00:00:00Z');
    const [created, ...more] = await payouts(`?test_clock=${clock.id}`);
    expect(more).toEqual([]);
    expect(created).toMatchObject({
      amount: 4200,
      currency: 'USD',
      status: 'pending',
      automatic: true,
      test_clock: clock.id,
      created_at: '2037-03-04T00:00:00.000Z',
    });
    expect(await balance()).toEqual({ available: 0, pending: 0 });
    // Left out of the list without the filter.
    expect((await payouts()).map((p) => p.id)).not.toContain(created!.id);
    // And it stays pending on the wall clock.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await call('GET', `/v1/payouts/${created!.id}`)).body.status).toBe('pending');

    // A minute on: sent, in transit for a day.
    await advance(clock.id, '2037-03-04T00:01:00Z');
    expect((await call('GET', `/v1/payouts/${created!.id}`)).body).toMatchObject({
      status: 'in_transit',
      arrival_date: '2037-03-05T00:01:00.000Z',
      updated_at: '2037-03-04T00:01:00.000Z',
    });

    // Two days on: paid at its arrival; the runs of Mar 5 and Mar 6 find nothing to pay out (never doubled).
    await advance(clock.id, '2037-03-06T06:00:00Z');
    const paid = (await call('GET', `/v1/payouts/${created!.id}`)).body;
    expect(paid).toMatchObject({ status: 'paid', paid_at: '2037-03-05T00:01:00.000Z' });
    expect((await payouts(`?test_clock=${clock.id}`)).map((p) => p.id)).toEqual([created!.id]);
    expect(await balance()).toEqual({ available: 0, pending: 0 });
    const movements = (await call('GET', '/v1/balance_transactions?limit=100')).body.data as {
      type: string;
      amount: number;
      source: string;
    }[];
    expect(movements.filter((m) => m.source === created!.id).map((m) => [m.type, m.amount])).toEqual([
      ['payout', -4200],
    ]);

    // Its events carry the clock's time.
    const events = (await call('GET', '/v1/events?limit=100')).body.data as {
      type: string;
      created_at: string;
      data: { object: { id: string } };
    }[];
    const times = (type: string) =>
      events.filter((e) => e.type === type && e.data.object.id === created!.id).map((e) => e.created_at);
    expect(times('payout.created')).toEqual(['2037-03-04T00:00:00.000Z']);
    expect(times('payout.paid')).toEqual(['2037-03-05T00:01:00.000Z']);

    // The schedule back to manual on the clock; a payout made by hand on the clock.
    expect(
      (await call('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'manual', test_clock: clock.id }))
        .status,
    ).toBe(200);
    await make('/v1/transactions', { account_id: accountId, amount: 1000, currency: 'USD', type: 'credit' });
    const manual = await make('/v1/payouts', { amount: 600, currency: 'USD', test_clock: clock.id });
    expect(manual).toMatchObject({
      status: 'pending',
      test_clock: clock.id,
      created_at: '2037-03-06T06:00:00.000Z',
      automatic: false,
    });
    expect(await balance()).toEqual({ available: 400, pending: 0 });
    await advance(clock.id, '2037-03-08T00:00:00Z');
    expect((await call('GET', `/v1/payouts/${manual.id}`)).body).toMatchObject({
      status: 'paid',
      paid_at: '2037-03-07T06:01:00.000Z',
    });
    expect(await balance()).toEqual({ available: 400, pending: 0 });
  }, 60_000);

  it("refuses bad input in the spec's shape and changes nothing; deleting the clock cancels its open payouts", async () => {
    const { call, make, balance, payouts, accountId, liveHeaders } = await tenant('Payout errors on a clock');
    await make('/v1/bank_accounts', {
      type: 'us_ach',
      account_holder_name: 'Clocked',
      currency: 'USD',
      routing_number: '110000000',
      account_number: '000123456789',
    });
    await make('/v1/transactions', { account_id: accountId, amount: 5000, currency: 'USD', type: 'credit' });
    const clock = await make('/v1/test_clocks', { frozen_time: '2038-01-01T00:00:00Z' });
    const other = await engine.signUp({ name: 'Not yours' });
    const theirs = (
      await engine.call(
        'POST',
        '/v1/test_clocks',
        { frozen_time: '2038-01-01T00:00:00Z' },
        { ...other.headers, 'x-sandbox-mode': 'true' },
      )
    ).body;
    const unknown = 'clock_' + '0'.repeat(26);

    const refusals: [string, string, unknown, Record<string, string> | undefined, number, string][] = [
      [
        'POST',
        '/v1/payouts',
        { amount: 100, currency: 'USD', test_clock: clock.id },
        liveHeaders,
        400,
        'livemode_not_allowed',
      ],
      ['POST', '/v1/payouts', { amount: 100, currency: 'USD', test_clock: unknown }, undefined, 404, 'not_found'],
      ['POST', '/v1/payouts', { amount: 100, currency: 'USD', test_clock: theirs.id }, undefined, 404, 'not_found'],
      ['POST', '/v1/payouts', { amount: 100, currency: 'USD', test_clock: 'nope' }, undefined, 400, 'invalid_request'],
      [
        'POST',
        '/v1/payouts',
        { amount: 999_999, currency: 'USD', test_clock: clock.id },
        undefined,
        402,
        'insufficient_funds',
      ],
      [
        'PATCH',
        '/v1/payout_settings',
        { currency: 'USD', interval: 'daily', test_clock: clock.id },
        liveHeaders,
        400,
        'livemode_not_allowed',
      ],
      [
        'PATCH',
        '/v1/payout_settings',
        { currency: 'USD', interval: 'daily', test_clock: unknown },
        undefined,
        404,
        'not_found',
      ],
      [
        'PATCH',
        '/v1/payout_settings',
        { currency: 'USD', interval: 'weekly', test_clock: clock.id },
        undefined,
        400,
        'invalid_request',
      ],
      ['GET', `/v1/payout_settings?test_clock=${theirs.id}`, undefined, undefined, 404, 'not_found'],
    ];
    for (const [method, path, body, headers, status, error] of refusals) {
      const response = headers ? await engine.call(method, path, body, headers) : await call(method, path, body);
      expect(response.status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(response.body)}`).toBe(
        status,
      );
      expect(response.body.error).toBe(error);
      expect(typeof response.body.message).toBe('string');
    }
    expect(await payouts(`?test_clock=${clock.id}`)).toEqual([]);
    expect(await payouts()).toEqual([]);
    expect(
      (await call('GET', `/v1/payout_settings?test_clock=${clock.id}`)).body.schedules.every(
        (s: { interval: string }) => s.interval === 'manual',
      ),
    ).toBe(true);
    expect(await balance()).toEqual({ available: 5000, pending: 0 });
    // Live mode has no clocks: the filter finds nothing there.
    const live = await engine.call('GET', `/v1/payouts?test_clock=${clock.id}`, undefined, liveHeaders);
    expect(live.status).toBe(200);
    expect(live.body.data).toEqual([]);

    // A payout on the clock canceled by the API: at the clock's time, its workflow ends (and leaves the clock).
    const canceledByApi = await make('/v1/payouts', { amount: 700, currency: 'USD', test_clock: clock.id });
    const canceled = await call('POST', `/v1/payouts/${canceledByApi.id}/cancel`);
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    expect(canceled.body).toMatchObject({
      status: 'canceled',
      canceled_at: '2038-01-01T00:00:00.000Z',
      updated_at: '2038-01-01T00:00:00.000Z',
    });
    // (Polled, not result(): the time-skipping client's result() lets the test server skip time, and with no timer
    // anywhere it skips to the idle clock workflow's execution timeout: the clock then times out. No such thing outside tests.)
    await eventually(
      () => engine.env.client.workflow.getHandle(canceledByApi.id).describe(),
      (d) => d.status.name === 'COMPLETED',
      10_000,
    );
    expect(await balance()).toEqual({ available: 5000, pending: 0 });

    // A pending payout and a daily schedule on the clock; deleting the clock cancels the payout (money back) and ends the schedule.
    const open = await make('/v1/payouts', { amount: 1500, currency: 'USD', test_clock: clock.id });
    expect(
      (await call('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'daily', test_clock: clock.id })).status,
    ).toBe(200);
    expect(await balance()).toEqual({ available: 3500, pending: 0 });
    expect((await call('DELETE', `/v1/test_clocks/${clock.id}`)).status).toBe(200);
    expect((await call('GET', `/v1/payouts/${open.id}`)).body).toMatchObject({ status: 'canceled' });
    expect(await balance()).toEqual({ available: 5000, pending: 0 });
    for (const id of [open.id, `payout-schedule-${clock.id}`]) {
      const described = await engine.env.client.workflow
        .getHandle(id)
        .describe()
        .catch((error) => (error instanceof WorkflowNotFoundError ? null : Promise.reject(error)));
      expect(described?.status.name, id).toBe('TERMINATED');
    }
    expect((await call('GET', `/v1/payout_settings?test_clock=${clock.id}`)).status).toBe(404);
  }, 40_000);

  it('an event an API call records for a customer on a clock retries its webhook on the clock, not in real time', async () => {
    const { call, make, advance } = await tenant('API events on a clock');
    let seen = 0;
    receiver.respond = (r) => (r.path === '/api-clocked' ? (++seen <= 2 ? 500 : 200) : 200);
    const endpoint = await make('/v1/webhooks', {
      url: receiver.url('/api-clocked'),
      events: ['customer.created', 'customer.updated'],
    });
    const clock = await make('/v1/test_clocks', { frozen_time: '2039-06-01T00:00:00Z' });
    // customer.created is recorded by the API call itself (no workflow): at the clock's time, on the clock.
    const customer = await make('/v1/customers', { email: 'api-clocked@example.com', test_clock: clock.id });
    await receiver.waitFor(1, (r) => r.path === '/api-clocked');
    // The retry is due 5 s later on the clock: the wall clock passing it sends nothing.
    await new Promise((r) => setTimeout(r, 6_500));
    expect(receiver.received.filter((r) => r.path === '/api-clocked')).toHaveLength(1);

    await advance(clock.id, '2039-06-01T00:10:00Z');
    const got = receiver.received.filter((r) => r.path === '/api-clocked');
    expect(got.map((r) => r.status)).toEqual([500, 500, 200]);
    const deliveries = (await call('GET', `/v1/webhooks/${endpoint.id}/deliveries`)).body.data as {
      status: string;
      event_type?: string;
      attempts: { attempt: number; attempted_at: string; status_code: number | null }[];
    }[];
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.status).toBe('succeeded');
    expect(deliveries[0]!.attempts.map((a) => [a.attempt, a.attempted_at, a.status_code])).toEqual([
      [1, '2039-06-01T00:00:00.000Z', 500],
      [2, '2039-06-01T00:00:05.000Z', 500],
      [3, '2039-06-01T00:01:05.000Z', 200],
    ]);
    // An update by the API: at the clock's time, and delivered at once.
    const updated = await call('PATCH', `/v1/customers/${customer.id}`, { name: 'Ada' });
    expect(updated.status).toBe(200);
    expect(updated.body.updated_at).toBe('2039-06-01T00:10:00.000Z');
    expect((await call('GET', `/v1/customers/${customer.id}`)).body.updated_at).toBe('2039-06-01T00:10:00.000Z');
    await receiver.waitFor(4, (r) => r.path === '/api-clocked');
    const events = (await call('GET', '/v1/events?limit=20')).body.data as {
      type: string;
      created_at: string;
      data: { object: { id: string } };
    }[];
    expect(events.filter((e) => e.data.object.id === customer.id).map((e) => [e.type, e.created_at])).toEqual([
      ['customer.updated', '2039-06-01T00:10:00.000Z'],
      ['customer.created', '2039-06-01T00:00:00.000Z'],
    ]);

    // The hosted billing-details page (a failed-payment email's link) records customer.updated on the clock too.
    const links = createCustomerLinks({ publicUrl: engine.config.publicUrl, secret: engine.config.auth.secret });
    const page = new URL(
      await links.billingDetailsUrl({
        customerId: customer.id,
        accountId: (await call('GET', '/v1/account')).body.id,
        livemode: false,
      }),
    ).pathname;
    const saved = await engine.app.request(page, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'payment_method=pm_card_mastercard',
    });
    expect(saved.status).toBe(200);
    const afterPage = (await call('GET', `/v1/customers/${customer.id}`)).body;
    expect(afterPage).toMatchObject({ payment_method: 'pm_card_mastercard', updated_at: '2039-06-01T00:10:00.000Z' });
    const pageEvents = (
      (await call('GET', '/v1/events?type=customer.updated&limit=20')).body.data as {
        created_at: string;
        data: { object: { id: string } };
      }[]
    ).filter((e) => e.data.object.id === customer.id);
    expect(pageEvents.map((e) => e.created_at)).toEqual(['2039-06-01T00:10:00.000Z', '2039-06-01T00:10:00.000Z']);

    // A refund (by the API) of a payment on the clock: at the clock's time, listed with the clock's transactions.
    const { accountId } = await (async () => ({ accountId: (await call('GET', '/v1/account')).body.id as string }))();
    const payer = await make('/v1/customers', { email: 'refunded@example.com', test_clock: clock.id });
    const payment = await make('/v1/transactions', {
      account_id: accountId,
      amount: 1000,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_card_visa',
      customer: payer.id,
    });
    const refund = await make('/v1/transactions', {
      account_id: accountId,
      amount: 300,
      currency: 'USD',
      type: 'refund',
      source_transaction: payment.id,
    });
    expect(refund.created_at).toBe('2039-06-01T00:10:00.000Z');
    expect(
      ((await call('GET', `/v1/transactions?test_clock=${clock.id}`)).body.data as { id: string }[]).map((t) => t.id),
    ).toContain(refund.id);
    const refundEvents = (
      (await call('GET', '/v1/events?limit=50')).body.data as {
        type: string;
        created_at: string;
        data: { object: { id: string } };
      }[]
    ).filter((e) => e.data.object.id === refund.id);
    expect(refundEvents.length).toBeGreaterThan(0);
    expect(refundEvents.every((e) => e.created_at === '2039-06-01T00:10:00.000Z')).toBe(true);
  }, 40_000);

  it("an invoice of a customer on a clock marked uncollectible by the API takes the clock's time", async () => {
    const { call, make } = await tenant('Invoice on a clock');
    const clock = await make('/v1/test_clocks', { frozen_time: '2040-01-01T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'declined-on-clock@example.com',
      payment_method: 'pm_card_chargeDeclined',
      test_clock: clock.id,
    });
    const plan = await make('/v1/plans', { name: 'Declined', amount: 900, currency: 'USD', interval: 'month' });
    const created = await call('POST', '/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect([200, 201, 402], JSON.stringify(created.body)).toContain(created.status);
    const invoices = (await call('GET', `/v1/invoices?test_clock=${clock.id}`)).body.data as {
      id: string;
      status: string;
    }[];
    const open = invoices.find((i) => i.status === 'open');
    expect(open, JSON.stringify(invoices)).toBeDefined();
    const marked = await call('POST', `/v1/invoices/${open!.id}/mark_uncollectible`);
    expect(marked.status, JSON.stringify(marked.body)).toBe(200);
    expect(marked.body).toMatchObject({ status: 'uncollectible', marked_uncollectible_at: '2040-01-01T00:00:00.000Z' });
    const events = (
      (await call('GET', '/v1/events?limit=50')).body.data as {
        type: string;
        created_at: string;
        data: { object: { id: string } };
      }[]
    ).filter((e) => e.data.object.id === open!.id && e.type === 'invoice.marked_uncollectible');
    expect(events.map((e) => e.created_at)).toEqual(['2040-01-01T00:00:00.000Z']);
  }, 30_000);
});
