import { z } from '@hono/zod-openapi';

import { type Payout, payoutMethods, payoutStatuses } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A payout of the balance. */

export const PayoutSchema = z
  .object({
    id: z.string().openapi({ example: 'po_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('payout'),
    account_id: z.string(),
    amount: z.number().int(),
    currency: z.string(),
    method: z.enum(payoutMethods),
    status: z.enum(payoutStatuses),
    description: z.string().nullable(),
    failure_code: z.string().nullable(),
    failure_message: z.string().nullable(),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
    paid_at: timestamp.nullable(),
    balance_transaction: z
      .string()
      .nullable()
      .openapi({ description: 'Its movement on the balance (a `payout` balance transaction, btxn_…)' }),
    destination: z.string().nullable().openapi({ description: 'The bank account or PayPal destination (ba_…)' }),
    arrival_date: timestamp.nullable().openapi({ description: 'When it is expected (in_transit) or arrived (paid)' }),
    canceled_at: timestamp.nullable(),
    failure_balance_transaction: z.string().nullable().openapi({
      description:
        'failed or canceled: the balance transaction that gave the money back (payout_failure or payout_cancel)',
    }),
    automatic: z.boolean().openapi({ description: 'Made by the payout schedule' }),
    hold: z
      .object({ id: z.string(), reason: z.string() })
      .nullable()
      .openapi({ description: 'While a hold keeps it pending: which, and why' }),
    test_clock: z
      .string()
      .nullable()
      .openapi({ description: 'The test clock it lives on (sandbox; docs/testing-your-integration.md), or null' }),
  })
  .openapi('Payout');

export function serializePayout(p: Payout): z.infer<typeof PayoutSchema> {
  return {
    id: p.id,
    object: 'payout',
    account_id: p.accountId,
    amount: Number(p.amount),
    currency: p.currency,
    method: p.method,
    status: p.status,
    description: p.description ?? null,
    failure_code: p.failureCode ?? null,
    failure_message: p.failureMessage ?? null,
    livemode: p.livemode,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
    paid_at: p.paidAt?.toISOString() ?? null,
    balance_transaction: p.balanceTransactionId ?? null,
    destination: p.destinationId ?? null,
    arrival_date: p.arrivalDate?.toISOString() ?? null,
    canceled_at: p.canceledAt?.toISOString() ?? null,
    failure_balance_transaction: p.failureBalanceTransactionId ?? null,
    automatic: p.automatic ?? false,
    hold: p.holdId ? { id: p.holdId, reason: p.holdReason ?? '' } : null,
    test_clock: p.testClockId ?? null,
  };
}
