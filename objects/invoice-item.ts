import { z } from '@hono/zod-openapi';

import type { InvoiceItem } from '../db/entities/index.ts';
import { timestamp } from './common.ts';
import { PriceRowSchema } from './plan.ts';

/** An invoice item: a one-off charge of a customer, pending until an invoice takes it (docs/invoices.md#invoice-items). */
export const InvoiceItemSchema = z
  .object({
    id: z.string().openapi({ example: 'ii_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('invoiceitem'),
    customer: z.string(),
    invoice: z.string().nullable().openapi({
      description:
        'The invoice that took the item (a draft it is attached to, or the invoice that billed it); null while pending',
    }),
    pending: z.boolean().openapi({
      description:
        'True until an invoice takes the item: the next invoice of the customer (a subscription renewal, or a one-off invoice that includes pending items) bills it',
    }),
    description: z.string(),
    currency: z.string(),
    plan: z
      .string()
      .nullable()
      .openapi({ description: 'The price (plan) the item bills at `quantity`, when created with one' }),
    quantity: z.number().int(),
    unit_amount: z.number().int().nullable().openapi({
      description:
        'Per unit in minor units; null when the amount is not a whole unit amount × quantity (a tiered or package price): see `breakdown`',
    }),
    amount: z.number().int().openapi({ description: 'The line, in minor units' }),
    breakdown: z.array(PriceRowSchema).nullable(),
    period_start: timestamp,
    period_end: timestamp,
    tax_rates: z.array(z.string()).openapi({
      description:
        "Tax rates its line is taxed at, instead of the subscription's or the account's defaults; [] for none (docs/discounts-and-taxes.md#taxes)",
      example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
    }),
    created_at: timestamp,
    livemode: z.boolean(),
  })
  .openapi('InvoiceItem');

export function serializeInvoiceItem(item: InvoiceItem): z.infer<typeof InvoiceItemSchema> {
  return {
    id: item.id,
    object: 'invoiceitem',
    customer: item.customerId,
    invoice: item.invoiceId ?? null,
    pending: item.invoiceId === null || item.invoiceId === undefined,
    description: item.description,
    currency: item.currency,
    plan: item.planId ?? null,
    quantity: item.quantity,
    unit_amount: item.unitAmount === null || item.unitAmount === undefined ? null : Number(item.unitAmount),
    amount: Number(item.amount),
    breakdown: item.breakdown ?? null,
    period_start: item.periodStart.toISOString(),
    period_end: item.periodEnd.toISOString(),
    tax_rates: item.taxRates ?? [],
    created_at: item.createdAt.toISOString(),
    livemode: item.livemode,
  };
}
