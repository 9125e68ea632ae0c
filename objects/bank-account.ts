import { z } from '@hono/zod-openapi';

import { type BankAccount, bankAccountStatuses } from '../db/entities/index.ts';
import { accountHolderTypes, destinationTypes, methodOf } from '../domain/bank-accounts.ts';
import { timestamp } from './common.ts';

/**
 * A payout destination (`ba_…`): a bank account (`object: bank_account`) or a
 * PayPal receiver (`object: paypal_account`). The full number is never shown:
 * `last4` and `fingerprint` (the same for the same account) instead.
 */
export const BankAccountSchema = z
  .object({
    id: z.string().openapi({ example: 'ba_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.enum(['bank_account', 'paypal_account']),
    account_id: z.string(),
    type: z.enum(destinationTypes).openapi({ description: 'us_ach, sepa, uk, wire or paypal' }),
    payout_method: z.enum(['bank_transfer', 'wire', 'paypal']),
    account_holder_name: z.string(),
    account_holder_type: z.enum(accountHolderTypes),
    country: z.string(),
    currency: z.string(),
    last4: z
      .string()
      .openapi({ description: 'Last four characters of the account number or IBAN (PayPal: of the email local part)' }),
    fingerprint: z
      .string()
      .openapi({ description: 'Equal for the same account number (an HMAC: it cannot be reversed)' }),
    routing_number: z.string().nullable().openapi({ description: 'US ACH: the ABA routing number' }),
    sort_code: z.string().nullable(),
    bic: z.string().nullable(),
    email: z.string().nullable().openapi({ description: 'PayPal: the receiver email, masked' }),
    default_for_currency: z.boolean(),
    status: z.enum(bankAccountStatuses),
    metadata: z.record(z.string(), z.string()),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('BankAccount');

export function serializeBankAccount(b: BankAccount): z.infer<typeof BankAccountSchema> {
  return {
    id: b.id,
    object: b.type === 'paypal' ? 'paypal_account' : 'bank_account',
    account_id: b.accountId,
    type: b.type,
    payout_method: methodOf(b.type),
    account_holder_name: b.accountHolderName,
    account_holder_type: b.accountHolderType,
    country: b.country,
    currency: b.currency,
    last4: b.last4,
    fingerprint: b.fingerprint,
    routing_number: b.routingNumber ?? null,
    sort_code: b.sortCode ?? null,
    bic: b.bic ?? null,
    email: b.emailMasked ?? null,
    default_for_currency: b.defaultForCurrency,
    status: b.status,
    metadata: b.metadata ?? {},
    livemode: b.livemode,
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt.toISOString(),
  };
}
