import { z } from '@hono/zod-openapi';

import { type BalanceTransaction, balanceTransactionStatuses, balanceTransactionTypes } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** One movement of the balance (Stripe's balance transaction). */
export const BalanceTransactionSchema = z
  .object({
    id: z.string().openapi({ example: 'btxn_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('balance_transaction'),
    account_id: z.string(),
    type: z.enum(balanceTransactionTypes),
    source: z.string().openapi({ description: 'The transaction (txn_…) or payout (po_…) that moved the money' }),
    amount: z.number().int().openapi({ description: 'Signed, in minor units: + into the balance, − out of it' }),
    fee: z.number().int().openapi({ description: "The processor's fee (0 for the sandbox processor)" }),
    net: z.number().int().openapi({ description: 'amount − fee' }),
    currency: z.string(),
    status: z.enum(balanceTransactionStatuses),
    available_on: timestamp,
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('BalanceTransaction');

export function serializeBalanceTransaction(b: BalanceTransaction): z.infer<typeof BalanceTransactionSchema> {
  return {
    id: b.id,
    object: 'balance_transaction',
    account_id: b.accountId,
    type: b.type,
    source: b.source,
    amount: Number(b.amount),
    fee: Number(b.fee),
    net: Number(b.net),
    currency: b.currency,
    status: b.status,
    available_on: b.availableOn.toISOString(),
    livemode: b.livemode,
    created_at: b.createdAt.toISOString(),
  };
}
