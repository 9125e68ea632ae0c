/**
 * An invoice not made yet (GET /v1/invoices/upcoming, the customer portal's plan-change preview):
 * the lines and totals an invoice will have, with no id (services/invoices/upcoming.ts makes it).
 */
import { z } from '@hono/zod-openapi';

import { timestamp } from './common.ts';
import { InvoiceLineSchema, InvoiceTotalsShape } from './invoice.ts';

export const UpcomingInvoiceSchema = z
  .object({
    object: z.literal('invoice'),
    id: z.null().openapi({ description: 'Not made yet' }),
    subscription_id: z.string(),
    customer_id: z.string(),
    currency: z.string(),
    lines: z.array(InvoiceLineSchema),
    subtotal: z.number().int(),
    ...InvoiceTotalsShape,
    amount_due: z
      .number()
      .int()
      .openapi({ description: "What will be charged: total + the customer's balance as it stands now, at least 0" }),
    period_start: timestamp,
    period_end: timestamp,
    created_at: timestamp.openapi({
      description: 'When the workflow will make it: the start of the next period (the trial end for a trial)',
    }),
    livemode: z.boolean(),
  })
  .openapi('UpcomingInvoice');
