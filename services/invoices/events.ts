import type { EntityManager } from '@mikro-orm/postgresql';

import type { Event, Invoice } from '../../db/entities/index.ts';
import type { EventType } from '../../domain/events.ts';
import { serializeInvoice } from '../../objects/invoice.ts';
import { type EventInput, eventRows, recordEvents } from '../events/record.ts';

/** What an invoice's events need to show it as the API does (its signed `pdf` link). */
export interface InvoiceLinks {
  invoicePdfUrl(invoiceId: string): string;
}

/**
 * Records events about an invoice on the caller's database transaction, with the
 * invoice as GET /v1/invoices/{id} shows it. `transaction_id` is the payment
 * transaction the event is about: by default the one that paid the invoice (null
 * before it is paid); a failed attempt's events pass the failed transaction.
 */
export async function recordInvoiceEvents(
  em: EntityManager,
  links: InvoiceLinks,
  invoice: Invoice,
  types: EventType[],
  transactionId?: string | null,
): Promise<Event[]> {
  // One insert for all of them.
  return recordEvents(em, invoiceEventInputs(links, invoice, types, transactionId));
}

/** The rows of recordInvoiceEvents' events, for a caller that inserts them in a statement of its own (numberInvoice). */
export function invoiceEventRows(links: InvoiceLinks, invoice: Invoice, types: EventType[]) {
  return eventRows(invoiceEventInputs(links, invoice, types));
}

function invoiceEventInputs(
  links: InvoiceLinks,
  invoice: Invoice,
  types: EventType[],
  transactionId?: string | null,
): EventInput[] {
  const object = serializeInvoice(invoice, links.invoicePdfUrl(invoice.id));
  const about = {
    accountId: invoice.accountId,
    livemode: invoice.livemode,
    object,
    transactionId: transactionId === undefined ? (invoice.transactionId ?? null) : transactionId,
  };
  return types.map((type) => ({ ...about, type }));
}
