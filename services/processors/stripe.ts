/**
 * The Stripe adapter: off-session charges are PaymentIntents confirmed at once
 * against a saved payment method, refunds are Refunds, the hosted pay page is a
 * Checkout Session, and webhooks are verified with Stripe's signing secret.
 *
 * Every write carries Stripe's own Idempotency-Key, so a retried activity gets
 * Stripe's first answer (success or decline) instead of a second charge. Stripe
 * keeps keys for 24 hours; retries of one attempt must end well within that.
 */
import { createRequire } from 'node:module';

import type Stripe from 'stripe';

import {
  type CheckoutRequest,
  type PaymentProcessor,
  type ProcessorChargeRequest,
  type ProcessorChargeResult,
  type ProcessorCustomerRequest,
  type ProcessorEvent,
  type ProcessorRefundRequest,
  type ProcessorRefundResult,
  type ProcessorSettlement,
  ProcessorSignatureError,
} from './types.ts';

/**
 * Stripe's SDK, loaded when the first StripeProcessor is built rather than with this module: a process whose modes
 * both run on the sandbox (or that never builds its processors, an exports worker) does not load it.
 */
let stripeSdk: typeof Stripe | undefined;
const loadStripe = (): typeof Stripe => (stripeSdk ??= createRequire(import.meta.url)('stripe') as typeof Stripe);

export interface StripeProcessorOptions {
  secretKey: string;
  webhookSecret: string;
  /** Another API host, e.g. stripe-mock's `http://127.0.0.1:12111`; Stripe's own when absent. */
  apiBase?: string;
}

/**
 * The engine keeps amounts in ISO 4217 minor units (domain/money.ts); Stripe's minor
 * unit differs for a few currencies: ISK stays two-decimal at Stripe although ISO has
 * none, and MGA is zero-decimal at Stripe although ISO has two.
 */
const stripeScale: Record<string, number> = { ISK: 100, MGA: 0.01 };

export function toStripeAmount(amount: number, currency: string): number {
  const scaled = amount * (stripeScale[currency.toUpperCase()] ?? 1);
  if (!Number.isInteger(scaled))
    throw new RangeError(`${amount} ${currency} has no exact amount in Stripe's minor unit.`);
  return scaled;
}

export function fromStripeAmount(amount: number, currency: string): number {
  return Math.round(amount / (stripeScale[currency.toUpperCase()] ?? 1));
}

/** Stripe's `reason` takes only these; any other text goes to the refund's metadata. */
const stripeRefundReasons = new Set(['duplicate', 'fraudulent', 'requested_by_customer']);

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  typeof value === 'string' ? value : (value?.id ?? null);

/**
 * What a refund or a dispute is about, as the engine knows it: the charge's id (its PaymentIntent, which the
 * engine's charges are; the bare charge of one made without) and the amount in the engine's units.
 */
const chargeMoneyOf = (object: Stripe.Refund | Stripe.Dispute) => ({
  processorChargeId: idOf(object.payment_intent) ?? idOf(object.charge) ?? '',
  amount: fromStripeAmount(object.amount, object.currency),
  currency: object.currency.toUpperCase(),
});

export class StripeProcessor implements PaymentProcessor {
  readonly name = 'stripe' as const;
  readonly stripe: Stripe;
  private readonly webhookSecret: string;

  constructor(options: StripeProcessorOptions) {
    const base = options.apiBase ? new URL(options.apiBase) : undefined;
    const StripeSdk = loadStripe();
    this.stripe = new StripeSdk(options.secretKey, {
      ...(base && {
        host: base.hostname,
        port: base.port || (base.protocol === 'http:' ? 80 : 443),
        protocol: base.protocol === 'http:' ? 'http' : 'https',
      }),
      appInfo: { name: 'billing-engine' },
    });
    this.webhookSecret = options.webhookSecret;
  }

  async charge(request: ProcessorChargeRequest): Promise<ProcessorChargeResult> {
    try {
      const intent = await this.stripe.paymentIntents.create(
        {
          amount: toStripeAmount(request.amount, request.currency),
          currency: request.currency.toLowerCase(),
          customer: request.processorCustomerId ?? undefined,
          payment_method: request.paymentMethod,
          description: request.description,
          metadata: request.metadata,
          // Charge now, with no customer present: Stripe declines rather than asking for 3-D Secure.
          confirm: true,
          off_session: true,
        },
        { idempotencyKey: request.idempotencyKey },
      );
      if (intent.status === 'succeeded') return { status: 'succeeded', processorChargeId: intent.id };
      if (intent.status === 'processing') return { status: 'pending', processorChargeId: intent.id };
      return { status: 'failed', processorChargeId: intent.id, ...intentFailure(intent) };
    } catch (error) {
      // A decline is an answer, not an error: Stripe sends 402 with the failed PaymentIntent
      // (and replays that same 402 for the same key). Anything else is thrown for a retry.
      if (error instanceof loadStripe().errors.StripeCardError) {
        return {
          status: 'failed',
          processorChargeId: error.payment_intent?.id ?? error.requestId ?? 'unknown',
          failureCode: error.decline_code ?? error.code ?? 'card_declined',
          failureMessage: error.message,
        };
      }
      throw error;
    }
  }

  async settlement(processorChargeId: string): Promise<ProcessorSettlement> {
    const intent = await this.stripe.paymentIntents.retrieve(processorChargeId);
    if (intent.status === 'succeeded') return { status: 'succeeded' };
    if (intent.status === 'processing' || intent.status === 'requires_capture') return { status: 'pending' };
    // A failed bank debit comes back to requires_payment_method with last_payment_error set.
    return { status: 'failed', ...intentFailure(intent) };
  }

  async refund(request: ProcessorRefundRequest): Promise<ProcessorRefundResult> {
    const reason = request.reason && stripeRefundReasons.has(request.reason) ? request.reason : undefined;
    try {
      const refund = await this.stripe.refunds.create(
        {
          payment_intent: request.processorChargeId,
          amount: toStripeAmount(request.amount, request.currency),
          reason,
          metadata:
            request.metadata || (request.reason && !reason)
              ? { ...request.metadata, ...(request.reason && !reason && { reason: request.reason }) }
              : undefined,
        },
        { idempotencyKey: request.idempotencyKey },
      );
      if (refund.status === 'succeeded') return { status: 'succeeded', processorRefundId: refund.id };
      if (refund.status === 'failed' || refund.status === 'canceled') {
        return {
          status: 'failed',
          processorRefundId: refund.id,
          failureCode: refund.failure_reason ?? refund.status,
          failureMessage: `Stripe reports the refund as ${refund.status}.`,
        };
      }
      return { status: 'pending', processorRefundId: refund.id }; // pending, requires_action
    } catch (error) {
      // Refused outright (charge_already_refunded, amount_too_large...): no refund exists.
      if (error instanceof loadStripe().errors.StripeInvalidRequestError && error.code) {
        return { status: 'failed', processorRefundId: null, failureCode: error.code, failureMessage: error.message };
      }
      throw error;
    }
  }

  /**
   * The request carries the engine's customer id, not Stripe's, so the Stripe customer is
   * found by that id in its metadata. Search lags writes by up to a minute; the idempotency
   * key on create covers that window, so a retry does not make a second customer.
   */
  async upsertCustomer(request: ProcessorCustomerRequest): Promise<string> {
    const key = request.idempotencyKey;
    const metadata = { billing_customer_id: request.customerId };
    const found = await this.stripe.customers.search({
      query: `metadata['billing_customer_id']:'${request.customerId.replace(/'/g, "\\'")}'`,
      limit: 1,
    });
    const customerId =
      found.data[0]?.id ??
      (
        await this.stripe.customers.create(
          { email: request.email, name: request.name ?? undefined, metadata },
          { idempotencyKey: `${key}:create` },
        )
      ).id;
    if (request.paymentMethod) {
      await this.stripe.paymentMethods.attach(
        request.paymentMethod,
        { customer: customerId },
        { idempotencyKey: `${key}:attach` },
      );
    }
    await this.stripe.customers.update(
      customerId,
      {
        email: request.email,
        name: request.name ?? undefined,
        metadata,
        // So the customer's Checkout pages and Stripe's dashboard offer the same card we charge.
        ...(request.paymentMethod && { invoice_settings: { default_payment_method: request.paymentMethod } }),
      },
      { idempotencyKey: `${key}:update` },
    );
    return customerId;
  }

  async setupPaymentMethod(setupIntentId: string): Promise<string | null> {
    const intent = await this.stripe.setupIntents.retrieve(setupIntentId);
    return intent.status === 'succeeded' ? idOf(intent.payment_method) : null;
  }

  async createCheckout(request: CheckoutRequest): Promise<{ id: string; url: string }> {
    const common = {
      success_url: request.successUrl,
      cancel_url: request.cancelUrl,
      metadata: request.metadata,
      customer: request.processorCustomerId ?? undefined,
      currency: request.currency.toLowerCase(),
    };
    const session =
      request.mode === 'payment'
        ? await this.stripe.checkout.sessions.create(
            {
              ...common,
              mode: 'payment',
              line_items: [
                {
                  quantity: 1,
                  price_data: {
                    currency: common.currency,
                    unit_amount: toStripeAmount(request.amount, request.currency),
                    product_data: { name: request.description },
                  },
                },
              ],
              // The PaymentIntent gets the metadata too, so its payment_intent.* webhooks can be matched;
              // the card is kept for the renewals that follow, which need a Stripe customer to hold it.
              payment_intent_data: {
                metadata: request.metadata,
                description: request.description,
                setup_future_usage: 'off_session',
              },
              ...(!request.processorCustomerId && { customer_creation: 'always' as const }),
            },
            { idempotencyKey: request.idempotencyKey },
          )
        : await this.stripe.checkout.sessions.create(
            // Setup mode takes no amount; `currency` picks which payment methods are offered.
            {
              ...common,
              mode: 'setup',
              setup_intent_data: { metadata: request.metadata, description: request.description },
            },
            { idempotencyKey: request.idempotencyKey },
          );
    if (!session.url) throw new Error(`Stripe returned Checkout Session ${session.id} without a url.`);
    return { id: session.id, url: session.url };
  }

  parseWebhook(rawBody: string, headers: Record<string, string | undefined>): ProcessorEvent {
    const signature =
      headers['stripe-signature'] ??
      Object.entries(headers).find(([name]) => name.toLowerCase() === 'stripe-signature')?.[1];
    if (!signature) throw new ProcessorSignatureError('Missing Stripe-Signature header.');
    let event: Stripe.Event;
    try {
      // Checks the HMAC over the raw bytes and that the timestamp is within 5 minutes (replays).
      event = this.stripe.webhooks.constructEvent(rawBody, signature, this.webhookSecret);
    } catch (error) {
      if (error instanceof loadStripe().errors.StripeSignatureVerificationError)
        throw new ProcessorSignatureError(error.message);
      throw error;
    }
    switch (event.type) {
      case 'payment_intent.succeeded':
        return {
          type: 'charge.succeeded',
          processorChargeId: event.data.object.id,
          metadata: event.data.object.metadata,
        };
      case 'payment_intent.payment_failed':
        return {
          type: 'charge.failed',
          processorChargeId: event.data.object.id,
          ...intentFailure(event.data.object),
          metadata: event.data.object.metadata,
        };
      // refund.created rather than charge.refunded: it names the refund (charge.refunded no longer
      // lists refunds since API version 2022-11-15) and fires once per refund, dashboard ones too.
      case 'refund.created': {
        const refund = event.data.object;
        return {
          type: 'refund.created',
          ...chargeMoneyOf(refund),
          processorRefundId: refund.id,
          metadata: refund.metadata ?? {},
        };
      }
      case 'charge.dispute.created': {
        const dispute = event.data.object;
        return {
          type: 'dispute.created',
          ...chargeMoneyOf(dispute),
          processorDisputeId: dispute.id,
          reason: dispute.reason,
        };
      }
      case 'checkout.session.completed': {
        const session = event.data.object;
        // Webhook objects are never expanded: the payment method is known only if the session
        // carries an expanded intent; otherwise the engine asks Stripe for the intent.
        const expanded = (value: string | Stripe.PaymentIntent | Stripe.SetupIntent | null) =>
          value && typeof value === 'object' ? value : null;
        const intent = expanded(session.payment_intent) ?? expanded(session.setup_intent);
        return {
          type: 'checkout.completed',
          checkoutId: session.id,
          processorChargeId: idOf(session.payment_intent),
          paymentMethod: idOf(intent?.payment_method),
          setupIntentId: idOf(session.setup_intent),
          processorCustomerId: idOf(session.customer),
          metadata: session.metadata ?? {},
          paymentStatus: session.payment_status ?? null,
          amount:
            session.amount_total !== null && session.currency
              ? fromStripeAmount(session.amount_total, session.currency)
              : null,
          currency: session.currency ? session.currency.toUpperCase() : null,
        };
      }
      default:
        return { type: 'ignored', processorType: event.type };
    }
  }
}

/** Stripe's most specific reason for a failed PaymentIntent: the issuer's decline code first. */
function intentFailure(intent: Stripe.PaymentIntent): { failureCode: string; failureMessage: string } {
  const error = intent.last_payment_error;
  if (intent.status === 'requires_action') {
    return {
      failureCode: 'authentication_required',
      failureMessage: 'The payment needs the customer to authenticate it (3-D Secure).',
    };
  }
  return {
    failureCode: error?.decline_code ?? error?.code ?? (intent.status === 'canceled' ? 'canceled' : 'payment_failed'),
    failureMessage: error?.message ?? `The payment ended as ${intent.status}.`,
  };
}
