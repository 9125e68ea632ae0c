import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ProcessorsConfig } from '../config.ts';
import { Customer, Event, LedgerEntry, PaymentRequest, ProcessorEvent, Transaction } from '../db/entities/index.ts';
import { type RunningStripeMock, startStripeMock } from '../dev/stripe-mock.ts';
import { newId } from '../domain/ids.ts';
import { chargeCustomer } from '../services/money/charges.ts';
import { createProcessors } from '../services/processors/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * Stripe Checkout paying a payment request end to end: test mode on Stripe (stripe-mock
 * behind the SDK), the request's real workflow on the time-skipping Temporal server, and
 * `checkout.session.completed` delivered to POST /webhooks/stripe signed with the SDK's
 * test-header helper, as Stripe would (and again, as Stripe does when it retries).
 */
describe('Stripe Checkout pays a payment request (checkout.session.completed)', () => {
  const webhookSecret = 'whsec_checkout_test';
  let mock: RunningStripeMock;
  let stopped = false;
  let engine: TestEngine;
  const signer = new Stripe('sk_test_signer');
  const test = { 'x-sandbox-mode': 'true' };
  const em = () => engine.db.orm.em.fork();

  beforeAll(async () => {
    mock = await startStripeMock();
    const processorsConfig: ProcessorsConfig = {
      live: 'sandbox',
      test: 'stripe',
      stripe: { live: null, test: { secretKey: 'sk_test_123', webhookSecret }, apiBase: mock.url },
      allowSandboxLive: false,
    };
    engine = await startTestEngine({ processorsConfig });
  });
  afterAll(async () => {
    await engine?.close();
    if (!stopped) await mock?.stop();
  });

  const eventBody = (id: string, object: object) =>
    JSON.stringify({
      id,
      object: 'event',
      api_version: '2026-10-28.endive',
      created: 1_700_000_000,
      livemode: false,
      pending_webhooks: 1,
      request: null,
      type: 'checkout.session.completed',
      data: { object },
    });
  const deliver = async (body: string) => {
    const headers = {
      'content-type': 'application/json',
      'stripe-signature': signer.webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret }),
    };
    const response = await engine.app.request('/webhooks/stripe', { method: 'POST', headers, body });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const session = (id: string, paymentRequestId: string, extra: object = {}) => ({
    id,
    object: 'checkout.session',
    mode: 'payment',
    status: 'complete',
    payment_status: 'paid',
    amount_total: 1500,
    currency: 'usd',
    customer: 'cus_stripe_1',
    payment_intent: `pi_${id}`,
    setup_intent: null,
    metadata: { payment_request_id: paymentRequestId },
    ...extra,
  });
  const createRequest = async (email: string) => {
    const created = await engine.call(
      'POST',
      '/v1/payments',
      {
        account_id: engine.tenant.accountId,
        amount: 1500,
        currency: 'USD',
        customer_email: email,
        reference: 'INV-CS',
      },
      test,
    );
    expect(created.status).toBe(201);
    return created.body as { id: string; payment_url: string };
  };

  it('marks the request paid with one payment transaction on the ledger, however often Stripe delivers the event', async () => {
    const request = await createRequest('checkout-payer@example.com');
    // The pay page sends the customer to the Checkout Session (its metadata names the request).
    const page = await engine.app.request(new URL(request.payment_url).pathname);
    expect(page.status).toBe(303);

    const body = eventBody('evt_cs_paid_1', session('cs_paid_1', request.id));
    expect(await deliver(body)).toEqual({ status: 200, body: { received: true, duplicate: false, action: 'paid' } });
    const paid = await engine.call('GET', `/v1/payments/${request.id}`, undefined, test);
    expect(paid.body).toMatchObject({ status: 'succeeded', transaction_id: expect.stringMatching(/^txn_/) });
    const transaction = await em().findOneOrFail(Transaction, { id: paid.body.transaction_id });
    expect(transaction).toMatchObject({
      type: 'payment',
      status: 'succeeded',
      amount: 1500,
      currency: 'USD',
      livemode: false,
      paymentRequestId: request.id,
      processorChargeId: 'pi_cs_paid_1',
    });
    const entries = await em().count(LedgerEntry, { transactionId: transaction.id });
    expect(entries).toBeGreaterThan(0);

    // Stripe redelivers the same event, and (at-least-once) could send the completion under another event id.
    expect(await deliver(body)).toEqual({ status: 200, body: { received: true, duplicate: true, action: 'recorded' } });
    expect((await deliver(eventBody('evt_cs_paid_1b', session('cs_paid_1', request.id)))).body).toMatchObject({
      duplicate: false,
    });
    expect(await em().count(Transaction, { paymentRequestId: request.id })).toBe(1);
    expect(await em().count(LedgerEntry, { transactionId: transaction.id })).toBe(entries);
    expect(await em().findOneOrFail(ProcessorEvent, { processorEventId: 'evt_cs_paid_1' })).toMatchObject({
      transactionId: transaction.id,
      processedAt: expect.any(Date),
    });

    // The balance holds the money once, pending; the receipt goes out; the events carry the transaction.
    const balance = await engine.call('GET', '/v1/balance', undefined, test);
    expect(balance.body.pending).toEqual([{ amount: 1500, currency: 'USD' }]);
    const receipts = await eventually(
      async () => engine.mail.messages.filter((m) => m.envelopeTo.includes('checkout-payer@example.com')),
      (list) => list.length >= 2,
    );
    expect(receipts.map((m) => m.parsed.subject)).toContainEqual(expect.stringMatching(/receipt|paid/i));
    const succeeded = await em().find(Event, { type: 'payment.succeeded', transactionId: transaction.id });
    expect(succeeded).toHaveLength(1);
  });

  it('two deliveries racing each other pay once', async () => {
    const request = await createRequest('checkout-race@example.com');
    const [a, b] = await Promise.all([
      deliver(eventBody('evt_cs_race_a', session('cs_race', request.id))),
      deliver(eventBody('evt_cs_race_b', session('cs_race', request.id))),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await em().count(Transaction, { paymentRequestId: request.id })).toBe(1);
    const row = await em().findOneOrFail(PaymentRequest, { id: request.id });
    expect(row.status).toBe('succeeded');
    expect(await em().count(Transaction, { id: row.transactionId })).toBe(1);
  });

  it('money for a request canceled while the customer was on the checkout still goes on the ledger, the request stays canceled', async () => {
    const request = await createRequest('checkout-late@example.com');
    expect((await engine.call('POST', `/v1/payments/${request.id}/cancel`, {}, test)).status).toBe(200);
    const result = await deliver(eventBody('evt_cs_late', session('cs_late', request.id)));
    expect(result).toEqual({ status: 200, body: { received: true, duplicate: false, action: 'recorded' } });
    const transactions = await em().find(Transaction, { paymentRequestId: request.id });
    expect(transactions).toHaveLength(1);
    expect(transactions[0]).toMatchObject({ status: 'succeeded', processorChargeId: 'pi_cs_late' });
    const row = await em().findOneOrFail(PaymentRequest, { id: request.id });
    expect(row).toMatchObject({ status: 'canceled', transactionId: null });
    // Again: still one.
    await deliver(eventBody('evt_cs_late_2', session('cs_late', request.id)));
    expect(await em().count(Transaction, { paymentRequestId: request.id })).toBe(1);
  });

  it('a checkout not paid yet, of another mode, or for another amount pays nothing', async () => {
    const request = await createRequest('checkout-unpaid@example.com');
    expect(
      (await deliver(eventBody('evt_cs_unpaid', session('cs_unpaid', request.id, { payment_status: 'unpaid' })))).body,
    ).toMatchObject({ action: 'recorded' });
    const wrongAmount = await deliver(eventBody('evt_cs_wrong', session('cs_wrong', request.id, { amount_total: 1 })));
    expect(wrongAmount.status).toBe(500);
    expect(await em().count(ProcessorEvent, { processorEventId: 'evt_cs_wrong' })).toBe(0);
    // A live request named by a test-mode event is not this event's.
    const live = await engine.call('POST', '/v1/payments', {
      account_id: engine.tenant.accountId,
      amount: 1500,
      currency: 'USD',
      customer_email: 'checkout-live@example.com',
    });
    expect((await deliver(eventBody('evt_cs_live', session('cs_live', live.body.id)))).body).toMatchObject({
      action: 'recorded',
    });
    expect(await em().count(Transaction, { paymentRequestId: { $in: [request.id, live.body.id] } })).toBe(0);
    expect((await engine.call('GET', `/v1/payments/${request.id}`, undefined, test)).body.status).toBe('pending');
  });

  it("a setup checkout of the billing-details page saves its card as the customer's payment method, once", async () => {
    const created = await engine.call(
      'POST',
      '/v1/customers',
      { email: 'setup-card@example.com', payment_method: 'pm_card_visa' },
      test,
    );
    const customerId: string = created.body.id;
    const setupSession = (id: string, setupIntent: unknown) => ({
      id,
      object: 'checkout.session',
      mode: 'setup',
      status: 'complete',
      payment_status: 'no_payment_required',
      amount_total: null,
      currency: null,
      customer: 'cus_stripe_1',
      payment_intent: null,
      setup_intent: setupIntent,
      metadata: { customer_id: customerId },
    });
    // The SetupIntent as Stripe expands it: its card becomes the customer's method, with customer.updated.
    const expandedIntent = {
      id: 'seti_saved',
      object: 'setup_intent',
      status: 'succeeded',
      payment_method: 'pm_1SetupCard',
    };
    const saved = await deliver(eventBody('evt_setup_1', setupSession('cs_setup_1', expandedIntent)));
    expect(saved).toEqual({ status: 200, body: { received: true, duplicate: false, action: 'payment_method_saved' } });
    expect((await engine.call('GET', `/v1/customers/${customerId}`, undefined, test)).body.payment_method).toBe(
      'pm_1SetupCard',
    );
    const updates = async () =>
      (await em().find(Event, { type: 'customer.updated', livemode: false })).filter(
        (e) => e.data.object.id === customerId,
      ).length;
    expect(await updates()).toBe(1);
    // The same card again (another event id): nothing changes, no second event.
    expect((await deliver(eventBody('evt_setup_1b', setupSession('cs_setup_1', expandedIntent)))).body).toMatchObject({
      action: 'recorded',
    });
    expect(await updates()).toBe(1);
    // Not expanded (as webhooks arrive): the engine reads the SetupIntent from Stripe. stripe-mock's
    // fixture has no payment method yet (requires_payment_method), so nothing is saved.
    const unexpanded = await deliver(eventBody('evt_setup_2', setupSession('cs_setup_2', 'seti_from_stripe')));
    expect(unexpanded.body).toMatchObject({ action: 'recorded' });
    expect((await engine.call('GET', `/v1/customers/${customerId}`, undefined, test)).body.payment_method).toBe(
      'pm_1SetupCard',
    );
  });

  describe('customers get their Stripe customer', () => {
    it('when created with a card in a Stripe mode (id stored), not on the sandbox', async () => {
      const created = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'stripe-cus@example.com', name: 'Ada', payment_method: 'pm_card_visa' },
        test,
      );
      expect(created.status).toBe(201);
      const row = await em().findOneOrFail(Customer, { id: created.body.id });
      expect(row.processorCustomerId).toMatch(/^cus_/);
      // Without a card there is nothing to hold yet; live mode runs on the sandbox, which has no customers.
      const bare = await engine.call('POST', '/v1/customers', { email: 'no-card@example.com' }, test);
      expect((await em().findOneOrFail(Customer, { id: bare.body.id })).processorCustomerId).toBeNull();
      const live = await engine.call('POST', '/v1/customers', {
        email: 'live-cus@example.com',
        payment_method: 'pm_card_visa',
      });
      expect((await em().findOneOrFail(Customer, { id: live.body.id })).processorCustomerId).toBeNull();
      // A card attached later makes it.
      const attached = await engine.call(
        'PATCH',
        `/v1/customers/${bare.body.id}`,
        { payment_method: 'pm_card_mastercard' },
        test,
      );
      expect(attached.status).toBe(200);
      expect((await em().findOneOrFail(Customer, { id: bare.body.id })).processorCustomerId).toMatch(/^cus_/);
    });

    it('when charged, for a customer from before (and the charge names it)', async () => {
      const id = newId('customer');
      await em().insert(Customer, {
        id,
        email: 'older@example.com',
        name: null,
        paymentMethod: 'pm_card_visa',
        processorCustomerId: null,
        accountId: engine.tenant.accountId,
        livemode: false,
        createdAt: new Date(),
        updatedAt: new Date(),
      } as never);
      const processors = createProcessors(engine.config.processors, em);
      const outcome = await chargeCustomer(
        {
          processors,
          links: { publicUrl: engine.config.publicUrl, secret: engine.config.auth.secret } as never,
        },
        em(),
        {
          idempotencyKey: `${id}:charge-test`,
          invoiceId: 'in_none',
          attempt: 1,
          accountId: engine.tenant.accountId,
          customerId: id,
          amount: 700,
          currency: 'USD',
          description: 'test charge',
          livemode: false,
        },
      );
      const stored = (await em().findOneOrFail(Customer, { id })).processorCustomerId;
      expect(stored).toMatch(/^cus_/);
      // stripe-mock's PaymentIntent is never succeeded: the charge is recorded as a failed attempt with its transaction.
      expect(outcome).toMatchObject({ status: 'failed', transactionId: expect.stringMatching(/^txn_/) });
      expect(await em().findOneOrFail(Transaction, { id: outcome.transactionId! })).toMatchObject({
        customerId: id,
        processorChargeId: expect.stringMatching(/^pi_/),
      });
    });

    it('a processor that refuses the customer answers processor_error and writes nothing', async () => {
      // Stripe unreachable (stripe-mock stopped; the last test of this file).
      await mock.stop();
      stopped = true;
      const before = await em().count(Customer, {});
      const refused = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'down@example.com', payment_method: 'pm_card_visa' },
        test,
      );
      expect(refused.status).toBe(502);
      expect(refused.body).toEqual({ error: 'processor_error', message: expect.stringContaining('stripe') });
      expect(await em().count(Customer, {})).toBe(before);
    });
  });
});
