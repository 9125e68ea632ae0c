import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const transactionTypes = ['payment', 'credit', 'refund'] as const;
export const transactionStatuses = ['pending', 'succeeded', 'failed', 'canceled'] as const;
export const riskLevels = ['low', 'medium', 'high'] as const;
export type TransactionType = (typeof transactionTypes)[number];
export type TransactionStatus = (typeof transactionStatuses)[number];
export type RiskLevel = (typeof riskLevels)[number];

/**
 * A money movement on an account's balance. Amount, currency and type never
 * change after creation; the money itself lives in the ledger entries it wrote.
 */
export const Transaction = defineEntity({
  name: 'Transaction',
  tableName: 'transactions',
  indexes: [
    { properties: ['invoiceId'] },
    { properties: ['sourceTransactionId'] },
    // Search (services/search/query.ts): scoped to an account and mode, keyset by id or filtered by time.
    { properties: ['accountId', 'livemode', 'id'] },
    { properties: ['accountId', 'livemode', 'createdAt'] },
    {
      name: 'transactions_unconfirmed_pending_index',
      properties: ['createdAt'],
      where: "status = 'pending' and workflow_confirmed_at is null",
    },
  ],
  properties: {
    id: p.string().primary(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    type: p.string().$type<TransactionType>(),
    status: p.string().$type<TransactionStatus>(),
    reference: p.string().length(500).nullable(),
    metadata: p.json<Record<string, string>>(),
    riskLevel: p.string().$type<RiskLevel>(),
    riskScore: p.integer(),
    paymentMethod: p.string().nullable(),
    failureCode: p.string().nullable(),
    failureMessage: p.string().nullable(),
    createdAt: p.datetime().index(),
    updatedAt: p.datetime(),
    canceledAt: p.datetime().nullable(),
    /**
     * Set by the maintenance workflow (workflows/maintenance.ts) once it has seen, or
     * started, the settlement workflow of a payment still pending after a few minutes;
     * null: not checked yet (or never needed: most payments are final at once).
     */
    workflowConfirmedAt: p.datetime().nullable(),
    /** A subscription charge: the invoice it paid (or tried to), its subscription and customer. */
    invoiceId: p.string().nullable(),
    subscriptionId: p.string().nullable(),
    /** A pay-page charge: the payment request it paid (or tried to). */
    paymentRequestId: p.string().nullable(),
    customerId: p.string().nullable(),
    /** The processor's id of the charge (sandbox `sbch_…`, Stripe `pi_…`); unique among payments. */
    processorChargeId: p.string().nullable(),
    /** A refund of a charge: the payment it gives money back from. */
    sourceTransactionId: p.string().nullable(),
    /** A payment: how much of it has been refunded (never more than `amount`). */
    amountRefunded: p.bigint('number').default(0),
  },
});
export type Transaction = InferEntity<typeof Transaction>;
