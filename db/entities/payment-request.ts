import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { IntervalUnit } from '../../domain/billing-calendar.ts';
import type {
  CancellationReason,
  PaymentError,
  PaymentRequestStatus,
  RecurringStatus,
} from '../../domain/payment-requests.ts';

/**
 * Projection of a paymentRequestWorkflow's state, written only by its activities.
 * `version` orders the writes: an older write never overwrites a newer one.
 * `token` is the secret of the pay link, kept as is so that a GET can show
 * payment_url again (see docs/payment-requests.md, "The pay page").
 */
export const PaymentRequest = defineEntity({
  name: 'PaymentRequest',
  tableName: 'payment_requests',
  properties: {
    id: p.string().primary(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    /** The test clock it lives on (sandbox), or null; lists leave clock objects out unless asked for. */
    testClockId: p.string().nullable(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    status: p.string().$type<PaymentRequestStatus>().index(),
    customerEmail: p.string().length(320),
    reference: p.string().length(500).nullable(),
    metadata: p.json<Record<string, string>>(),
    token: p.string().length(64).unique(),
    expiresAt: p.datetime(),
    transactionId: p.string().nullable(),
    paidAt: p.datetime().nullable(),
    failureReason: p.string().$type<'expired'>().nullable(),
    canceledAt: p.datetime().nullable(),
    cancellationReason: p.string().$type<CancellationReason>().nullable(),
    lastPaymentError: p.json<PaymentError>().nullable(),
    attempts: p.integer(),
    recurringPaymentRequestId: p.string().nullable().index(),
    period: p.integer().nullable(),
    version: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type PaymentRequest = InferEntity<typeof PaymentRequest>;

/** Projection of a recurringPaymentRequestWorkflow, written only by its activities. */
export const RecurringPaymentRequest = defineEntity({
  name: 'RecurringPaymentRequest',
  tableName: 'recurring_payment_requests',
  properties: {
    id: p.string().primary(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    /** The test clock it lives on (sandbox), or null; lists leave clock objects out unless asked for. */
    testClockId: p.string().nullable(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    status: p.string().$type<RecurringStatus>().index(),
    customerEmail: p.string().length(320),
    reference: p.string().length(500).nullable(),
    metadata: p.json<Record<string, string>>(),
    interval: p.string().$type<IntervalUnit>(),
    intervalCount: p.integer(),
    expiresInMs: p.bigint('number'),
    period: p.integer(),
    issuedPeriods: p.integer(),
    latestPaymentRequestId: p.string().nullable(),
    nextPaymentRequestAt: p.datetime().nullable(),
    canceledAt: p.datetime().nullable(),
    cancellationReason: p.string().$type<CancellationReason>().nullable(),
    version: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type RecurringPaymentRequest = InferEntity<typeof RecurringPaymentRequest>;
