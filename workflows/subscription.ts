/**
 * subscriptionWorkflow: one per subscription, workflow id = subscription id.
 * It owns the subscription's time: the trial, each billing date, and (from the
 * subscriptions issue on) pauses, retries and the grace period. Each run bills
 * at most one cycle and then continues as new, so the history of a subscription
 * that lives for ten years stays small.
 *
 * Deterministic code only: time is workflow time (`Date.now()` is replay-safe
 * here), every side effect is an activity.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { addDays, billingPeriod } from '../domain/billing-calendar.ts';
import type { PlanTerms, SubscriptionSnapshot } from '../domain/subscription.ts';
import { SubscriptionStatusKey } from './search-attributes.ts';

export interface SubscriptionWorkflowInput {
  /** On the first run: version 0 with id, customer, plan and livemode set. Later runs: the state carried over. */
  snapshot: SubscriptionSnapshot;
  plan: PlanTerms;
  /** Read on the first run only. */
  trialPeriodDays: number;
}

/** Resolves with the subscription once its first state is recorded: the API's read-your-write. */
export const subscriptionCreatedUpdate = defineUpdate<SubscriptionSnapshot>('subscriptionCreated');
/** Cancels now. Refused (ApplicationFailure type `invalid_state`) when already ended. */
export const cancelSubscriptionUpdate = defineUpdate<SubscriptionSnapshot>('cancelSubscription');
export const subscriptionQuery = defineQuery<SubscriptionSnapshot>('subscription');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: ['IdempotencyKeyReuseError'] },
});

const iso = (instant: Date) => instant.toISOString();
const endedStatuses = new Set(['canceled', 'expired']);

export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionSnapshot> {
  const { plan } = input;
  let subscription = input.snapshot;
  let created = subscription.version > 0;
  let cancelRequested = false;

  setHandler(subscriptionQuery, () => subscription);
  setHandler(subscriptionCreatedUpdate, async () => {
    await condition(() => created);
    return subscription;
  });
  setHandler(
    cancelSubscriptionUpdate,
    async () => {
      cancelRequested = true;
      await condition(() => endedStatuses.has(subscription.status));
      return subscription;
    },
    {
      validator: () => {
        if (endedStatuses.has(subscription.status) || cancelRequested) {
          throw ApplicationFailure.create({ type: 'invalid_state', message: `Subscription is already ${subscription.status}.`, nonRetryable: true });
        }
      },
    },
  );

  /** Applies a change, bumps the version, and writes the projection and search attributes. */
  async function record(changes: Partial<SubscriptionSnapshot>): Promise<void> {
    subscription = { ...subscription, ...changes, updatedAt: iso(new Date()), version: subscription.version + 1 };
    upsertSearchAttributes([{ key: SubscriptionStatusKey, value: subscription.status }]);
    await activities.projectSubscription(subscription);
  }

  /** Waits until `instant` unless a cancel arrives first; true when it was canceled. */
  async function waitUntil(instant: string, summary: string): Promise<boolean> {
    setCurrentDetails(`${summary} (at ${instant}).`);
    const remaining = Date.parse(instant) - Date.now();
    if (remaining > 0) await condition(() => cancelRequested, remaining, { summary });
    return cancelRequested;
  }

  async function cancelNow(): Promise<SubscriptionSnapshot> {
    await record({ status: 'canceled', canceledAt: iso(new Date()) });
    setCurrentDetails('Canceled. Nothing more to do.');
    await condition(allHandlersFinished);
    return subscription;
  }

  /** Invoices and charges billing cycle `cycle` (0 = first paid period). */
  async function bill(cycle: number): Promise<void> {
    const period = billingPeriod(new Date(subscription.billingAnchor!), plan.interval, cycle);
    const billingKey = `${subscription.id}:cycle:${cycle}`;
    setCurrentDetails(`Billing cycle ${cycle} (${iso(period.start)} to ${iso(period.end)}).`);
    const invoice = await activities.openInvoice({
      billingKey,
      subscriptionId: subscription.id,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      currency: plan.currency,
      lines: [{ description: `Subscription to ${plan.planId}`, amount: plan.amount, quantity: 1, period_start: iso(period.start), period_end: iso(period.end) }],
      periodStart: iso(period.start),
      periodEnd: iso(period.end),
      issuedAt: iso(new Date()),
      livemode: subscription.livemode,
    });
    const outcome = await activities.charge({
      idempotencyKey: `${billingKey}:attempt:1`,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      amount: invoice.amountDue,
      currency: plan.currency,
      description: `Invoice ${invoice.number}`,
      livemode: subscription.livemode,
    });
    const periodFields = { billingCycle: cycle, currentPeriodStart: iso(period.start), currentPeriodEnd: iso(period.end), latestInvoiceId: invoice.invoiceId };
    if (outcome.status === 'succeeded') {
      await activities.settleInvoice(invoice.invoiceId, outcome);
      await record({ status: 'active', ...periodFields });
    } else if (cycle === 0 && subscription.status === 'trialing' && outcome.failureCode === 'no_payment_method') {
      // A trial that ends with nothing to charge does not convert: it expires.
      await record({ status: 'expired', latestInvoiceId: invoice.invoiceId });
    } else {
      await record({ status: 'past_due', ...periodFields });
    }
  }

  if (subscription.version === 0) {
    const now = new Date();
    const start = { createdAt: iso(now) };
    if (input.trialPeriodDays > 0) {
      await record({ ...start, status: 'trialing', trialStart: iso(now), trialEnd: iso(addDays(now, input.trialPeriodDays)) });
    } else {
      subscription = { ...subscription, ...start, billingAnchor: iso(now) };
      await bill(0);
    }
    created = true;
  }

  if (subscription.status === 'trialing') {
    if (await waitUntil(subscription.trialEnd!, 'Trial ends; first charge')) return cancelNow();
    subscription = { ...subscription, billingAnchor: subscription.trialEnd };
    await bill(0);
  } else if (subscription.status === 'active') {
    if (await waitUntil(subscription.currentPeriodEnd!, `Renewal, cycle ${subscription.billingCycle + 1}`)) return cancelNow();
    await bill(subscription.billingCycle + 1);
  }

  // A cancel that arrived while a cycle was being billed.
  if (cancelRequested && !endedStatuses.has(subscription.status)) return cancelNow();

  if (subscription.status === 'past_due') {
    // Retries, emails and the grace period arrive with the dunning work (issue 5);
    // until then a past-due subscription waits for a cancel.
    setCurrentDetails('Payment failed; waiting for cancel.');
    await condition(() => cancelRequested);
    return cancelNow();
  }
  if (endedStatuses.has(subscription.status)) {
    await condition(allHandlersFinished);
    return subscription;
  }
  // One cycle per run: carry the state into a fresh history.
  await condition(allHandlersFinished);
  return continueAsNew<typeof subscriptionWorkflow>({ snapshot: subscription, plan, trialPeriodDays: 0 });
}
