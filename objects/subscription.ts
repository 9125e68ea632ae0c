import { z } from '@hono/zod-openapi';

import type { Subscription } from '../db/entities/index.ts';
import {
  billingCycleModes,
  subscriptionItemId,
  type SubscriptionSnapshot,
  subscriptionStatuses,
} from '../domain/subscription.ts';
import { isoOrNull, timestamp } from './common.ts';
import { DiscountSchema } from './discount.ts';

/** A subscription, from its projection row or from the workflow's own snapshot. */

/** Stripe's subscription billing_thresholds (usage amounts in minor units). */
export const BillingThresholdsSchema = z
  .object({
    amount_gte: z.number().int().min(1).max(99_999_999).openapi({
      description:
        "Bill early once the period's usage amount not yet billed (metered items after free units and tiers, before tax and discounts) reaches this, in minor units",
      example: 50000,
    }),
    reset_billing_cycle_anchor: z
      .boolean()
      .optional()
      .openapi({ description: 'Only false is supported (the default): the period goes on after a threshold invoice' }),
  })
  .strict()
  .openapi('BillingThresholds', { example: { amount_gte: 50000, reset_billing_cycle_anchor: false } });

export const SubscriptionSchema = z
  .object({
    id: z.string(),
    object: z.literal('subscription'),
    status: z.enum(subscriptionStatuses),
    customer_id: z.string(),
    plan: z.string(),
    pending_plan: z.string().nullable().openapi({ description: 'A downgrade that takes effect at the next renewal' }),
    quantity: z
      .number()
      .int()
      .openapi({ description: "Units of the plan billed each period, priced by the plan's scheme (docs/pricing.md)" }),
    pending_quantity: z.number().int().nullable().openapi({
      description:
        'With pending_plan: the quantity the next renewal bills (a lower quantity waits for it, as a downgrade does)',
    }),
    currency: z
      .string()
      .nullable()
      .openapi({ description: "The currency it bills in: the plan's, or one of its currency_options" }),
    items: z
      .array(
        z.object({
          object: z.literal('subscription_item'),
          id: z.string().openapi({ example: 'si_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
          plan: z.string(),
          quantity: z.number().int(),
          usage: z
            .object({
              meter: z.string().openapi({ example: 'mtr_01jd5c7e9g1j3l5n7q9s1u3w5y' }),
              quantity: z.string().openapi({
                description: "The meter's aggregate over the period so far (exact decimal, before free units)",
                example: '1250',
              }),
              period_start: timestamp,
              period_end: timestamp.openapi({
                description: 'The end of the current period: the renewal then bills this usage in arrears',
              }),
            })
            .optional()
            .openapi({
              description:
                'Metered items, on GET /v1/subscriptions/{id} of an active subscription only (not lists, creates or events): the usage of the current period so far, ' +
                "from its start to now (the customer's test clock time on a clock), which the next renewal invoices (docs/pricing.md#usage-prices)",
            }),
        }),
      )
      .openapi({
        description:
          'What it bills each period: its recurring items (plan and quantity), all on the one billing period; `plan` and `quantity` are the first. ' +
          'A subscription made with `plan` has one, `si_` plus its own id. One-time plans given on create are on the first invoice only, not here',
      }),
    livemode: z.boolean(),
    billing_cycle_anchor: timestamp.nullable().openapi({ description: 'Periods are counted from here' }),
    billing_cycle_mode: z.enum(billingCycleModes),
    trial_start: timestamp.nullable(),
    trial_end: timestamp.nullable(),
    current_period_start: timestamp.nullable(),
    current_period_end: timestamp.nullable(),
    billing_cycle: z.number().int().openapi({ description: '0-based index of the current (or first) billing period' }),
    latest_invoice: z.string().nullable(),
    cancel_at_period_end: z.boolean(),
    canceled_at: timestamp.nullable(),
    ended_reason: z
      .string()
      .nullable()
      .openapi({ description: 'requested, payment_failed, trial_without_payment_method, account_closed' }),
    pause_collection: z
      .object({ paused_at: timestamp, resumes_at: timestamp.nullable(), reason: z.string() })
      .nullable()
      .openapi({ description: 'Set while paused; resumes_at null means until resumed' }),
    grace_period_days: z.number().int().nullable().openapi({ description: "Overrides the account's grace period" }),
    dunning: z
      .object({
        invoice: z.string(),
        attempt_count: z.number().int(),
        first_failed_at: timestamp.openapi({ description: 'Retries are scheduled from here' }),
        next_payment_attempt: timestamp.nullable(),
        grace_period_ends_at: timestamp.nullable(),
        final_action: z.enum(['cancel', 'pause']),
        last_payment_error: z.object({ code: z.string(), message: z.string() }),
      })
      .nullable()
      .openapi({ description: 'Set while past due' }),
    discount: DiscountSchema.nullable().optional().openapi({
      description:
        "Its own discount in force (a coupon or promotion code applied to it), or null; on every answer of the subscriptions routes (events' data.object and portal answers leave it out). The customer's own discount applies when it has none",
    }),
    billing_thresholds: BillingThresholdsSchema.nullable().optional().openapi({
      description:
        'Progressive billing (docs/usage.md#billing-thresholds): the usage amount of the period not yet billed that bills early, on a threshold invoice; null: none. On every answer of the subscriptions routes',
    }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Subscription');

type Instant = Date | string | null;
type SubscriptionLike = Pick<
  SubscriptionSnapshot,
  | 'id'
  | 'status'
  | 'customerId'
  | 'planId'
  | 'pendingPlanId'
  | 'quantity'
  | 'pendingQuantity'
  | 'currency'
  | 'items'
  | 'livemode'
  | 'billingCycle'
  | 'billingCycleMode'
  | 'latestInvoiceId'
  | 'cancelAtPeriodEnd'
  | 'endedReason'
  | 'pauseReason'
  | 'gracePeriodDays'
  | 'dunning'
> & {
  billingAnchor: Instant;
  trialStart: Instant;
  trialEnd: Instant;
  currentPeriodStart: Instant;
  currentPeriodEnd: Instant;
  canceledAt: Instant;
  pausedAt: Instant;
  pauseUntil: Instant;
  createdAt: Date | string;
  updatedAt: Date | string;
};

/** Works on the projection row and on the workflow's own snapshot alike. */
export function serializeSubscription(
  subscription: SubscriptionLike | Subscription | SubscriptionSnapshot,
): z.infer<typeof SubscriptionSchema> {
  const s = subscription as SubscriptionLike;
  const d = s.dunning ?? null;
  return {
    id: s.id,
    object: 'subscription',
    status: s.status,
    customer_id: s.customerId,
    plan: s.planId,
    pending_plan: s.pendingPlanId ?? null,
    quantity: s.quantity ?? 1,
    pending_quantity: s.pendingPlanId ? (s.pendingQuantity ?? s.quantity ?? 1) : null,
    currency: s.currency ?? null,
    items: s.items
      ? s.items.map((item) => ({
          object: 'subscription_item' as const,
          id: item.id,
          plan: item.planId,
          quantity: item.quantity,
        }))
      : [{ object: 'subscription_item', id: subscriptionItemId(s.id), plan: s.planId, quantity: s.quantity ?? 1 }],
    livemode: s.livemode,
    billing_cycle_anchor: isoOrNull(s.billingAnchor),
    billing_cycle_mode: s.billingCycleMode,
    trial_start: isoOrNull(s.trialStart),
    trial_end: isoOrNull(s.trialEnd),
    current_period_start: isoOrNull(s.currentPeriodStart),
    current_period_end: isoOrNull(s.currentPeriodEnd),
    billing_cycle: s.billingCycle,
    latest_invoice: s.latestInvoiceId ?? null,
    cancel_at_period_end: s.cancelAtPeriodEnd,
    canceled_at: isoOrNull(s.canceledAt),
    ended_reason: s.endedReason ?? null,
    pause_collection:
      s.status === 'paused' && s.pausedAt
        ? {
            paused_at: isoOrNull(s.pausedAt)!,
            resumes_at: isoOrNull(s.pauseUntil),
            reason: s.pauseReason ?? 'requested',
          }
        : null,
    grace_period_days: s.gracePeriodDays ?? null,
    dunning: d
      ? {
          invoice: d.invoiceId,
          attempt_count: d.attempts,
          first_failed_at: d.firstFailedAt,
          next_payment_attempt: d.nextRetryAt,
          grace_period_ends_at: d.graceEndsAt,
          final_action: d.finalAction,
          last_payment_error: { code: d.lastFailureCode, message: d.lastFailureMessage },
        }
      : null,
    created_at: new Date(s.createdAt).toISOString(),
    updated_at: new Date(s.updatedAt).toISOString(),
  };
}
