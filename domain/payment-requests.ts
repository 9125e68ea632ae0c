/**
 * Payment requests: an amount asked of a customer by email, paid on the hosted
 * pay page. Pure shapes and rules shared by the API, the workflows (so no clock
 * reads, no I/O here) and the activities.
 */
import type { BillingInterval } from './billing-calendar.ts';
import { paymentRequestEmail, paymentRequestReceiptEmail, type RenderedEmail } from './email-templates.ts';
import { formatMoney } from './money.ts';

/** SPEC.md's states: pending until paid; failed when it expired; canceled by the account. */
export const paymentRequestStatuses = ['pending', 'succeeded', 'failed', 'canceled'] as const;
export type PaymentRequestStatus = (typeof paymentRequestStatuses)[number];

export const cancellationReasons = ['requested', 'account_closed'] as const;
export type CancellationReason = (typeof cancellationReasons)[number];

export const recurringStatuses = ['active', 'canceled'] as const;
export type RecurringStatus = (typeof recurringStatuses)[number];

const dayMs = 86_400_000;
/** How long a link stays payable unless the request says otherwise. */
export const defaultExpiryMs = 7 * dayMs;
/** The longest a link may stay payable. */
export const maxExpiryMs = 30 * dayMs;
/** The shortest: a link that expires within a minute is a mistake. */
export const minExpiryMs = 60_000;
/** Declined attempts a request takes before the page stops charging (card testing on a leaked link). */
export const maxPayAttempts = 10;

/**
 * The test payment methods the pay page offers: cards, which answer at once.
 * Bank debits (pm_bank_*) settle a day later and are refused on the page.
 */
export const payPageMethods = [
  { id: 'pm_card_visa', label: 'Visa •••• 4242', outcome: 'succeeds' },
  { id: 'pm_card_mastercard', label: 'Mastercard •••• 4444', outcome: 'succeeds' },
  { id: 'pm_card_chargeDeclined', label: 'Visa •••• 0002', outcome: 'declined: card_declined' },
  { id: 'pm_card_insufficientFunds', label: 'Visa •••• 9995', outcome: 'declined: insufficient_funds' },
  { id: 'pm_card_expired', label: 'Visa •••• 0069', outcome: 'declined: expired_card' },
] as const;
export type PayPageMethod = (typeof payPageMethods)[number]['id'];

export function isPayPageMethod(value: string): value is PayPageMethod {
  return payPageMethods.some((method) => method.id === value);
}

export interface PaymentError {
  code: string;
  message: string;
  paymentMethod: string;
  /** Workflow time of the attempt. */
  at: string;
}

/**
 * A payment request as its workflow knows it: the one shape the workflow returns
 * from updates, writes to the projection, and the API serializes. Instants are
 * ISO strings so it crosses Temporal's JSON payloads unchanged.
 */
export interface PaymentRequestSnapshot {
  id: string;
  accountId: string;
  livemode: boolean;
  amount: number;
  currency: string;
  customerEmail: string;
  reference: string | null;
  metadata: Record<string, string>;
  /** The secret part of payment_url (256 random bits, base64url). */
  token: string;
  status: PaymentRequestStatus;
  expiresAt: string;
  createdAt: string;
  /** Workflow time of the latest change. */
  updatedAt: string;
  /** The ledger transaction that recorded the money, once paid. */
  transactionId: string | null;
  paidAt: string | null;
  /** `expired` when the link lapsed unpaid. */
  failureReason: 'expired' | null;
  canceledAt: string | null;
  cancellationReason: CancellationReason | null;
  /** The latest declined attempt, kept after a later success for the record. */
  lastPaymentError: PaymentError | null;
  /** Charge attempts made so far (each with its own processor idempotency key). */
  attempts: number;
  /** Set when a recurring request issued this one, with the period it is for (0-based). */
  recurringPaymentRequestId: string | null;
  period: number | null;
  /** Grows with every state change; orders projection writes. */
  version: number;
}

/** What a new payment request is made of; everything else starts empty. */
export type NewPaymentRequestFields = Pick<
  PaymentRequestSnapshot,
  | 'id'
  | 'accountId'
  | 'livemode'
  | 'amount'
  | 'currency'
  | 'customerEmail'
  | 'reference'
  | 'metadata'
  | 'token'
  | 'recurringPaymentRequestId'
  | 'period'
>;

/**
 * The first snapshot of a payment request (version 0), for the API and the
 * recurring workflow alike. Its times are placeholders: the request's own
 * workflow sets them from workflow time when it records itself.
 */
export function initialPaymentRequestSnapshot(fields: NewPaymentRequestFields): PaymentRequestSnapshot {
  const placeholder = new Date(0).toISOString();
  return {
    ...fields,
    status: 'pending',
    expiresAt: placeholder,
    createdAt: placeholder,
    updatedAt: placeholder,
    transactionId: null,
    paidAt: null,
    failureReason: null,
    canceledAt: null,
    cancellationReason: null,
    lastPaymentError: null,
    attempts: 0,
    version: 0,
  };
}

/** The first snapshot of a recurring request (version 0); its workflow sets the anchor and times when it records itself. */
export function initialRecurringPaymentRequestSnapshot(
  fields: Pick<
    RecurringPaymentRequestSnapshot,
    | 'id'
    | 'accountId'
    | 'livemode'
    | 'amount'
    | 'currency'
    | 'customerEmail'
    | 'reference'
    | 'metadata'
    | 'interval'
    | 'expiresInMs'
  >,
): RecurringPaymentRequestSnapshot {
  const placeholder = new Date(0).toISOString();
  return {
    ...fields,
    status: 'active',
    anchor: null,
    period: 0,
    issuedPeriods: 0,
    latestPaymentRequestId: null,
    nextPaymentRequestAt: null,
    createdAt: placeholder,
    updatedAt: placeholder,
    canceledAt: null,
    cancellationReason: null,
    version: 0,
  };
}

/** A recurring payment request: one long-lived workflow issuing a payment request each period. */
export interface RecurringPaymentRequestSnapshot {
  id: string;
  accountId: string;
  livemode: boolean;
  amount: number;
  currency: string;
  customerEmail: string;
  reference: string | null;
  metadata: Record<string, string>;
  interval: BillingInterval;
  /** How long each issued request stays payable. */
  expiresInMs: number;
  status: RecurringStatus;
  /** Periods are counted from here (see billing-calendar): period n starts at anchor + n intervals. */
  anchor: string | null;
  /** The period whose request is issued next (or was just issued, see issuedPeriods). */
  period: number;
  /** How many periods have had their request issued. */
  issuedPeriods: number;
  latestPaymentRequestId: string | null;
  nextPaymentRequestAt: string | null;
  createdAt: string;
  updatedAt: string;
  canceledAt: string | null;
  cancellationReason: CancellationReason | null;
  version: number;
}

/** What a `pay` update answers: the page shows a receipt, the decline, or the state the request is in. */
export interface PayResult {
  outcome: 'succeeded' | 'declined' | 'already_paid' | 'not_payable';
  request: PaymentRequestSnapshot;
  error: { code: string; message: string } | null;
}

export function paymentUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/pay/${token}`;
}

/**
 * The receipt of a paid request as a PDF, linked from the receipt email and the pay page. The
 * request's pay-link token is its credential, as for the pay page that shows the same receipt:
 * a string the workflow can build (it computes no HMAC, unlike invoice links, domain/invoice-links.ts).
 */
export function receiptPdfUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/pay/${token}/receipt.pdf`;
}

/** A token as payment_url carries it: 43 base64url characters (32 random bytes). */
export const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

/** The email that asks the customer to pay, with the link. */
export function requestEmail(
  request: PaymentRequestSnapshot,
  accountName: string,
  link: string,
  locale = 'en',
): RenderedEmail {
  return paymentRequestEmail({
    accountName,
    amount: formatMoney(request.amount, request.currency, locale),
    reference: request.reference,
    link,
    expiresAt: new Date(request.expiresAt),
  });
}

/** The receipt after a successful payment, with the link to its PDF. */
export function receiptEmail(
  request: PaymentRequestSnapshot,
  accountName: string,
  publicUrl: string,
  locale = 'en',
): RenderedEmail {
  return paymentRequestReceiptEmail({
    accountName,
    amount: formatMoney(request.amount, request.currency, locale),
    reference: request.reference,
    paymentId: request.id,
    paidAt: request.paidAt ? new Date(request.paidAt) : null,
    pdfUrl: receiptPdfUrl(publicUrl, request.token),
  });
}
