import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** SPEC.md's payout methods: bank transfer (ACH/SEPA), PayPal, wire transfer. */
export const payoutMethods = ['bank_transfer', 'paypal', 'wire'] as const;
export type PayoutMethod = (typeof payoutMethods)[number];
export const payoutStatuses = ['pending', 'in_transit', 'paid', 'failed', 'canceled'] as const;
export type PayoutStatus = (typeof payoutStatuses)[number];

/**
 * Money leaving an account's available balance for its own bank (or PayPal)
 * account. Created `pending` with its ledger posting (available -> external) in the
 * same database transaction; a payoutWorkflow then hands it to the payout rail and
 * records `paid` (or `failed`, which posts the amount back).
 */
export const Payout = defineEntity({
  name: 'Payout',
  tableName: 'payouts',
  indexes: [
    { properties: ['accountId', 'livemode', 'id'] },
    { properties: ['testClockId'] },
    {
      name: 'payouts_unconfirmed_pending_index',
      properties: ['createdAt'],
      where: "status = 'pending' and workflow_confirmed_at is null",
    },
  ],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    method: p.string().$type<PayoutMethod>(),
    status: p.string().$type<PayoutStatus>(),
    description: p.string().length(500).nullable(),
    failureCode: p.string().nullable(),
    failureMessage: p.string().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    paidAt: p.datetime().nullable(),
    /** Set by the maintenance workflow once it has seen, or started, this pending payout's payoutWorkflow. */
    workflowConfirmedAt: p.datetime().nullable(),
    /** Its movement on the balance (`payout`, available → external). */
    balanceTransactionId: p.string().nullable(),
    /** The bank account or PayPal destination (`ba_…`); null for payouts made before destinations existed. */
    destinationId: p.string().nullable(),
    /** When the money is expected (in_transit) or arrived (paid). */
    arrivalDate: p.datetime().nullable(),
    canceledAt: p.datetime().nullable(),
    /**
     * When the payout was claimed for its rail (services/payouts/rail.ts submitPayout), under its row lock and
     * before the rail saw it: from then on it cannot be canceled or held. Still `pending` until the rail
     * answered (`in_transit`).
     */
    submittedAt: p.datetime().nullable(),
    /** The `payout_failure` balance transaction that gave the money back (failed or canceled). */
    failureBalanceTransactionId: p.string().nullable(),
    /** Made by the account's payout schedule rather than by a request. */
    automatic: p.boolean().default(false),
    /** The hold that keeps it pending, while one does. */
    holdId: p.string().nullable(),
    holdReason: p.string().length(500).nullable(),
    /** The test clock it lives on (sandbox; docs/testing-your-integration.md), or null. */
    testClockId: p.string().nullable(),
  },
});
export type Payout = InferEntity<typeof Payout>;
