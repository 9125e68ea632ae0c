import type { z } from '@hono/zod-openapi';
import type { Customer, Plan, Subscription } from '../db/entities/index.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';
import type { CustomerSchema, PlanSchema, SubscriptionSchema } from './schemas.ts';

/** Entities and workflow snapshots as the API shows them: snake_case, ISO timestamps. */
const isoOrNull = (value: Date | string | null | undefined) => (value == null ? null : new Date(value).toISOString());

export function serializeCustomer(customer: Customer): z.infer<typeof CustomerSchema> {
  return {
    id: customer.id,
    object: 'customer',
    email: customer.email,
    name: customer.name ?? null,
    payment_method: customer.paymentMethod ?? null,
    livemode: customer.livemode,
    created_at: customer.createdAt.toISOString(),
    updated_at: customer.updatedAt.toISOString(),
  };
}

export function serializePlan(plan: Plan): z.infer<typeof PlanSchema> {
  return {
    id: plan.id,
    object: 'plan',
    name: plan.name,
    amount: plan.amount,
    currency: plan.currency,
    interval: plan.interval,
    interval_count: plan.intervalCount,
    trial_period_days: plan.trialPeriodDays,
    active: plan.active,
    livemode: plan.livemode,
    created_at: plan.createdAt.toISOString(),
  };
}

type SubscriptionLike = Pick<
  SubscriptionSnapshot,
  'id' | 'status' | 'customerId' | 'planId' | 'livemode' | 'billingCycle' | 'latestInvoiceId'
> & {
  trialStart: Date | string | null;
  trialEnd: Date | string | null;
  currentPeriodStart: Date | string | null;
  currentPeriodEnd: Date | string | null;
  canceledAt: Date | string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
};

/** Works on the projection row and on the workflow's own snapshot alike. */
export function serializeSubscription(subscription: SubscriptionLike | Subscription | SubscriptionSnapshot): z.infer<typeof SubscriptionSchema> {
  const s = subscription as SubscriptionLike;
  return {
    id: s.id,
    object: 'subscription',
    status: s.status,
    customer_id: s.customerId,
    plan: s.planId,
    livemode: s.livemode,
    trial_start: isoOrNull(s.trialStart),
    trial_end: isoOrNull(s.trialEnd),
    current_period_start: isoOrNull(s.currentPeriodStart),
    current_period_end: isoOrNull(s.currentPeriodEnd),
    billing_cycle: s.billingCycle,
    latest_invoice: s.latestInvoiceId ?? null,
    canceled_at: isoOrNull(s.canceledAt),
    created_at: new Date(s.createdAt).toISOString(),
    updated_at: new Date(s.updatedAt).toISOString(),
  };
}
