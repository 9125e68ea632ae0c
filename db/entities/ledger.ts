import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * Double-entry ledger. Every money movement writes entries that sum to zero:
 * `available` is money the account can pay out or refund, `pending` money from
 * payments that has not reached its `available_on` yet, `external` the world
 * outside (customers' cards, bank payouts). Entries are only ever inserted.
 */
export const ledgerAccounts = ['available', 'pending', 'external'] as const;
export type LedgerAccount = (typeof ledgerAccounts)[number];

export const LedgerEntry = defineEntity({
  name: 'LedgerEntry',
  tableName: 'ledger_entries',
  properties: {
    id: p.bigint().primary().autoincrement(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    /** The transaction or payout the movement belongs to. */
    transactionId: p.string().index(),
    balanceTransactionId: p.string().nullable().index(),
    ledgerAccount: p.string().$type<LedgerAccount>(),
    /** Signed, in minor units. */
    amount: p.bigint('number'),
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
  checks: [
    { name: 'account_balances_available_non_negative', expression: 'available >= 0' },
    { name: 'account_balances_pending_non_negative', expression: 'pending >= 0' },
  ],
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    currency: p.string().length(3).primary(),
    available: p.bigint('number'),
    pending: p.bigint('number').default(0),
    updatedAt: p.datetime(),
  },
});
export type AccountBalance = InferEntity<typeof AccountBalance>;

export const balanceTransactionTypes = [
  'payment',
  'refund',
  'credit',
  'payout',
  'payout_failure',
  'payout_cancel',
  'adjustment',
] as const;
export type BalanceTransactionType = (typeof balanceTransactionTypes)[number];
export const balanceTransactionStatuses = ['pending', 'available'] as const;
export type BalanceTransactionStatus = (typeof balanceTransactionStatuses)[number];

/**
 * One movement of an account's balance, as Stripe's balance transactions show it:
 * `source` is the transaction or payout that caused it, `amount` is signed (+ in,
 * − out), `net` = amount − fee. A payment's arrives `pending` and becomes
 * `available` at `available_on` (fundsAvailabilityWorkflow); everything else is
 * `available` at once.
 */
export const BalanceTransaction = defineEntity({
  name: 'BalanceTransaction',
  tableName: 'balance_transactions',
  indexes: [
    { properties: ['accountId', 'livemode', 'id'] },
    { properties: ['source'] },
    {
      name: 'balance_transactions_unconfirmed_pending_index',
      properties: ['createdAt'],
      where: "status = 'pending' and workflow_confirmed_at is null",
    },
    // Money owned by a workflow, past due: what the reconciler of orphaned money reads (services/maintenance/sweeps.ts).
    {
      name: 'balance_transactions_owned_pending_index',
      properties: ['availableOn'],
      where: "status = 'pending' and workflow_confirmed_at is not null",
    },
  ],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    type: p.string().$type<BalanceTransactionType>(),
    source: p.string(),
    amount: p.bigint('number'),
    fee: p.bigint('number'),
    net: p.bigint('number'),
    currency: p.string().length(3),
    status: p.string().$type<BalanceTransactionStatus>(),
    availableOn: p.datetime(),
    /** A payment's: what refunds took from it while it was pending (it makes that much less available). */
    refundedFromPending: p.bigint('number').default(0),
    /**
     * Set once a workflow owns this pending movement: by the maintenance reconciler once it has seen, or started, its
     * availability workflow, or at once when the subscription workflow that collected it makes it available itself.
     */
    workflowConfirmedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type BalanceTransaction = InferEntity<typeof BalanceTransaction>;
