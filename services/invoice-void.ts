/**
 * Voiding an invoice as the API asks (POST /v1/invoices/{id}/void).
 *
 * An invoice of a running subscription is voided BY its subscription workflow, as a
 * command of its queue (workflows/subscription.ts voidInvoiceUpdate): the workflow
 * charges that invoice only between such commands (dunning retries), so a charge in
 * flight and the void are one decision. Voided beside the workflow, a void landing
 * while a retry's charge was at the processor left the customer paying a void invoice.
 * Other invoices (of an ended subscription, whose workflow charges nothing more) change
 * by the status check in transitionInvoice's UPDATE alone.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Invoice, Subscription } from '../db/entities/index.ts';
import { endedStatuses } from '../domain/subscription.ts';
import { voidInvoiceUpdate } from '../workflows/subscription.ts';
import type { TransitionResult } from './invoices.ts';

/**
 * Voids `invoiceId` of the scope's account. `direct` is the plain transition
 * (transitionInvoice), used for invoices no running workflow charges, and when the
 * subscription's workflow refuses because it ended meanwhile or the invoice is no
 * longer voidable (the transition then refuses it too, with the invoice's status).
 */
export async function voidInvoiceThroughOwner(
  client: Client,
  em: EntityManager,
  invoiceId: string,
  scope: { accountId: string; livemode: boolean },
  direct: () => Promise<TransitionResult>,
): Promise<TransitionResult> {
  const invoice = await em.findOne(Invoice, { id: invoiceId, ...scope }, { fields: ['subscriptionId', 'status'] });
  if (!invoice) return { outcome: 'not_found' };
  const subscription = invoice.subscriptionId ? await em.findOne(Subscription, { id: invoice.subscriptionId }, { fields: ['status'] }) : null;
  const voidable = invoice.status === 'open' || invoice.status === 'uncollectible';
  if (!subscription || endedStatuses.includes(subscription.status) || !voidable) return direct();
  try {
    await client.workflow.getHandle(subscription.id).executeUpdate(voidInvoiceUpdate, { args: [{ invoiceId }] });
  } catch (error) {
    const refused = error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure && error.cause.type === 'invalid_state';
    const gone = error instanceof WorkflowNotFoundError || (error instanceof Error && /already completed/i.test(error.message));
    if (refused || gone) return direct();
    throw error;
  }
  const voided = await em.findOneOrFail(Invoice, { id: invoiceId }, { refresh: true });
  return { outcome: 'changed', invoice: voided };
}
