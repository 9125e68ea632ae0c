import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { AccountHolderType, DestinationType } from '../../domain/bank-accounts.ts';

export const bankAccountStatuses = ['new', 'verified', 'verification_failed', 'errored'] as const;
export type BankAccountStatus = (typeof bankAccountStatuses)[number];

/**
 * Where an account's payouts go (`ba_…`): a bank account (US ACH, SEPA, UK, wire)
 * or a PayPal receiver. `secret` is the full account number, IBAN or email, sealed
 * (domain/secret-box.ts, purpose `bank-accounts`): the API shows only `last4` and
 * `fingerprint` (an HMAC of the number, equal for the same account). Deleting sets
 * `deletedAt`: payouts keep naming it.
 */
export const BankAccount = defineEntity({
  name: 'BankAccount',
  tableName: 'bank_accounts',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    type: p.string().$type<DestinationType>(),
    accountHolderName: p.string(),
    accountHolderType: p.string().$type<AccountHolderType>(),
    country: p.string().length(2),
    currency: p.string().length(3),
    secret: p.text().hidden(),
    last4: p.string(),
    fingerprint: p.string().index(),
    routingNumber: p.string().nullable(),
    sortCode: p.string().nullable(),
    bic: p.string().nullable(),
    emailMasked: p.string().nullable(),
    defaultForCurrency: p.boolean(),
    status: p.string().$type<BankAccountStatus>(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
});
export type BankAccount = InferEntity<typeof BankAccount>;
