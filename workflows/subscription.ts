/**
 * subscriptionWorkflow: one per subscription, workflow id = subscription id.
 * It owns the subscription's time: the trial, each billing date, pauses, plan
 * changes, failed-payment retries and the grace period, all on durable timers.
 *
 * Messages arrive as updates (they need an answer) and are queued: the main
 * loop applies them one at a time between timers, so a plan change never races
 * a renewal. Each update's validator refuses a message that makes no sense in
 * the current state (ApplicationFailure type `invalid_state`) before anything is
 * written to history.
 *
 * Each run ends after a renewal or when Temporal suggests it and continues as
 * new, so the history of a subscription that lives for ten years stays small.
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
  defineSignal,
  defineUpdate,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { addDays, calendarBoundaryAtOrBefore, nextCalendarBoundary, subscriptionPeriod } from '../domain/billing-calendar.ts';
import { scheduledAttemptAt } from '../domain/dunning.ts';
import { dailyRate, prorate } from '../domain/proration.ts';
import { endedStatuses, type DunningState, type PlanTerms, type SubscriptionSnapshot } from '../domain/subscription.ts';
import { SubscriptionStatusKey } from './search-attributes.ts';

export interface SubscriptionWorkflowInput {
  /** On the first run: version 0 with id, customer, plan, trialDays and livemode set. Later runs: the state carried over. */
  snapshot: SubscriptionSnapshot;
  plan: PlanTerms;
  /** A downgrade waiting for the next renewal. */
  pendingPlan?: PlanTerms | null;
}

export interface CancelRequest {
  atPeriodEnd: boolean;
}
export interface PauseRequest {
  /** ISO instant to resume at by itself; null: until resumed. */
  pauseUntil: string | null;
}
export interface ChangePlanRequest {
  plan: PlanTerms;
}

/** Resolves with the subscription once its first state is recorded: the API's read-your-write. */
export const subscriptionCreatedUpdate = defineUpdate<SubscriptionSnapshot>('subscriptionCreated');
export const cancelSubscriptionUpdate = defineUpdate<SubscriptionSnapshot, [CancelRequest]>('cancelSubscription');
export const pauseSubscriptionUpdate = defineUpdate<SubscriptionSnapshot, [PauseRequest]>('pauseSubscription');
export const resumeSubscriptionUpdate = defineUpdate<SubscriptionSnapshot>('resumeSubscription');
/** Upgrade now (prorated charge; a decline refuses it with type `payment_failed`) or downgrade at the next renewal. */
export const changePlanUpdate = defineUpdate<SubscriptionSnapshot, [ChangePlanRequest]>('changePlan');
/** The customer's payment method changed: a past-due subscription retries at once. */
export const paymentMethodUpdatedSignal = defineSignal('paymentMethodUpdated');
/** The account is closing: end now, whatever the state. */
export const accountClosedSignal = defineSignal('accountClosed');
export const subscriptionQuery = defineQuery<SubscriptionSnapshot>('subscription');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: ['IdempotencyKeyReuseError'] },
});

type Command =
  | { kind: 'cancel'; atPeriodEnd: boolean; reason: string }
  | { kind: 'pause'; pauseUntil: string | null }
  | { kind: 'resume' }
  | { kind: 'changePlan'; plan: PlanTerms }
  | { kind: 'retryPayment' };

type Outcome = { ok: true } | { ok: false; type: string; message: string };

interface Queued {
  command: Command;
  done: (outcome: Outcome) => void;
}

const iso = (instant: Date) => instant.toISOString();
const isEnded = (s: SubscriptionSnapshot) => endedStatuses.includes(s.status);
const refuse = (type: string, message: string): Outcome => ({ ok: false, type, message });

export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionSnapshot> {
  let plan = input.plan;
  let pendingPlan = input.pendingPlan ?? null;
  let subscription = input.snapshot;
  let created = subscription.version > 0;
  const queue: Queued[] = [];
  /** Set after a billing date (trial end or renewal): this run's work is done, carry the state into a new one. */
  let renewed = false;

  // ---- Messages -----------------------------------------------------------

  /** Why `command` cannot be applied now, or null. Used by validators and again when the command runs. */
  function problem(command: Command): string | null {
    const s = subscription.status;
    if (isEnded(subscription)) return `The subscription is ${s}.`;
    switch (command.kind) {
      case 'cancel':
        if (command.atPeriodEnd && s !== 'active' && s !== 'trialing') return `Only an active or trialing subscription can be canceled at period end; it is ${s}. Cancel it now instead.`;
        if (command.atPeriodEnd && subscription.cancelAtPeriodEnd) return 'The subscription is already set to cancel at period end.';
        return null;
      case 'pause':
        if (s !== 'active') return `Only an active subscription can be paused; it is ${s}.`;
        if (subscription.cancelAtPeriodEnd) return 'The subscription cancels at period end; it cannot be paused.';
        return null;
      case 'resume':
        return s === 'paused' ? null : `Only a paused subscription can be resumed; it is ${s}.`;
      case 'changePlan':
        if (s !== 'active' && s !== 'trialing') return `The plan of a ${s} subscription cannot change.`;
        if (command.plan.planId === plan.planId && !pendingPlan) return `The subscription is already on ${plan.planId}.`;
        if (command.plan.currency !== plan.currency) return `The new plan bills in ${command.plan.currency}, the subscription in ${plan.currency}.`;
        return null;
      case 'retryPayment':
        return s === 'past_due' ? null : 'Nothing to retry.';
    }
  }

  function validated(command: Command): void {
    // A cancel already queued wins over whatever follows it.
    if (queue.some((q) => q.command.kind === 'cancel' && !q.command.atPeriodEnd)) {
      throw ApplicationFailure.create({ type: 'invalid_state', message: 'The subscription is being canceled.', nonRetryable: true });
    }
    const reason = problem(command);
    if (reason) throw ApplicationFailure.create({ type: 'invalid_state', message: reason, nonRetryable: true });
  }

  /** Queues a command for the main loop and answers with the subscription once it is applied. */
  async function enqueue(command: Command): Promise<SubscriptionSnapshot> {
    const outcome = await new Promise<Outcome>((done) => queue.push({ command, done }));
    if (!outcome.ok) throw ApplicationFailure.create({ type: outcome.type, message: outcome.message, nonRetryable: true });
    return subscription;
  }

  setHandler(subscriptionQuery, () => subscription);
  setHandler(subscriptionCreatedUpdate, async () => {
    await condition(() => created);
    return subscription;
  });
  setHandler(cancelSubscriptionUpdate, ({ atPeriodEnd }) => enqueue({ kind: 'cancel', atPeriodEnd, reason: 'requested' }), {
    validator: ({ atPeriodEnd }) => validated({ kind: 'cancel', atPeriodEnd, reason: 'requested' }),
  });
  setHandler(pauseSubscriptionUpdate, ({ pauseUntil }) => enqueue({ kind: 'pause', pauseUntil }), {
    validator: ({ pauseUntil }) => {
      validated({ kind: 'pause', pauseUntil });
      if (pauseUntil !== null && Date.parse(pauseUntil) <= Date.now()) {
        throw ApplicationFailure.create({ type: 'invalid_request', message: 'pause_until must be in the future.', nonRetryable: true });
      }
    },
  });
  setHandler(resumeSubscriptionUpdate, () => enqueue({ kind: 'resume' }), { validator: () => validated({ kind: 'resume' }) });
  setHandler(changePlanUpdate, ({ plan: next }) => enqueue({ kind: 'changePlan', plan: next }), {
    validator: ({ plan: next }) => validated({ kind: 'changePlan', plan: next }),
  });
  setHandler(paymentMethodUpdatedSignal, () => {
    const queued = queue.some((q) => q.command.kind === 'retryPayment');
    if (subscription.status === 'past_due' && !queued) queue.push({ command: { kind: 'retryPayment' }, done: () => {} });
  });
  setHandler(accountClosedSignal, () => {
    if (!isEnded(subscription)) queue.push({ command: { kind: 'cancel', atPeriodEnd: false, reason: 'account_closed' }, done: () => {} });
  });

  // ---- Recording ----------------------------------------------------------

  /** Applies a change, bumps the version, and writes the projection and search attributes. */
  async function record(changes: Partial<SubscriptionSnapshot>): Promise<void> {
    subscription = { ...subscription, ...changes, updatedAt: iso(new Date()), version: subscription.version + 1 };
    upsertSearchAttributes([{ key: SubscriptionStatusKey, value: subscription.status }]);
    await activities.projectSubscription(subscription);
  }

  const billingKey = (cycle: number) => `${subscription.id}:cycle:${cycle}`;
  const customer = () => ({ accountId: subscription.accountId, customerId: subscription.customerId, livemode: subscription.livemode });

  // ---- Billing ------------------------------------------------------------

  /** Starts billing now: a trial if one was asked for, else the first charge. */
  async function start(): Promise<void> {
    const now = new Date();
    if (subscription.trialDays > 0) {
      await record({ status: 'trialing', trialStart: iso(now), trialEnd: iso(addDays(now, subscription.trialDays)), pausedAt: null, pauseUntil: null, pauseReason: null });
    } else {
      await beginBilling(now);
    }
  }

  /** Anchors the periods at `from` (or its next calendar boundary) and bills the first one. */
  async function beginBilling(from: Date): Promise<void> {
    if (subscription.billingCycleMode === 'calendar') {
      const boundary = nextCalendarBoundary(from, plan.interval.unit);
      const aligned = calendarBoundaryAtOrBefore(from, plan.interval.unit).getTime() === from.getTime();
      subscription = aligned
        ? { ...subscription, billingAnchor: iso(from), anchorCycle: 0, stubStart: null }
        : { ...subscription, billingAnchor: iso(boundary), anchorCycle: 1, stubStart: iso(from) };
    } else {
      subscription = { ...subscription, billingAnchor: iso(from), anchorCycle: 0, stubStart: null };
    }
    await bill(0);
  }

  const periodOf = (cycle: number) =>
    subscriptionPeriod({ billingAnchor: subscription.billingAnchor!, anchorCycle: subscription.anchorCycle, stubStart: subscription.stubStart }, plan.interval, cycle);

  /** Invoices and charges billing cycle `cycle`; a decline starts dunning. */
  async function bill(cycle: number): Promise<void> {
    const period = periodOf(cycle);
    const key = billingKey(cycle);
    setCurrentDetails(`Billing cycle ${cycle} (${iso(period.start)} to ${iso(period.end)}).`);
    // The partial first period of calendar billing is prorated against the full calendar period.
    const isStub = cycle < subscription.anchorCycle;
    const fullStart = isStub ? calendarBoundaryAtOrBefore(period.start, plan.interval.unit) : period.start;
    const amount = isStub ? prorate(plan.amount, period.end.getTime() - period.start.getTime(), period.end.getTime() - fullStart.getTime()) : plan.amount;
    const invoice = await activities.openInvoice({
      billingKey: key,
      subscriptionId: subscription.id,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      currency: plan.currency,
      lines: [
        {
          description: `${plan.name}${isStub ? ' (partial period)' : ''}`,
          amount,
          quantity: 1,
          period_start: iso(period.start),
          period_end: iso(period.end),
          proration: isStub,
        },
      ],
      periodStart: iso(period.start),
      periodEnd: iso(period.end),
      issuedAt: iso(new Date()),
      livemode: subscription.livemode,
    });
    const periodFields = {
      billingCycle: cycle,
      currentPeriodStart: iso(period.start),
      currentPeriodEnd: iso(period.end),
      latestInvoiceId: invoice.invoiceId,
      planId: plan.planId,
      pendingPlanId: pendingPlan?.planId ?? null,
    };
    if (invoice.amountDue === 0) {
      await activities.settleInvoiceWithoutCharge(invoice.invoiceId, iso(new Date()));
      await record({ status: 'active', ...periodFields });
      return;
    }
    const outcome = await activities.charge({
      idempotencyKey: `${key}:attempt:1`,
      invoiceId: invoice.invoiceId,
      attempt: 1,
      ...customer(),
      amount: invoice.amountDue,
      currency: plan.currency,
      description: `Invoice ${invoice.number}`,
    });
    if (outcome.status === 'succeeded') {
      await activities.settleInvoice(invoice.invoiceId, outcome, iso(new Date()));
      await record({ status: 'active', ...periodFields, dunning: null });
      return;
    }
    if (cycle === 0 && subscription.status === 'trialing' && outcome.failureCode === 'no_payment_method') {
      // A trial that ends with nothing to charge does not convert: it expires.
      await activities.voidInvoice(invoice.invoiceId, iso(new Date()));
      await record({ status: 'expired', endedReason: 'trial_without_payment_method', latestInvoiceId: invoice.invoiceId, canceledAt: iso(new Date()) });
      return;
    }
    await startDunning({ ...periodFields }, { invoiceId: invoice.invoiceId, number: invoice.number, billingKey: key, amount: invoice.amountDue }, outcome);
  }

  // ---- Dunning ------------------------------------------------------------

  async function startDunning(
    periodFields: Partial<SubscriptionSnapshot>,
    invoice: { invoiceId: string; number: string; billingKey: string; amount: number },
    failure: { failureCode: string; failureMessage: string },
  ): Promise<void> {
    const settings = await activities.loadBillingSettings(subscription.accountId, subscription.livemode);
    const firstFailedAt = new Date();
    const dunning: DunningState = {
      invoiceId: invoice.invoiceId,
      invoiceNumber: invoice.number,
      billingKey: invoice.billingKey,
      amount: invoice.amount,
      currency: plan.currency,
      attempts: 1,
      scheduledAttempts: 1,
      firstFailedAt: iso(firstFailedAt),
      nextRetryAt: null,
      graceEndsAt: null,
      gracePeriodDays: subscription.gracePeriodDays ?? settings.gracePeriodDays,
      finalAction: settings.finalAction,
      policy: settings.retryPolicy,
      lastFailureCode: failure.failureCode,
      lastFailureMessage: failure.failureMessage,
    };
    await afterFailedAttempt({ ...periodFields, status: 'past_due' }, dunning);
  }

  /** Schedules what follows a failed attempt, records it, and emails the customer. */
  async function afterFailedAttempt(changes: Partial<SubscriptionSnapshot>, dunning: DunningState): Promise<void> {
    const next = scheduledAttemptAt(dunning.policy, new Date(dunning.firstFailedAt), dunning.scheduledAttempts + 1);
    const graceEndsAt = next === null ? (dunning.graceEndsAt ?? iso(addDays(new Date(), dunning.gracePeriodDays))) : null;
    const updated: DunningState = { ...dunning, nextRetryAt: next ? iso(next) : null, graceEndsAt };
    await record({ ...changes, dunning: updated });
    await activities.notifyPaymentFailed({ subscription, attempt: updated.attempts });
  }

  /** One more charge of the unpaid invoice: scheduled, or because the payment method changed. */
  async function retryPayment(scheduled: boolean): Promise<void> {
    const dunning = subscription.dunning!;
    const attempt = dunning.attempts + 1;
    // Someone may have settled the invoice another way (voided it, say): nothing left to collect.
    const invoice = await activities.getInvoice(dunning.invoiceId);
    if (invoice.status === 'paid' || invoice.status === 'void') {
      await record({ status: 'active', dunning: null });
      return;
    }
    setCurrentDetails(`Payment retry ${attempt} for invoice ${dunning.invoiceNumber}.`);
    const outcome = await activities.charge({
      idempotencyKey: `${dunning.billingKey}:attempt:${attempt}`,
      invoiceId: dunning.invoiceId,
      attempt,
      ...customer(),
      amount: dunning.amount,
      currency: dunning.currency,
      description: `Invoice ${dunning.invoiceNumber} (attempt ${attempt})`,
    });
    if (outcome.status === 'succeeded') {
      await activities.settleInvoice(dunning.invoiceId, outcome, iso(new Date()));
      await record({ status: 'active', dunning: null });
      await activities.notifyPaymentRecovered({ subscription, invoiceId: dunning.invoiceId });
      return;
    }
    await afterFailedAttempt(
      {},
      {
        ...dunning,
        attempts: attempt,
        scheduledAttempts: dunning.scheduledAttempts + (scheduled ? 1 : 0),
        lastFailureCode: outcome.failureCode,
        lastFailureMessage: outcome.failureMessage,
      },
    );
  }

  /** Retries and grace are spent: cancel or pause, as the account's settings say. */
  async function endDunning(): Promise<void> {
    const dunning = subscription.dunning!;
    await activities.markInvoiceUncollectible(dunning.invoiceId, iso(new Date()));
    if (dunning.finalAction === 'pause') {
      await record({ status: 'paused', pausedAt: iso(new Date()), pauseUntil: null, pauseReason: 'payment_failed', dunning: null });
      await activities.notifySubscriptionEnded({ subscription, kind: 'paused' });
    } else {
      await endNow('payment_failed');
    }
  }

  async function endNow(reason: string): Promise<void> {
    // An unpaid invoice stays payable, but nobody will ask for it any more.
    if (subscription.dunning) await activities.markInvoiceUncollectible(subscription.dunning.invoiceId, iso(new Date()));
    await record({ status: 'canceled', canceledAt: iso(new Date()), endedReason: reason, cancelAtPeriodEnd: false, pauseUntil: null, dunning: null });
    await activities.notifySubscriptionEnded({ subscription, kind: 'canceled' });
  }

  // ---- Commands -----------------------------------------------------------

  async function apply(command: Command): Promise<Outcome> {
    const reason = problem(command);
    if (reason) return refuse('invalid_state', reason);
    switch (command.kind) {
      case 'cancel':
        if (command.atPeriodEnd) await record({ cancelAtPeriodEnd: true });
        else await endNow(command.reason);
        return { ok: true };
      case 'pause':
        await record({ status: 'paused', pausedAt: iso(new Date()), pauseUntil: command.pauseUntil, pauseReason: 'requested' });
        return { ok: true };
      case 'resume':
        await resume();
        return { ok: true };
      case 'changePlan':
        return changePlan(command.plan);
      case 'retryPayment':
        await retryPayment(false);
        return { ok: true };
    }
  }

  /**
   * Back to billing. Before the paid period ends, the period simply continues; after
   * it (or when it was never paid, as after a dunning pause), a new period starts now
   * and is charged at once.
   */
  async function resume(): Promise<void> {
    const now = new Date();
    const unpaid = subscription.pauseReason === 'payment_failed';
    const resumed = { pausedAt: null, pauseUntil: null, pauseReason: null };
    if (subscription.billingAnchor === null) {
      subscription = { ...subscription, ...resumed };
      await start();
    } else if (!unpaid && subscription.currentPeriodEnd && Date.parse(subscription.currentPeriodEnd) > now.getTime()) {
      await record({ status: 'active', ...resumed });
    } else {
      const nextCycle = subscription.billingCycle + 1;
      subscription = { ...subscription, ...resumed, billingAnchor: iso(now), anchorCycle: nextCycle, stubStart: null };
      await bill(nextCycle);
    }
  }

  /**
   * An upgrade (higher price per day) takes effect now: the unused part of the old
   * plan is credited and the rest of the period on the new plan charged, on one
   * invoice with proration lines; a decline leaves everything as it was. A change
   * of interval starts a new period now instead. A downgrade waits for the next
   * renewal. In a trial the plan simply changes.
   */
  async function changePlan(next: PlanTerms): Promise<Outcome> {
    if (next.planId === plan.planId) {
      // Back to the current plan: drop the pending downgrade.
      pendingPlan = null;
      await record({ pendingPlanId: null });
      return { ok: true };
    }
    if (subscription.status === 'trialing') {
      plan = next;
      pendingPlan = null;
      await record({ planId: next.planId, pendingPlanId: null });
      return { ok: true };
    }
    if (dailyRate(next.amount, next.interval) <= dailyRate(plan.amount, plan.interval)) {
      pendingPlan = next;
      await record({ pendingPlanId: next.planId });
      return { ok: true };
    }
    const now = new Date();
    const start = new Date(subscription.currentPeriodStart!);
    const end = new Date(subscription.currentPeriodEnd!);
    const periodMs = end.getTime() - start.getTime();
    const remainingMs = end.getTime() - now.getTime();
    const sameInterval = next.interval.unit === plan.interval.unit && next.interval.count === plan.interval.count;
    const credit = -prorate(plan.amount, remainingMs, periodMs);
    const newPeriod = sameInterval ? { start, end } : { start: now, end: null as Date | null };
    const lines = [
      { description: `Unused time on ${plan.name} after ${iso(now)}`, amount: credit, quantity: 1, period_start: iso(now), period_end: iso(end), proration: true },
    ];
    let newPeriodEnd = end;
    if (sameInterval) {
      lines.push({ description: `Remaining time on ${next.name} after ${iso(now)}`, amount: prorate(next.amount, remainingMs, periodMs), quantity: 1, period_start: iso(now), period_end: iso(end), proration: true });
    } else {
      const anchored = subscriptionPeriod({ billingAnchor: iso(now), anchorCycle: 0, stubStart: null }, next.interval, 0);
      newPeriodEnd = anchored.end;
      lines.push({ description: `${next.name}`, amount: next.amount, quantity: 1, period_start: iso(now), period_end: iso(newPeriodEnd), proration: false });
    }
    const changeKey = `${subscription.id}:plan_change:${subscription.version}`;
    const invoice = await activities.openInvoice({
      billingKey: changeKey,
      subscriptionId: subscription.id,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      currency: plan.currency,
      lines,
      periodStart: iso(newPeriod.start),
      periodEnd: iso(newPeriodEnd),
      issuedAt: iso(now),
      livemode: subscription.livemode,
    });
    if (invoice.amountDue > 0) {
      const outcome = await activities.charge({
        idempotencyKey: `${changeKey}:attempt:1`,
        invoiceId: invoice.invoiceId,
        attempt: 1,
        ...customer(),
        amount: invoice.amountDue,
        currency: plan.currency,
        description: `Invoice ${invoice.number} (plan change)`,
      });
      if (outcome.status === 'failed') {
        await activities.voidInvoice(invoice.invoiceId, iso(new Date()));
        return refuse('payment_failed', `The upgrade needs a payment of ${invoice.amountDue} now, and it failed: ${outcome.failureMessage} Nothing changed.`);
      }
      await activities.settleInvoice(invoice.invoiceId, outcome, iso(new Date()));
    } else {
      await activities.settleInvoiceWithoutCharge(invoice.invoiceId, iso(new Date()));
    }
    plan = next;
    pendingPlan = null;
    if (sameInterval) {
      await record({ planId: next.planId, pendingPlanId: null, latestInvoiceId: invoice.invoiceId });
    } else {
      await record({
        planId: next.planId,
        pendingPlanId: null,
        latestInvoiceId: invoice.invoiceId,
        billingAnchor: iso(now),
        anchorCycle: subscription.billingCycle,
        stubStart: null,
        currentPeriodStart: iso(now),
        currentPeriodEnd: iso(newPeriodEnd),
      });
    }
    return { ok: true };
  }

  // ---- Time ---------------------------------------------------------------

  type Wake = { at: string; what: string; run: () => Promise<void> };

  /** The next thing this subscription waits for, by state. */
  function nextWake(): Wake | null {
    const s = subscription;
    switch (s.status) {
      case 'trialing':
        return {
          at: s.trialEnd!,
          what: s.cancelAtPeriodEnd ? 'Trial ends; cancels (cancel at period end)' : 'Trial ends; first charge',
          run: async () => {
            if (s.cancelAtPeriodEnd) return endNow('requested');
            await beginBilling(new Date(s.trialEnd!));
            renewed = true;
          },
        };
      case 'active':
        return {
          at: s.currentPeriodEnd!,
          what: s.cancelAtPeriodEnd ? 'Period ends; cancels (cancel at period end)' : `Renewal, cycle ${s.billingCycle + 1}${pendingPlan ? ` on ${pendingPlan.planId}` : ''}`,
          run: async () => {
            if (s.cancelAtPeriodEnd) return endNow('requested');
            if (pendingPlan) {
              plan = pendingPlan;
              pendingPlan = null;
            }
            await bill(s.billingCycle + 1);
            renewed = true;
          },
        };
      case 'past_due': {
        const d = s.dunning!;
        if (d.nextRetryAt) return { at: d.nextRetryAt, what: `Payment retry ${d.attempts + 1} of invoice ${d.invoiceNumber}`, run: () => retryPayment(true) };
        return { at: d.graceEndsAt!, what: `Grace period ends; then ${d.finalAction === 'pause' ? 'pauses' : 'cancels'}`, run: endDunning };
      }
      case 'paused':
        return s.pauseUntil ? { at: s.pauseUntil, what: 'Pause ends; resumes', run: resume } : null;
      default:
        return null;
    }
  }

  // ---- The life -----------------------------------------------------------

  if (subscription.version === 0) {
    const now = new Date();
    subscription = { ...subscription, createdAt: iso(now) };
    if (subscription.pauseUntil) {
      // Created paused: billing (and any trial) starts when the pause ends.
      await record({ status: 'paused', pausedAt: iso(now), pauseReason: 'requested' });
    } else {
      await start();
    }
    created = true;
  }

  while (!isEnded(subscription)) {
    const wake = nextWake();
    setCurrentDetails(wake ? `${wake.what} (at ${wake.at}).` : subscription.status === 'paused' ? 'Paused until resumed.' : 'Waiting.');
    let woken: boolean;
    if (!wake) {
      await condition(() => queue.length > 0);
      woken = true;
    } else {
      const remaining = Date.parse(wake.at) - Date.now();
      woken = remaining > 0 ? await condition(() => queue.length > 0, remaining, { summary: wake.what }) : queue.length > 0;
    }
    if (woken) {
      const { command, done } = queue.shift()!;
      done(await apply(command));
    } else {
      await wake!.run();
    }
    if ((renewed || workflowInfo().continueAsNewSuggested) && !isEnded(subscription)) {
      // Let accepted messages finish first; one that arrives meanwhile is applied in this run.
      await condition(() => queue.length > 0 || allHandlersFinished());
      if (queue.length === 0) {
        return continueAsNew<typeof subscriptionWorkflow>({ snapshot: subscription, plan, pendingPlan });
      }
    }
  }
  setCurrentDetails(`${subscription.status === 'expired' ? 'Expired' : 'Canceled'}. Nothing more to do.`);
  // Answer messages still queued (they find the subscription ended) before the run closes.
  while (queue.length > 0) {
    const { command, done } = queue.shift()!;
    done(await apply(command));
  }
  await condition(allHandlersFinished);
  return subscription;
}
