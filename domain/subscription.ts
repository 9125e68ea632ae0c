import type { BillingInterval } from './billing-calendar.ts';

/**
 * Subscription states of SPEC.md. `paused` is our name for the state the spec
 * leaves unnamed; `expired` is a trial that ended with no usable payment method.
 */
export const subscriptionStatuses = ['trialing', 'active', 'past_due', 'paused', 'canceled', 'expired'] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

/** The plan terms a subscription bills by, copied into the workflow at start. */
export interface PlanTerms {
  planId: string;
  amount: number;
  currency: string;
  interval: BillingInterval;
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
  trialStart: string | null;
  trialEnd: string | null;
  /** Start of billing: periods are counted from here (see billing-calendar). */
  billingAnchor: string | null;
  /** 0-based index of the current paid period. */
  billingCycle: number;
  currentPeriodStart: string | null;
  currentPeriodEnd: string | null;
  latestInvoiceId: string | null;
  canceledAt: string | null;
  /** Grows with every state change; orders projection writes. */
  version: number;
}
