import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * Double-entry ledger. Every money movement writes entries that sum to zero:
 * `available` is the account's balance, `external` the world outside (customers'
 * cards, bank payouts). Entries are only ever inserted.
 */
export const ledgerAccounts = ['available', 'external'] as const;
export type LedgerAccount = (typeof ledgerAccounts)[number];

export const LedgerEntry = defineEntity({
  name: 'LedgerEntry',
  tableName: 'ledger_entries',
  properties: {
    id: p.bigint().primary().autoincrement(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    transactionId: p.string().index(),
    ledgerAccount: p.string().$type<LedgerAccount>(),
    /** Signed, in minor units. */
    amount: p.integer(),
    currency: p.string().length(3),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type LedgerEntry = InferEntity<typeof LedgerEntry>;

/**
 * The available balance per account, mode and currency: a cache of the sum of
 * `available` entries, updated in the same database transaction as the entries,
 * under a row lock, so concurrent refunds queue on it and never overdraw.
 */
export const AccountBalance = defineEntity({
  name: 'AccountBalance',
  tableName: 'account_balances',
  // The balance can never go below zero, whatever the code above it does.
  checks: [{ name: 'account_balances_available_non_negative', expression: 'available >= 0' }],
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    currency: p.string().length(3).primary(),
    available: p.integer(),
    updatedAt: p.datetime(),
  },
});
export type AccountBalance = InferEntity<typeof AccountBalance>;
