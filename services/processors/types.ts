/**
 * The seam between the engine and a payment processor (sandbox, Stripe). Amounts
 * are integers in the currency's ISO 4217 minor unit (domain/money.ts) and
 * currencies are upper-case ISO codes; adapters convert to the processor's own.
 */
export interface ProcessorChargeRequest {
  idempotencyKey: string;
  amount: number;
  currency: string;
  paymentMethod: string;
  description: string;
  /** processor customer id when known (Stripe: cus_...) */
  processorCustomerId?: string | null;
  metadata?: Record<string, string>;
}

export type ProcessorChargeResult =
  | { status: 'succeeded'; processorChargeId: string }
  | { status: 'pending'; processorChargeId: string }
  | { status: 'failed'; processorChargeId: string; failureCode: string; failureMessage: string };

export type ProcessorSettlement =
  | { status: 'succeeded' }
  | { status: 'failed'; failureCode: string; failureMessage: string }
  | { status: 'pending' };

export interface ProcessorRefundRequest {
  idempotencyKey: string;
  processorChargeId: string;
  amount: number;
  currency: string;
  reason?: string;
  /** Kept on the processor's refund (Stripe: metadata), so its webhook is known as the engine's own. */
  metadata?: Record<string, string>;
}

export type ProcessorRefundResult =
  | { status: 'succeeded' | 'pending'; processorRefundId: string }
  | { status: 'failed'; processorRefundId: string | null; failureCode: string; failureMessage: string };

export interface ProcessorCustomerRequest {
  customerId: string;
  email: string;
  name?: string | null;
  paymentMethod?: string | null;
  idempotencyKey: string;
}

export interface CheckoutRequest {
  idempotencyKey: string;
  amount: number;
  currency: string;
  description: string;
  successUrl: string;
  cancelUrl: string;
  metadata: Record<string, string>;
  processorCustomerId?: string | null;
  /** 'payment' for a pay page, 'setup' to collect a card for later (billing details page) */
  mode: 'payment' | 'setup';
}

/** A processor webhook turned into what the engine acts on. */
export type ProcessorEvent =
  | {
      type: 'charge.succeeded' | 'charge.failed';
      processorChargeId: string;
      failureCode?: string;
      failureMessage?: string;
      metadata: Record<string, string>;
    }
  | {
      type: 'refund.created';
      processorChargeId: string;
      processorRefundId: string;
      amount: number;
      currency: string;
      metadata: Record<string, string>;
    }
  | {
      type: 'dispute.created';
      processorChargeId: string;
      processorDisputeId: string;
      amount: number;
      currency: string;
      reason: string;
    }
  | {
      type: 'checkout.completed';
      checkoutId: string;
      processorChargeId: string | null;
      paymentMethod: string | null;
      /** A setup session's SetupIntent: its payment method is read from the processor when the event does not carry it. */
      setupIntentId: string | null;
      processorCustomerId: string | null;
      metadata: Record<string, string>;
      /** 'paid' once the money is taken; 'unpaid' for a payment that settles later; 'no_payment_required' for setup sessions. */
      paymentStatus: string | null;
      /** What the checkout charged, in the engine's minor units (null for setup sessions). */
      amount: number | null;
      currency: string | null;
    }
  | { type: 'ignored'; processorType: string };

export interface PaymentProcessor {
  readonly name: 'sandbox' | 'stripe';
  /** Off-session charge of a saved payment method; returns the first outcome again for a repeated key. */
  charge(request: ProcessorChargeRequest): Promise<ProcessorChargeResult>;
  /** The current outcome of a charge (pending ones settle later). */
  settlement(processorChargeId: string): Promise<ProcessorSettlement>;
  refund(request: ProcessorRefundRequest): Promise<ProcessorRefundResult>;
  /** Creates or updates the processor's customer and attaches the payment method; returns its id (sandbox: null). */
  upsertCustomer(request: ProcessorCustomerRequest): Promise<string | null>;
  /** A hosted checkout page (Stripe Checkout Session); null when the processor has none (sandbox uses the engine's own pay page). */
  createCheckout(request: CheckoutRequest): Promise<{ id: string; url: string } | null>;
  /** The payment method a completed setup (Stripe: SetupIntent) saved, or null. */
  setupPaymentMethod(setupIntentId: string): Promise<string | null>;
  /** Verifies a processor webhook's signature and parses it; throws ProcessorSignatureError when it does not verify. */
  parseWebhook(rawBody: string, headers: Record<string, string | undefined>): ProcessorEvent;
}

export class ProcessorSignatureError extends Error {}
