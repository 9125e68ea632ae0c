import { z } from '@hono/zod-openapi';
import { collectionMethods, invoiceStatuses, type Invoice } from '../db/entities/index.ts';
import { signedInvoicePdfUrl } from '../domain/invoice-links.ts';
import { lineAmount } from '../domain/invoice-lines.ts';
import { timestamp } from './common.ts';
import { PriceRowSchema } from './plan.ts';

/** An invoice with its lines; `pdf` is the signed link built by the caller. */

export const InvoiceLineSchema = z
  .object({
    object: z.literal('line_item'),
    description: z.string(),
    plan: z.string().nullable().openapi({ description: 'The plan (price) the line bills; null on lines issued before lines named it' }),
    quantity: z.number().int(),
    unit_amount: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'Per unit, in minor units; negative for a credit. null when the amount is not a whole unit amount × quantity (a tiered or package price, or a prorated line of several units): see `breakdown`' }),
    amount: z.number().int().openapi({ description: 'The line: unit_amount × quantity, or the tiered, package or prorated amount' }),
    breakdown: z
      .array(PriceRowSchema)
      .nullable()
      .openapi({ description: 'How a tiered or package price made the amount, row by row (docs/pricing.md); null for per-unit and prorated lines' }),
    period_start: timestamp,
    period_end: timestamp,
    proration: z.boolean().openapi({ description: 'A line of a plan change, prorated by the unused fraction of the period' }),
  })
  .openapi('InvoiceLine');

export const InvoiceSchema = z
  .object({
    id: z.string(),
    object: z.literal('invoice'),
    number: z.string().nullable().openapi({ example: 'ACME-0001', description: "The account's own sequence in this mode, without gaps; null while the invoice is a draft (numbered at finalize)" }),
    account_id: z.string(),
    customer_id: z.string(),
    customer_email: z.string().nullable().openapi({ description: "The customer's email when the invoice was issued" }),
    customer_name: z.string().nullable(),
    subscription_id: z.string().nullable(),
    status: z.enum(invoiceStatuses),
    currency: z.string(),
    lines: z.array(InvoiceLineSchema),
    subtotal: z.number().int(),
    total: z.number().int(),
    amount_due: z.number().int().openapi({ description: 'What the customer is asked to pay (the total, or 0 for a credit)' }),
    amount_paid: z.number().int(),
    amount_remaining: z.number().int().openapi({ description: 'amount_due − amount_paid (0 once void)' }),
    attempt_count: z.number().int().openapi({ description: 'Payment attempts made' }),
    transaction: z.string().nullable().openapi({ description: 'The succeeded payment transaction that paid it' }),
    amount_refunded: z.number().int().openapi({ description: 'Refunded of amount_paid, through refunds of that payment' }),
    period_start: timestamp,
    period_end: timestamp,
    created_at: timestamp,
    paid_at: timestamp.nullable(),
    voided_at: timestamp.nullable(),
    marked_uncollectible_at: timestamp.nullable(),
    pdf: z.string().openapi({
      description:
        "SPEC.md's `invoice.pdf`: a link to the invoice as a PDF. Signed, so it opens without an API key (from an email, say); " +
        'GET /v1/invoices/{id}/pdf serves the same file with normal authentication.',
      example: 'http://localhost:3000/invoices/inv_01jd3x5k8q0m2v7c9r4t6y1w3e/pdf?token=…',
    }),
    collection_method: z.enum(collectionMethods).openapi({ description: 'charge_automatically (the customer\'s payment method is charged, retried as dunning says; every subscription invoice) or send_invoice (emailed with a pay link and a due date)' }),
    days_until_due: z.number().int().nullable().openapi({ description: 'send_invoice: days from finalize to the due date' }),
    due_date: timestamp.nullable().openapi({ description: 'One-off invoices: when payment is due, set at finalize (charge_automatically: at once); null on drafts and subscription invoices (due on issue)' }),
    description: z.string().nullable().openapi({ description: 'A one-off invoice\'s note to the customer (emails and PDF)' }),
    finalized_at: timestamp.nullable().openapi({ description: 'When a one-off invoice left draft; null on drafts and subscription invoices (open when issued)' }),
    livemode: z.boolean(),
  })
  .openapi('Invoice');
type InvoiceBody = z.infer<typeof InvoiceSchema>;

export function invoicePdfUrl(config: { publicUrl: string; auth: { secret: string } }, invoiceId: string): string {
  return signedInvoicePdfUrl(config.publicUrl, config.auth.secret, invoiceId);
}

/** What is left to pay: 0 once void. */
export const amountRemaining = (invoice: Invoice) => (invoice.status === 'void' ? 0 : Number(invoice.amountDue) - Number(invoice.amountPaid));

export function serializeInvoice(invoice: Invoice, pdf: string): InvoiceBody {
  return {
    id: invoice.id,
    object: 'invoice',
    number: invoice.status === 'draft' ? null : invoice.number,
    account_id: invoice.accountId,
    customer_id: invoice.customerId,
    customer_email: invoice.customerEmail ?? null,
    customer_name: invoice.customerName ?? null,
    subscription_id: invoice.subscriptionId ?? null,
    status: invoice.status,
    currency: invoice.currency,
    lines: invoice.lines.map((line) => ({
      object: 'line_item' as const,
      description: line.description,
      plan: line.plan ?? null,
      quantity: line.quantity,
      unit_amount: line.total === undefined ? line.amount : null,
      amount: lineAmount(line),
      breakdown: line.breakdown ?? null,
      period_start: new Date(line.period_start).toISOString(),
      period_end: new Date(line.period_end).toISOString(),
      proration: line.proration ?? false,
    })),
    subtotal: Number(invoice.subtotal),
    total: Number(invoice.total),
    amount_due: Number(invoice.amountDue),
    amount_paid: Number(invoice.amountPaid),
    amount_remaining: amountRemaining(invoice),
    attempt_count: invoice.attemptCount,
    transaction: invoice.transactionId ?? null,
    amount_refunded: Number(invoice.amountRefunded ?? 0),
    period_start: invoice.periodStart.toISOString(),
    period_end: invoice.periodEnd.toISOString(),
    created_at: invoice.createdAt.toISOString(),
    paid_at: invoice.paidAt?.toISOString() ?? null,
    voided_at: invoice.voidedAt?.toISOString() ?? null,
    marked_uncollectible_at: invoice.markedUncollectibleAt?.toISOString() ?? null,
    pdf,
    collection_method: invoice.collectionMethod ?? 'charge_automatically',
    days_until_due: invoice.daysUntilDue ?? null,
    due_date: invoice.dueDate?.toISOString() ?? null,
    description: invoice.description ?? null,
    finalized_at: invoice.finalizedAt?.toISOString() ?? null,
    livemode: invoice.livemode,
  };
}
