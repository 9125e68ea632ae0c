import { spawnSync } from 'node:child_process';

import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ConfigError, loadConfig, type ProcessorsConfig } from '../config.ts';
import { Event, LedgerEntry, ProcessorEvent, SandboxProcessorRefund, Transaction } from '../db/entities/index.ts';
import { type RunningStripeMock, startStripeMock } from '../dev/stripe-mock.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { emailSubject } from '../services/email/send-once.ts';
import { paymentChargeRequest } from '../services/money/payments.ts';
import { recordPaymentAttempt } from '../services/money/record-payment-attempt.ts';
import { raiseSandboxDispute } from '../services/money/sandbox-disputes.ts';
import { createProcessors, sandboxOnlyConfig } from '../services/processors/index.ts';
import { IdempotencyKeyReuseError, SandboxProcessor } from '../services/processors/sandbox.ts';
import { ProcessorSignatureError } from '../services/processors/types.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const production = {
  NODE_ENV: 'production',
  AUTH_SECRET: 'x'.repeat(32),
  ADMIN_EMAIL: 'root@example.com',
  ADMIN_PASSWORD: 'Root!2345',
};
const stripeLive = {
  LIVE_PROCESSOR: 'stripe',
  STRIPE_SECRET_KEY_LIVE: 'sk_live_x',
  STRIPE_WEBHOOK_SECRET_LIVE: 'whsec_live_x',
};
const noEm = () => {
  throw new Error('no database in this test');
};

describe('processor configuration', () => {
  it('development runs both modes on the sandbox by default', () => {
    expect(loadConfig({}).processors).toMatchObject({ live: 'sandbox', test: 'sandbox', allowSandboxLive: false });
    const processors = createProcessors(loadConfig({}).processors, noEm);
    expect([processors.forMode(true).name, processors.forMode(false).name]).toEqual(['sandbox', 'sandbox']);
  });

  it('production refuses a live mode on the sandbox unless ALLOW_SANDBOX_LIVE=true', () => {
    expect(() => loadConfig(production)).toThrow(ConfigError);
    expect(() => loadConfig(production)).toThrow(/Live mode would charge through the sandbox processor/);
    expect(() => loadConfig({ ...production, ALLOW_SANDBOX_LIVE: 'yes' })).toThrow(ConfigError);
    expect(loadConfig({ ...production, ALLOW_SANDBOX_LIVE: 'true' }).processors).toMatchObject({
      live: 'sandbox',
      allowSandboxLive: true,
    });
    expect(loadConfig({ ...production, ...stripeLive }).processors).toMatchObject({
      live: 'stripe',
      test: 'sandbox',
      stripe: { live: { secretKey: 'sk_live_x', webhookSecret: 'whsec_live_x' }, test: null },
    });
  });

  it('a Stripe mode needs both its keys; an unknown processor is refused', () => {
    expect(() => loadConfig({ LIVE_PROCESSOR: 'stripe', STRIPE_SECRET_KEY_LIVE: 'sk_live_x' })).toThrow(
      /STRIPE_WEBHOOK_SECRET_LIVE/,
    );
    expect(() => loadConfig({ SANDBOX_PROCESSOR: 'stripe' })).toThrow(
      /STRIPE_SECRET_KEY_TEST and STRIPE_WEBHOOK_SECRET_TEST/,
    );
    expect(() => loadConfig({ LIVE_PROCESSOR: 'adyen' })).toThrow(/LIVE_PROCESSOR must be sandbox or stripe/);
    expect(
      loadConfig({
        SANDBOX_PROCESSOR: 'stripe',
        STRIPE_SECRET_KEY_TEST: 'sk_test_x',
        STRIPE_WEBHOOK_SECRET_TEST: 'whsec_t',
        STRIPE_API_BASE: 'http://127.0.0.1:12111',
      }).processors.stripe,
    ).toEqual({
      live: null,
      test: { secretKey: 'sk_test_x', webhookSecret: 'whsec_t' },
      apiBase: 'http://127.0.0.1:12111',
    });
  });

  it.each(['api/server.ts', 'worker.ts'])(
    '%s exits 1 with the message when production would run live on the sandbox',
    (entry) => {
      const result = spawnSync(process.execPath, [entry], {
        env: {
          ...process.env,
          ...production,
          DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
          TEMPORAL_ADDRESS: '127.0.0.1:1',
          LIVE_PROCESSOR: '',
          ALLOW_SANDBOX_LIVE: '',
        },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('Configuration: Live mode would charge through the sandbox processor');
      expect(result.stderr).toContain('ALLOW_SANDBOX_LIVE=true');
      expect(result.stderr).not.toMatch(/\n\s+at /);
    },
  );

  it("forMode picks each mode's processor; a mode is a test when it is test mode or live on the sandbox", () => {
    const stripeLiveConfig = loadConfig({ ...production, ...stripeLive }).processors;
    const split = createProcessors(stripeLiveConfig, noEm);
    expect(split.forMode(true).name).toBe('stripe');
    expect(split.forMode(false).name).toBe('sandbox');
    expect(split.forMode(true)).toBe(split.forMode(true)); // built once
    expect([split.isTestMode(true), split.isTestMode(false)]).toEqual([false, true]);
    const sandboxOnly = createProcessors(sandboxOnlyConfig, noEm);
    expect([sandboxOnly.isTestMode(true), sandboxOnly.isTestMode(false)]).toEqual([true, true]);
    const injected = new SandboxProcessor(noEm);
    const overridden = createProcessors(stripeLiveConfig, noEm, { both: injected });
    expect([overridden.forMode(true), overridden.forMode(false)]).toEqual([injected, injected]);
    // [TEST] on email subjects of a mode that moves no real money, nothing on a Stripe live mode.
    expect(emailSubject({ subject: 'Receipt', livemode: true }, split)).toBe('Receipt');
    expect(emailSubject({ subject: 'Receipt', livemode: false }, split)).toBe('[TEST] Receipt');
    expect(emailSubject({ subject: 'Receipt', livemode: true }, sandboxOnly)).toBe('[TEST] Receipt');
    expect(emailSubject({ subject: 'Disabled' }, sandboxOnly)).toBe('Disabled');
  });

  it("a direct payment's charge carries its transaction id in the metadata (webhooks find it by that)", () => {
    expect(
      paymentChargeRequest({
        id: 'txn_1',
        amount: 100,
        currency: 'USD',
        paymentMethod: 'pm_card_visa',
        reference: null,
      }).metadata,
    ).toEqual({ transaction_id: 'txn_1' });
  });
});

describe('processors in the engine (test mode on Stripe through stripe-mock, live mode on the sandbox)', () => {
  const webhookSecret = 'whsec_engine_test';
  let mock: RunningStripeMock;
  let engine: TestEngine;
  const signer = new Stripe('sk_test_signer');
  const test = { 'x-sandbox-mode': 'true' };

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
    await mock?.stop();
  });
  const em = () => engine.db.orm.em.fork();

  describe('the sandbox processor', () => {
    it('refunds a charge up to its amount, once per key, and refuses more with amount_too_large', async () => {
      const sandbox = new SandboxProcessor(em);
      const charge = await sandbox.charge({
        idempotencyKey: 'refund-test:charge',
        amount: 1000,
        currency: 'USD',
        paymentMethod: 'pm_card_visa',
        description: 'x',
      });
      expect(charge.status).toBe('succeeded');
      const refund = (key: string, amount: number) =>
        sandbox.refund({ idempotencyKey: key, processorChargeId: charge.processorChargeId, amount, currency: 'USD' });
      const first = await refund('refund-test:1', 600);
      expect(first).toEqual({ status: 'succeeded', processorRefundId: expect.stringMatching(/^sbre_/) });
      // The same key again answers the first outcome and moves nothing more.
      expect(await refund('refund-test:1', 600)).toEqual(first);
      expect(await em().count(SandboxProcessorRefund, { chargeId: charge.processorChargeId })).toBe(1);
      const tooLarge = await refund('refund-test:2', 401);
      expect(tooLarge).toEqual({
        status: 'failed',
        processorRefundId: expect.any(String),
        failureCode: 'amount_too_large',
        failureMessage: expect.stringContaining('400'),
      });
      expect(await refund('refund-test:3', 400)).toMatchObject({ status: 'succeeded' });
      expect(await refund('refund-test:4', 1)).toMatchObject({ status: 'failed', failureCode: 'amount_too_large' });
      await expect(refund('refund-test:3', 300)).rejects.toThrow(IdempotencyKeyReuseError);
      expect(
        await sandbox.refund({
          idempotencyKey: 'refund-test:5',
          processorChargeId: 'sbch_nope',
          amount: 1,
          currency: 'USD',
        }),
      ).toMatchObject({ status: 'failed', failureCode: 'charge_not_refundable' });
    });

    it('has no customers, no checkout and no webhooks', async () => {
      const sandbox = new SandboxProcessor(em);
      expect(sandbox.name).toBe('sandbox');
      expect(
        await sandbox.upsertCustomer({ customerId: 'cus_1', email: 'a@example.com', idempotencyKey: 'k' }),
      ).toBeNull();
      expect(
        await sandbox.createCheckout({
          idempotencyKey: 'k',
          amount: 1,
          currency: 'USD',
          description: 'd',
          successUrl: 'http://x',
          cancelUrl: 'http://x',
          metadata: {},
          mode: 'payment',
        }),
      ).toBeNull();
      expect(() => sandbox.parseWebhook('{}', {})).toThrow(ProcessorSignatureError);
    });

    it("the dispute test card: the payment succeeds, then the sandbox's dispute.created records payment.disputed once", async () => {
      // Live mode runs on the sandbox in this engine.
      const pay = (paymentMethod: string) =>
        engine.call(
          'POST',
          '/v1/transactions',
          {
            account_id: engine.tenant.accountId,
            currency: 'USD',
            amount: 2500,
            type: 'payment',
            payment_method: paymentMethod,
          },
          engine.tenant.headers,
        );
      const disputed = await pay('pm_card_createDispute');
      expect(disputed.status).toBe(201);
      expect(disputed.body).toMatchObject({ status: 'succeeded', livemode: true });
      const payment = await em().findOneOrFail(Transaction, { id: disputed.body.id });
      const events = () => em().find(Event, { type: 'payment.disputed', transactionId: payment.id });
      expect(await events()).toHaveLength(1);
      expect((await events())[0]).toMatchObject({
        accountId: engine.tenant.accountId,
        livemode: true,
        data: { object: { id: payment.id, status: 'succeeded', amount: 2500 } },
      });
      expect(
        await em().find(ProcessorEvent, { processor: 'sandbox', processorChargeId: payment.processorChargeId }),
      ).toMatchObject([{ type: 'dispute.created', transactionId: payment.id, processedAt: expect.any(Date) }]);
      // Asked again (a retried request, the reconciler): the same event id, once.
      expect(await raiseSandboxDispute(em(), payment)).toMatchObject({ duplicate: true });
      expect(await events()).toHaveLength(1);
      // Any other card is not disputed.
      const plain = await pay('pm_card_visa');
      expect(plain.body).toMatchObject({ status: 'succeeded' });
      expect(await raiseSandboxDispute(em(), await em().findOneOrFail(Transaction, { id: plain.body.id }))).toBeNull();
      expect(await em().count(Event, { type: 'payment.disputed', transactionId: plain.body.id })).toBe(0);
    });
  });

  describe('POST /webhooks/stripe', () => {
    const eventBody = (id: string, type: string, object: object, livemode = false) =>
      JSON.stringify({
        id,
        object: 'event',
        api_version: '2026-10-28.endive',
        created: 1_700_000_000,
        livemode,
        pending_webhooks: 1,
        request: null,
        type,
        data: { object },
      });
    const deliver = async (body: string, secret: string | null = webhookSecret) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (secret) headers['stripe-signature'] = signer.webhooks.generateTestHeaderString({ payload: body, secret });
      const response = await engine.app.request('/webhooks/stripe', { method: 'POST', headers, body });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    async function pendingTestPayment(amount: number) {
      const attempt = {
        accountId: engine.tenant.accountId,
        livemode: false,
        amount,
        currency: 'USD',
        reference: null,
        metadata: {},
        paymentMethod: 'pm_card_visa',
      };
      const { transaction } = await em().transactional((tx) =>
        recordPaymentAttempt(tx, attempt, { status: 'pending' }),
      );
      return transaction;
    }
    const intent = (id: string, transactionId: string, extra: object = {}) => ({
      id,
      object: 'payment_intent',
      amount: 2000,
      currency: 'usd',
      status: 'succeeded',
      metadata: { transaction_id: transactionId },
      ...extra,
    });

    it('settles a pending payment on payment_intent.succeeded, once however often Stripe delivers it', async () => {
      const payment = await pendingTestPayment(2000);
      const body = eventBody('evt_paid_1', 'payment_intent.succeeded', intent('pi_paid_1', payment.id));
      expect(await deliver(body)).toEqual({
        status: 200,
        body: { received: true, duplicate: false, action: 'settled' },
      });
      const settled = await em().findOneOrFail(Transaction, { id: payment.id });
      expect(settled.status).toBe('succeeded');
      const entries = await em().count(LedgerEntry, { transactionId: payment.id });
      expect(entries).toBeGreaterThan(0);
      // Stripe retries: the same event again changes nothing.
      expect(await deliver(body)).toEqual({
        status: 200,
        body: { received: true, duplicate: true, action: 'recorded' },
      });
      expect(await em().count(LedgerEntry, { transactionId: payment.id })).toBe(entries);
      expect(await em().count(ProcessorEvent, { processorEventId: 'evt_paid_1' })).toBe(1);
      expect(await em().findOneOrFail(ProcessorEvent, { processorEventId: 'evt_paid_1' })).toMatchObject({
        processor: 'stripe',
        type: 'payment_intent.succeeded',
        livemode: false,
        transactionId: payment.id,
        processedAt: expect.any(Date),
      });
    });

    it("fails a pending payment on payment_intent.payment_failed with Stripe's reason", async () => {
      const payment = await pendingTestPayment(2100);
      const lastError = {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'insufficient_funds',
        message: 'Your card has insufficient funds.',
      };
      const body = eventBody(
        'evt_fail_1',
        'payment_intent.payment_failed',
        intent('pi_fail_1', payment.id, { status: 'requires_payment_method', last_payment_error: lastError }),
      );
      expect((await deliver(body)).body).toMatchObject({ action: 'settled' });
      expect(await em().findOneOrFail(Transaction, { id: payment.id })).toMatchObject({
        status: 'failed',
        failureCode: 'insufficient_funds',
        failureMessage: 'Your card has insufficient funds.',
      });
      expect(await em().count(LedgerEntry, { transactionId: payment.id })).toBe(0);
    });

    it('refuses a bad signature, another secret, no header and a live event signed with the test secret, recording nothing', async () => {
      const payment = await pendingTestPayment(2200);
      const body = eventBody('evt_bad_1', 'payment_intent.succeeded', intent('pi_bad_1', payment.id));
      const before = await em().count(ProcessorEvent, {});
      for (const attempt of [
        await deliver(body, 'whsec_someone_else'),
        await deliver(body, null),
        await deliver(eventBody('evt_bad_2', 'payment_intent.succeeded', intent('pi_bad_1', payment.id), true)),
      ]) {
        expect(attempt).toEqual({ status: 400, body: { error: 'invalid_signature', message: expect.any(String) } });
      }
      // Signed, then changed: the signature no longer verifies.
      const signature = signer.webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret });
      const tampered = await engine.app.request('/webhooks/stripe', {
        method: 'POST',
        headers: { 'stripe-signature': signature },
        body: body.replace('2000', '9999'),
      });
      expect(tampered.status).toBe(400);
      expect(await em().count(ProcessorEvent, {})).toBe(before);
      expect((await em().findOneOrFail(Transaction, { id: payment.id })).status).toBe('pending');
    });

    it('records a dispute and raises payment.disputed on the transaction, once', async () => {
      const payment = await pendingTestPayment(2300);
      await deliver(eventBody('evt_dp_paid', 'payment_intent.succeeded', intent('pi_dp_1', payment.id)));
      const dispute = {
        id: 'dp_1',
        object: 'dispute',
        amount: 2300,
        currency: 'usd',
        reason: 'fraudulent',
        payment_intent: 'pi_dp_1',
        charge: 'ch_dp_1',
        status: 'needs_response',
      };
      const body = eventBody('evt_dp_1', 'charge.dispute.created', dispute);
      expect((await deliver(body)).body).toEqual({ received: true, duplicate: false, action: 'disputed' });
      expect((await deliver(body)).body).toMatchObject({ duplicate: true });
      const events = await em().find(Event, { type: 'payment.disputed', transactionId: payment.id });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        accountId: engine.tenant.accountId,
        livemode: false,
        data: { object: { id: payment.id, status: 'succeeded' } },
      });
    });

    it("records a refund made in Stripe's dashboard on the ledger as a refund of the payment, once", async () => {
      const refund = {
        id: 're_dash_1',
        object: 'refund',
        amount: 500,
        currency: 'usd',
        payment_intent: 'pi_paid_1',
        charge: 'ch_1',
        status: 'succeeded',
        metadata: {},
      };
      const body = eventBody('evt_re_1', 'refund.created', refund);
      expect((await deliver(body)).body).toMatchObject({ action: 'refunded', duplicate: false });
      expect((await deliver(body)).body).toMatchObject({ duplicate: true });
      // Stripe may send the same refund under another event id: still one.
      expect((await deliver(eventBody('evt_re_1b', 'refund.created', refund))).body).toMatchObject({
        action: 'recorded',
      });
      const rows = await em().find(ProcessorEvent, { processorEventId: 'evt_re_1' });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        type: 'refund.created',
        processorChargeId: 'pi_paid_1',
        payload: { data: { object: { id: 're_dash_1' } } },
      });
      const payment = await em().findOneOrFail(Transaction, { processorChargeId: 'pi_paid_1' });
      expect(payment.amountRefunded).toBe(500);
      const refunds = await em().find(Transaction, { type: 'refund', sourceTransactionId: payment.id });
      expect(refunds).toHaveLength(1);
      expect(refunds[0]).toMatchObject({
        status: 'succeeded',
        amount: 500,
        currency: 'USD',
        metadata: { processor_refund_id: 're_dash_1' },
      });
      expect(await em().count(LedgerEntry, { transactionId: refunds[0]!.id })).toBeGreaterThan(0);
      expect(await em().count(Event, { type: 'payment.refunded', transactionId: payment.id })).toBe(1);
      // The webhook of a refund the engine made itself names it: nothing more is recorded.
      const own = { ...refund, id: 're_own_1', metadata: { refund_transaction_id: refunds[0]!.id } };
      expect((await deliver(eventBody('evt_re_own', 'refund.created', own))).body).toMatchObject({
        action: 'recorded',
      });
      expect(await em().count(Transaction, { type: 'refund', sourceTransactionId: payment.id })).toBe(1);
      // More than is left to refund (the engine's books disagree): kept for a person, nothing recorded.
      const tooMuch = { ...refund, id: 're_dash_2', amount: 999_999 };
      expect((await deliver(eventBody('evt_re_2', 'refund.created', tooMuch))).body).toMatchObject({
        action: 'recorded',
      });
      expect(await em().findOneOrFail(ProcessorEvent, { processorEventId: 'evt_re_2' })).toMatchObject({
        processedAt: null,
      });
      expect(await em().count(Transaction, { type: 'refund', sourceTransactionId: payment.id })).toBe(1);
    });

    it('answers 200 and ignores events the engine does not act on', async () => {
      expect(
        (await deliver(eventBody('evt_cus_1', 'customer.created', { id: 'cus_1', object: 'customer' }))).body,
      ).toEqual({ received: true, duplicate: false, action: 'ignored' });
    });
  });

  describe('pages and emails', () => {
    const pathOf = (url: string) => new URL(url).pathname;
    const banner = 'TEST MODE — no real money moves';
    const createRequest = (email: string, headers: Record<string, string> = {}) =>
      engine.call(
        'POST',
        '/v1/payments',
        {
          account_id: engine.tenant.accountId,
          amount: 1500,
          currency: 'USD',
          customer_email: email,
          reference: 'INV-9',
        },
        headers,
      );
    const mailTo = (to: string) =>
      eventually(
        async () => engine.mail.messages.filter((m) => m.envelopeTo.includes(to)),
        (list) => list.length >= 1,
      );

    it('the pay page of a Stripe-backed mode redirects (303) to its Checkout Session', async () => {
      const created = await createRequest('stripe-payer@example.com', test);
      expect(created.status).toBe(201);
      const response = await engine.app.request(pathOf(created.body.payment_url));
      expect(response.status).toBe(303);
      const location = response.headers.get('location')!;
      expect(location).toMatch(/^https:\/\/checkout\.stripe\.com\//);
      // A form post (a stale sandbox form) goes to the checkout as well; the way back after paying says it is being confirmed.
      const posted = await engine.app.request(pathOf(created.body.payment_url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'payment_method=pm_card_visa&attempt=aaaaaaaaaaaaaaaaaaaa',
      });
      expect(posted.status).toBe(303);
      const back = await engine.app.request(`${pathOf(created.body.payment_url)}?checkout=success`);
      expect(back.status).toBe(200);
      expect(await back.text()).toContain('being confirmed');
      const canceled = await engine.app.request(`${pathOf(created.body.payment_url)}?checkout=canceled`);
      expect(canceled.status).toBe(200);
      expect(await canceled.text()).toMatch(/Nothing was charged[\s\S]*<form method="post"/);
      // The request email of a test mode says so.
      expect((await mailTo('stripe-payer@example.com'))[0]!.parsed.subject).toMatch(/^\[TEST\] .* requests \$15\.00$/);
    });

    it('live mode on the sandbox: the pay page shows the sandbox form with the TEST MODE banner, and the email says [TEST]', async () => {
      const created = await createRequest('sandbox-live@example.com');
      expect(created.body.livemode).toBe(true);
      const response = await engine.app.request(pathOf(created.body.payment_url));
      expect(response.status).toBe(200);
      const page = await response.text();
      expect(page).toContain(banner);
      expect(page).toContain('name="payment_method"');
      expect((await mailTo('sandbox-live@example.com'))[0]!.parsed.subject).toMatch(/^\[TEST\] .* requests \$15\.00$/);
    });

    it('the billing-details page: a Stripe-backed mode goes to a setup Checkout Session, the sandbox one shows the banner', async () => {
      const links = createCustomerLinks({ publicUrl: engine.config.publicUrl, secret: engine.config.auth.secret });
      const testCustomer = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'billing-test@example.com', payment_method: 'pm_card_visa' },
        test,
      );
      const liveCustomer = await engine.call('POST', '/v1/customers', {
        email: 'billing-live@example.com',
        payment_method: 'pm_card_visa',
      });
      expect([testCustomer.status, liveCustomer.status]).toEqual([201, 201]);
      const open = async (customerId: string, livemode: boolean) =>
        engine.app.request(
          pathOf(await links.billingDetailsUrl({ customerId, accountId: engine.tenant.accountId, livemode })),
        );
      const redirected = await open(testCustomer.body.id, false);
      expect(redirected.status).toBe(303);
      expect(redirected.headers.get('location')).toMatch(/^https:\/\/checkout\.stripe\.com\//);
      const sandboxPage = await open(liveCustomer.body.id, true);
      expect(sandboxPage.status).toBe(200);
      expect(await sandboxPage.text()).toContain(banner);
    });

    it('a page of a mode that moves real money has no banner', async () => {
      const { Hono } = await import('hono');
      const { page } = await import('../api/pages/layout.ts');
      const { html } = await import('hono/html');
      const app = new Hono()
        .get('/real', (c) => page(c, 200, 'Real', html`<p>x</p>`))
        .get('/test', (c) => page(c, 200, 'Test', html`<p>x</p>`, null, true));
      expect(await (await app.request('/real')).text()).not.toContain(banner);
      expect(await (await app.request('/test')).text()).toContain(banner);
    });
  });
});
