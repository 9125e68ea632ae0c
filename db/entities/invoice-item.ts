import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { PriceRow } from '../../domain/pricing.ts';

/**
 * A one-off charge of a customer (POST /v1/invoice_items): pending (`invoiceId` null) until an
 * invoice takes it, the customer's next subscription invoice or a one-off invoice it is attached
 * to. `amount` is the line's amount in minor units; `unitAmount` the per-unit amount when the
 * amount is a whole unit amount × quantity (else null, as an invoice line's). Priced once, when
 * created or changed, through domain/pricing.ts when it names a plan.
 */
export const InvoiceItem = defineEntity({
  name: 'InvoiceItem',
  tableName: 'invoice_items',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    customerId: p.string(),
    /** The invoice that took it (a draft it is attached to, or the invoice that billed it); null while pending. */
    invoiceId: p.string().nullable().index(),
    description: p.text(),
    currency: p.string().length(3),
    planId: p.string().nullable(),
    quantity: p.integer(),
    unitAmount: p.bigint('number').nullable(),
    amount: p.bigint('number'),
    breakdown: p.json<PriceRow[]>().nullable(),
    /** Tax rate ids the item's line is taxed at (instead of the subscription's or account's defaults); null: none given. */
    taxRates: p.json<string[]>().nullable(),
    periodStart: p.datetime(),
    periodEnd: p.datetime(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type InvoiceItem = InferEntity<typeof InvoiceItem>;
