import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { type RunningStripeMock, startStripeMock } from '../dev/stripe-mock.ts';
import { StripeProcessor } from '../services/processors/stripe.ts';
import { ProcessorSignatureError } from '../services/processors/types.ts';

/**
 * The Stripe adapter against stripe-mock, which checks every request against
 * Stripe's OpenAPI spec (an unknown or mistyped parameter is a 400 "Request
 * validation error") and answers with fixtures. It keeps no state, so these tests
 * assert on what was sent and on the shape of what came back. A recording proxy
 * sits in between to see the wire (Idempotency-Key, form fields) and, where a
 * test needs an outcome the fixtures never give (a decline, a settled charge),
 * to rewrite stripe-mock's answer into the one Stripe would send.
 */

interface Sent {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  form: Record<string, string>;
  /** stripe-mock's own status, before any rewrite. */
  upstreamStatus: number;
}
type Answer = { status: number; body: Record<string, unknown> };
type Rewrite = (sent: Omit<Sent, 'upstreamStatus'>, upstream: Answer) => Answer | undefined;

async function startRecordingProxy(target: string) {
  const sent: Sent[] = [];
  let rewrite: Rewrite = () => undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', target);
      const request = {
        method: req.method ?? 'GET',
        path: url.pathname,
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        form: Object.fromEntries(new URLSearchParams(req.method === 'GET' ? url.search : body)),
      };
      const response = await fetch(url, {
        method: req.method,
        headers: { authorization: req.headers.authorization ?? '', 'content-type': req.headers['content-type'] ?? '' },
        body: req.method === 'GET' ? undefined : body,
      });
      const upstream: Answer = { status: response.status, body: (await response.json()) as Record<string, unknown> };
      sent.push({ ...request, upstreamStatus: upstream.status });
      const answer = rewrite(request, upstream) ?? upstream;
      res.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': 'req_proxy' });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    rewriteWith(next: Rewrite) {
      rewrite = next;
    },
    reset() {
      sent.length = 0;
      rewrite = () => undefined;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const webhookSecret = 'whsec_test_secret';
let mock: RunningStripeMock;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
let processor: StripeProcessor;

describe('StripeProcessor against stripe-mock', () => {
  beforeAll(async () => {
    // No skip when stripe-mock is missing: startStripeMock throws MissingToolError, which fails
    // every test here with what to install.
    mock = await startStripeMock();
    proxy = await startRecordingProxy(mock.url);
    processor = new StripeProcessor({ secretKey: 'sk_test_123', webhookSecret, apiBase: proxy.url });
  });
  afterAll(async () => {
    await proxy?.close();
    await mock?.stop();
  });
  beforeEach(() => proxy?.reset());

  /** Every request reached stripe-mock and passed its schema validation. */
  function expectAllAccepted() {
    expect(proxy.sent.length).toBeGreaterThan(0);
    for (const request of proxy.sent)
      expect({ path: request.path, status: request.upstreamStatus }).toEqual({ path: request.path, status: 200 });
  }

  const chargeRequest = {
    idempotencyKey: 'charge-in_1-attempt-1',
    amount: 1500,
    currency: 'USD',
    paymentMethod: 'pm_card_visa',
    description: 'Invoice in_1',
    processorCustomerId: 'cus_123',
    metadata: { invoice_id: 'in_1' },
  };

  describe('requests pass Stripe API schema', () => {
    it('charge: confirmed off-session PaymentIntent, with our Idempotency-Key', async () => {
      const result = await processor.charge(chargeRequest);
      expectAllAccepted();
      expect(proxy.sent).toHaveLength(1);
      expect(proxy.sent[0]).toMatchObject({
        method: 'POST',
        path: '/v1/payment_intents',
        idempotencyKey: 'charge-in_1-attempt-1',
        form: {
          amount: '1500',
          currency: 'usd',
          customer: 'cus_123',
          payment_method: 'pm_card_visa',
          confirm: 'true',
          off_session: 'true',
          description: 'Invoice in_1',
          'metadata[invoice_id]': 'in_1',
        },
      });
      // stripe-mock's PaymentIntent fixture is always requires_payment_method, which is a failure.
      expect(result).toMatchObject({
        status: 'failed',
        processorChargeId: expect.stringMatching(/^pi_/),
        failureCode: expect.any(String),
      });
    });

    it('charge: maps succeeded, processing and a 402 decline', async () => {
      const withStatus = (status: string) => (sent: { path: string }, upstream: Answer) =>
        sent.path === '/v1/payment_intents' ? { ...upstream, body: { ...upstream.body, status } } : undefined;
      proxy.rewriteWith(withStatus('succeeded'));
      expect(await processor.charge(chargeRequest)).toEqual({
        status: 'succeeded',
        processorChargeId: expect.stringMatching(/^pi_/),
      });
      proxy.rewriteWith(withStatus('processing'));
      expect(await processor.charge(chargeRequest)).toEqual({
        status: 'pending',
        processorChargeId: expect.stringMatching(/^pi_/),
      });
      proxy.rewriteWith((_, upstream) => ({
        status: 402,
        body: {
          error: {
            type: 'card_error',
            code: 'card_declined',
            decline_code: 'insufficient_funds',
            message: 'Your card has insufficient funds.',
            payment_intent: { ...upstream.body, id: 'pi_declined', status: 'requires_payment_method' },
          },
        },
      }));
      expect(await processor.charge(chargeRequest)).toEqual({
        status: 'failed',
        processorChargeId: 'pi_declined',
        failureCode: 'insufficient_funds',
        failureMessage: 'Your card has insufficient funds.',
      });
      expectAllAccepted();
    });

    it('charge: amounts go in Stripe minor units (ISK is two-decimal at Stripe)', async () => {
      await processor.charge({ ...chargeRequest, amount: 500, currency: 'ISK' });
      await processor.charge({ ...chargeRequest, amount: 500, currency: 'JPY' });
      expectAllAccepted();
      expect(proxy.sent.map((s) => [s.form.amount, s.form.currency])).toEqual([
        ['50000', 'isk'],
        ['500', 'jpy'],
      ]);
    });

    it('settlement: retrieves the PaymentIntent and reads its status', async () => {
      const settled = await processor.settlement('pi_123');
      expectAllAccepted();
      expect(proxy.sent[0]).toMatchObject({ method: 'GET', path: '/v1/payment_intents/pi_123' });
      expect(['succeeded', 'failed', 'pending']).toContain(settled.status);
      for (const [status, expected] of [
        ['succeeded', { status: 'succeeded' }],
        ['processing', { status: 'pending' }],
      ] as const) {
        proxy.rewriteWith((_, upstream) => ({ ...upstream, body: { ...upstream.body, status } }));
        expect(await processor.settlement('pi_123')).toEqual(expected);
      }
      proxy.rewriteWith((_, upstream) => ({
        ...upstream,
        body: {
          ...upstream.body,
          status: 'requires_payment_method',
          last_payment_error: { type: 'card_error', code: 'debit_failed', message: 'The bank refused the debit.' },
        },
      }));
      expect(await processor.settlement('pi_123')).toEqual({
        status: 'failed',
        failureCode: 'debit_failed',
        failureMessage: 'The bank refused the debit.',
      });
    });

    it('refund: Refund on the PaymentIntent with our key; free-text reasons go to metadata', async () => {
      const result = await processor.refund({
        idempotencyKey: 'refund-1',
        processorChargeId: 'pi_123',
        amount: 500,
        currency: 'USD',
        reason: 'Customer moved away',
      });
      await processor.refund({
        idempotencyKey: 'refund-2',
        processorChargeId: 'pi_123',
        amount: 500,
        currency: 'USD',
        reason: 'requested_by_customer',
      });
      expectAllAccepted();
      expect(result).toEqual({ status: 'succeeded', processorRefundId: expect.stringMatching(/^re_/) });
      expect(proxy.sent[0]).toMatchObject({
        path: '/v1/refunds',
        idempotencyKey: 'refund-1',
        form: { payment_intent: 'pi_123', amount: '500', 'metadata[reason]': 'Customer moved away' },
      });
      expect(proxy.sent[0].form.reason).toBeUndefined();
      expect(proxy.sent[1]).toMatchObject({ idempotencyKey: 'refund-2', form: { reason: 'requested_by_customer' } });

      proxy.rewriteWith(() => ({
        status: 400,
        body: {
          error: {
            type: 'invalid_request_error',
            code: 'charge_already_refunded',
            message: 'Charge ch_1 has already been refunded.',
          },
        },
      }));
      expect(
        await processor.refund({
          idempotencyKey: 'refund-3',
          processorChargeId: 'pi_123',
          amount: 500,
          currency: 'USD',
        }),
      ).toEqual({
        status: 'failed',
        processorRefundId: null,
        failureCode: 'charge_already_refunded',
        failureMessage: 'Charge ch_1 has already been refunded.',
      });
    });

    it('upsertCustomer: finds the customer by our id, attaches the card and makes it the default', async () => {
      const id = await processor.upsertCustomer({
        idempotencyKey: 'cust-1',
        customerId: 'cus_engine_1',
        email: 'ada@example.com',
        name: 'Ada',
        paymentMethod: 'pm_card_visa',
      });
      expectAllAccepted();
      expect(id).toMatch(/^cus_/);
      expect(proxy.sent.map((s) => `${s.method} ${s.path} ${s.idempotencyKey ?? ''}`.trim())).toEqual([
        'GET /v1/customers/search',
        'POST /v1/payment_methods/pm_card_visa/attach cust-1:attach',
        `POST /v1/customers/${id} cust-1:update`,
      ]);
      expect(proxy.sent[0].form.query).toBe("metadata['billing_customer_id']:'cus_engine_1'");
      expect(proxy.sent[1].form).toEqual({ customer: id });
      expect(proxy.sent[2].form).toMatchObject({
        email: 'ada@example.com',
        name: 'Ada',
        'metadata[billing_customer_id]': 'cus_engine_1',
        'invoice_settings[default_payment_method]': 'pm_card_visa',
      });
    });

    it('upsertCustomer: creates the customer when the search finds none', async () => {
      // stripe-mock's search always returns its one fixture; Stripe returns none for a new customer.
      proxy.rewriteWith((sent, upstream) =>
        sent.path === '/v1/customers/search' ? { ...upstream, body: { ...upstream.body, data: [] } } : undefined,
      );
      const id = await processor.upsertCustomer({
        idempotencyKey: 'cust-2',
        customerId: 'cus_engine_2',
        email: 'bob@example.com',
      });
      expectAllAccepted();
      expect(id).toMatch(/^cus_/);
      expect(proxy.sent.map((s) => `${s.method} ${s.path} ${s.idempotencyKey ?? ''}`.trim())).toEqual([
        'GET /v1/customers/search',
        'POST /v1/customers cust-2:create',
        `POST /v1/customers/${id} cust-2:update`,
      ]);
      expect(proxy.sent[1].form).toEqual({ email: 'bob@example.com', 'metadata[billing_customer_id]': 'cus_engine_2' });
    });

    it('createCheckout, payment mode: one line for the amount, card kept for renewals', async () => {
      const session = await processor.createCheckout({
        idempotencyKey: 'checkout-1',
        amount: 2500,
        currency: 'EUR',
        description: 'Invoice in_2',
        successUrl: 'https://billing.example/pay/done',
        cancelUrl: 'https://billing.example/pay',
        metadata: { invoice_id: 'in_2' },
        mode: 'payment',
      });
      expectAllAccepted();
      expect(session).toEqual({ id: expect.stringMatching(/^cs_/), url: expect.stringMatching(/^https:\/\//) });
      expect(proxy.sent[0]).toMatchObject({
        path: '/v1/checkout/sessions',
        idempotencyKey: 'checkout-1',
        form: {
          mode: 'payment',
          'line_items[0][price_data][unit_amount]': '2500',
          'line_items[0][price_data][currency]': 'eur',
          'line_items[0][price_data][product_data][name]': 'Invoice in_2',
          'line_items[0][quantity]': '1',
          'payment_intent_data[setup_future_usage]': 'off_session',
          'payment_intent_data[metadata][invoice_id]': 'in_2',
          'metadata[invoice_id]': 'in_2',
          customer_creation: 'always',
          success_url: 'https://billing.example/pay/done',
        },
      });
    });

    it('createCheckout, setup mode: collects a card for an existing customer, no amount', async () => {
      const session = await processor.createCheckout({
        idempotencyKey: 'checkout-2',
        amount: 0,
        currency: 'USD',
        description: 'Card for renewals',
        successUrl: 'https://billing.example/billing/done',
        cancelUrl: 'https://billing.example/billing',
        metadata: { customer_id: 'cus_engine_1' },
        processorCustomerId: 'cus_123',
        mode: 'setup',
      });
      expectAllAccepted();
      expect(session.id).toMatch(/^cs_/);
      expect(proxy.sent[0]).toMatchObject({
        idempotencyKey: 'checkout-2',
        form: {
          mode: 'setup',
          customer: 'cus_123',
          currency: 'usd',
          'setup_intent_data[metadata][customer_id]': 'cus_engine_1',
        },
      });
      expect(Object.keys(proxy.sent[0].form).some((k) => k.startsWith('line_items') || k === 'customer_creation')).toBe(
        false,
      );
    });

    it('a parameter outside the schema is refused by stripe-mock (the check above means something)', async () => {
      await expect(
        processor.stripe.paymentIntents.create({
          amount: 100,
          currency: 'usd',
          not_a_stripe_param: 'x',
        } as Stripe.PaymentIntentCreateParams),
      ).rejects.toThrow(/Request validation error/);
    });
  });

  describe('parseWebhook', () => {
    // Real objects from stripe-mock's fixtures, so the event payloads have Stripe's shape.
    let fixtures: {
      intent: Stripe.PaymentIntent;
      refund: Stripe.Refund;
      dispute: Stripe.Dispute;
      session: Stripe.Checkout.Session;
    };
    beforeAll(async () => {
      const [intent, refund, dispute, session] = await Promise.all([
        processor.stripe.paymentIntents.retrieve('pi_1'),
        processor.stripe.refunds.retrieve('re_1'),
        processor.stripe.disputes.retrieve('dp_1'),
        processor.stripe.checkout.sessions.retrieve('cs_1'),
      ]);
      fixtures = { intent, refund, dispute, session };
    });

    const eventBody = (type: string, object: object) =>
      JSON.stringify({
        id: 'evt_1',
        object: 'event',
        api_version: '2026-10-28.endive',
        created: 1_700_000_000,
        livemode: false,
        pending_webhooks: 1,
        request: null,
        type,
        data: { object },
      });
    const signed = (payload: string, options: { secret?: string; timestamp?: number } = {}) => ({
      'stripe-signature': processor.stripe.webhooks.generateTestHeaderString({
        payload,
        secret: options.secret ?? webhookSecret,
        timestamp: options.timestamp,
      }),
    });
    const parse = (type: string, object: object) => {
      const body = eventBody(type, object);
      return processor.parseWebhook(body, signed(body));
    };

    it('maps payment_intent.succeeded and payment_intent.payment_failed', () => {
      expect(
        parse('payment_intent.succeeded', {
          ...fixtures.intent,
          id: 'pi_A',
          status: 'succeeded',
          metadata: { invoice_id: 'in_1' },
        }),
      ).toEqual({
        type: 'charge.succeeded',
        processorChargeId: 'pi_A',
        metadata: { invoice_id: 'in_1' },
      });
      const lastError = {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'insufficient_funds',
        message: 'Your card has insufficient funds.',
      };
      expect(
        parse('payment_intent.payment_failed', {
          ...fixtures.intent,
          id: 'pi_B',
          status: 'requires_payment_method',
          last_payment_error: lastError,
          metadata: { invoice_id: 'in_2' },
        }),
      ).toEqual({
        type: 'charge.failed',
        processorChargeId: 'pi_B',
        failureCode: 'insufficient_funds',
        failureMessage: 'Your card has insufficient funds.',
        metadata: { invoice_id: 'in_2' },
      });
    });

    it('maps refund.created, in engine minor units and upper-case currency', () => {
      expect(
        parse('refund.created', {
          ...fixtures.refund,
          id: 're_A',
          payment_intent: 'pi_A',
          amount: 500,
          currency: 'usd',
          metadata: { refund_id: 'rf_1' },
        }),
      ).toEqual({
        type: 'refund.created',
        processorChargeId: 'pi_A',
        processorRefundId: 're_A',
        amount: 500,
        currency: 'USD',
        metadata: { refund_id: 'rf_1' },
      });
      // stripe-mock's refund fixture has no payment_intent, only a charge.
      expect(parse('refund.created', { ...fixtures.refund, currency: 'isk', amount: 50_000 })).toMatchObject({
        processorChargeId: fixtures.refund.charge,
        amount: 500,
        currency: 'ISK',
      });
    });

    it('maps charge.dispute.created', () => {
      expect(
        parse('charge.dispute.created', {
          ...fixtures.dispute,
          id: 'dp_A',
          payment_intent: 'pi_A',
          amount: 1500,
          currency: 'usd',
          reason: 'fraudulent',
        }),
      ).toEqual({
        type: 'dispute.created',
        processorChargeId: 'pi_A',
        processorDisputeId: 'dp_A',
        amount: 1500,
        currency: 'USD',
        reason: 'fraudulent',
      });
    });

    it('maps checkout.session.completed', () => {
      expect(
        parse('checkout.session.completed', {
          ...fixtures.session,
          id: 'cs_A',
          payment_intent: 'pi_A',
          customer: 'cus_A',
          metadata: { invoice_id: 'in_1' },
          payment_status: 'paid',
          amount_total: 50_000,
          currency: 'isk',
        }),
      ).toEqual({
        type: 'checkout.completed',
        checkoutId: 'cs_A',
        processorChargeId: 'pi_A',
        paymentMethod: null,
        setupIntentId: null,
        processorCustomerId: 'cus_A',
        metadata: { invoice_id: 'in_1' },
        paymentStatus: 'paid',
        amount: 500,
        currency: 'ISK',
      });
      const setup = parse('checkout.session.completed', {
        ...fixtures.session,
        mode: 'setup',
        payment_intent: null,
        setup_intent: { id: 'seti_A', object: 'setup_intent', payment_method: 'pm_A' },
      });
      expect(setup).toMatchObject({ processorChargeId: null, paymentMethod: 'pm_A' });
    });

    it('answers ignored for every other event, charge.refunded included (refund.created covers it)', () => {
      expect(parse('customer.created', { id: 'cus_A', object: 'customer' })).toEqual({
        type: 'ignored',
        processorType: 'customer.created',
      });
      expect(parse('charge.refunded', { id: 'ch_A', object: 'charge' })).toEqual({
        type: 'ignored',
        processorType: 'charge.refunded',
      });
    });

    it('refuses a bad signature, a wrong secret, a stale timestamp, a changed body and no header', () => {
      const body = eventBody('payment_intent.succeeded', fixtures.intent);
      const good = signed(body)['stripe-signature'];
      const tampered = good.replace(/v1=([0-9a-f])/, (_, c: string) => `v1=${c === '0' ? '1' : '0'}`);
      expect(() => processor.parseWebhook(body, { 'stripe-signature': tampered })).toThrow(ProcessorSignatureError);
      expect(() => processor.parseWebhook(body, signed(body, { secret: 'whsec_someone_else' }))).toThrow(
        ProcessorSignatureError,
      );
      expect(() =>
        processor.parseWebhook(body, signed(body, { timestamp: Math.floor(Date.now() / 1000) - 600 })),
      ).toThrow(ProcessorSignatureError);
      expect(() =>
        processor.parseWebhook(body.replace('"livemode":false', '"livemode":true'), { 'stripe-signature': good }),
      ).toThrow(ProcessorSignatureError);
      expect(() => processor.parseWebhook(body, {})).toThrow(ProcessorSignatureError);
      // Header names arrive in any case.
      expect(processor.parseWebhook(body, { 'Stripe-Signature': good }).type).toBe('charge.succeeded');
    });
  });
});

describe('without stripe-mock', () => {
  it('npm run tools fails and names what to install', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-no-stripe-mock-'));
    // Only node on PATH (no stripe-mock, no go); the Temporal tools are stood in for by node itself.
    const result = spawnSync(process.execPath, ['dev/tools-cli.ts'], {
      cwd: process.cwd(),
      encoding: 'utf8',
      timeout: 30_000,
      env: {
        PATH: path.dirname(process.execPath),
        HOME: empty,
        BILLING_TOOLS_CACHE: empty,
        TEMPORAL_CLI_PATH: process.execPath,
        TEMPORAL_TEST_SERVER_PATH: process.execPath,
      },
    });
    fs.rmSync(empty, { recursive: true, force: true });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('No stripe-mock could be found or built. Install Go 1.22 or newer');
    expect(result.stderr).toContain('go install github.com/stripe/stripe-mock@v0.203.0');
    expect(result.stderr).toContain('STRIPE_MOCK_PATH');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
