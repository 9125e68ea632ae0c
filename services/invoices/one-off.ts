import { LockMode } from '@mikro-orm/core';
/**
 * One-off invoices (issue #26): POST /v1/invoices makes a draft of a customer's invoice items;
 * finalize numbers it, fixes its lines and due date and hands its time to its invoice workflow
 * (workflows/invoice.ts, workflow id = the invoice id), which collects it.
 *
 * A draft has no number (its `number` column holds its id until finalize, unique and never shown)
 * and records no event; finalize records `invoice.created` (numbered, as a subscription invoice's)
 * and `invoice.finalized`. Finalize locks the draft row (`for update`), as item changes and a
 * draft's deletion do, so the lines it bills are the items attached at that instant.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import {
  Account,
  type CollectionMethod,
  Customer,
  Invoice,
  InvoiceItem,
  type InvoiceStatus,
} from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { invoicePrefix } from '../../domain/invoice-number.ts';
import { humanizeInstants } from '../../domain/locale.ts';
import { dueDateOf, invoiceEmail, type InvoiceEmailKind } from '../../domain/one-off-invoices.ts';
import { serializeInvoice } from '../../objects/invoice.ts';
import type { Mailer } from '../email/mailer.ts';
import { sendEmailOnce, type TestModes } from '../email/send-once.ts';
import { recordEvents } from '../events/record.ts';
import { issueWithAdjustments } from './adjustments.ts';
import { numberInvoice } from './cycle-invoices.ts';
import { type InvoiceLinks, recordInvoiceEvents } from './events.ts';
import { claimPendingItems, customerNow, itemsOf, ownCustomer, totalsOf } from './items.ts';
import { pdfAdjustments } from './pdf.ts';

type Scope = { accountId: string; livemode: boolean };

export interface CreateDraftInput {
  customer: string;
  collection_method: CollectionMethod;
  days_until_due?: number;
  description?: string;
  currency?: string;
  pending_invoice_items_behavior: 'include' | 'exclude';
}

export async function createDraftInvoice(em: EntityManager, scope: Scope, input: CreateDraftInput): Promise<Invoice> {
  const customer = await ownCustomer(em, scope, input.customer);
  if (input.collection_method === 'send_invoice' && input.days_until_due === undefined)
    throw new ApiError('invalid_request', 'days_until_due: required when collection_method is send_invoice.');
  if (input.collection_method === 'charge_automatically' && input.days_until_due !== undefined)
    throw new ApiError(
      'invalid_request',
      'days_until_due: only with collection_method send_invoice (charge_automatically charges at finalize).',
    );
  if (input.collection_method === 'send_invoice' && !customer.email)
    throw new ApiError('invalid_request', `customer: ${customer.id} has no email to send the invoice to.`);
  const now = await customerNow(em, customer);
  let currency = input.currency;
  if (!currency) {
    const oldest =
      input.pending_invoice_items_behavior === 'include'
        ? await em.findOne(
            InvoiceItem,
            { customerId: customer.id, ...scope, invoiceId: null },
            { orderBy: { id: 'asc' } },
          )
        : null;
    // Else the customer's own currency (docs/pricing.md#currencies).
    currency = oldest?.currency ?? customer.currency ?? undefined;
    if (!currency)
      throw new ApiError(
        'invalid_request',
        'currency: required when no pending invoice item of the customer gives it and the customer has no currency.',
      );
  }
  return em.transactional(async (tx) => {
    const id = newId('invoice');
    const invoice = tx.create(Invoice, {
      id,
      number: id,
      billingKey: `invoice:${id}`,
      billingReason: 'manual',
      subscriptionId: null,
      accountId: scope.accountId,
      customerId: customer.id,
      customerEmail: customer.email ?? null,
      customerName: customer.name ?? null,
      status: 'draft',
      currency: currency!,
      subtotal: 0,
      total: 0,
      amountDue: 0,
      amountPaid: 0,
      attemptCount: 0,
      lines: [],
      periodStart: now,
      periodEnd: now,
      chargeId: null,
      transactionId: null,
      amountRefunded: 0,
      livemode: scope.livemode,
      createdAt: now,
      paidAt: null,
      voidedAt: null,
      markedUncollectibleAt: null,
      collectionMethod: input.collection_method,
      daysUntilDue: input.days_until_due ?? null,
      dueDate: null,
      description: input.description ?? null,
      finalizedAt: null,
    });
    await tx.flush();
    if (input.pending_invoice_items_behavior === 'include') {
      const items = await claimPendingItems(tx, {
        ...scope,
        customerId: customer.id,
        currency: currency!,
        invoiceId: id,
      });
      if (items.length > 0)
        Object.assign(invoice, totalsOf(items), {
          periodStart: minDate(items.map((i) => i.periodStart)),
          periodEnd: maxDate(items.map((i) => i.periodEnd)),
        });
      await tx.flush();
    }
    return invoice;
  });
}

const minDate = (dates: Date[]) => new Date(Math.min(...dates.map((d) => d.getTime())));
const maxDate = (dates: Date[]) => new Date(Math.max(...dates.map((d) => d.getTime())));

/** Deletes a draft; its items are pending again (Stripe's rule). 409 for an invoice that is not a draft. */
export async function deleteDraftInvoice(em: EntityManager, scope: Scope, id: string): Promise<Invoice> {
  return em.transactional(async (tx) => {
    const invoice = await tx.findOne(Invoice, { id, ...scope }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!invoice) throw new ApiError('not_found', `No such invoice: ${id}.`);
    if (invoice.status !== 'draft')
      throw new ApiError(
        'invalid_state',
        `Invoice ${invoice.number} is ${invoice.status}: only a draft can be deleted (void it instead).`,
      );
    await tx.nativeUpdate(InvoiceItem, { invoiceId: id }, { invoiceId: null });
    await tx.nativeDelete(Invoice, { id });
    return invoice;
  });
}

/** What the invoice workflow knows of its invoice once finalized. */
export interface FinalizedInvoice {
  invoiceId: string;
  number: string;
  status: InvoiceStatus;
  billingKey: string;
  accountId: string;
  customerId: string;
  livemode: boolean;
  currency: string;
  amountDue: number;
  collectionMethod: CollectionMethod;
  dueDate: string;
  finalizedAt: string;
}

const finalizedView = (invoice: Invoice): FinalizedInvoice => ({
  invoiceId: invoice.id,
  number: invoice.number,
  status: invoice.status,
  billingKey: invoice.billingKey,
  accountId: invoice.accountId,
  customerId: invoice.customerId,
  livemode: invoice.livemode,
  currency: invoice.currency,
  amountDue: Number(invoice.amountDue),
  collectionMethod: invoice.collectionMethod ?? 'charge_automatically',
  dueDate: (invoice.dueDate ?? invoice.createdAt).toISOString(),
  finalizedAt: (invoice.finalizedAt ?? invoice.createdAt).toISOString(),
});

/**
 * Finalizes a draft at `at` (the workflow's time): its lines are the items attached now, its number the
 * next of the account's sequence (numberInvoice, as every invoice's), its status `open`, its due date set.
 * Idempotent: an invoice finalized already answers as it is (a retried activity); null for an invoice that
 * is gone (the draft was deleted) or empty (no item: nothing to bill).
 */
export async function finalizeOneOffInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  at: string,
): Promise<FinalizedInvoice | { refused: string }> {
  return em.transactional(async (tx) => {
    const invoice = await tx.findOne(Invoice, { id: invoiceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!invoice) return { refused: `No such invoice: ${invoiceId} (a draft deleted before it was finalized).` };
    if (invoice.status !== 'draft') return finalizedView(invoice);
    const items = await itemsOf(tx, invoiceId);
    if (items.length === 0)
      return {
        refused: `Invoice ${invoiceId} has no invoice items: attach some (POST /v1/invoice_items with invoice) before finalizing.`,
      };
    const account = await tx.findOneOrFail(Account, { id: invoice.accountId });
    const dateStyle = { timeZone: account.settings.timezone, locale: account.settings.language };
    const totals = totalsOf(items);
    const when = new Date(at);
    Object.assign(invoice, {
      ...totals,
      lines: totals.lines.map((line) => ({ ...line, description: humanizeInstants(line.description, dateStyle) })),
      status: 'open' as const,
      periodStart: minDate(items.map((i) => i.periodStart)),
      periodEnd: maxDate(items.map((i) => i.periodEnd)),
      finalizedAt: when,
      dueDate: dueDateOf(when, invoice.collectionMethod ?? 'charge_automatically', invoice.daysUntilDue ?? null),
    });
    await tx.flush();
    // Discounts, taxes and the customer's balance (locked from here to the commit), as every invoice's when issued.
    await issueWithAdjustments(tx, invoice, when);
    const [created] = await recordInvoiceEvents(tx, links, invoice, ['invoice.created']);
    invoice.number = await numberInvoice(tx, {
      invoiceId,
      eventId: created!.id,
      accountId: invoice.accountId,
      livemode: invoice.livemode,
      prefix: invoicePrefix(account.name, account.id),
    });
    await recordInvoiceEvents(tx, links, invoice, ['invoice.finalized']);
    const view = finalizedView(invoice);
    // The managed entity's number was set by SQL: detached, so no flush writes it again.
    tx.clear();
    return view;
  });
}

/** `paid_out_of_band`: the customer paid outside the engine (a bank transfer, cash). No charge, no money on the ledger: `invoice.paid` only. */
export async function markPaidOutOfBand(
  em: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  at: string,
): Promise<boolean> {
  return em.transactional(async (tx) => {
    const changed = await tx.nativeUpdate(
      Invoice,
      { id: invoiceId, status: { $in: ['open', 'uncollectible'] } },
      { status: 'paid', paidAt: new Date(at) },
    );
    if (changed > 0)
      await recordInvoiceEvents(tx, links, await tx.findOneOrFail(Invoice, { id: invoiceId }, { refresh: true }), [
        'invoice.paid',
      ]);
    return changed > 0;
  });
}

export interface InvoiceEmailDeps {
  mailer: Mailer;
  links: InvoiceLinks;
  processors?: TestModes;
}

/**
 * Emails a send_invoice invoice (its finalize email or a reminder) to the customer, once per
 * (invoice, kind). A reminder also records `invoice.reminder_sent`, in the same call as the send.
 */
export async function sendOneOffInvoiceEmail(
  em: EntityManager,
  deps: InvoiceEmailDeps,
  input: { invoiceId: string; kind: InvoiceEmailKind; payUrl: string },
): Promise<boolean> {
  const invoice = await em.findOneOrFail(Invoice, { id: input.invoiceId });
  const [account, customer] = await Promise.all([
    em.findOneOrFail(Account, { id: invoice.accountId }),
    em.findOne(Customer, { id: invoice.customerId }),
  ]);
  const to = invoice.customerEmail ?? customer?.email;
  if (!to) return false;
  const brand = brandOf(account, '');
  const email = invoiceEmail(input.kind, {
    accountName: brand.name,
    number: invoice.number,
    currency: invoice.currency,
    lines: invoice.lines,
    subtotal: Number(invoice.subtotal),
    total: Number(invoice.total),
    amountDue: Number(invoice.amountDue) - Number(invoice.amountPaid),
    adjustments: { total: Number(invoice.total), ...pdfAdjustments(invoice) },
    dueDate: invoice.dueDate ?? invoice.createdAt,
    description: invoice.description ?? null,
    payUrl: input.payUrl,
    pdfUrl: deps.links.invoicePdfUrl(invoice.id),
    style: { timeZone: account.settings.timezone, locale: account.settings.language },
  });
  const sent = await sendEmailOnce(
    em,
    deps.mailer,
    {
      dedupeKey: `${invoice.id}:email:${input.kind}`,
      accountId: account.id,
      fromName: brand.name,
      to,
      livemode: invoice.livemode,
      ...email,
    },
    deps.processors,
  );
  // A reminder is an event too, recorded by the call that sent it.
  if (input.kind !== 'finalized' && sent.sent) {
    await em.transactional((tx) =>
      recordEvents(tx, [
        {
          accountId: invoice.accountId,
          livemode: invoice.livemode,
          type: 'invoice.reminder_sent',
          object: serializeInvoice(invoice, deps.links.invoicePdfUrl(invoice.id)),
          transactionId: null,
        },
      ]),
    );
  }
  return sent.sent;
}
