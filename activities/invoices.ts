import type { EntityManager } from '@mikro-orm/postgresql';
import { Invoice, type InvoiceLine } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import type { ChargeOutcome } from './charges.ts';

export interface OpenInvoiceInput {
  /** subscription + cycle: one invoice per billing cycle, whatever happens to the activity. */
  billingKey: string;
  subscriptionId: string;
  accountId: string;
  customerId: string;
  currency: string;
  lines: InvoiceLine[];
  periodStart: string;
  periodEnd: string;
  /** Workflow time of issue, so invoices dated in skipped test time read right. */
  issuedAt: string;
  livemode: boolean;
}

export interface OpenedInvoice {
  invoiceId: string;
  number: string;
  amountDue: number;
}

/** Records an open invoice for a billing cycle, or returns the one already recorded for it. */
export async function openInvoice(em: EntityManager, input: OpenInvoiceInput): Promise<OpenedInvoice> {
  const existing = await em.findOne(Invoice, { billingKey: input.billingKey });
  if (existing) return { invoiceId: existing.id, number: existing.number, amountDue: existing.amountDue };

  const amountDue = input.lines.reduce((sum, line) => sum + line.amount * line.quantity, 0);
  const [{ nextval }] = await em.execute<{ nextval: string }[]>(`select nextval('invoice_number_seq') as nextval`);
  const invoice = em.create(Invoice, {
    id: newId('invoice'),
    number: `INV-${String(nextval).padStart(6, '0')}`,
    billingKey: input.billingKey,
    subscriptionId: input.subscriptionId,
    accountId: input.accountId,
    customerId: input.customerId,
    status: 'open',
    currency: input.currency,
    amountDue,
    amountPaid: 0,
    lines: input.lines,
    periodStart: new Date(input.periodStart),
    periodEnd: new Date(input.periodEnd),
    chargeId: null,
    livemode: input.livemode,
    createdAt: new Date(input.issuedAt),
  });
  await em.flush();
  return { invoiceId: invoice.id, number: invoice.number, amountDue };
}

/** Marks an invoice paid by a successful charge. Repeating it changes nothing. */
export async function settleInvoice(em: EntityManager, invoiceId: string, charge: ChargeOutcome): Promise<void> {
  if (charge.status !== 'succeeded') return;
  const invoice = await em.findOneOrFail(Invoice, { id: invoiceId });
  if (invoice.status !== 'open') return;
  invoice.status = 'paid';
  invoice.amountPaid = invoice.amountDue;
  invoice.chargeId = charge.chargeId;
  await em.flush();
}
