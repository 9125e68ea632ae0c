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
 * A run renews in place (patch `renew-in-place`): after a billing date it goes on
 * waiting in the same run, and continues as new only after `renewalsPerRun` billing
 * dates, past `maxRunHistory` events, or when Temporal suggests it, so the history of
 * a subscription that lives for ten years stays small while a renewal costs one
 * workflow task instead of two and no new run (docs/scaling.md). Histories recorded
 * before it continued as new after every billing date, and still replay that way.
 *
 * The decisions (which message is allowed, what to wait for next, what each
 * invoice holds, what follows a failed charge) are pure functions in
 * domain/subscription-decisions.ts; this file handles messages, timers,
 * activities and state. SubscriptionRun holds one run's state, with a method per
 * message and timer; subscriptionWorkflow registers the messages and runs its loop.
 *
 * Deterministic code only: time is workflow time (`Date.now()` is replay-safe
 * here), every side effect is an activity. A subscription of a customer on a test
 * clock takes its time from the clock instead (`clock.now()`, `clock.sleepUntil`:
 * workflows/clock-sleep.ts) and runs its activities as local activities; without a
 * clock, every command is what it always was.
 */
import type { ActivityOptions } from '@temporalio/common';
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  deprecatePatch,
  isCancellation,
  makeContinueAsNewFunc,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { addDays } from '../domain/billing-calendar.ts';
import type { OpenInvoiceCredit } from '../domain/credit-notes.ts';
import type { DunningState, ItemTerms, PlanTerms, PriceTerms, SubscriptionSnapshot } from '../domain/subscription.ts';
import {
  applyItemChange,
  billingAnchorFrom,
  billsUsage,
  commandProblem,
  cycleInvoice,
  failedRetry,
  type InvoiceLineInput,
  isEnded,
  type ItemChange,
  itemSnapshots,
  itemsOf,
  nextWake,
  planChangeKind,
  refusal,
  renewalSpreads,
  resumeKind,
  startDunning,
  stateAtRenewal,
  stripItemId,
  type SubscriptionCommand,
  type SubscriptionState,
  upgradeInvoice,
  waitingDetails,
  type WakeAction,
} from '../domain/subscription-decisions.ts';
import { planDetails, planMemo } from '../domain/subscription-details.ts';
import { metersToClose, usageLines } from '../domain/usage-billing.ts';
import { unbilledLines } from '../domain/usage-thresholds.ts';
import type { OpenedInvoice } from '../services/invoices/cycle-invoices.ts';
import type { PendingFunds } from '../services/money/balances.ts';
import type { ChargeOutcome } from '../services/money/charges.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';
import { PlanIdKey, SubscriptionStatusKey } from './search-attributes.ts';
import {
  billUsageThreshold,
  usageThresholdDunningPatch,
  usageThresholdReachedSignal,
  usageThresholdsPatch,
} from './subscription-usage-thresholds.ts';

export interface SubscriptionWorkflowInput {
  /** On the first run: version 0 with id, customer, plan, trialDays and livemode set. Later runs: the state carried over. */
  snapshot: SubscriptionSnapshot;
  plan: PlanTerms;
  /** A downgrade waiting for the next renewal. */
  pendingPlan?: PlanTerms | null;
  /** One-time prices (setup fees) the first cycle invoice carries; gone once it is made. */
  firstInvoiceItems?: PriceTerms[];
  /** The test clock the customer lives on (sandbox): its time is this subscription's time. */
  testClock?: ClockBinding;
  /** Money this subscription collected that is still pending: made available at its available_on by this workflow (funds-in-subscription). */
  pendingFunds?: DueFunds[];
  /**
   * RENEWAL_SPREAD_MINUTES as the API read it at creation (unset or 0: off), carried by every continue-as-new:
   * a calendar renewal wakes at the boundary plus this subscription's offset in the window and is invoiced at
   * the boundary (domain/renewal-spread.ts; patch `renewal-spread`). Each renewal brings the worker's current
   * setting (renewCycle's result), which the next renewals use (patch `renewal-spread-live`); carried on as
   * the run's latest.
   */
  renewalSpreadMinutes?: number;
  /**
   * Its recurring items when it has several, or had one added, changed or removed (phase 2 of #26); `plan` is the
   * first. Absent: the one item `plan`, as every run before items.
   */
  items?: ItemTerms[];
  /** Prorated lines of item changes (create_prorations) waiting for the next invoice; carried by every continue-as-new. */
  pendingLines?: InvoiceLineInput[];
  /** A repeating discount's end this workflow wakes at to end it on time (discountEndSignal); carried by every continue-as-new. */
  discountEnd?: DiscountEnd;
  /** Metered items: the mode's usage grace window as the last closing read it (absent: 3600 s); carried by every continue-as-new. */
  usageGraceSeconds?: number;
}

/** A subscription's repeating discount and when it ends (ISO). */
export interface DiscountEnd {
  discountId: string;
  end: string;
}

/** Balance transactions of a paid cycle that become available at `at` (ISO, this workflow's time). */
export interface DueFunds {
  balanceTransactionIds: string[];
  at: string;
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
/** Takes back a cancel at period end before the period ends: the subscription renews as before. */
export const undoCancelAtPeriodEndUpdate = defineUpdate<SubscriptionSnapshot>('undoCancelAtPeriodEnd');
/** Marks the undo's command: only runs that accepted the update reach it (deprecated, as the patches below that say so). */
export const undoCancelPatch = 'undo-cancel-at-period-end';
/** Upgrade now (prorated charge; a decline refuses it with type `payment_failed`) or downgrade at the next renewal. */
export const changePlanUpdate = defineUpdate<SubscriptionSnapshot, [ChangePlanRequest]>('changePlan');
/**
 * Voids one of its invoices (the API's POST /v1/invoices/{id}/void): applied between the workflow's own steps, so
 * a dunning retry's charge of that invoice and the void are one decision. Refused (invalid_state) when the invoice
 * is no longer open or uncollectible; an unpaid invoice in dunning ends the dunning.
 */
/**
 * Adds, changes or removes a recurring item (/v1/subscription_items), applied by the main loop between billing
 * steps (so a change and a renewal are never at once), with its proration_behavior. An always_invoice change whose
 * charge is declined is refused with type `payment_failed` and changes nothing.
 */
export const changeItemsUpdate = defineUpdate<SubscriptionSnapshot, [ItemChange]>('changeSubscriptionItems');
/** What the workflow bills from (its state, the renewal spread window): the upcoming invoice is computed from it (domain: upcomingInvoice). */
export interface BillingStateView {
  state: SubscriptionState;
  spreadMinutes: number;
  /** The subscription's time now (a test clock's on a clock). */
  now: string;
}
export const billingStateQuery = defineQuery<BillingStateView>('billingState');
/** Item changes through the workflow's queue (changeItemsUpdate): only runs that accepted one reach it. Deprecated. */
export const subscriptionItemsPatch = 'subscription-items';
export const voidInvoiceUpdate = defineUpdate<SubscriptionSnapshot, [{ invoiceId: string }]>('voidInvoice');
/**
 * A credit note on one of its open invoices (services/credit-notes/owner.ts), applied between the workflow's own steps so no
 * charge of the invoice is in flight: its amount due drops, a dunning retry charges what is left, and an invoice credited to
 * nothing due is paid without a charge. Only runs that accepted one reach its patch, `credit-notes` (deprecated).
 */
export const creditInvoiceUpdate = defineUpdate<SubscriptionSnapshot, [OpenInvoiceCredit]>('creditInvoice');
export const creditNotesPatch = 'credit-notes';
/** The customer's payment method changed: a past-due subscription retries at once. */
export const paymentMethodUpdatedSignal = defineSignal('paymentMethodUpdated');
/** The account is closing: end now, whatever the state. */
export const accountClosedSignal = defineSignal('accountClosed');
/**
 * A repeating discount was applied to the subscription (POST /v1/subscriptions/{id}/discount, or a coupon at creation): the
 * workflow wakes at its end and ends it (customer.discount.deleted) on time, on a test clock too. Only runs that received it
 * ever wait for a discount (patch `discount-end-timer`, deprecated: no run without it could reach it).
 */
export const discountEndSignal = defineSignal<[DiscountEnd]>('discountEnd');
export const discountEndTimerPatch = 'discount-end-timer';
export const subscriptionQuery = defineQuery<SubscriptionSnapshot>('subscription');

const activityOptions: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['IdempotencyKeyReuseError'],
  },
};
const remoteActivities = proxyActivities<Activities>(activityOptions);
/** On a test clock: the same activities run as local activities, with no round trip through the server for each (an advance is waited for). */
const localActivities = proxyLocalActivities<Activities>(activityOptions);

/**
 * A due billing cycle runs as ONE local activity (renewCycle: invoice, charge, settle,
 * projection) and the run continues as new in the same workflow task: two workflow tasks
 * and no activity round trip per renewal, instead of six and four (docs/scaling.md).
 * Histories recorded before it replay the four activities.
 */
export const renewCyclePatch = 'renew-cycle';

/**
 * After a billing date the run goes on instead of continuing as new at once: a new run
 * (a workflow start and its first workflow task) cost as much as the renewal itself.
 * Histories recorded before this patch continue as new after every billing date.
 */
export const renewInPlacePatch = 'renew-in-place';
/** Billing dates one run handles before it continues as new (monthly: about a year); a replay of an evicted run stays short. */
export const renewalsPerRun = 12;
/** Events past which a run continues as new at its next quiet moment, whatever it did (long dunning, many messages). */
export const maxRunHistory = 1000;
/**
 * The money a renewal collects becomes available at its available_on by this workflow's own
 * timer (a local activity then), instead of a fundsAvailabilityWorkflow started for each
 * payment: a workflow start and its first task per renewal, as much as the renewal itself.
 */
export const fundsInSubscriptionPatch = 'funds-in-subscription';

/**
 * Calendar renewals wake at the boundary plus the subscription's offset (input.renewalSpreadMinutes): a changed timer.
 * Deprecated: asked only by runs with a window in their input, which no run from before it had.
 */
export const renewalSpreadPatch = 'renewal-spread';

/**
 * A renewal's result carries the worker's RENEWAL_SPREAD_MINUTES now; when it differs from the window this run
 * has, the next renewals wake with the new one (a changed timer). Asked only on such a change, so a run whose
 * setting never changes records nothing. Deprecated: a renewal's result carries the setting only since this patch, so
 * no history from before reaches it.
 */
export const renewalSpreadLivePatch = 'renewal-spread-live';

/**
 * A dunning retry's charge and an upgrade's immediate charge leave their pending money to this workflow (the
 * `charge` activity with `ownFunds`), as renewals do (funds-in-subscription), instead of a
 * fundsAvailabilityWorkflow started for each. Histories recorded before it started one.
 */
export const fundsOfChargesPatch = 'funds-of-charges';

/**
 * After a plan change (an upgrade, a trial's change, a downgrade at its renewal, a change of items), the memo's
 * planId and planName and the PlanId search attribute follow it: two commands (an upsert of each), only when the
 * plan changed, so a renewal on the same plan records nothing more. Histories from before replay without them.
 */
export const planInMemoPatch = 'plan-in-memo';

/**
 * Usage billed in arrears (#28): a renewal of a subscription with metered items waits the usage grace window past
 * the boundary (nextWake), closes the period just ended through ONE local activity (closeUsagePeriod: the
 * customer's watermark moves, the aggregates are stored once per period) and puts its usage lines on the cycle
 * invoice. Asked only by runs that bill usage, and none did before it (metered items came with it): deprecated.
 */
export const usageBillingPatch = 'usage-billing';

/**
 * A resume that starts a new period (after the paused one ended, or from a payment_failed pause) closes the usage of
 * the interrupted period from its start to the resume and bills it on the resume's invoice; before, that usage was
 * never billed. Asked only by metered subscriptions' resumes; deprecated: it shipped with usage billing (#28, the same
 * day, before any release), so no run resumed a metered period without it.
 */
export const usagePausePatch = 'usage-pause';

type Outcome = { ok: true } | { ok: false; type: string; message: string };

interface Queued {
  command: SubscriptionCommand;
  done: (outcome: Outcome) => void;
}

const iso = (instant: Date) => instant.toISOString();
const refuse = (type: string, message: string): Outcome => ({ ok: false, type, message });

/**
 * One run of a subscription: its state (what it bills by, what it owes, what it waits for) and what it does with each
 * message and timer, as the samples' ClusterManager holds a cluster's. subscriptionWorkflow below registers the
 * messages and runs `live()`, the loop; everything here is deterministic workflow code.
 */
class SubscriptionRun {
  plan: PlanTerms;
  pendingPlan: PlanTerms | null;
  /** Setup fees for the first cycle invoice (pricing schemes; runs started before have none). */
  firstInvoiceItems: PriceTerms[];
  /** Several items (phase 2 of #26); null: the one item `plan`. */
  items: ItemTerms[] | null;
  /** Prorated lines waiting for the next cycle invoice. */
  pendingLines: InvoiceLineInput[];
  subscription: SubscriptionSnapshot;
  /** Pending money of paid cycles, earliest first (only ever filled under funds-in-subscription). */
  pendingFunds: DueFunds[];
  /** The repeating discount whose end this run wakes at (discountEndSignal); `discountSignalled` wakes the wait to take a new one. */
  discountEnd: DiscountEnd | null;
  discountSignalled = false;
  created: boolean;
  /** Messages waiting for the loop, applied one at a time between timers. */
  readonly queue: Queued[] = [];
  /** Billing dates (trial end or renewal) this run has handled; each used to end the run (before renew-in-place). */
  billingDates = 0;
  /** The usage grace window the renewals of metered items wait (the latest closing's setting); undefined: the default. */
  usageGraceSeconds: number | undefined;
  /** The plan the memo and the PlanId search attribute show (the start's; planInMemoPatch moves them along). */
  shownPlanId: string;
  /** Workflow time, or the test clock's (workflows/clock-sleep.ts). */
  readonly clock: ReturnType<typeof workflowClock>;
  readonly activities: typeof remoteActivities;
  /** The status changed without an upsert of its search attribute (renew-cycle): sent with the continue-as-new, or upserted before the next wait. */
  searchStatusStale = false;
  /**
   * The renewal spread window in minutes, 0 when off. The patch is asked only when the window would move a renewal
   * (calendar billing, a window in the input), so older runs and anniversary subscriptions never record it.
   */
  spreadWindow: number;

  readonly input: SubscriptionWorkflowInput;

  constructor(input: SubscriptionWorkflowInput) {
    this.input = input;
    this.plan = input.plan;
    this.pendingPlan = input.pendingPlan ?? null;
    this.firstInvoiceItems = input.firstInvoiceItems ?? [];
    this.items = input.items ?? null;
    this.pendingLines = input.pendingLines ?? [];
    // Snapshots from before currencies were recorded bill in their plan's currency.
    this.subscription =
      input.snapshot.currency === undefined ? { ...input.snapshot, currency: input.plan.currency } : input.snapshot;
    this.pendingFunds = input.pendingFunds ?? [];
    this.discountEnd = input.discountEnd ?? null;
    this.created = this.subscription.version > 0;
    this.usageGraceSeconds = input.usageGraceSeconds;
    this.shownPlanId = input.plan.planId;
    this.clock = workflowClock(input.testClock);
    this.activities = input.testClock ? localActivities : remoteActivities;
    this.spreadWindow = input.renewalSpreadMinutes ?? 0;
  }
  readonly state = (): SubscriptionState => ({
    subscription: this.subscription,
    plan: this.plan,
    pendingPlan: this.pendingPlan,
    firstInvoiceItems: this.firstInvoiceItems,
    ...(this.items ? { items: this.items } : {}),
    ...(this.pendingLines.length > 0 ? { pendingLines: this.pendingLines } : {}),
    ...(this.usageGraceSeconds !== undefined ? { usageGraceSeconds: this.usageGraceSeconds } : {}),
  });
  /** The current details (Temporal UI): the plan it bills by now above what it does or waits for (domain/subscription-details.ts). */
  readonly setDetails = (text: string) => setCurrentDetails(`${this.planText()}\n\n${text}`);
  /**
   * planDetails' text, made again only when the plan, the pending plan or the items are other objects (they are
   * replaced, never changed in place). Its money formatting was the workflow code's largest cost in a renewal's
   * activation (a CPU profile of the renewals benchmark's worker, Nov 27: each workflow builds its own Intl formatter in
   * the sandbox); the text is the same, so no patch.
   */
  private shownPlan?: { plan: PlanTerms; pendingPlan: PlanTerms | null; items: ItemTerms[] | null; text: string };
  planText(): string {
    const shown = this.shownPlan;
    if (shown && shown.plan === this.plan && shown.pendingPlan === this.pendingPlan && shown.items === this.items)
      return shown.text;
    const text = planDetails(this.plan, this.pendingPlan, this.items);
    this.shownPlan = { plan: this.plan, pendingPlan: this.pendingPlan, items: this.items, text };
    return text;
  }
  /** The terms the subscription bills by now: its plan, and its items follow when it has them (a plan change of a one-item subscription). */
  setPlan(next: PlanTerms): void {
    this.plan = next;
    if (this.items) this.items = [{ ...next, itemId: this.items[0]!.itemId }];
  }
  /** The snapshot's items, when the run has items (absent otherwise, as before). */
  readonly itemFields = (): Partial<SubscriptionSnapshot> => (this.items ? { items: itemSnapshots(this.items) } : {});
  readonly spread = (): number => {
    if (!renewalSpreads(this.subscription, this.spreadWindow)) return 0;
    deprecatePatch(renewalSpreadPatch);
    return this.spreadWindow;
  };

  // ---- Messages -----------------------------------------------------------

  validated(command: SubscriptionCommand): void {
    const refused = refusal(
      this.state(),
      this.queue.map((q) => q.command),
      command,
      this.clock.now(),
    );
    if (refused) throw ApplicationFailure.create({ type: refused.type, message: refused.message, nonRetryable: true });
  }

  /** Queues a command for the main loop and answers with the subscription once it is applied. */
  async enqueue(command: SubscriptionCommand): Promise<SubscriptionSnapshot> {
    const outcome = await new Promise<Outcome>((done) => this.queue.push({ command, done }));
    if (!outcome.ok)
      throw ApplicationFailure.create({ type: outcome.type, message: outcome.message, nonRetryable: true });
    return this.subscription;
  }

  // ---- Recording ----------------------------------------------------------

  /** Applies a change, bumps the version, and writes the projection and search attributes. */
  async record(changes: Partial<SubscriptionSnapshot>): Promise<void> {
    this.subscription = {
      ...this.subscription,
      ...this.itemFields(),
      ...changes,
      updatedAt: iso(this.clock.now()),
      version: this.subscription.version + 1,
    };
    upsertSearchAttributes([{ key: SubscriptionStatusKey, value: this.subscription.status }]);
    this.searchStatusStale = false;
    await this.activities.projectSubscription(this.subscription);
  }

  /** The snapshot `record(changes)` would write now, without writing it. */
  readonly recorded = (changes: Partial<SubscriptionSnapshot>): SubscriptionSnapshot => ({
    ...this.subscription,
    ...this.itemFields(),
    ...changes,
    updatedAt: iso(this.clock.now()),
    version: this.subscription.version + 1,
  });

  readonly customer = () => ({
    accountId: this.subscription.accountId,
    customerId: this.subscription.customerId,
    livemode: this.subscription.livemode,
  });

  // ---- Billing ------------------------------------------------------------

  /** Starts billing now: a trial if one was asked for, else the first charge. */
  async start(): Promise<void> {
    const now = this.clock.now();
    if (this.subscription.trialDays > 0) {
      await this.record({
        status: 'trialing',
        trialStart: iso(now),
        trialEnd: iso(addDays(now, this.subscription.trialDays)),
        pausedAt: null,
        pauseUntil: null,
        pauseReason: null,
      });
    } else {
      await this.beginBilling(now);
    }
  }

  /** Anchors the periods at `from` (or its next calendar boundary) and bills the first one. */
  async beginBilling(from: Date): Promise<void> {
    this.subscription = {
      ...this.subscription,
      ...billingAnchorFrom(this.subscription.billingCycleMode, from, this.plan.interval.unit),
    };
    await this.bill(0);
  }

  /** Closes [start, end) for usage on the meters of `usageItems`: one local activity, idempotent per period. */
  closeUsagePeriod(usageItems: Parameters<typeof metersToClose>[0], start: Date, end: Date) {
    return localActivities.closeUsagePeriod({
      ...this.customer(),
      subscriptionId: this.subscription.id,
      start: iso(start),
      end: iso(end),
      meters: metersToClose(usageItems),
    });
  }

  /**
   * The usage lines of the period that just ended, for the renewal that starts the next: closes that period for
   * usage (one local activity, idempotent per period) with the items that billed it, before any pending plan applies.
   */
  async closeUsage(until?: Date): Promise<InvoiceLineInput[]> {
    if (!billsUsage(this.state()) || !this.subscription.currentPeriodStart || !this.subscription.currentPeriodEnd)
      return [];
    deprecatePatch(usageBillingPatch);
    const usageItems = itemsOf(this.state());
    const period = {
      start: new Date(this.subscription.currentPeriodStart),
      end: until ?? new Date(this.subscription.currentPeriodEnd),
    };
    if (period.end.getTime() <= period.start.getTime()) return [];
    setCurrentDetails(`Closing the usage of ${iso(period.start)} to ${iso(period.end)}.`);
    const closed = await this.closeUsagePeriod(usageItems, period.start, period.end);
    this.usageGraceSeconds = closed.usageGraceSeconds;
    // Less what threshold invoices of the period billed already (none recorded before usage-thresholds).
    return unbilledLines(usageLines(usageItems, closed.closing, period), closed.thresholdBilled, period);
  }

  /** Invoices and charges billing cycle `cycle` (with `usage`: the last period's usage lines); a decline starts dunning. */
  async bill(cycle: number, usage: InvoiceLineInput[] = []): Promise<void> {
    const { period, invoice: invoiceInput } = cycleInvoice(
      this.state(),
      cycle,
      this.clock.now(),
      this.spread(),
      [],
      usage,
    );
    // The setup fees are on this invoice (a retried activity makes the same one); no later invoice carries them.
    this.firstInvoiceItems = [];
    // So are the prorated lines item changes left for it.
    this.pendingLines = [];
    const key = invoiceInput.billingKey;
    this.setDetails(`Billing cycle ${cycle} (${iso(period.start)} to ${iso(period.end)}).`);
    const cycleFields = {
      billingCycle: cycle,
      currentPeriodStart: iso(period.start),
      currentPeriodEnd: iso(period.end),
      planId: this.plan.planId,
      pendingPlanId: this.pendingPlan?.planId ?? null,
      quantity: this.plan.quantity ?? 1,
      pendingQuantity: this.pendingPlan ? (this.pendingPlan.quantity ?? 1) : null,
    };
    let invoice: OpenedInvoice;
    let outcome: ChargeOutcome;
    if (patched(renewCyclePatch)) {
      // One local activity; each of its steps is idempotent, so a retry never doubles money (services/subscriptions/renew-cycle.ts).
      const unset = { ...cycleFields, latestInvoiceId: null };
      // Asked here, with renew-cycle's, so a run records both patches in the same workflow task (runIsLong asks again).
      const inPlace = patched(renewInPlacePatch);
      const ownFunds = inPlace && patched(fundsInSubscriptionPatch);
      const result = await localActivities.renewCycle({
        invoice: invoiceInput,
        charge: { idempotencyKey: `${key}:attempt:1`, ...this.customer(), currency: this.plan.currency },
        paidAt: iso(this.clock.now()),
        paid: this.recorded({ status: 'active', ...unset, dunning: null }),
        free: this.recorded({ status: 'active', ...unset }),
        ...(ownFunds ? { ownFunds } : {}),
      });
      // The deployment's spread window now (RENEWAL_SPREAD_MINUTES): the next renewals wake with it.
      const latestWindow = result.renewalSpreadMinutes;
      if (latestWindow !== undefined && latestWindow !== this.spreadWindow) {
        deprecatePatch(renewalSpreadLivePatch);
        this.spreadWindow = latestWindow;
      }
      if (result.status === 'paid') {
        if (result.snapshot.status !== this.subscription.status) this.searchStatusStale = true;
        this.subscription = result.snapshot;
        this.holdFunds(result.funds);
        return;
      }
      invoice = result.invoice;
      outcome = result.outcome;
    } else {
      invoice = await this.activities.openInvoice(invoiceInput);
      if (invoice.amountDue === 0) {
        await this.activities.settleInvoiceWithoutCharge(invoice.invoiceId, iso(this.clock.now()));
        await this.record({ status: 'active', ...cycleFields, latestInvoiceId: invoice.invoiceId });
        return;
      }
      outcome = await this.activities.charge(this.firstChargeOf(invoice, key, `Invoice ${invoice.number}`));
      if (outcome.status === 'succeeded') {
        await this.activities.settleInvoice(invoice.invoiceId, outcome, iso(this.clock.now()));
        await this.record({ status: 'active', ...cycleFields, latestInvoiceId: invoice.invoiceId, dunning: null });
        return;
      }
    }
    const periodFields = { ...cycleFields, latestInvoiceId: invoice.invoiceId };
    if (cycle === 0 && this.subscription.status === 'trialing' && outcome.failureCode === 'no_payment_method') {
      // A trial that ends with nothing to charge does not convert: it expires.
      await this.activities.voidInvoice(invoice.invoiceId, iso(this.clock.now()));
      await this.record({
        status: 'expired',
        endedReason: 'trial_without_payment_method',
        latestInvoiceId: invoice.invoiceId,
        canceledAt: iso(this.clock.now()),
      });
      return;
    }
    // Dunning starts: retries on the account's schedule, then the grace period.
    const settings = await this.activities.loadBillingSettings(this.subscription.accountId, this.subscription.livemode);
    const dunning = startDunning(
      this.state(),
      { invoiceId: invoice.invoiceId, number: invoice.number, billingKey: key, amount: invoice.amountDue },
      outcome,
      settings,
      this.clock.now(),
    );
    await this.recordFailedAttempt({ ...periodFields, status: 'past_due' }, dunning);
  }

  /** The first charge of an opened invoice: attempt 1 of what it is due, keyed `<billingKey>:attempt:1`. */
  firstChargeOf(invoice: OpenedInvoice, billingKey: string, description: string): Parameters<Activities['charge']>[0] {
    return {
      idempotencyKey: `${billingKey}:attempt:1`,
      invoiceId: invoice.invoiceId,
      attempt: 1,
      ...this.customer(),
      amount: invoice.amountDue,
      currency: this.plan.currency,
      description,
    };
  }

  /**
   * A charge outside a billing cycle (a dunning retry, an upgrade). Under funds-of-charges its pending money is
   * this workflow's (held until its available_on, as a renewal's); before it, the activity started a
   * fundsAvailabilityWorkflow. Answers the outcome without the funds.
   */
  async chargeOwningFunds(request: Parameters<Activities['charge']>[0]): Promise<ChargeOutcome> {
    if (!patched(fundsOfChargesPatch)) return this.activities.charge(request);
    const { funds, ...outcome } = await this.activities.charge(request, { ownFunds: true });
    this.holdFunds(funds);
    return outcome;
  }

  // ---- Dunning ------------------------------------------------------------

  /** Records a failed attempt with what follows it scheduled, and emails the customer. */
  async recordFailedAttempt(changes: Partial<SubscriptionSnapshot>, dunning: DunningState): Promise<void> {
    await this.record({ ...changes, dunning });
    await this.activities.notifyPaymentFailed({ subscription: this.subscription, attempt: dunning.attempts });
  }

  /** One more charge of the unpaid invoice: scheduled, or because the payment method changed. */
  async retryPayment(scheduled: boolean): Promise<void> {
    const dunning = this.subscription.dunning!;
    const attempt = dunning.attempts + 1;
    // Someone may have settled the invoice another way (voided it, say): nothing left to collect.
    const invoice = await this.activities.getInvoice(dunning.invoiceId);
    if (invoice.status === 'paid' || invoice.status === 'void') {
      await this.record({ status: 'active', dunning: null });
      return;
    }
    this.setDetails(`Payment retry ${attempt} for invoice ${dunning.invoiceNumber}.`);
    const outcome = await this.chargeOwningFunds({
      idempotencyKey: `${dunning.billingKey}:attempt:${attempt}`,
      invoiceId: dunning.invoiceId,
      attempt,
      ...this.customer(),
      amount: dunning.amount,
      currency: dunning.currency,
      description: `Invoice ${dunning.invoiceNumber} (attempt ${attempt})`,
    });
    if (outcome.status === 'succeeded') {
      await this.activities.settleInvoice(dunning.invoiceId, outcome, iso(this.clock.now()));
      await this.record({ status: 'active', dunning: null });
      await this.activities.notifyPaymentRecovered({ subscription: this.subscription, invoiceId: dunning.invoiceId });
      return;
    }
    await this.recordFailedAttempt({}, failedRetry(dunning, scheduled, outcome, this.clock.now()));
  }

  /** A declined threshold invoice: dunning starts on it, with the account's retries and grace (as bill() does for a renewal). */
  async dunThresholdInvoice(
    invoice: OpenedInvoice,
    billingKey: string,
    outcome: { failureCode: string; failureMessage: string },
  ): Promise<void> {
    const settings = await this.activities.loadBillingSettings(this.subscription.accountId, this.subscription.livemode);
    const dunning = startDunning(
      this.state(),
      { invoiceId: invoice.invoiceId, number: invoice.number, billingKey, amount: invoice.amountDue },
      outcome,
      settings,
      this.clock.now(),
    );
    await this.recordFailedAttempt({ status: 'past_due', latestInvoiceId: invoice.invoiceId }, dunning);
  }

  /** Retries and grace are spent: cancel or pause, as the account's settings say. */
  async endDunning(): Promise<void> {
    const dunning = this.subscription.dunning!;
    await this.activities.markInvoiceUncollectible(dunning.invoiceId, iso(this.clock.now()));
    if (dunning.finalAction === 'pause') {
      await this.record({
        status: 'paused',
        pausedAt: iso(this.clock.now()),
        pauseUntil: null,
        pauseReason: 'payment_failed',
        dunning: null,
      });
      await this.activities.notifySubscriptionEnded({ subscription: this.subscription, kind: 'paused' });
    } else {
      await this.endNow('payment_failed');
    }
  }

  /**
   * A subscription with metered items that ends (a cancel now or at period end, the end of dunning): the usage of its
   * last period so far, closed like a renewal's (so later events in it are refused period_invoiced) and billed on a
   * final invoice, charged once; a declined charge leaves that invoice open, with no dunning (the subscription ends).
   */
  async billFinalUsage(): Promise<void> {
    if (!billsUsage(this.state()) || !this.subscription.currentPeriodStart) return;
    deprecatePatch(usageBillingPatch);
    const now = this.clock.now();
    const periodStart = new Date(this.subscription.currentPeriodStart);
    const periodEnd = this.subscription.currentPeriodEnd ? new Date(this.subscription.currentPeriodEnd) : now;
    const end = now.getTime() < periodEnd.getTime() ? now : periodEnd;
    if (end.getTime() <= periodStart.getTime()) return;
    const usageItems = itemsOf(this.state());
    setCurrentDetails(`Closing the usage of ${iso(periodStart)} to ${iso(end)} for the final invoice.`);
    const closed = await this.closeUsagePeriod(usageItems, periodStart, end);
    const lines = unbilledLines(
      usageLines(usageItems, closed.closing, { start: periodStart, end }),
      closed.thresholdBilled,
      { start: periodStart, end },
    );
    if (lines.every((line) => (line.total ?? 0) === 0)) return;
    const key = `${this.subscription.id}:final_usage`;
    const result = await localActivities.renewCycle({
      invoice: {
        billingKey: key,
        subscriptionId: this.subscription.id,
        accountId: this.subscription.accountId,
        customerId: this.subscription.customerId,
        currency: this.plan.currency,
        lines,
        periodStart: iso(periodStart),
        periodEnd: iso(end),
        issuedAt: iso(now),
        livemode: this.subscription.livemode,
      },
      charge: { idempotencyKey: `${key}:attempt:1`, ...this.customer(), currency: this.plan.currency },
      paidAt: iso(now),
      paid: this.recorded({}),
      free: this.recorded({}),
    });
    if (result.status === 'paid') this.subscription = result.snapshot;
  }

  async endNow(reason: string): Promise<void> {
    await this.billFinalUsage();
    // An unpaid invoice stays payable, but nobody will ask for it any more.
    if (this.subscription.dunning)
      await this.activities.markInvoiceUncollectible(this.subscription.dunning.invoiceId, iso(this.clock.now()));
    await this.record({
      status: 'canceled',
      canceledAt: iso(this.clock.now()),
      endedReason: reason,
      cancelAtPeriodEnd: false,
      pauseUntil: null,
      dunning: null,
    });
    await this.activities.notifySubscriptionEnded({ subscription: this.subscription, kind: 'canceled' });
  }

  // ---- Commands -----------------------------------------------------------

  async apply(command: SubscriptionCommand): Promise<Outcome> {
    const reason = commandProblem(this.state(), command);
    if (reason) return refuse('invalid_state', reason);
    switch (command.kind) {
      case 'cancel':
        if (command.atPeriodEnd) await this.record({ cancelAtPeriodEnd: true });
        else await this.endNow(command.reason);
        return { ok: true };
      case 'pause':
        await this.record({
          status: 'paused',
          pausedAt: iso(this.clock.now()),
          pauseUntil: command.pauseUntil,
          pauseReason: 'requested',
        });
        return { ok: true };
      case 'resume':
        await this.resume();
        return { ok: true };
      case 'changePlan':
        return this.changePlan(command.plan);
      case 'retryPayment':
        await this.retryPayment(false);
        return { ok: true };
      case 'undoCancel':
        // Only runs that accepted this update (which older code never registered) reach here.
        deprecatePatch(undoCancelPatch);
        await this.record({ cancelAtPeriodEnd: false });
        return { ok: true };
      case 'voidInvoice':
        return this.voidOwnInvoice(command.invoiceId);
      case 'creditInvoice':
        deprecatePatch(creditNotesPatch);
        return this.creditOwnInvoice(command.credit);
      case 'changeItems':
        deprecatePatch(subscriptionItemsPatch);
        return this.changeItems(command.change);
      case 'billUsageThreshold': {
        // Only runs that received the signal (no recorded history did) reach here.
        if (!patched(usageThresholdsPatch) || !billsUsage(this.state())) return { ok: true };
        this.setDetails('Billing the usage that reached the billing threshold.');
        const billed = await billUsageThreshold(localActivities, {
          subscription: this.subscription,
          items: itemsOf(this.state()),
          now: this.clock.now(),
          currency: this.plan.currency,
          recorded: this.recorded,
        });
        if (billed?.status === 'paid') this.subscription = billed.snapshot;
        // Declined: the subscription's dunning retries it, as a renewal's (unless another invoice is in dunning already).
        else if (billed?.status === 'unpaid' && !this.subscription.dunning && patched(usageThresholdDunningPatch))
          await this.dunThresholdInvoice(billed.invoice, billed.billingKey, billed.outcome);
        return { ok: true };
      }
    }
  }

  /**
   * An invoice of a change made now (an upgrade, items with always_invoice) is paid at once: charged (its money
   * this workflow's), or settled without a charge when nothing is due. A declined charge voids it and refuses the
   * change (`payment_failed`): nothing changed. Null once it is paid.
   */
  async payNowOrVoid(
    invoice: OpenedInvoice,
    billingKey: string,
    what: string,
    change: string,
  ): Promise<Outcome | null> {
    if (invoice.amountDue <= 0) {
      await this.activities.settleInvoiceWithoutCharge(invoice.invoiceId, iso(this.clock.now()));
      return null;
    }
    const outcome = await this.chargeOwningFunds(
      this.firstChargeOf(invoice, billingKey, `Invoice ${invoice.number} (${what})`),
    );
    if (outcome.status === 'failed') {
      await this.activities.voidInvoice(invoice.invoiceId, iso(this.clock.now()));
      return refuse(
        'payment_failed',
        `${change} needs a payment of ${invoice.amountDue} now, and it failed: ${outcome.failureMessage} Nothing changed.`,
      );
    }
    await this.activities.settleInvoice(invoice.invoiceId, outcome, iso(this.clock.now()));
    return null;
  }

  /**
   * An item change (domain: applyItemChange): the items change now; its prorated lines wait for the next invoice
   * (create_prorations), are invoiced and charged now (always_invoice; a decline refuses it and changes nothing),
   * or are not made (none).
   */
  async changeItems(change: ItemChange): Promise<Outcome> {
    const result = applyItemChange(this.state(), change, this.clock.now());
    let latestInvoiceId = this.subscription.latestInvoiceId;
    if (result.invoice) {
      const invoice = await this.activities.openInvoice(result.invoice);
      const refused = await this.payNowOrVoid(invoice, result.invoice.billingKey, 'subscription items', 'The change');
      if (refused) return refused;
      latestInvoiceId = invoice.invoiceId;
    }
    this.items = result.items;
    this.plan = stripItemId(result.items[0]!);
    this.pendingLines = result.pendingLines;
    await this.record({ planId: this.plan.planId, quantity: this.plan.quantity ?? 1, latestInvoiceId });
    return { ok: true };
  }

  /** The voidInvoice command: no charge of this workflow is in flight while it runs. */
  async voidOwnInvoice(invoiceId: string): Promise<Outcome> {
    const before = await this.activities.getInvoice(invoiceId);
    if (before.status !== 'open' && before.status !== 'uncollectible')
      return refuse('invalid_state', `Invoice ${before.number} is ${before.status} and cannot be voided.`);
    await this.activities.voidInvoice(invoiceId, iso(this.clock.now()));
    // Nothing left to collect, as a retry finding it void would decide (retryPayment).
    if (this.subscription.dunning?.invoiceId === invoiceId) await this.record({ status: 'active', dunning: null });
    return { ok: true };
  }

  /** The creditInvoice command: no charge of this workflow is in flight; the dunning invoice's retries charge what is left, or end once nothing is. */
  async creditOwnInvoice(credit: OpenInvoiceCredit): Promise<Outcome> {
    const result = await this.activities.creditOpenInvoice(credit, iso(this.clock.now()));
    if ('refused' in result) return refuse(result.refused.type, result.refused.message);
    const dunning = this.subscription.dunning;
    if (dunning?.invoiceId === credit.request.invoice) {
      if (result.paid) await this.record({ status: 'active', dunning: null });
      else await this.record({ dunning: { ...dunning, amount: result.amountDue } });
    }
    return { ok: true };
  }

  /** Back to billing: the paid period goes on, or a new one starts now and is charged at once (domain: resumeKind). */
  async resume(): Promise<void> {
    const now = this.clock.now();
    const resumed = { pausedAt: null, pauseUntil: null, pauseReason: null };
    switch (resumeKind(this.subscription, now)) {
      case 'start':
        this.subscription = { ...this.subscription, ...resumed };
        await this.start();
        return;
      case 'continue':
        await this.record({ status: 'active', ...resumed });
        return;
      case 'newPeriod': {
        // The usage of the period the pause interrupted, to the resume (the paused time included), goes on the resume's invoice.
        let usage: InvoiceLineInput[] = [];
        if (billsUsage(this.state())) {
          deprecatePatch(usagePausePatch);
          usage = await this.closeUsage(now);
        }
        const nextCycle = this.subscription.billingCycle + 1;
        this.subscription = {
          ...this.subscription,
          ...resumed,
          billingAnchor: iso(now),
          anchorCycle: nextCycle,
          stubStart: null,
        };
        await this.bill(nextCycle, usage);
        return;
      }
    }
  }

  /**
   * An upgrade takes effect now, on one invoice with proration lines; a decline
   * leaves everything as it was. A downgrade waits for the next renewal; in a trial
   * the plan simply changes (domain: planChangeKind, upgradeInvoice).
   */
  async changePlan(next: PlanTerms): Promise<Outcome> {
    switch (planChangeKind(this.state(), next)) {
      case 'revert':
        // Back to the current plan: drop the pending downgrade.
        this.pendingPlan = null;
        await this.record({ pendingPlanId: null, pendingQuantity: null });
        return { ok: true };
      case 'trial':
        await this.takePlan(next);
        return { ok: true };
      case 'downgrade':
        this.pendingPlan = next;
        await this.record({ pendingPlanId: next.planId, pendingQuantity: next.quantity ?? 1 });
        return { ok: true };
      case 'upgrade':
        break;
    }
    const upgrade = upgradeInvoice(this.state(), next, this.clock.now());
    const invoice = await this.activities.openInvoice(upgrade.invoice);
    const refused = await this.payNowOrVoid(invoice, upgrade.billingKey, 'plan change', 'The upgrade');
    if (refused) return refused;
    await this.takePlan(next, {
      latestInvoiceId: invoice.invoiceId,
      // An upgrade to another interval starts a new period from now.
      ...(upgrade.sameInterval
        ? {}
        : {
            billingAnchor: upgrade.periodStart,
            anchorCycle: this.subscription.billingCycle,
            stubStart: null,
            currentPeriodStart: upgrade.periodStart,
            currentPeriodEnd: upgrade.periodEnd,
          }),
    });
    return { ok: true };
  }

  /** `next` is the plan from now on (a change in a trial, a paid upgrade): no plan waits for the renewal any more. */
  async takePlan(next: PlanTerms, changes: Partial<SubscriptionSnapshot> = {}): Promise<void> {
    this.setPlan(next);
    this.pendingPlan = null;
    await this.record({
      planId: next.planId,
      pendingPlanId: null,
      quantity: next.quantity ?? 1,
      pendingQuantity: null,
      ...changes,
    });
  }

  // ---- Time ---------------------------------------------------------------

  /** What a wake-up's timer firing does (domain: nextWake decides which). */
  async onTimer(action: WakeAction): Promise<void> {
    switch (action.kind) {
      case 'endAtPeriodEnd':
        return this.endNow('requested');
      case 'endTrial':
        await this.beginBilling(new Date(action.billingFrom));
        this.billingDates++;
        return;
      case 'renew': {
        const usage = await this.closeUsage();
        if (this.pendingPlan) {
          const renewing = stateAtRenewal(this.state());
          this.plan = renewing.plan;
          this.items = renewing.items ?? null;
          this.pendingPlan = null;
        }
        await this.bill(action.cycle, usage);
        this.billingDates++;
        return;
      }
      case 'retryPayment':
        return this.retryPayment(true);
      case 'endDunning':
        return this.endDunning();
      case 'resume':
        return this.resume();
    }
  }

  // ---- Pending money --------------------------------------------------------

  /** Takes money a charge left pending (relative to now) to make available at its time. */
  holdFunds(funds: PendingFunds[] | undefined): void {
    const now = this.clock.now().getTime();
    const due = (funds ?? []).map((f) => ({
      balanceTransactionIds: f.balanceTransactionIds,
      at: iso(new Date(now + f.availableAfterMs)),
    }));
    if (due.length > 0) this.pendingFunds = [...this.pendingFunds, ...due].sort((a, b) => a.at.localeCompare(b.at));
  }

  /** When the earliest pending money becomes available, if any. */
  readonly fundsDue = (): Date | null => (this.pendingFunds.length > 0 ? new Date(this.pendingFunds[0]!.at) : null);

  /** Makes the money due by now available (a local activity per balance transaction; each moves it once). */
  async releaseDueFunds(): Promise<void> {
    const now = this.clock.now().getTime();
    while (this.pendingFunds.length > 0 && Date.parse(this.pendingFunds[0]!.at) <= now) {
      for (const id of this.pendingFunds[0]!.balanceTransactionIds) await localActivities.makeFundsAvailable(id);
      this.pendingFunds = this.pendingFunds.slice(1);
    }
  }

  // ---- The life -----------------------------------------------------------

  /** Time to carry the state into a new run: after each billing date before renew-in-place; now after many, or a long history. */
  runIsLong(): boolean {
    const info = workflowInfo();
    if (info.continueAsNewSuggested) return true;
    if (this.billingDates === 0 && info.historyLength <= maxRunHistory) return false;
    // A run recorded before renew-in-place decides as it did then: after every billing date.
    if (!patched(renewInPlacePatch)) return this.billingDates > 0;
    return this.billingDates >= renewalsPerRun || info.historyLength > maxRunHistory;
  }

  /** From creation to the end (or to continue-as-new, which throws out of it). */
  async live(): Promise<void> {
    if (this.subscription.version === 0) {
      const now = this.clock.now();
      this.subscription = { ...this.subscription, createdAt: iso(now) };
      if (this.subscription.pauseUntil) {
        // Created paused: billing (and any trial) starts when the pause ends.
        await this.record({ status: 'paused', pausedAt: iso(now), pauseReason: 'requested' });
      } else {
        await this.start();
      }
      this.created = true;
    }

    while (!isEnded(this.subscription)) {
      if (this.searchStatusStale) {
        // A renewal changed the status and this run goes on (a message came meanwhile): the upsert it skipped.
        upsertSearchAttributes([{ key: SubscriptionStatusKey, value: this.subscription.status }]);
        this.searchStatusStale = false;
      }
      if (this.plan.planId !== this.shownPlanId && patched(planInMemoPatch)) {
        // The plan changed: the memo and the search attribute say so, before the next wait (the details below already do).
        upsertMemo(planMemo(this.plan));
        upsertSearchAttributes([{ key: PlanIdKey, value: this.plan.planId }]);
        this.shownPlanId = this.plan.planId;
      }
      const wake = nextWake(this.state(), this.spread());
      this.setDetails(waitingDetails(wake, this.subscription));
      const funds = this.fundsDue();
      const discountDue = this.discountEnd ? new Date(this.discountEnd.end) : null;
      this.discountSignalled = false;
      let woken: boolean;
      if (
        discountDue &&
        (!wake || discountDue.getTime() <= Date.parse(wake.at)) &&
        (!funds || discountDue.getTime() <= funds.getTime())
      ) {
        deprecatePatch(discountEndTimerPatch);
        // A repeating discount ends before the next billing event: end it on time (customer.discount.deleted at its end).
        woken = await this.clock.sleepUntil(discountDue, () => this.queue.length > 0 || this.discountSignalled, {
          summary: 'Until the discount ends',
        });
        if (!woken) {
          await this.activities.endDiscountAtEnd(this.discountEnd!.discountId);
          this.discountEnd = null;
          continue;
        }
      } else if (funds && (!wake || funds.getTime() < Date.parse(wake.at))) {
        // Collected money comes due before the next billing event (funds-in-subscription).
        woken = await this.clock.sleepUntil(funds, () => this.queue.length > 0 || this.discountSignalled, {
          summary: 'Until the collected money is available',
        });
        if (!woken) {
          await this.releaseDueFunds();
          continue;
        }
      } else if (!wake) {
        await this.clock.sleepUntil(null, () => this.queue.length > 0 || this.discountSignalled);
        woken = true;
      } else {
        // Without a clock: condition(..., wakeDelayMs(wake, now), { summary }), as always.
        woken = await this.clock.sleepUntil(new Date(wake.at), () => this.queue.length > 0 || this.discountSignalled, {
          summary: wake.what,
        });
      }
      // Woken by a discount to wait for (no message): wait again, now for it too.
      if (woken && this.queue.length === 0) continue;
      if (woken) {
        const { command, done } = this.queue.shift()!;
        done(await this.apply(command));
      } else {
        await this.onTimer(wake!.action);
      }
      if (this.runIsLong() && !isEnded(this.subscription)) {
        // Let accepted messages finish first; one that arrives meanwhile is applied in this run.
        await condition(() => this.queue.length > 0 || allHandlersFinished());
        if (this.queue.length === 0) {
          const args = {
            snapshot: this.subscription,
            plan: this.plan,
            pendingPlan: this.pendingPlan,
            ...(this.firstInvoiceItems.length > 0 ? { firstInvoiceItems: this.firstInvoiceItems } : {}),
            ...(this.input.testClock ? { testClock: this.clock.binding() } : {}),
            ...(this.pendingFunds.length > 0 ? { pendingFunds: this.pendingFunds } : {}),
            ...(this.spreadWindow ? { renewalSpreadMinutes: this.spreadWindow } : {}),
            ...(this.items ? { items: this.items } : {}),
            ...(this.pendingLines.length > 0 ? { pendingLines: this.pendingLines } : {}),
            ...(this.discountEnd ? { discountEnd: this.discountEnd } : {}),
            ...(this.usageGraceSeconds !== undefined ? { usageGraceSeconds: this.usageGraceSeconds } : {}),
          };
          if (!this.searchStatusStale) return continueAsNew<typeof subscriptionWorkflow>(args);
          // The new run starts with the new status: one visibility write instead of an upsert and a start.
          const typedSearchAttributes = workflowInfo().typedSearchAttributes.updateCopy([
            { key: SubscriptionStatusKey, value: this.subscription.status },
          ]);
          return makeContinueAsNewFunc<typeof subscriptionWorkflow>({ typedSearchAttributes })(args);
        }
      }
    }
  }

  /** Answers messages still queued (they find the subscription ended) before the run closes. */
  async close(): Promise<SubscriptionSnapshot> {
    const ended =
      this.subscription.status === 'expired'
        ? 'Expired'
        : this.subscription.endedReason === 'canceled_by_operator'
          ? 'Canceled by an operator through Temporal'
          : 'Canceled';
    this.setDetails(`${ended}. Nothing more to do.`);
    while (this.queue.length > 0) {
      const { command, done } = this.queue.shift()!;
      done(await this.apply(command));
    }
    await condition(allHandlersFinished);
    // The money already collected still becomes available on time, after the end too.
    for (let funds = this.fundsDue(); funds; funds = this.fundsDue()) {
      this.setDetails(`${ended}. The money collected becomes available at ${funds.toISOString()}.`);
      await this.clock.sleepUntil(funds, () => false, { summary: 'Until the collected money is available' });
      await this.releaseDueFunds();
    }
    await this.clock.finished();
    return this.subscription;
  }
}

export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionSnapshot> {
  const run = new SubscriptionRun(input);

  // ---- Messages: updates are validated against the run's state, then queued for its loop (run.live) ----
  setHandler(subscriptionQuery, () => run.subscription);
  setHandler(billingStateQuery, () => ({ state: run.state(), spreadMinutes: run.spread(), now: iso(run.clock.now()) }));
  setHandler(subscriptionCreatedUpdate, async () => {
    await condition(() => run.created);
    return run.subscription;
  });
  setHandler(
    cancelSubscriptionUpdate,
    ({ atPeriodEnd }) => run.enqueue({ kind: 'cancel', atPeriodEnd, reason: 'requested' }),
    {
      validator: ({ atPeriodEnd }) => run.validated({ kind: 'cancel', atPeriodEnd, reason: 'requested' }),
    },
  );
  setHandler(pauseSubscriptionUpdate, ({ pauseUntil }) => run.enqueue({ kind: 'pause', pauseUntil }), {
    validator: ({ pauseUntil }) => run.validated({ kind: 'pause', pauseUntil }),
  });
  setHandler(resumeSubscriptionUpdate, () => run.enqueue({ kind: 'resume' }), {
    validator: () => run.validated({ kind: 'resume' }),
  });
  setHandler(undoCancelAtPeriodEndUpdate, () => run.enqueue({ kind: 'undoCancel' }), {
    validator: () => run.validated({ kind: 'undoCancel' }),
  });
  setHandler(changePlanUpdate, ({ plan: next }) => run.enqueue({ kind: 'changePlan', plan: next }), {
    validator: ({ plan: next }) => run.validated({ kind: 'changePlan', plan: next }),
  });
  setHandler(changeItemsUpdate, (change) => run.enqueue({ kind: 'changeItems', change }), {
    validator: (change) => run.validated({ kind: 'changeItems', change }),
  });
  // Added with invoice voids through the workflow: only new histories carry this update, so older ones replay unchanged.
  setHandler(voidInvoiceUpdate, ({ invoiceId }) => run.enqueue({ kind: 'voidInvoice', invoiceId }), {
    validator: ({ invoiceId }) => run.validated({ kind: 'voidInvoice', invoiceId }),
  });
  setHandler(creditInvoiceUpdate, (credit) => run.enqueue({ kind: 'creditInvoice', credit }), {
    validator: (credit) => run.validated({ kind: 'creditInvoice', credit }),
  });
  setHandler(paymentMethodUpdatedSignal, () => {
    const queued = run.queue.some((q) => q.command.kind === 'retryPayment');
    if (run.subscription.status === 'past_due' && !queued)
      run.queue.push({ command: { kind: 'retryPayment' }, done: () => {} });
  });
  setHandler(accountClosedSignal, () => {
    if (!isEnded(run.subscription))
      run.queue.push({ command: { kind: 'cancel', atPeriodEnd: false, reason: 'account_closed' }, done: () => {} });
  });
  // Progressive billing (#28): one signal per crossing, queued once (workflows/subscription-usage-thresholds.ts).
  setHandler(usageThresholdReachedSignal, () => {
    if (!isEnded(run.subscription) && !run.queue.some((q) => q.command.kind === 'billUsageThreshold'))
      run.queue.push({ command: { kind: 'billUsageThreshold' }, done: () => {} });
  });
  setHandler(discountEndSignal, (next) => {
    // One discount per subscription: a newer one replaces the one waited for (ending an already ended one does nothing).
    run.discountEnd = next;
    run.discountSignalled = true;
  });

  // The run's patch markers (each with an upsert of TemporalChangeVersion) go into its first workflow
  // task, not into a billing date's: a wave of renewals carries none. Replay-safe either way: while
  // replaying a history that recorded them later, these answer false and command nothing.
  for (const patch of [renewCyclePatch, renewInPlacePatch, fundsInSubscriptionPatch]) patched(patch);
  // renewal-spread, after them, only where it can move a timer (a calendar subscription with a window).
  if (renewalSpreads(input.snapshot, input.renewalSpreadMinutes ?? 0)) deprecatePatch(renewalSpreadPatch);

  try {
    await run.live();
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // An operator asked Temporal to cancel this workflow (Temporal UI "Request Cancellation",
    // `temporal workflow cancel`): end the subscription now, as an immediate cancel that says
    // who did it, so the API and the projection agree. Cleanup runs outside the canceled scope.
    return CancellationScope.nonCancellable(async () => {
      if (!isEnded(run.subscription)) await run.endNow('canceled_by_operator');
      return run.close();
    });
  }
  return run.close();
}
