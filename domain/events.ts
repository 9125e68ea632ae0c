/**
 * The catalog of event types: every state change the engine records in `events`
 * (see db/entities/event.ts) and serves at GET /v1/events. The README and the
 * OpenAPI document publish this list; a new emitter adds its type here first.
 */
export const eventCatalog = [
  { type: 'transaction.created', description: 'A transaction was created (payment, credit or refund), whatever its first status.' },
  { type: 'transaction.succeeded', description: 'A transaction reached succeeded: its money is on the balance.' },
  { type: 'transaction.failed', description: 'A transaction reached failed (declined payment, or a pending payment that failed to settle).' },
  { type: 'transaction.canceled', description: 'A pending transaction was canceled before it settled.' },
  { type: 'transaction.updated', description: "A transaction's editable fields (reference, metadata) changed." },
  { type: 'payment.succeeded', description: 'A payment (a payment transaction, from the API, a subscription invoice or a payment request) succeeded.' },
  { type: 'payment.failed', description: 'A payment failed: a payment transaction that failed, or a declined attempt on a payment request.' },
  { type: 'payment_request.created', description: 'A payment request was created and its pay link issued.' },
  { type: 'payment_request.updated', description: 'A payment request changed without reaching an end state (for example a declined attempt).' },
  { type: 'payment_request.succeeded', description: 'A payment request was paid.' },
  { type: 'payment_request.failed', description: 'A payment request ended unpaid (it expired).' },
  { type: 'payment_request.canceled', description: 'A payment request was canceled.' },
  { type: 'recurring_payment_request.created', description: 'A recurring payment request was created.' },
  { type: 'recurring_payment_request.updated', description: 'A recurring payment request changed (a period issued, paused, resumed).' },
  { type: 'recurring_payment_request.canceled', description: 'A recurring payment request was canceled or completed its last period.' },
  { type: 'subscription.created', description: 'A subscription was created (trialing, active or incomplete).' },
  { type: 'subscription.updated', description: 'A subscription changed without a status change below (renewal, cancel at period end set or cleared, trial ended).' },
  { type: 'subscription.past_due', description: 'A subscription charge failed and the subscription entered dunning.' },
  { type: 'subscription.canceled', description: 'A subscription ended (canceled now, at period end, or after dunning).' },
  { type: 'subscription.paused', description: 'A subscription was paused (by request or as the end of dunning).' },
  { type: 'subscription.resumed', description: 'A paused or past-due subscription became active again.' },
  { type: 'subscription.plan_changed', description: "A subscription's plan changed (now, or a scheduled change that took effect)." },
  { type: 'invoice.created', description: 'An invoice was opened.' },
  { type: 'invoice.paid', description: 'An invoice was paid.' },
  { type: 'invoice.payment_failed', description: "A charge for an open invoice failed; the invoice stays open while dunning retries." },
  { type: 'invoice.voided', description: 'An invoice was voided.' },
  { type: 'invoice.marked_uncollectible', description: 'An invoice was marked uncollectible.' },
  { type: 'account.updated', description: "The account's profile or settings changed." },
  { type: 'account.closed', description: 'The account was closed.' },
  { type: 'customer.created', description: 'A customer was created.' },
  { type: 'customer.updated', description: 'A customer was updated.' },
  { type: 'customer.deleted', description: 'A customer was deleted.' },
  { type: 'payout.created', description: 'A payout was created; its amount left the available balance.' },
  { type: 'payout.paid', description: 'A payout arrived at its destination.' },
  { type: 'payout.failed', description: 'A payout failed; its amount returned to the balance.' },
] as const;

export type EventType = (typeof eventCatalog)[number]['type'];

/** The names alone, in catalog order. */
export const eventTypes = eventCatalog.map((entry) => entry.type) as readonly EventType[];

const known = new Set<string>(eventTypes);
export function isEventType(value: string): value is EventType {
  return known.has(value);
}
