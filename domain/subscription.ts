import type { BillingInterval } from './billing-calendar.ts';
import type { RetryPolicy } from './dunning.ts';
import type { UsagePricing } from './pricing.ts';
import type { UsageTerms } from './usage-billing.ts';

/**
 * Subscription states of SPEC.md. `paused` is our name for the state the spec
 * leaves unnamed; `expired` is a trial that ended with no usable payment method.
 */
export const subscriptionStatuses = ['trialing', 'active', 'past_due', 'paused', 'canceled', 'expired'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];
export const endedStatuses: readonly SubscriptionStatus[] = ['canceled', 'expired'];

/**
 * `anniversary`: periods start at the moment billing began (Stripe's default).
 * `calendar`: periods start on the calendar boundary of the plan's unit in UTC
 * (midnight, Monday, the 1st, January 1st); the first, partial period is billed
 * prorated.
 */
export const billingCycleModes = ['anniversary', 'calendar'] as const;
export type BillingCycleMode = (typeof billingCycleModes)[number];

/** What a failed payment ends in once retries and the grace period are spent. */
export const dunningFinalActions = ['cancel', 'pause'] as const;
export type DunningFinalAction = (typeof dunningFinalActions)[number];

/**
 * A price as the workflow bills it, copied in when chosen, in the subscription's currency.
 * Terms recorded before pricing schemes have neither `pricing` nor `quantity`: per_unit at
 * `amount`, quantity 1 (domain/subscription-decisions.ts termsPrice).
 */
export interface PriceTerms {
  planId: string;
  name: string;
  /** per_unit and package: the unit (package) amount; tiered: the amount of one unit. */
  amount: number;
  currency: string;
  /** How the amount follows the quantity (domain/pricing.ts); absent: per_unit at `amount`. */
  pricing?: UsagePricing;
  /** Units billed; absent: 1. */
  quantity?: number;
  /** A metered plan: billed in arrears on its meter's usage (domain/usage-billing.ts), never at `quantity` in advance. */
  usage?: UsageTerms | null;
}

/** The recurring plan terms a subscription bills by. */
export interface PlanTerms extends PriceTerms {
  interval: BillingInterval;
}

/**
 * One recurring item of a subscription with several (phase 2 of #26): its terms and its id. Every item shares the
 * subscription's billing period (the same interval) and currency.
 */
export interface ItemTerms extends PlanTerms {
  itemId: string;
}

/** An item as the snapshot (and so the projection and the API) shows it. */
export interface SubscriptionItemSnapshot {
  id: string;
  planId: string;
  quantity: number;
}

/** The id of a subscription's (one) recurring item: `si_` and the subscription's own ULID, so subscriptions made before items have it too. */
export const subscriptionItemId = (subscriptionId: string): string =>
  `si_${subscriptionId.slice(subscriptionId.indexOf('_') + 1)}`;

/** The failed-payment state of a past-due subscription. */
export interface DunningState {
  invoiceId: string;
  invoiceNumber: string;
  /** The billing key of the unpaid invoice; attempts are keyed `${billingKey}:attempt:${n}`. */
  billingKey: string;
  amount: number;
  currency: string;
  /** Charge attempts made so far (scheduled and on payment-method updates). */
  attempts: number;
  /** Scheduled attempts made so far; the policy's intervals count from the first failure. */
  scheduledAttempts: number;
  firstFailedAt: string;
  /** The next scheduled retry; null once the schedule is spent. */
  nextRetryAt: string | null;
  /** Set when the last scheduled attempt failed: the subscription ends (or pauses) then. */
  graceEndsAt: string | null;
  gracePeriodDays: number;
  finalAction: DunningFinalAction;
  policy: RetryPolicy;
  lastFailureCode: string;
  lastFailureMessage: string;
}

/**
 * The subscription as the workflow knows it: the one shape that the workflow
 * returns from updates, writes to the projection, and the API serializes.
 * Instants are ISO strings so it crosses Temporal's JSON payloads unchanged.
 */
export interface SubscriptionSnapshot {
  id: string;
  accountId: string;
  customerId: string;
  planId: string;
  status: SubscriptionStatus;
  livemode: boolean;
  createdAt: string;
  /** Workflow time of the latest change. */
  updatedAt: string;
  /** Trial length asked for at creation (used when billing starts). */
  trialDays: number;
  trialStart: string | null;
  trialEnd: string | null;
  billingCycleMode: BillingCycleMode;
  /**
   * Periods are counted from here: period n (n >= anchorCycle) is
   * billingPeriod(billingAnchor, interval, n - anchorCycle). Set when billing
   * starts and again when a resume or an interval change restarts the period.
   */
  billingAnchor: string | null;
  anchorCycle: number;
  /** Calendar mode: start of the partial first period (cycle anchorCycle - 1). */
  stubStart: string | null;
  /** 0-based index of the current paid period; -1 before the first. */
  billingCycle: number;
  currentPeriodStart: string | null;
  currentPeriodEnd: string | null;
  latestInvoiceId: string | null;
  cancelAtPeriodEnd: boolean;
  canceledAt: string | null;
  /** Why it ended: requested, payment_failed, trial_without_payment_method, account_closed. */
  endedReason: string | null;
  pausedAt: string | null;
  /** Resumes by itself at this instant; null: until /resume. */
  pauseUntil: string | null;
  /** Why it is paused: requested, payment_failed. */
  pauseReason: string | null;
  /** A downgrade waiting for the next renewal. */
  pendingPlanId: string | null;
  /** Units of the plan billed each period; absent (subscriptions made before quantities): 1. */
  quantity?: number;
  /** The quantity a waiting downgrade (pendingPlanId) bills from the next renewal; null or absent: none waits. */
  pendingQuantity?: number | null;
  /** The currency it bills in (the plan's, or one of its currency_options); absent in snapshots made before: its plan's currency. */
  currency?: string;
  /**
   * Its recurring items, when it has been given several (or had one added, changed or removed through
   * /v1/subscription_items); absent: the one item of planId × quantity (subscriptionItemId). planId and quantity are the first item's.
   */
  items?: SubscriptionItemSnapshot[];
  /** Overrides the account's grace period when set. */
  gracePeriodDays: number | null;
  dunning: DunningState | null;
  /** Grows with every state change; orders projection writes. */
  version: number;
}

/** What a new subscription is created with; the rest of its first snapshot is filled in here. */
export interface NewSubscription {
  id: string;
  accountId: string;
  customerId: string;
  planId: string;
  livemode: boolean;
  trialDays: number;
  billingCycleMode: BillingCycleMode;
  /** Start paused until then (billing and the trial begin at this instant). */
  pauseUntil: string | null;
  gracePeriodDays: number | null;
  /** Units of the plan; absent: 1. */
  quantity?: number;
  currency?: string;
}

/**
 * The snapshot a subscription workflow starts from (version 0). Times are set by the
 * workflow from workflow time; the epoch values here are placeholders it overwrites.
 */
export function initialSnapshot(s: NewSubscription, requestedAt: Date = new Date(0)): SubscriptionSnapshot {
  // What the first run's input shows in the Temporal UI: the time of the request and the
  // status it is about to take. The workflow records its own times and status at once.
  const at = requestedAt.toISOString();
  return {
    ...s,
    status: s.pauseUntil ? 'paused' : s.trialDays > 0 ? 'trialing' : 'active',
    createdAt: at,
    updatedAt: at,
    trialStart: null,
    trialEnd: null,
    billingAnchor: null,
    anchorCycle: 0,
    stubStart: null,
    billingCycle: 0,
    currentPeriodStart: null,
    currentPeriodEnd: null,
    latestInvoiceId: null,
    cancelAtPeriodEnd: false,
    canceledAt: null,
    endedReason: null,
    pausedAt: null,
    pauseReason: null,
    pendingPlanId: null,
    dunning: null,
    version: 0,
  };
}
