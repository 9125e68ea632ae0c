import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type {
  BillingCycleMode,
  DunningState,
  SubscriptionItemSnapshot,
  SubscriptionStatus,
} from '../../domain/subscription.ts';

/**
 * Projection of a subscriptionWorkflow's state, written only by its activities.
 * `version` orders the writes: an older write never overwrites a newer one.
 */
export const Subscription = defineEntity({
  name: 'Subscription',
  tableName: 'subscriptions',
  properties: {
    id: p.string().primary(),
    customerId: p.string().index(),
    /** The main item's plan; GET /v1/subscriptions?plan= matches it or any of `items` (subscriptions_plan_id_index, subscriptions_items_gin). */
    planId: p.string().index(),
    status: p.string().$type<SubscriptionStatus>().index(),
    trialStart: p.datetime().nullable(),
    trialEnd: p.datetime().nullable(),
    currentPeriodStart: p.datetime().nullable(),
    currentPeriodEnd: p.datetime().nullable(),
    billingCycle: p.integer().default(0),
    latestInvoiceId: p.string().nullable(),
    canceledAt: p.datetime().nullable(),
    trialDays: p.integer().default(0),
    billingCycleMode: p.string().$type<BillingCycleMode>().default('anniversary'),
    billingAnchor: p.datetime().nullable(),
    cancelAtPeriodEnd: p.boolean().default(false),
    endedReason: p.string().nullable(),
    pausedAt: p.datetime().nullable(),
    pauseUntil: p.datetime().nullable(),
    pauseReason: p.string().nullable(),
    pendingPlanId: p.string().nullable(),
    /** Units of the plan billed each period. */
    quantity: p.integer().default(1),
    /** The quantity a waiting downgrade bills from the next renewal. */
    pendingQuantity: p.integer().nullable(),
    /** The currency it bills in (the plan's, or one of its currency_options). */
    currency: p.string().nullable(),
    /** Its recurring items when it has several (or had one changed through /v1/subscription_items); null: the one item of plan × quantity. */
    items: p.json<SubscriptionItemSnapshot[]>().nullable(),
    gracePeriodDays: p.integer().nullable(),
    /** The failed-payment state while past due (attempts, next retry, grace end). */
    dunning: p.json<DunningState>().nullable(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    version: p.integer(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Subscription = InferEntity<typeof Subscription>;
