import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, LedgerEntry } from '../db/entities/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants, expectOnePaymentPerPaidInvoice } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const day = 86_400_000;

/**
 * Subscription charges as payment transactions and the pending → available
 * balance, end to end in skipped time: the subscription workflow charges, the
 * subscription workflow makes the money available two days later (its own timer).
 */
describe('subscription payments on the balance, in skipped time', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const em = () => engine.db.orm.em.fork();
  const call = (tenant: Tenant, method: string, path: string, body?: unknown) =>
    engine.call(method, path, body, tenant.headers);
  async function skipTo(instant: number) {
    const ahead = instant - (await engine.env.currentTimeMs());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  const balance = async (tenant: Tenant) => {
    const body = (await call(tenant, 'GET', '/v1/balance')).body;
    expect(body).toMatchObject({ object: 'balance', livemode: true });
    const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
    return { available: of(body.available), pending: of(body.pending) };
  };
  async function subscribe(tenant: Tenant, paymentMethod: string, trialDays: number) {
    const customer = await call(tenant, 'POST', '/v1/customers', {
      email: `c-${trialDays}@example.com`,
      name: 'Ada',
      payment_method: paymentMethod,
    });
    const plan = await call(tenant, 'POST', '/v1/plans', {
      name: 'Team',
      amount: 4900,
      currency: 'USD',
      interval: 'month',
    });
    const sub = await call(tenant, 'POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      plan: plan.body.id,
      trial_period_days: trialDays,
    });
    expect(sub.status).toBe(201);
    return { sub: sub.body, customerId: customer.body.id as string };
  }
  const eventsOf = async (tenant: Tenant, type: string) =>
    (await call(tenant, 'GET', `/v1/events?type=${type}`)).body.data as {
      transaction_id: string | null;
      data: { object: { id: string } };
    }[];

  it('a trial converts: one succeeded payment linked to its invoice, pending, then available two days later; refunds of it', async () => {
    const tenant = await engine.signUp();
    const { sub, customerId } = await subscribe(tenant, 'pm_card_visa', 1);
    expect(sub.status).toBe('trialing');
    await skipTo(Date.parse(sub.trial_end) + minute);
    await eventually(
      () => engine.subscription(sub.id),
      (s) => s?.status === 'active',
    );
    const [invoice] = await engine.invoices(sub.id);
    expect(invoice).toMatchObject({ status: 'paid' });

    const payments = (await call(tenant, 'GET', '/v1/transactions?type=payment')).body.data;
    expect(payments).toHaveLength(1);
    const payment = payments[0];
    expect(payment).toMatchObject({
      status: 'succeeded',
      amount: 4900,
      currency: 'USD',
      invoice: invoice!.id,
      subscription: sub.id,
      customer: customerId,
      processor_charge_id: expect.stringMatching(/^sbch_/),
      amount_refunded: 0,
      refunded: false,
    });
    expect((await call(tenant, 'GET', `/v1/invoices/${invoice!.id}`)).body).toMatchObject({
      transaction: payment.id,
      amount_paid: 4900,
      amount_refunded: 0,
    });
    // The charge's events name the transaction.
    for (const type of ['invoice.paid', 'payment.succeeded', 'transaction.created', 'transaction.succeeded']) {
      const events = await eventsOf(tenant, type);
      expect(
        events.map((e) => e.transaction_id),
        type,
      ).toEqual([payment.id]);
    }
    // payment.succeeded of a subscription charge stays one event, with the invoice.
    expect((await eventsOf(tenant, 'payment.succeeded'))[0]!.data.object.id).toBe(invoice!.id);

    expect(await balance(tenant)).toEqual({ available: 0, pending: 4900 });
    const [btxn] = (await call(tenant, 'GET', `/v1/balance_transactions?source=${payment.id}`)).body.data;
    expect(btxn).toMatchObject({ type: 'payment', status: 'pending', amount: 4900, fee: 0, net: 4900 });
    expect(Date.parse(btxn.available_on) - Date.parse(btxn.created_at)).toBe(2 * day);

    // A refund before it is available draws on its own pending money.
    const partial = await call(tenant, 'POST', '/v1/transactions', {
      account_id: tenant.accountId,
      amount: 900,
      currency: 'USD',
      type: 'refund',
      source_transaction: payment.id,
    });
    expect(partial.body).toMatchObject({ status: 'succeeded', source_transaction: payment.id, invoice: invoice!.id });
    expect(await balance(tenant)).toEqual({ available: 0, pending: 4000 });

    // A day later still pending; after two days, available (the workflow's durable timer, no poller).
    await engine.env.sleep(day);
    expect(await balance(tenant)).toEqual({ available: 0, pending: 4000 });
    await engine.env.sleep(day + minute);
    // (Polled, not awaited through the workflow's result: awaiting a result lets the test server skip on to the renewal.)
    expect(
      await eventually(
        () => balance(tenant),
        (b) => b.available === 4000,
      ),
    ).toEqual({ available: 4000, pending: 0 });
    // The subscription's own timer made it available (funds-in-subscription): no workflow was started for the payment.
    await expect(engine.env.client.workflow.getHandle(btxn.id).describe()).rejects.toThrow(/not found/i);
    expect(await em().count(BalanceTransaction, { id: btxn.id, workflowConfirmedAt: { $ne: null } })).toBe(1);
    expect((await call(tenant, 'GET', `/v1/balance_transactions/${btxn.id}`)).body.status).toBe('available');

    const over = await call(tenant, 'POST', '/v1/transactions', {
      account_id: tenant.accountId,
      amount: 4001,
      currency: 'USD',
      type: 'refund',
      source_transaction: payment.id,
    });
    expect(over.status).toBe(400);
    expect(over.body.message).toContain(': 4000 ');
    const full = await call(tenant, 'POST', '/v1/transactions', {
      account_id: tenant.accountId,
      amount: 4000,
      currency: 'USD',
      type: 'refund',
      source_transaction: payment.id,
    });
    expect(full.body.status).toBe('succeeded');
    expect((await call(tenant, 'GET', `/v1/transactions/${payment.id}`)).body).toMatchObject({
      amount_refunded: 4900,
      refunded: true,
    });
    expect((await call(tenant, 'GET', `/v1/invoices/${invoice!.id}`)).body).toMatchObject({
      transaction: payment.id,
      amount_refunded: 4900,
    });
    expect(await balance(tenant)).toEqual({ available: 0, pending: 0 });

    expect(await expectOnePaymentPerPaidInvoice(em(), { subscriptionId: sub.id })).toBe(1);
    await expectLedgerInvariants(em(), tenant.accountId);
  });

  it('a declined renewal is a failed payment transaction with its decline reason and no ledger entries', async () => {
    const tenant = await engine.signUp();
    const { sub, customerId } = await subscribe(tenant, 'pm_card_visa', 0);
    expect(sub.status).toBe('active');
    expect(await balance(tenant)).toEqual({ available: 0, pending: 4900 });
    expect(
      (await call(tenant, 'PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_chargeDeclined' })).status,
    ).toBe(200);
    await skipTo(Date.parse(sub.current_period_end) + minute);
    await eventually(
      () => engine.subscription(sub.id),
      (s) => s?.status === 'past_due',
    );
    const invoices = await engine.invoices(sub.id);
    const renewal = invoices.find((i) => i.status === 'open')!;

    const failed = (await call(tenant, 'GET', '/v1/transactions?status=failed')).body.data;
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      type: 'payment',
      amount: 4900,
      failure_code: 'card_declined',
      failure_message: 'Your card was declined.',
      invoice: renewal.id,
      subscription: sub.id,
      customer: customerId,
    });
    expect(await em().count(LedgerEntry, { transactionId: failed[0].id })).toBe(0);
    for (const type of ['invoice.payment_failed', 'payment.failed', 'transaction.failed']) {
      expect(
        (await eventsOf(tenant, type)).map((e) => e.transaction_id),
        type,
      ).toEqual([failed[0].id]);
    }
    expect((await call(tenant, 'GET', `/v1/invoices/${renewal.id}`)).body.transaction).toBeNull();
    // The first payment became available meanwhile (two days after it); the decline moved nothing.
    expect(await balance(tenant)).toEqual({ available: 4900, pending: 0 });
    expect(await expectOnePaymentPerPaidInvoice(em(), { subscriptionId: sub.id })).toBe(1);
    await expectLedgerInvariants(em(), tenant.accountId);
  });
  it('a subscription canceled while its payment is pending still makes the money available on time, then its workflow ends', async () => {
    const tenant = await engine.signUp();
    const { sub } = await subscribe(tenant, 'pm_card_visa', 0);
    expect(await balance(tenant)).toEqual({ available: 0, pending: 4900 });
    expect((await call(tenant, 'POST', `/v1/subscriptions/${sub.id}/cancel`, {})).body.status).toBe('canceled');
    const handle = engine.env.client.workflow.getHandle(sub.id);
    // Canceled, and still running: it holds the money's timer.
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await engine.env.sleep(day);
    expect(await balance(tenant)).toEqual({ available: 0, pending: 4900 });
    await engine.env.sleep(day + minute);
    expect(
      await eventually(
        () => balance(tenant),
        (b) => b.available === 4900,
      ),
    ).toEqual({ available: 4900, pending: 0 });
    expect(
      (
        await eventually(
          () => handle.describe(),
          (d) => d.status.name === 'COMPLETED',
        )
      ).status.name,
    ).toBe('COMPLETED');
    await expectLedgerInvariants(em(), tenant.accountId);
  });
});
