/**
 * A credit note on an OPEN invoice goes through the workflow that may be charging the invoice,
 * as a void does (services/invoices/void.ts): its amount due drops between that workflow's own
 * steps, never while a charge of it is at the processor, and the charges after it ask for what
 * is left.
 * - a subscription's invoice: its subscription workflow (workflows/subscription.ts creditInvoiceUpdate,
 *   a command of its queue; a dunning retry charges what is left, or dunning ends once nothing is);
 * - a finalized one-off invoice: its invoice workflow (workflows/invoice.ts creditOneOffInvoiceUpdate,
 *   run one at a time with its charges).
 * An invoice nothing charges any more (its subscription ended, its workflow finished) is credited
 * directly. Either way services/credit-notes/issue.ts createOpenInvoiceCreditNote decides, under the
 * invoice's row lock.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { CreditNote, Invoice, Subscription } from '../../db/entities/index.ts';
import type { OpenInvoiceCredit, OpenInvoiceCreditResult } from '../../domain/credit-notes.ts';
import { ApiError, type ErrorCode, errorStatus } from '../../domain/errors.ts';
import { endedStatuses } from '../../domain/subscription.ts';
import { creditOneOffInvoiceUpdate } from '../../workflows/invoice.ts';
import { creditInvoiceUpdate } from '../../workflows/subscription.ts';
import type { TemporalContext } from '../context.ts';
import type { InvoiceLinks } from '../invoices/events.ts';
import { updateRefusal, workflowGone } from '../platform/workflow-messages.ts';
import { createOpenInvoiceCreditNote } from './issue.ts';

/** The open invoice's credit note, made (or found, by its id: a retried activity) in one database transaction; a refusal is answered. */
export async function creditOpenInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  credit: OpenInvoiceCredit,
  at?: string,
): Promise<OpenInvoiceCreditResult> {
  try {
    const made = await createOpenInvoiceCreditNote(em, links, {
      id: credit.creditNoteId,
      scope: credit.scope,
      request: credit.request,
      at,
      pdfUrl: () => credit.pdfUrl,
    });
    return { creditNoteId: made.note.id, amountDue: made.amountDue, paid: made.paid };
  } catch (error) {
    if (error instanceof ApiError) return { refused: { type: error.code, message: error.message } };
    throw error;
  }
}

const asApiError = (type: string, message: string) =>
  new ApiError((type in errorStatus ? type : 'invalid_request') as ErrorCode, message);

/**
 * Credits the open invoice `credit.request.invoice` through its owner (above) with the context's Temporal client, or
 * directly with its links (the invoice's events carry its PDF link), and answers the credit note.
 */
export async function creditOpenInvoiceThroughOwner(
  ctx: { temporal: Pick<TemporalContext, 'client'>; links: InvoiceLinks },
  em: EntityManager,
  credit: OpenInvoiceCredit,
): Promise<CreditNote> {
  const { client } = ctx.temporal;
  const invoice = await em.findOne(
    Invoice,
    { id: credit.request.invoice, accountId: credit.scope.accountId, livemode: credit.scope.livemode },
    { fields: ['subscriptionId', 'status', 'finalizedAt'] },
  );
  if (!invoice) throw new ApiError('not_found', 'invoice: no such invoice.');
  const direct = async () => {
    const result = await creditOpenInvoice(em.fork(), ctx.links, credit);
    if ('refused' in result) throw asApiError(result.refused.type, result.refused.message);
  };
  let send: (() => Promise<unknown>) | null = null;
  if (invoice.subscriptionId) {
    const subscription = await em.findOne(Subscription, { id: invoice.subscriptionId }, { fields: ['status'] });
    if (subscription && !endedStatuses.includes(subscription.status)) {
      send = () => client.workflow.getHandle(subscription.id).executeUpdate(creditInvoiceUpdate, { args: [credit] });
    }
  } else if (invoice.finalizedAt) {
    send = () => client.workflow.getHandle(invoice.id).executeUpdate(creditOneOffInvoiceUpdate, { args: [credit] });
  }
  if (!send) await direct();
  else {
    try {
      await send();
    } catch (error) {
      const refusal = updateRefusal(error);
      // Ended meanwhile, gone, or the invoice no longer open there: decided directly (which answers with the invoice's status).
      if (refusal?.type === 'invalid_state' || workflowGone(error)) await direct();
      else if (refusal) throw asApiError(refusal.type ?? 'invalid_request', refusal.message);
      else throw error;
    }
  }
  return em.fork().findOneOrFail(CreditNote, { id: credit.creditNoteId });
}
