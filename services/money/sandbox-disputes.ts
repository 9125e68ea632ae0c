/**
 * The sandbox's disputes: a payment made with the dispute test card (`pm_card_createDispute`, as on
 * Stripe's test mode) succeeds, and then the sandbox raises `dispute.created` for its charge through
 * the same handler a verified Stripe webhook reaches (handleProcessorEvent), so it records
 * payment.disputed exactly as a real dispute does. The sandbox has no webhooks to send it by, so the
 * payment flow hands it over in-process once the payment's success has committed (continuePayment).
 * Idempotent per charge: the event id is derived from the charge, and processor_events keeps one row
 * per event id, so a retried request or the reconciler asking again disputes it once.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { SandboxProcessorCharge, type Transaction } from '../../db/entities/index.ts';
import { isSandboxPaymentMethod, sandboxPaymentMethods } from '../processors/sandbox.ts';
import { handleProcessorEvent, type ProcessorEventResult } from './processor-events.ts';

/** Whether a sandbox test payment method is disputed after it succeeds. */
export function sandboxMethodDisputes(paymentMethod: string | null | undefined): boolean {
  if (!paymentMethod || !isSandboxPaymentMethod(paymentMethod)) return false;
  const method = sandboxPaymentMethods[paymentMethod];
  return 'disputes' in method && method.disputes === true;
}

/**
 * Raises the sandbox's `dispute.created` for a succeeded payment whose sandbox charge was made with the
 * dispute card. Null when there is nothing to dispute: another card, a payment not succeeded, or a charge
 * that is not the sandbox's (on Stripe the test card's dispute arrives as Stripe's own webhook).
 */
export async function raiseSandboxDispute(
  em: EntityManager,
  payment: Pick<Transaction, 'status' | 'processorChargeId' | 'livemode'>,
): Promise<ProcessorEventResult | null> {
  if (payment.status !== 'succeeded' || !payment.processorChargeId) return null;
  const charge = await em.findOne(SandboxProcessorCharge, { id: payment.processorChargeId, status: 'succeeded' });
  if (!charge || !sandboxMethodDisputes(charge.paymentMethod)) return null;
  const dispute = {
    id: `dp_sandbox_${charge.id}`,
    charge: charge.id,
    amount: charge.amount,
    currency: charge.currency,
    reason: 'fraudulent',
  };
  return handleProcessorEvent(em, {
    processor: 'sandbox',
    eventId: `evt_sandbox_dispute_${charge.id}`,
    type: 'dispute.created',
    livemode: payment.livemode,
    payload: { type: 'dispute.created', data: { object: dispute } },
    event: {
      type: 'dispute.created',
      processorChargeId: charge.id,
      processorDisputeId: dispute.id,
      amount: dispute.amount,
      currency: dispute.currency,
      reason: dispute.reason,
    },
  });
}
