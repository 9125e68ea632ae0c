import { z } from '@hono/zod-openapi';

import type { PaymentRequest, RecurringPaymentRequest } from '../db/entities/index.ts';
import { intervalUnits } from '../domain/billing-calendar.ts';
import {
  type PaymentRequestSnapshot,
  paymentRequestStatuses,
  paymentUrl,
  type RecurringPaymentRequestSnapshot,
  recurringStatuses,
} from '../domain/payment-requests.ts';
import { isoOrNull, timestamp } from './common.ts';

/** A payment request (one-time, with its pay link) and a recurring payment request. */

export const PaymentRequestSchema = z
  .object({
    id: z.string(),
    object: z.literal('payment_request'),
    account_id: z.string(),
    amount: z.number().int(),
    currency: z.string(),
    status: z.enum(paymentRequestStatuses),
    customer_email: z.string(),
    reference: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    payment_url: z.string().openapi({ description: 'The hosted pay page; its last segment is a 256-bit secret' }),
    expires_at: timestamp,
    transaction_id: z
      .string()
      .nullable()
      .openapi({ description: 'The ledger transaction of the payment, once succeeded' }),
    paid_at: timestamp.nullable(),
    failure_reason: z.enum(['expired']).nullable().openapi({ description: 'Why the request failed' }),
    canceled_at: timestamp.nullable(),
    cancellation_reason: z.enum(['requested', 'account_closed']).nullable(),
    last_payment_error: z
      .object({ code: z.string(), message: z.string(), payment_method: z.string(), created_at: timestamp })
      .nullable()
      .openapi({ description: 'The latest declined attempt on the pay page' }),
    attempts: z.number().int(),
    recurring_payment_request_id: z
      .string()
      .nullable()
      .openapi({ description: 'The recurring request that issued this one, if any' }),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('PaymentRequest');

type PaymentRequestLike = PaymentRequestSnapshot | PaymentRequest;

/** Works on the projection row and on the workflow's own snapshot alike. */
export function serializePaymentRequest(
  r: PaymentRequestLike,
  publicUrl: string,
): z.infer<typeof PaymentRequestSchema> {
  return {
    id: r.id,
    object: 'payment_request',
    account_id: r.accountId,
    amount: r.amount,
    currency: r.currency,
    status: r.status,
    customer_email: r.customerEmail,
    reference: r.reference ?? null,
    metadata: r.metadata,
    payment_url: paymentUrl(publicUrl, r.token),
    expires_at: new Date(r.expiresAt).toISOString(),
    transaction_id: r.transactionId ?? null,
    paid_at: isoOrNull(r.paidAt ?? null),
    failure_reason: r.failureReason ?? null,
    canceled_at: isoOrNull(r.canceledAt ?? null),
    cancellation_reason: r.cancellationReason ?? null,
    last_payment_error: r.lastPaymentError
      ? {
          code: r.lastPaymentError.code,
          message: r.lastPaymentError.message,
          payment_method: r.lastPaymentError.paymentMethod,
          created_at: r.lastPaymentError.at,
        }
      : null,
    attempts: r.attempts,
    recurring_payment_request_id: r.recurringPaymentRequestId ?? null,
    livemode: r.livemode,
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}

export const RecurringPaymentRequestSchema = z
  .object({
    id: z.string(),
    object: z.literal('recurring_payment_request'),
    type: z.literal('recurring'),
    account_id: z.string(),
    amount: z.number().int(),
    currency: z.string(),
    customer_email: z.string(),
    reference: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    interval: z.enum(intervalUnits),
    interval_count: z.number().int(),
    expires_in: z.number().int().openapi({ description: 'Seconds each issued request stays payable' }),
    status: z.enum(recurringStatuses),
    periods_issued: z.number().int().openapi({ description: 'Payment requests issued so far, one per period' }),
    latest_payment_request_id: z.string().nullable(),
    next_payment_request_at: timestamp.nullable(),
    canceled_at: timestamp.nullable(),
    cancellation_reason: z.enum(['requested', 'account_closed']).nullable(),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('RecurringPaymentRequest');

type RecurringLike = RecurringPaymentRequestSnapshot | RecurringPaymentRequest;

export function serializeRecurringPaymentRequest(r: RecurringLike): z.infer<typeof RecurringPaymentRequestSchema> {
  const interval = 'intervalCount' in r ? { unit: r.interval, count: r.intervalCount } : r.interval;
  return {
    id: r.id,
    object: 'recurring_payment_request',
    type: 'recurring',
    account_id: r.accountId,
    amount: r.amount,
    currency: r.currency,
    customer_email: r.customerEmail,
    reference: r.reference ?? null,
    metadata: r.metadata,
    interval: interval.unit,
    interval_count: interval.count,
    expires_in: Math.round(r.expiresInMs / 1000),
    status: r.status,
    periods_issued: r.issuedPeriods,
    latest_payment_request_id: r.latestPaymentRequestId ?? null,
    next_payment_request_at: r.nextPaymentRequestAt ? new Date(r.nextPaymentRequestAt).toISOString() : null,
    canceled_at: r.canceledAt ? new Date(r.canceledAt).toISOString() : null,
    cancellation_reason: r.cancellationReason ?? null,
    livemode: r.livemode,
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}
