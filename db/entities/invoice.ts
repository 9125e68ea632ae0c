import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { BillingReason } from '../../domain/invoice-billing-reason.ts';
import type { DiscountAmount, TaxAmount, TaxExempt } from '../../domain/invoice-totals.ts';
import type { PriceRow } from '../../domain/pricing.ts';

export const invoiceStatuses = ['draft', 'open', 'paid', 'void', 'uncollectible'] as const;
/** How a one-off invoice is collected: charged at finalize and retried as subscriptions are, or sent with a pay link and a due date. */
export const collectionMethods = ['charge_automatically', 'send_invoice'] as const;
export type CollectionMethod = (typeof collectionMethods)[number];
export type InvoiceStatus = (typeof invoiceStatuses)[number];

/**
 * One line as the workflow records it. `amount` is the unit amount in minor units (negative for a credit),
 * or null when the line's amount is not a whole unit amount × quantity; then `total` is the line's amount
 * (domain/invoice-lines.ts lineAmount).
 */
export interface InvoiceLine {
  description: string;
  amount: number | null;
  quantity: number;
  total?: number;
  /** The plan (price) the line bills; absent on lines recorded before pricing schemes. */
  plan?: string;
  /** How a tiered or package price made the amount (domain/pricing.ts PriceRow). */
  breakdown?: PriceRow[];
  /** A usage line (#28): the meter it bills and its exact decimal quantity. */
  meter?: string;
  quantity_decimal?: string;
  period_start: string;
  period_end: string;
  /** A line that prorates a plan change (the unused part of the old plan, the rest of the period on the new one). Absent means false. */
  proration?: boolean;
  /** An invoice item's own tax rate ids (POST /v1/invoice_items tax_rates), applied to its line instead of the defaults. */
  item_tax_rates?: string[];
  /** The product of the line's plan, for a coupon's applies_to (absent on lines before discounts). */
  product?: string;
  /** The line's share of the invoice's discount (domain/invoice-totals.ts); absent means none. */
  discount_amounts?: DiscountAmount[];
  /** The line's taxes, per rate (domain/invoice-totals.ts); absent means none. */
  tax_amounts?: TaxAmount[];
}

/**
 * One invoice per charge attempt series of a billing cycle. `billingKey` is the
 * deterministic key of the cycle (subscription + cycle), so recording the same
 * invoice twice (activity retry, worker crash) finds the first one.
 * `number` is the account's own sequence (`ACME-0001`), unique per account and mode.
 */
export const Invoice = defineEntity({
  name: 'Invoice',
  tableName: 'invoices',
  uniques: [{ properties: ['accountId', 'livemode', 'number'] }],
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    number: p.string(),
    billingKey: p.string().unique(),
    /** Why it was made (Stripe's billing_reason), from its billing key (domain/invoice-billing-reason.ts); null only on rows inserted by hand. */
    billingReason: p.string().$type<BillingReason>().nullable(),
    /** Null for a one-off invoice (POST /v1/invoices). */
    subscriptionId: p.string().nullable().index(),
    customerId: p.string().index(),
    /** The customer's email and name when the invoice was issued: an issued invoice does not change with the customer. */
    customerEmail: p.string().nullable(),
    customerName: p.string().nullable(),
    status: p.string().$type<InvoiceStatus>(),
    currency: p.string().length(3),
    /** Sum of the lines. */
    subtotal: p.bigint('number'),
    /** subtotal − discount + exclusive tax (domain/invoice-totals.ts). */
    total: p.bigint('number'),
    /** What the customer is asked to pay: total + starting balance, at least 0 (less the credit notes of an open invoice). */
    amountDue: p.bigint('number'),
    /** The discount applied (the invoice's discount object id) and its amount, also per discount. */
    discountId: p.string().nullable(),
    discount: p.bigint('number').default(0),
    totalDiscountAmounts: p.json<(DiscountAmount & { coupon?: string; name?: string | null })[]>().nullable(),
    /** subtotal − discount − inclusive tax; null on invoices before taxes (then equal to total). */
    totalExcludingTax: p.bigint('number').nullable(),
    tax: p.bigint('number').default(0),
    totalTaxAmounts: p.json<TaxAmount[]>().nullable(),
    /** The customer's balance before and after the invoice (negative: credit; services/customers/balance.ts). */
    startingBalance: p.bigint('number').default(0),
    endingBalance: p.bigint('number').default(0),
    /** The customer was tax-exempt by reverse charge: no tax, and the invoice carries the legal note. */
    reverseCharge: p.boolean().default(false),
    customerTaxExempt: p.string().$type<TaxExempt>().default('none'),
    /** The customer's tax ids and address as issued (the invoice does not change with the customer). */
    customerTaxIds: p.json<{ type: string; value: string }[]>().nullable(),
    customerAddress: p.json<{ country: string | null; state: string | null }>().nullable(),
    amountPaid: p.bigint('number'),
    /** Payment attempts started for this invoice (charges keyed `<billingKey>:attempt:<n>`). */
    attemptCount: p.integer().default(0),
    lines: p.json<InvoiceLine[]>(),
    periodStart: p.datetime(),
    periodEnd: p.datetime(),
    chargeId: p.string().nullable(),
    /** The succeeded payment transaction that paid it. */
    transactionId: p.string().nullable(),
    /** Refunded of amountPaid, through refunds of that payment. */
    amountRefunded: p.bigint('number').default(0),
    accountId: p.string().index(),
    livemode: p.boolean(),
    createdAt: p.datetime(),
    paidAt: p.datetime().nullable(),
    voidedAt: p.datetime().nullable(),
    markedUncollectibleAt: p.datetime().nullable(),
    /** One-off invoices: how it is collected, its days until due (send_invoice), due date (set at finalize), description and finalize time. Null on subscription invoices. */
    collectionMethod: p.string().$type<CollectionMethod>().nullable(),
    daysUntilDue: p.integer().nullable(),
    dueDate: p.datetime().nullable(),
    description: p.text().nullable(),
    finalizedAt: p.datetime().nullable(),
  },
});
export type Invoice = InferEntity<typeof Invoice>;

/**
 * The last invoice number given out per account and mode, and the prefix its
 * numbers carry. Incremented with `insert ... on conflict do update ... returning`
 * in the database transaction that inserts the invoice: the row lock makes
 * concurrent invoices queue, and a rolled-back insert gives its number back.
 */
export const InvoiceNumberCounter = defineEntity({
  name: 'InvoiceNumberCounter',
  tableName: 'invoice_number_counters',
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    prefix: p.string(),
    lastNumber: p.integer(),
  },
});
export type InvoiceNumberCounter = InferEntity<typeof InvoiceNumberCounter>;
