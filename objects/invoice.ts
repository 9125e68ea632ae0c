import { z } from '@hono/zod-openapi';

import { collectionMethods, type Invoice, type InvoiceLine, invoiceStatuses } from '../db/entities/index.ts';
import { billingReasonOf, billingReasons } from '../domain/invoice-billing-reason.ts';
import { lineAmount } from '../domain/invoice-lines.ts';
import { signedInvoicePdfUrl } from '../domain/invoice-links.ts';
import { type TaxExempt, taxExemptions } from '../domain/invoice-totals.ts';
import { timestamp } from './common.ts';
import { PriceRowSchema } from './plan.ts';

/** An invoice with its lines; `pdf` is the signed link built by the caller. */

export const DiscountAmountSchema = z
  .object({
    discount: z.string().openapi({ description: 'The discount (di_…)', example: 'di_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    amount: z.number().int().openapi({ description: 'In minor units, taken off', example: 600 }),
  })
  .openapi('DiscountAmount');

export const TaxAmountSchema = z
  .object({
    tax_rate: z.string().openapi({ example: 'txr_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    display_name: z.string().openapi({ example: 'VAT' }),
    percentage: z.string().openapi({ example: '19' }),
    inclusive: z
      .boolean()
      .openapi({ description: 'The tax is included in the line amount (true) or added to it (false)' }),
    taxable_amount: z
      .number()
      .int()
      .openapi({ description: 'The amount the tax was computed on, excluding tax', example: 2400 }),
    amount: z.number().int().openapi({ example: 456 }),
  })
  .openapi('TaxAmount');

export const InvoiceLineSchema = z
  .object({
    object: z.literal('line_item'),
    description: z.string(),
    plan: z
      .string()
      .nullable()
      .openapi({ description: 'The plan (price) the line bills; null on lines issued before lines named it' }),
    quantity: z.number().openapi({ description: "Units; a usage line's may be a decimal (exact in quantity_decimal)" }),
    quantity_decimal: z.string().optional().openapi({
      description:
        'Usage lines: the exact quantity the meter aggregated over the usage period (up to 6 decimal places)',
      example: '1250.5',
    }),
    meter: z.string().optional().openapi({
      description:
        'Usage lines: the meter (mtr_) whose usage the line bills; period_start/period_end are the usage period',
      example: 'mtr_01jd3x9c4e6g8j0l2n4q6s8u0w',
    }),
    unit_amount: z.number().int().nullable().openapi({
      description:
        'Per unit, in minor units; negative for a credit. null when the amount is not a whole unit amount × quantity (a tiered or package price, or a prorated line of several units): see `breakdown`',
    }),
    amount: z
      .number()
      .int()
      .openapi({ description: 'The line: unit_amount × quantity, or the tiered, package or prorated amount' }),
    breakdown: z.array(PriceRowSchema).nullable().openapi({
      description:
        'How a tiered or package price made the amount, row by row (docs/pricing.md); null for per-unit and prorated lines',
    }),
    period_start: timestamp,
    period_end: timestamp,
    proration: z
      .boolean()
      .openapi({ description: 'A line of a plan change, prorated by the unused fraction of the period' }),
    discount_amounts: z
      .array(DiscountAmountSchema)
      .openapi({ description: "The line's share of the invoice's discount (docs/discounts-and-taxes.md)" }),
    tax_amounts: z
      .array(TaxAmountSchema)
      .openapi({ description: "The line's taxes, one per rate, each rounded on the line" }),
  })
  .openapi('InvoiceLine');

/** The totals an invoice (and an upcoming invoice) shows after its lines (domain/invoice-totals.ts). */
export const InvoiceTotalsShape = {
  discounts: z
    .array(z.string())
    .openapi({ description: "The discounts applied (at most one: the subscription's, else the customer's)" }),
  total_discount_amounts: z.array(DiscountAmountSchema),
  total_excluding_tax: z.number().int().openapi({ description: 'subtotal − discounts − inclusive tax' }),
  tax: z.number().int().openapi({ description: 'All the tax, inclusive and exclusive' }),
  total_tax_amounts: z
    .array(TaxAmountSchema)
    .openapi({ description: "Tax per rate: the sum of its lines' (each rounded on its line)" }),
  total: z
    .number()
    .int()
    .openapi({ description: 'subtotal − discounts + exclusive tax (= total_excluding_tax + tax)' }),
  starting_balance: z
    .number()
    .int()
    .openapi({ description: "The customer's balance before the invoice (negative: credit it holds)" }),
  ending_balance: z.number().int().openapi({
    description:
      "The customer's balance after it: what credit is left, or a credit the invoice added (a total below zero)",
  }),
  customer_tax_exempt: z
    .enum(taxExemptions)
    .openapi({ description: 'none, exempt (no tax) or reverse (reverse charge: no tax and the legal note)' }),
  customer_tax_ids: z
    .array(z.object({ type: z.string(), value: z.string() }))
    .openapi({ description: "The customer's tax ids as issued" }),
  customer_address: z
    .object({ country: z.string().nullable(), state: z.string().nullable() })
    .nullable()
    .openapi({ description: "The customer's tax address as issued" }),
};

export const InvoiceSchema = z
  .object({
    id: z.string(),
    object: z.literal('invoice'),
    number: z.string().nullable().openapi({
      example: 'ACME-0001',
      description:
        "The account's own sequence in this mode, without gaps; null while the invoice is a draft (numbered at finalize)",
    }),
    account_id: z.string(),
    customer_id: z.string(),
    customer_email: z.string().nullable().openapi({ description: "The customer's email when the invoice was issued" }),
    customer_name: z.string().nullable(),
    subscription_id: z.string().nullable(),
    billing_reason: z.enum(billingReasons).openapi({
      description:
        "Why the invoice was made (Stripe's values): subscription_create (a subscription's first invoice), subscription_cycle (a renewal), " +
        'subscription_update (a plan or item change invoiced at once, or the final usage of a subscription that ends), ' +
        "subscription_threshold (usage that reached the subscription's billing_thresholds, billed early), manual (a one-off invoice)",
      example: 'subscription_threshold',
    }),
    status: z.enum(invoiceStatuses),
    currency: z.string(),
    lines: z.array(InvoiceLineSchema),
    subtotal: z.number().int().openapi({ description: 'The sum of the lines' }),
    ...InvoiceTotalsShape,
    amount_due: z
      .number()
      .int()
      .openapi({ description: 'What the customer is asked to pay: total + starting_balance, at least 0' }),
    amount_paid: z.number().int(),
    amount_remaining: z
      .number()
      .int()
      .openapi({ description: 'amount_due − amount_paid (0 once void or paid: paid out of band or by credit)' }),
    attempt_count: z.number().int().openapi({ description: 'Payment attempts made' }),
    transaction: z.string().nullable().openapi({ description: 'The succeeded payment transaction that paid it' }),
    amount_refunded: z
      .number()
      .int()
      .openapi({ description: 'Refunded of amount_paid, through refunds of that payment' }),
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
    collection_method: z.enum(collectionMethods).openapi({
      description:
        "charge_automatically (the customer's payment method is charged, retried as dunning says; every subscription invoice) or send_invoice (emailed with a pay link and a due date)",
    }),
    days_until_due: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'send_invoice: days from finalize to the due date' }),
    due_date: timestamp.nullable().openapi({
      description:
        'One-off invoices: when payment is due, set at finalize (charge_automatically: at once); null on drafts and subscription invoices (due on issue)',
    }),
    description: z
      .string()
      .nullable()
      .openapi({ description: "A one-off invoice's note to the customer (emails and PDF)" }),
    finalized_at: timestamp.nullable().openapi({
      description: 'When a one-off invoice left draft; null on drafts and subscription invoices (open when issued)',
    }),
    livemode: z.boolean(),
  })
  .openapi('Invoice');
type InvoiceBody = z.infer<typeof InvoiceSchema>;

export function invoicePdfUrl(config: { publicUrl: string; auth: { secret: string } }, invoiceId: string): string {
  return signedInvoicePdfUrl(config.publicUrl, config.auth.secret, invoiceId);
}

/** What is left to pay: 0 once void or paid (a paid invoice may have amount_paid 0: paid out of band, or by the customer's credit). */
export const amountRemaining = (invoice: Invoice) =>
  invoice.status === 'void' || invoice.status === 'paid' ? 0 : Number(invoice.amountDue) - Number(invoice.amountPaid);

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
    billing_reason: invoice.billingReason ?? billingReasonOf(invoice.billingKey, invoice.subscriptionId),
    status: invoice.status,
    currency: invoice.currency,
    lines: invoice.lines.map(serializeInvoiceLine),
    subtotal: Number(invoice.subtotal),
    ...invoiceTotalsFields(invoice),
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

/** An invoice line as the API shows it (invoices and the upcoming invoice alike). */
export function serializeInvoiceLine(line: InvoiceLine): z.infer<typeof InvoiceLineSchema> {
  return {
    object: 'line_item' as const,
    description: line.description,
    plan: line.plan ?? null,
    quantity: line.quantity,
    ...(line.meter ? { meter: line.meter, quantity_decimal: line.quantity_decimal ?? String(line.quantity) } : {}),
    unit_amount: line.total === undefined ? line.amount : null,
    amount: lineAmount(line),
    breakdown: line.breakdown ?? null,
    period_start: new Date(line.period_start).toISOString(),
    period_end: new Date(line.period_end).toISOString(),
    proration: line.proration ?? false,
    discount_amounts: line.discount_amounts ?? [],
    tax_amounts: line.tax_amounts ?? [],
  };
}

type TotalsSource = Pick<
  Invoice,
  | 'discountId'
  | 'totalDiscountAmounts'
  | 'totalExcludingTax'
  | 'total'
  | 'tax'
  | 'totalTaxAmounts'
  | 'startingBalance'
  | 'endingBalance'
  | 'customerTaxIds'
  | 'customerAddress'
> & { customerTaxExempt?: TaxExempt | null };

/** The totals fields (InvoiceTotalsShape) of an invoice row; an invoice from before discounts and taxes shows none of either. */
export function invoiceTotalsFields(invoice: TotalsSource) {
  const total = Number(invoice.total);
  return {
    discounts: invoice.discountId ? [invoice.discountId] : [],
    total_discount_amounts: (invoice.totalDiscountAmounts ?? []).map(({ discount, amount }) => ({ discount, amount })),
    total_excluding_tax:
      invoice.totalExcludingTax === null || invoice.totalExcludingTax === undefined
        ? total
        : Number(invoice.totalExcludingTax),
    tax: Number(invoice.tax ?? 0),
    total_tax_amounts: invoice.totalTaxAmounts ?? [],
    total,
    starting_balance: Number(invoice.startingBalance ?? 0),
    ending_balance: Number(invoice.endingBalance ?? 0),
    customer_tax_exempt: invoice.customerTaxExempt ?? ('none' as const),
    customer_tax_ids: invoice.customerTaxIds ?? [],
    customer_address: invoice.customerAddress ?? null,
  };
}
