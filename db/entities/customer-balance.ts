import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** Why a customer's balance moved (Stripe's customer balance transaction types). */
export const customerBalanceTransactionTypes = [
  'adjustment',
  'applied_to_invoice',
  'unapplied_from_invoice',
  'credit_note',
  'invoice_too_small',
] as const;
export type CustomerBalanceTransactionType = (typeof customerBalanceTransactionTypes)[number];

/**
 * A customer's balance in one currency, the sum of its balance transactions, kept so that
 * one row lock decides every movement (services/customers/balance.ts). Stripe's sign:
 * negative is credit the customer holds (applied to its next invoices), positive is what it
 * owes beyond its invoices (added to the next one).
 */
export const CustomerBalance = defineEntity({
  name: 'CustomerBalance',
  tableName: 'customer_balances',
  properties: {
    customerId: p.string().primary(),
    currency: p.string().length(3).primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    balance: p.bigint('number'),
    updatedAt: p.datetime(),
  },
});
export type CustomerBalance = InferEntity<typeof CustomerBalance>;

/**
 * One movement of a customer's balance: `amount` (negative: credit to the customer) and the
 * balance after it. An invoice applies (or unapplies, when voided) a balance at most once:
 * (invoice_id, type) is unique for those types.
 */
export const CustomerBalanceTransaction = defineEntity({
  name: 'CustomerBalanceTransaction',
  tableName: 'customer_balance_transactions',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }, { properties: ['customerId', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    customerId: p.string(),
    currency: p.string().length(3),
    type: p.string().$type<CustomerBalanceTransactionType>(),
    amount: p.bigint('number'),
    endingBalance: p.bigint('number'),
    invoiceId: p.string().nullable(),
    creditNoteId: p.string().nullable(),
    description: p.text().nullable(),
    createdAt: p.datetime(),
  },
});
export type CustomerBalanceTransaction = InferEntity<typeof CustomerBalanceTransaction>;
