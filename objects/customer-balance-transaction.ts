import { z } from '@hono/zod-openapi';

import { type CustomerBalanceTransaction, customerBalanceTransactionTypes } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A movement of a customer's balance, as the API shows it (Stripe's customer_balance_transaction). */
export const CustomerBalanceTransactionSchema = z
  .object({
    id: z.string().openapi({ example: 'cbtxn_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('customer_balance_transaction'),
    customer: z.string(),
    type: z.enum(customerBalanceTransactionTypes).openapi({
      description:
        'adjustment (made through the API), credit_note (a credit note credited the balance), applied_to_invoice (an invoice used the balance), ' +
        'unapplied_from_invoice (a voided invoice gave it back), invoice_too_small (an invoice whose total was a credit added it to the balance)',
    }),
    amount: z
      .number()
      .int()
      .openapi({ description: "In minor units; negative is credit to the customer (Stripe's sign)", example: -2500 }),
    currency: z.string().openapi({ example: 'USD' }),
    ending_balance: z
      .number()
      .int()
      .openapi({ description: "The customer's balance in this currency after this transaction", example: -2500 }),
    invoice: z.string().nullable(),
    credit_note: z.string().nullable(),
    description: z.string().nullable(),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('CustomerBalanceTransaction');

export function serializeCustomerBalanceTransaction(
  row: CustomerBalanceTransaction,
): z.infer<typeof CustomerBalanceTransactionSchema> {
  return {
    id: row.id,
    object: 'customer_balance_transaction',
    customer: row.customerId,
    type: row.type,
    amount: Number(row.amount),
    currency: row.currency,
    ending_balance: Number(row.endingBalance),
    invoice: row.invoiceId ?? null,
    credit_note: row.creditNoteId ?? null,
    description: row.description ?? null,
    livemode: row.livemode,
    created_at: row.createdAt.toISOString(),
  };
}
