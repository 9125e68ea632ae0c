/**
 * Voiding an invoice as the API asks (POST /v1/invoices/{id}/void).
 *
 * An invoice a running workflow may be charging is voided BY that workflow, as a message it
 * applies between its own steps, so a charge in flight and the void are one decision:
 * - a subscription's invoice, by its subscription workflow (workflows/subscription.ts
 *   voidInvoiceUpdate, a command of its queue: dunning retries charge only between commands);
 *   voided beside the workflow, a void landing while a retry's charge was at the processor left
 *   the customer paying a void invoice;
 * - a finalized one-off invoice, by its invoice workflow (workflows/invoice.ts
 *   voidOneOffInvoiceUpdate, run one at a time with its charges).
 * Other invoices (a subscription that ended, a workflow that finished: nothing charges them any
 * more) change by the status check in transitionInvoice's UPDATE alone (`direct`).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import { Invoice, Subscription } from '../../db/entities/index.ts';
import { endedStatuses } from '../../domain/subscription.ts';
import { voidOneOffInvoiceUpdate } from '../../workflows/invoice.ts';
import { voidInvoiceUpdate } from '../../workflows/subscription.ts';
import { updateRefusal, workflowGone } from '../platform/workflow-messages.ts';
import type { TransitionResult } from './cycle-invoices.ts';

/**
 * Voids `invoiceId` of the scope's account through the workflow that owns it, or `direct`
 * (transitionInvoice) when none runs. A workflow that refuses (it ended meanwhile, or the invoice
 * is no longer voidable) or is gone also leaves it to `direct`, which then answers with the
 * invoice's status.
 */
export async function voidInvoiceThroughOwner(
  client: Client,
  em: EntityManager,
  invoiceId: string,
  scope: { accountId: string; livemode: boolean },
  direct: () => Promise<TransitionResult>,
): Promise<TransitionResult> {
  const invoice = await em.findOne(
    Invoice,
    { id: invoiceId, ...scope },
    { fields: ['subscriptionId', 'status', 'finalizedAt'] },
  );
  if (!invoice) return { outcome: 'not_found' };
  if (invoice.status !== 'open' && invoice.status !== 'uncollectible') return direct();
  let send: (() => Promise<unknown>) | null = null;
  if (invoice.subscriptionId) {
    const subscription = await em.findOne(Subscription, { id: invoice.subscriptionId }, { fields: ['status'] });
    if (subscription && !endedStatuses.includes(subscription.status)) {
      send = () =>
        client.workflow.getHandle(subscription.id).executeUpdate(voidInvoiceUpdate, { args: [{ invoiceId }] });
    }
  } else if (invoice.finalizedAt) {
    send = () => client.workflow.getHandle(invoiceId).executeUpdate(voidOneOffInvoiceUpdate, { args: [] });
  }
  if (!send) return direct();
  try {
    await send();
  } catch (error) {
    if (updateRefusal(error)?.type === 'invalid_state' || workflowGone(error)) return direct();
    throw error;
  }
  return { outcome: 'changed', invoice: await em.findOneOrFail(Invoice, { id: invoiceId }, { refresh: true }) };
}
