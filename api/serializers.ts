import type { z } from '@hono/zod-openapi';
import type { Account, ApiKey, Customer, Plan, Product, Subscription, User } from '../db/entities/index.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';
import type { CallerAccountRow } from './auth/principal.ts';
import type { CustomerSchema, PlanSchema, ProductSchema, SubscriptionSchema } from './schemas.ts';

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
    product: plan.productId ?? null,
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

export function serializeProduct(product: Product): z.infer<typeof ProductSchema> {
  return {
    id: product.id,
    object: 'product',
    name: product.name,
    description: product.description ?? null,
    active: product.active,
    metadata: product.metadata,
    livemode: product.livemode,
    created_at: product.createdAt.toISOString(),
    updated_at: product.updatedAt.toISOString(),
  };
}

type Instant = Date | string | null;
type SubscriptionLike = Pick<
  SubscriptionSnapshot,
  | 'id'
  | 'status'
  | 'customerId'
  | 'planId'
  | 'pendingPlanId'
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
export function serializeSubscription(subscription: SubscriptionLike | Subscription | SubscriptionSnapshot): z.infer<typeof SubscriptionSchema> {
  const s = subscription as SubscriptionLike;
  const d = s.dunning ?? null;
  return {
    id: s.id,
    object: 'subscription',
    status: s.status,
    customer_id: s.customerId,
    plan: s.planId,
    pending_plan: s.pendingPlanId ?? null,
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
      s.status === 'paused' && s.pausedAt ? { paused_at: isoOrNull(s.pausedAt)!, resumes_at: isoOrNull(s.pauseUntil), reason: s.pauseReason ?? 'requested' } : null,
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

export function serializeUser(user: User) {
  return {
    id: user.id,
    object: 'user' as const,
    email: user.email,
    name: user.name ?? null,
    role: user.role,
    status: user.status,
    account_id: user.accountId ?? null,
    created_at: user.createdAt.toISOString(),
    updated_at: user.updatedAt.toISOString(),
  };
}

export function serializeAccount(account: Account, { withSettings = true } = {}) {
  return {
    id: account.id,
    object: 'account' as const,
    email: account.email,
    name: account.name,
    type: account.type,
    status: account.status,
    created_at: account.createdAt.toISOString(),
    updated_at: account.updatedAt.toISOString(),
    ...(account.closedAt ? { closed_at: account.closedAt.toISOString() } : {}),
    ...(withSettings ? { settings: account.settings } : {}),
  };
}

/** The same shape from the raw row the authentication query reads. */
export function serializeAccountRow(row: CallerAccountRow) {
  return {
    id: row.id,
    object: 'account' as const,
    email: row.email,
    name: row.name,
    type: row.type,
    status: row.status,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    ...(row.closed_at ? { closed_at: new Date(row.closed_at).toISOString() } : {}),
    settings: row.settings,
  };
}

export function serializeApiKey(key: ApiKey) {
  return {
    id: key.id,
    object: 'api_key' as const,
    name: key.name ?? null,
    livemode: key.livemode,
    redacted_secret: `${key.livemode ? 'sk_live_' : 'sk_test_'}…${key.last4}`,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
  };
}

/**
 * An event as GET /v1/events shows it and as a webhook's body carries it:
 * `transaction_id` is always present (null when no transaction is involved) and
 * `data.object` is the resource as the API returned it at the change.
 */
export function serializeEvent(event: { id: string; type: string; createdAt: Date | string; livemode: boolean; transactionId?: string | null; data: { object: Record<string, unknown> } }) {
  return {
    id: event.id,
    type: event.type,
    created_at: new Date(event.createdAt).toISOString(),
    livemode: event.livemode,
    transaction_id: event.transactionId ?? null,
    data: { object: event.data.object },
  };
}
