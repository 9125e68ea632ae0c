/**
 * The catalog of event types: every state change the engine records in `events`
 * (see db/entities/event.ts) and serves at GET /v1/events. docs/events-and-webhooks.md and the
 * OpenAPI document publish this list; a new emitter adds its type here first.
 */
export const eventCatalog = [
  {
    type: 'transaction.created',
    description: 'A transaction was created (payment, credit or refund), whatever its first status.',
  },
  { type: 'transaction.succeeded', description: 'A transaction reached succeeded: its money is on the balance.' },
  {
    type: 'transaction.failed',
    description: 'A transaction reached failed (declined payment, or a pending payment that failed to settle).',
  },
  { type: 'transaction.canceled', description: 'A pending transaction was canceled before it settled.' },
  { type: 'transaction.updated', description: "A transaction's editable fields (reference, metadata) changed." },
  {
    type: 'payment.succeeded',
    description:
      'A payment succeeded: a payment transaction, from the API or a paid payment request (data.object is the transaction), or a subscription charge (the invoice).',
  },
  {
    type: 'payment.disputed',
    description:
      'The customer disputed a payment at the processor (a chargeback; Stripe charge.dispute.created): data.object is the transaction.',
  },
  {
    type: 'payment.failed',
    description:
      'A payment failed: a payment transaction (data.object is the transaction), a declined pay-page attempt (the payment request) or a declined subscription charge (the invoice).',
  },
  {
    type: 'payment.refunded',
    description:
      'A payment was refunded, in part or in full (data.object is the payment transaction, with amount_refunded; the refund is its own transaction, source_transaction naming the payment).',
  },
  { type: 'payment_request.created', description: 'A payment request was created: pending, its pay link emailed.' },
  {
    type: 'payment_request.updated',
    description: 'A payment request changed without ending (a declined attempt on the pay page).',
  },
  {
    type: 'payment_request.succeeded',
    description: 'A payment request was paid (its transaction_id names the payment).',
  },
  { type: 'payment_request.failed', description: 'A payment request ended unpaid: its link expired.' },
  {
    type: 'payment_request.canceled',
    description: 'A payment request was canceled (on request, or because the account closed).',
  },
  { type: 'recurring_payment_request.created', description: 'A recurring payment request was created.' },
  {
    type: 'recurring_payment_request.updated',
    description: "A recurring payment request issued a period's payment request.",
  },
  { type: 'recurring_payment_request.canceled', description: 'A recurring payment request was canceled.' },
  { type: 'subscription.created', description: 'A subscription was created (trialing, active or incomplete).' },
  {
    type: 'subscription.updated',
    description:
      'A subscription changed in any other way: a renewal, a trial that converted, cancel at period end, a failed retry, a recovered payment, a downgrade scheduled.',
  },
  {
    type: 'subscription.past_due',
    description: 'A charge of the subscription failed: it is past due and dunning started.',
  },
  {
    type: 'subscription.canceled',
    description: 'A subscription ended: canceled now, at period end, or when dunning gave up.',
  },
  {
    type: 'subscription.expired',
    description: 'A trial ended with no payment method to charge: the subscription expired.',
  },
  {
    type: 'subscription.paused',
    description: 'A subscription was paused (on request, or when dunning ended in a pause).',
  },
  { type: 'subscription.resumed', description: 'A paused subscription resumed (trialing or active again).' },
  {
    type: 'subscription.plan_changed',
    description: "A subscription's plan changed: an upgrade now, or a downgrade taking effect at renewal.",
  },
  { type: 'invoice.created', description: 'An invoice was opened.' },
  { type: 'invoice.paid', description: 'An invoice was paid.' },
  {
    type: 'invoice.payment_failed',
    description: 'A charge for an open invoice failed; the invoice stays open while dunning retries.',
  },
  { type: 'invoice.voided', description: 'An invoice was voided.' },
  { type: 'invoice.marked_uncollectible', description: 'An invoice was marked uncollectible.' },
  {
    type: 'invoice.finalized',
    description:
      'A draft one-off invoice was finalized: numbered, open, its collection started (a charge, or the email with its pay link).',
  },
  {
    type: 'invoice.updated',
    description:
      "An open invoice's amounts changed: a promotion code or coupon applied to it (its discount, total and amount_due; data.object is the invoice).",
  },
  {
    type: 'invoice.reminder_sent',
    description:
      'A reminder of a send_invoice invoice was emailed (before, on or after its due date; data.object is the invoice).',
  },
  {
    type: 'invoiceitem.created',
    description: 'An invoice item (a one-off charge) was created, pending until an invoice takes it.',
  },
  {
    type: 'invoiceitem.updated',
    description:
      'A pending invoice item changed (amount, quantity, description, or the draft invoice it is attached to).',
  },
  { type: 'invoiceitem.deleted', description: 'A pending invoice item was deleted.' },
  { type: 'account.created', description: 'An account was opened (sign-up or by an admin; recorded in both modes).' },
  { type: 'account.updated', description: "The account's profile or settings changed (recorded in both modes)." },
  { type: 'account.closed', description: 'The account was closed (recorded in both modes).' },
  { type: 'customer.created', description: 'A customer was created.' },
  {
    type: 'customer.updated',
    description: 'A customer was updated (email, name, payment method, address, tax_exempt...).',
  },
  { type: 'customer.tax_id.created', description: 'A tax id was added to a customer (data.object is the tax id).' },
  { type: 'customer.tax_id.deleted', description: "A customer's tax id was deleted (data.object is the tax id)." },
  { type: 'tax_rate.created', description: 'A tax rate was created.' },
  {
    type: 'tax_rate.updated',
    description:
      'A tax rate changed (its name, description, jurisdiction, type, metadata, or deactivated); data.previous_attributes has the values before.',
  },
  { type: 'coupon.created', description: 'A coupon was created.' },
  { type: 'coupon.updated', description: "A coupon's name or metadata changed (its terms never change)." },
  {
    type: 'coupon.deleted',
    description: 'A coupon was deleted: no new redemptions; discounts already made from it go on.',
  },
  { type: 'promotion_code.created', description: 'A promotion code was created.' },
  { type: 'promotion_code.updated', description: 'A promotion code changed (active, metadata).' },
  {
    type: 'customer.discount.created',
    description:
      'A coupon or promotion code was applied to a customer or a subscription (data.object is the discount).',
  },
  {
    type: 'customer.discount.updated',
    description: "A customer's or subscription's discount was replaced by another (data.object is the new discount).",
  },
  {
    type: 'customer.discount.deleted',
    description:
      'A discount ended: removed, a once coupon used by its invoice, or a repeating coupon past its end (data.object is the discount).',
  },
  {
    type: 'customer_balance_transaction.created',
    description:
      "A customer's balance moved: an adjustment, a credit note's credit, or a balance applied to (or given back from) an invoice.",
  },
  {
    type: 'credit_note.created',
    description:
      'A credit note was issued for an invoice (data.object is the credit note: its refund, credit to the customer balance and out-of-band amounts).',
  },
  {
    type: 'credit_note.voided',
    description:
      'A credit note was voided: its credit to the customer balance was taken back (data.object is the credit note).',
  },
  { type: 'payout.created', description: 'A payout was created; its amount left the available balance.' },
  { type: 'payout.paid', description: 'A payout arrived at its destination.' },
  {
    type: 'payout.updated',
    description:
      'A payout changed without ending: sent (in_transit, with its arrival_date), caught by a hold or released.',
  },
  {
    type: 'payout.failed',
    description:
      'A payout failed; its amount returned to the balance (transaction_id: that payout_failure balance transaction).',
  },
  {
    type: 'payout.canceled',
    description:
      'A pending payout was canceled; its amount returned to the balance (transaction_id: that balance transaction).',
  },
  { type: 'bank_account.created', description: 'A payout destination (bank account or PayPal receiver) was added.' },
  {
    type: 'bank_account.updated',
    description:
      'A payout destination changed: holder, default for its currency, status (verified by a paid payout, errored by a failed one).',
  },
  { type: 'bank_account.deleted', description: 'A payout destination was deleted.' },
  { type: 'export.succeeded', description: 'An export finished: its file can be downloaded until expires_at.' },
  { type: 'export.failed', description: 'An export failed; `error` says why.' },
  { type: 'test_clock.created', description: 'A test clock was created (sandbox).' },
  { type: 'test_clock.advancing', description: 'A test clock started advancing to a new time.' },
  {
    type: 'test_clock.ready',
    description: 'A test clock finished advancing: every piece of work due up to its time has run.',
  },
  { type: 'test_clock.internal_failure', description: 'A test clock failed to advance; `failure` says why.' },
  { type: 'test_clock.deleted', description: 'A test clock was deleted, with every object on it.' },
  { type: 'billing.meter.created', description: 'A billing meter was created.' },
  {
    type: 'billing.meter.updated',
    description: "A billing meter's display_name changed; data.previous_attributes has the name before.",
  },
  {
    type: 'billing.meter.deactivated',
    description: 'A billing meter was deactivated: events naming it are refused from then on (unknown_meter).',
  },
  { type: 'billing.meter.reactivated', description: 'A billing meter was reactivated: it counts its events again.' },
  {
    type: 'billing.alert.triggered',
    description:
      "A customer's usage on a meter reached a usage alert's gte (once per alert and customer): data.object has the alert, customer and value.",
  },
] as const;

export type EventType = (typeof eventCatalog)[number]['type'];

/** The names alone, in catalog order. */
export const eventTypes = eventCatalog.map((entry) => entry.type) as readonly EventType[];

const known = new Set<string>(eventTypes);
export function isEventType(value: string): value is EventType {
  return known.has(value);
}

/**
 * The one event of a subscription's projection write, from the row before and the
 * snapshot after: the first write is `subscription.created`; a status change names
 * its new state (`past_due`, `canceled`, `expired`, `paused`, and `resumed` when a
 * paused subscription bills again); otherwise a new plan is `plan_changed`;
 * anything else (a renewal, a trial that converted, cancel at period end, a retry
 * that failed or recovered) is `subscription.updated`.
 */
export function subscriptionEventType(
  previous: { status: string; planId: string } | null,
  next: { status: string; planId: string },
): EventType {
  if (!previous) return 'subscription.created';
  if (previous.status !== next.status) {
    if (next.status === 'past_due') return 'subscription.past_due';
    if (next.status === 'canceled') return 'subscription.canceled';
    if (next.status === 'expired') return 'subscription.expired';
    if (next.status === 'paused') return 'subscription.paused';
    if (previous.status === 'paused') return 'subscription.resumed';
  }
  if (previous.planId !== next.planId) return 'subscription.plan_changed';
  return 'subscription.updated';
}

/**
 * The events of a payment request's projection write: the first is `created`; an
 * end state names itself (`succeeded`, `failed` when it expired, `canceled`); a
 * declined attempt on the pay page is `payment_request.updated` and
 * `payment.failed`; anything else `updated`.
 */
export function paymentRequestEventTypes(
  previous: { status: string; attempts: number } | null,
  next: { status: string; attempts: number },
): EventType[] {
  if (!previous) return ['payment_request.created'];
  if (previous.status !== next.status) {
    if (next.status === 'succeeded') return ['payment_request.succeeded'];
    if (next.status === 'failed') return ['payment_request.failed'];
    if (next.status === 'canceled') return ['payment_request.canceled'];
  }
  if (next.status === 'pending' && next.attempts > previous.attempts)
    return ['payment_request.updated', 'payment.failed'];
  return ['payment_request.updated'];
}

/** A recurring payment request's write: `created` first, `canceled` when it ends, else `updated` (a period issued). */
export function recurringPaymentRequestEventType(
  previous: { status: string } | null,
  next: { status: string },
): EventType {
  if (!previous) return 'recurring_payment_request.created';
  if (previous.status !== next.status && next.status === 'canceled') return 'recurring_payment_request.canceled';
  return 'recurring_payment_request.updated';
}
