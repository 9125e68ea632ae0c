import { z } from '@hono/zod-openapi';

import { type Transaction, transactionStatuses, transactionTypes } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A transaction of the ledger. */

export const TransactionSchema = z
  .object({
    id: z.string(),
    object: z.literal('transaction'),
    account_id: z.string(),
    amount: z.number().int(),
    currency: z.string(),
    type: z.enum(transactionTypes),
    status: z.enum(transactionStatuses),
    reference: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    risk_level: z.enum(['low', 'medium', 'high']),
    failure_code: z.string().nullable(),
    failure_message: z.string().nullable(),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
    canceled_at: timestamp.nullable(),
    invoice: z
      .string()
      .nullable()
      .openapi({ description: 'A subscription charge: the invoice it paid or tried to pay' }),
    subscription: z.string().nullable(),
    payment_request: z.string().nullable().openapi({ description: 'A pay-page charge: the payment request' }),
    customer: z.string().nullable(),
    processor_charge_id: z.string().nullable().openapi({ description: "The payment processor's id of the charge" }),
    source_transaction: z.string().nullable().openapi({ description: 'A refund of a charge: the payment it refunds' }),
    amount_refunded: z.number().int().openapi({ description: 'A payment: how much of it has been refunded' }),
    refunded: z.boolean().openapi({ description: 'A payment refunded in full' }),
  })
  .openapi('Transaction');

export function serializeTransaction(t: Transaction): z.infer<typeof TransactionSchema> {
  return {
    id: t.id,
    object: 'transaction',
    account_id: t.accountId,
    amount: Number(t.amount),
    currency: t.currency,
    type: t.type,
    status: t.status,
    reference: t.reference ?? null,
    metadata: t.metadata,
    risk_level: t.riskLevel,
    failure_code: t.failureCode ?? null,
    failure_message: t.failureMessage ?? null,
    livemode: t.livemode,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
    canceled_at: t.canceledAt?.toISOString() ?? null,
    invoice: t.invoiceId ?? null,
    subscription: t.subscriptionId ?? null,
    payment_request: t.paymentRequestId ?? null,
    customer: t.customerId ?? null,
    processor_charge_id: t.processorChargeId ?? null,
    source_transaction: t.sourceTransactionId ?? null,
    amount_refunded: Number(t.amountRefunded ?? 0),
    refunded: t.type === 'payment' && Number(t.amountRefunded ?? 0) >= Number(t.amount),
  };
}
