/**
 * The subscription workflow's decisions, as pure functions of its state: which
 * message may be applied now, what the main loop waits for next, how a billing
 * cycle or an upgrade is invoiced, and what follows a failed charge.
 * workflows/subscription.ts keeps the messages, timers, activities and state
 * updates and asks this module what to do. No clock reads and no framework here:
 * every instant comes in as an argument (workflow time, in the workflow).
 */
import {
  addDays,
  type BillingPeriod,
  calendarBoundaryAtOrBefore,
  nextCalendarBoundary,
  type PeriodAnchor,
  subscriptionPeriod,
} from './billing-calendar.ts';
import type { OpenInvoiceCredit } from './credit-notes.ts';
import { scheduledAttemptAt } from './dunning.ts';
import { priceFor, type PriceResult, type PriceRow } from './pricing.ts';
import { dailyRate, prorate } from './proration.ts';
import { renewalOffsetMs } from './renewal-spread.ts';
import {
  type BillingCycleMode,
  type DunningState,
  endedStatuses,
  type ItemTerms,
  type PlanTerms,
  type PriceTerms,
  subscriptionItemId,
  type SubscriptionItemSnapshot,
  type SubscriptionSnapshot,
} from './subscription.ts';
import { defaultUsageGraceSeconds, isMetered } from './usage-billing.ts';

const iso = (instant: Date) => instant.toISOString();

/**
 * What the workflow knows: the subscription, the plan it bills by, a downgrade waiting for the
 * next renewal, and one-time prices (setup fees) its next cycle invoice carries (the first).
 */
export interface SubscriptionState {
  subscription: SubscriptionSnapshot;
  plan: PlanTerms;
  pendingPlan: PlanTerms | null;
  firstInvoiceItems?: PriceTerms[];
  /**
   * Its recurring items when it has several, or had one added, changed or removed (phase 2 of #26); `plan` is then
   * always the first. Absent or null: the one item `plan` (every subscription before items, and every one made with `plan`).
   */
  items?: ItemTerms[] | null;
  /** Prorated lines of item changes made with `create_prorations`, waiting for the next invoice (renewalLines). */
  pendingLines?: InvoiceLineInput[];
  /** A subscription with metered items: seconds past a period's end its renewal waits for late usage (absent: the default, 3600). */
  usageGraceSeconds?: number;
}

/** Whether the state bills usage (a metered item): its renewals wait the grace window and carry the last period's usage. */
export const billsUsage = (state: Pick<SubscriptionState, 'subscription' | 'plan' | 'items'>): boolean =>
  itemsOf(state).some(isMetered);

/** The recurring items a state bills: its items, or the one item of its plan. */
export function itemsOf(state: Pick<SubscriptionState, 'subscription' | 'plan' | 'items'>): ItemTerms[] {
  return state.items ?? [{ ...state.plan, itemId: subscriptionItemId(state.subscription.id) }];
}

/** The items as the snapshot shows them. */
export const itemSnapshots = (items: readonly ItemTerms[]): SubscriptionItemSnapshot[] =>
  items.map((item) => ({ id: item.itemId, planId: item.planId, quantity: item.quantity ?? 1 }));

/** Whether two prices can share one billing period: the same interval unit and count. */
export const sharesPeriod = (a: PlanTerms, b: PlanTerms): boolean =>
  a.interval.unit === b.interval.unit && a.interval.count === b.interval.count;

/** The same plan at the same quantity (terms from before quantities are at 1). */
export const sameTerms = (a: PriceTerms, b: PriceTerms): boolean =>
  a.planId === b.planId && (a.quantity ?? 1) === (b.quantity ?? 1);

/** The price of terms at their quantity (domain/pricing.ts); terms from before pricing schemes are per_unit at `amount`, quantity 1. */
export function termsPrice(terms: PriceTerms): PriceResult {
  return priceFor(terms.pricing ?? { scheme: 'per_unit', amount: terms.amount }, terms.quantity ?? 1);
}

export const isEnded = (s: SubscriptionSnapshot): boolean => endedStatuses.includes(s.status);

// ---- Commands ---------------------------------------------------------------

/** A message the main loop applies between timers. */
export type SubscriptionCommand =
  | { kind: 'cancel'; atPeriodEnd: boolean; reason: string }
  | { kind: 'pause'; pauseUntil: string | null }
  | { kind: 'resume' }
  | { kind: 'changePlan'; plan: PlanTerms }
  | { kind: 'retryPayment' }
  /** Take back a cancel at period end before the period ends. */
  | { kind: 'undoCancel' }
  /** Void one of its invoices between the workflow's own steps, so no charge of it is in flight (services/invoices/void.ts). */
  | { kind: 'voidInvoice'; invoiceId: string }
  /** Add, change or remove a recurring item (/v1/subscription_items; patched('subscription-items')). */
  | { kind: 'changeItems'; change: ItemChange }
  /** A credit note on one of its open invoices, between the workflow's own steps (its amount due drops; services/credit-notes/owner.ts). */
  | { kind: 'creditInvoice'; credit: OpenInvoiceCredit }
  /** Ingestion saw the period's unbilled usage reach billing_thresholds (workflows/subscription-usage-thresholds.ts). */
  | { kind: 'billUsageThreshold' };

/** Why `command` cannot be applied now, or null. Asked by the update validators and again when the command runs. */
export function commandProblem(state: SubscriptionState, command: SubscriptionCommand): string | null {
  const { subscription, plan, pendingPlan } = state;
  const s = subscription.status;
  if (isEnded(subscription)) return `The subscription is ${s}.`;
  switch (command.kind) {
    case 'cancel':
      if (command.atPeriodEnd && s !== 'active' && s !== 'trialing')
        return `Only an active or trialing subscription can be canceled at period end; it is ${s}. Cancel it now instead.`;
      if (command.atPeriodEnd && subscription.cancelAtPeriodEnd)
        return 'The subscription is already set to cancel at period end.';
      return null;
    case 'pause':
      if (s !== 'active') return `Only an active subscription can be paused; it is ${s}.`;
      if (subscription.cancelAtPeriodEnd) return 'The subscription cancels at period end; it cannot be paused.';
      return null;
    case 'resume':
      return s === 'paused' ? null : `Only a paused subscription can be resumed; it is ${s}.`;
    case 'changePlan':
      if (s !== 'active' && s !== 'trialing') return `The plan of a ${s} subscription cannot change.`;
      if ((state.items?.length ?? 1) > 1)
        return `The subscription has ${state.items!.length} items: change each through /v1/subscription_items.`;
      if (sameTerms(command.plan, plan) && !pendingPlan)
        return `The subscription is already on ${plan.planId}${(plan.quantity ?? 1) === 1 ? '' : ` × ${plan.quantity}`}.`;
      if (command.plan.currency !== plan.currency)
        return `The new plan bills in ${command.plan.currency}, the subscription in ${plan.currency}.`;
      // Usage billed in arrears has no price per day to prorate: a metered plan is not changed in place (#28).
      if (isMetered(plan) || isMetered(command.plan))
        return 'A metered plan cannot be changed in place: cancel the subscription and start one on the new plan.';
      return null;
    case 'retryPayment':
      return s === 'past_due' ? null : 'Nothing to retry.';
    case 'undoCancel':
      return subscription.cancelAtPeriodEnd ? null : 'The subscription is not set to cancel at period end.';
    case 'voidInvoice':
    case 'creditInvoice':
      return null;
    case 'changeItems':
      return itemChangeProblem(state, command.change);
    case 'billUsageThreshold':
      return s === 'active' || s === 'past_due' ? null : `A ${s} subscription bills no usage threshold.`;
  }
}

/** Why an update's validator refuses a message: the error type it answers with and why. */
export interface Refusal {
  type: 'invalid_state' | 'invalid_request';
  message: string;
}

/**
 * The validators' check, before anything is written to history: a cancel already
 * queued wins over whatever follows it; then the state (commandProblem); then, for
 * a pause with an end, that the end is after `now`.
 */
export function refusal(
  state: SubscriptionState,
  queued: readonly SubscriptionCommand[],
  command: SubscriptionCommand,
  now: Date,
): Refusal | null {
  // A void still goes through: until the cancel is applied a charge of the invoice may be in flight.
  if (
    command.kind !== 'voidInvoice' &&
    command.kind !== 'creditInvoice' &&
    queued.some((q) => q.kind === 'cancel' && !q.atPeriodEnd)
  )
    return { type: 'invalid_state', message: 'The subscription is being canceled.' };
  const reason = commandProblem(state, command);
  if (reason) return { type: 'invalid_state', message: reason };
  if (command.kind === 'pause' && command.pauseUntil !== null && Date.parse(command.pauseUntil) <= now.getTime()) {
    return { type: 'invalid_request', message: 'pause_until must be in the future.' };
  }
  return null;
}

// ---- Time -------------------------------------------------------------------

/** What the main loop does when the timer of a wake-up fires. */
export type WakeAction =
  /** Cancel at period end (or at the end of the trial): the subscription ends now. */
  | { kind: 'endAtPeriodEnd' }
  /** The trial is over: billing starts at its end. */
  | { kind: 'endTrial'; billingFrom: string }
  /** The period is over: bill the next cycle, on the pending plan (and quantity) if there is one. */
  | { kind: 'renew'; cycle: number }
  | { kind: 'retryPayment' }
  /** Retries and grace are spent. */
  | { kind: 'endDunning' }
  /** A pause with an end is over. */
  | { kind: 'resume' };

export interface Wake {
  /** ISO instant of the timer. */
  at: string;
  /** For people: the timer's summary and the workflow's current details. */
  what: string;
  action: WakeAction;
}

/** Whether a renewal of `s` is spread over a window of `spreadMinutes`: calendar billing only (anniversaries are spread by nature). */
export const renewalSpreads = (s: Pick<SubscriptionSnapshot, 'billingCycleMode'>, spreadMinutes: number): boolean =>
  spreadMinutes > 0 && s.billingCycleMode === 'calendar';

/**
 * The next thing this subscription waits for, by state; null: only a message moves it.
 * `spreadMinutes` (RENEWAL_SPREAD_MINUTES, 0: off): a calendar renewal wakes at the period's
 * end plus the subscription's offset in that window (domain/renewal-spread.ts); trial ends,
 * cancels at period end, retries, grace ends and pause ends are never spread.
 */
export function nextWake(state: SubscriptionState, spreadMinutes = 0): Wake | null {
  const { subscription: s, pendingPlan } = state;
  switch (s.status) {
    case 'trialing':
      return s.cancelAtPeriodEnd
        ? { at: s.trialEnd!, what: 'Trial ends; cancels (cancel at period end)', action: { kind: 'endAtPeriodEnd' } }
        : { at: s.trialEnd!, what: 'Trial ends; first charge', action: { kind: 'endTrial', billingFrom: s.trialEnd! } };
    case 'active':
      if (!s.cancelAtPeriodEnd && billsUsage(state)) {
        // Usage is billed in arrears: the renewal waits the grace window for late events of the period just ended.
        const graceMs = (state.usageGraceSeconds ?? defaultUsageGraceSeconds) * 1000;
        const offsetMs = renewalSpreads(s, spreadMinutes) ? renewalOffsetMs(s.id, spreadMinutes) : 0;
        return {
          at: iso(new Date(Date.parse(s.currentPeriodEnd!) + graceMs + offsetMs)),
          what: `Renewal, cycle ${s.billingCycle + 1}${pendingPlan ? ` on ${pendingPlan.planId}` : ''}, with the usage of the period that ends ${s.currentPeriodEnd} (after its ${graceMs / 1000} s grace window)`,
          action: { kind: 'renew', cycle: s.billingCycle + 1 },
        };
      }
      return s.cancelAtPeriodEnd
        ? {
            at: s.currentPeriodEnd!,
            what: 'Period ends; cancels (cancel at period end)',
            action: { kind: 'endAtPeriodEnd' },
          }
        : renewalSpreads(s, spreadMinutes)
          ? {
              at: iso(new Date(Date.parse(s.currentPeriodEnd!) + renewalOffsetMs(s.id, spreadMinutes))),
              what: `Renewal, cycle ${s.billingCycle + 1}${pendingPlan ? ` on ${pendingPlan.planId}` : ''} (period ends ${s.currentPeriodEnd}; spread over ${spreadMinutes} min)`,
              action: { kind: 'renew', cycle: s.billingCycle + 1 },
            }
          : {
              at: s.currentPeriodEnd!,
              what: `Renewal, cycle ${s.billingCycle + 1}${pendingPlan ? ` on ${pendingPlan.planId}` : ''}`,
              action: { kind: 'renew', cycle: s.billingCycle + 1 },
            };
    case 'past_due': {
      const d = s.dunning!;
      if (d.nextRetryAt)
        return {
          at: d.nextRetryAt,
          what: `Payment retry ${d.attempts + 1} of invoice ${d.invoiceNumber}`,
          action: { kind: 'retryPayment' },
        };
      return {
        at: d.graceEndsAt!,
        what: `Grace period ends; then ${d.finalAction === 'pause' ? 'pauses' : 'cancels'}`,
        action: { kind: 'endDunning' },
      };
    }
    case 'paused':
      return s.pauseUntil ? { at: s.pauseUntil, what: 'Pause ends; resumes', action: { kind: 'resume' } } : null;
    default:
      return null;
  }
}

/** How long the main loop waits for `wake` from `now`; 0 or less: it is due. */
export const wakeDelayMs = (wake: Wake, now: Date): number => Date.parse(wake.at) - now.getTime();

/** The workflow's current details while it waits. */
export function waitingDetails(wake: Wake | null, subscription: SubscriptionSnapshot): string {
  if (wake) return `${wake.what} (at ${wake.at}).`;
  return subscription.status === 'paused' ? 'Paused until resumed.' : 'Waiting.';
}

// ---- Invoices ---------------------------------------------------------------

/** One invoice line as the invoice activity takes it (db's InvoiceLine, with `proration` always said). */
export interface InvoiceLineInput {
  description: string;
  /** Per unit, in minor units; negative for a credit. Null when the line's amount is not a whole unit amount × quantity: then `total` is. */
  amount: number | null;
  quantity: number;
  /** The line's amount when `amount` is null (tiered, package or prorated prices of several units). */
  total?: number;
  /** The plan (price) the line bills. */
  plan?: string;
  /** How a tiered or package price made the amount (domain/pricing.ts rows); not on prorated lines. */
  breakdown?: PriceRow[];
  /** A usage line: the meter it bills, and its exact decimal quantity (`quantity` is the same as a number). */
  meter?: string;
  quantity_decimal?: string;
  period_start: string;
  period_end: string;
  /** A line that prorates: a plan change's lines, or the partial first period of calendar billing. */
  proration: boolean;
}

/** What the workflow asks the openInvoice activity for (the shape of its OpenInvoiceInput). */
export interface InvoiceInput {
  /** One invoice per key, whatever happens to the activity: `${subscription}:cycle:${n}` or `${subscription}:plan_change:${version}`. */
  billingKey: string;
  subscriptionId: string;
  accountId: string;
  customerId: string;
  currency: string;
  lines: InvoiceLineInput[];
  periodStart: string;
  periodEnd: string;
  issuedAt: string;
  livemode: boolean;
}

export const cycleBillingKey = (subscription: Pick<SubscriptionSnapshot, 'id'>, cycle: number): string =>
  `${subscription.id}:cycle:${cycle}`;

/**
 * Where billing that starts at `from` counts its periods from. Anniversary billing:
 * from `from`. Calendar billing: from `from` when it is on a boundary of the plan's
 * unit, else from the next boundary, with a partial first period (cycle 0) from
 * `from` to it.
 */
export function billingAnchorFrom(
  mode: BillingCycleMode,
  from: Date,
  unit: PlanTerms['interval']['unit'],
): PeriodAnchor {
  if (mode === 'calendar') {
    const aligned = calendarBoundaryAtOrBefore(from, unit).getTime() === from.getTime();
    return aligned
      ? { billingAnchor: iso(from), anchorCycle: 0, stubStart: null }
      : { billingAnchor: iso(nextCalendarBoundary(from, unit)), anchorCycle: 1, stubStart: iso(from) };
  }
  return { billingAnchor: iso(from), anchorCycle: 0, stubStart: null };
}

/** The period of billing cycle `cycle` of a subscription whose billing has started. */
export const periodOf = (subscription: SubscriptionSnapshot, plan: PlanTerms, cycle: number): BillingPeriod =>
  subscriptionPeriod(
    {
      billingAnchor: subscription.billingAnchor!,
      anchorCycle: subscription.anchorCycle,
      stubStart: subscription.stubStart,
    },
    plan.interval,
    cycle,
  );

/**
 * The line of billing cycle `cycle`: the plan's amount, or for the partial first
 * period of calendar billing, that amount prorated against the full calendar period.
 */
export function cycleLine(
  subscription: SubscriptionSnapshot,
  plan: PlanTerms,
  period: BillingPeriod,
): InvoiceLineInput {
  const isStub = period.index < subscription.anchorCycle;
  const fullStart = isStub ? calendarBoundaryAtOrBefore(period.start, plan.interval.unit) : period.start;
  const price = termsPrice(plan);
  const amount = isStub
    ? prorate(price.amount, period.end.getTime() - period.start.getTime(), period.end.getTime() - fullStart.getTime())
    : price.amount;
  return priceLine(
    plan,
    `${plan.name}${isStub ? ' (partial period)' : ''}`,
    amount,
    { start: period.start, end: period.end },
    isStub,
    isStub ? null : price,
  );
}

/**
 * A line of `amount` (the whole line, in minor units) for `terms` at their quantity. Its unit
 * amount is amount ÷ quantity when that is whole (always at quantity 1, as every line before
 * pricing schemes), else null with the amount in `total`. Terms from before pricing schemes
 * make exactly the line they always made.
 */
export function priceLine(
  terms: PriceTerms,
  description: string,
  amount: number,
  period: { start: Date; end: Date },
  proration: boolean,
  price: PriceResult | null,
): InvoiceLineInput {
  const quantity = terms.quantity ?? 1;
  const whole = quantity > 0 && amount % quantity === 0;
  const priced = terms.pricing !== undefined;
  return {
    description,
    amount: whole ? amount / quantity : null,
    quantity,
    ...(whole ? {} : { total: amount }),
    ...(priced ? { plan: terms.planId } : {}),
    ...(priced && price && terms.pricing!.scheme !== 'per_unit' ? { breakdown: price.rows } : {}),
    period_start: iso(period.start),
    period_end: iso(period.end),
    proration,
  };
}

/** The lines of one-time prices (setup fees) on the invoice issued at `issuedAt`: the price at its quantity, dated that instant. */
export function oneTimeLines(items: readonly PriceTerms[], issuedAt: Date): InvoiceLineInput[] {
  return items.map((item) => {
    const price = termsPrice(item);
    return priceLine(item, item.name, price.amount, { start: issuedAt, end: issuedAt }, false, price);
  });
}

/**
 * THE lines of a subscription's cycle invoice (the first charge, a renewal, a resume), in order: one line per
 * recurring item priced at its quantity (domain/pricing.ts; a calendar stub prorated), the one-time prices of the
 * first invoice, the prorated lines item changes left for this invoice (create_prorations), then `pendingItems`:
 * lines from outside the subscription (pending invoice items) that this invoice picks up. The workflow's invoice
 * and the upcoming-invoice preview (upcomingInvoice) both come from here. A state with neither items nor pending
 * lines makes exactly the lines it always made.
 */
export function renewalLines(
  state: SubscriptionState,
  period: BillingPeriod,
  issuedAt: Date,
  pendingItems: readonly InvoiceLineInput[] = [],
  usage: readonly InvoiceLineInput[] = [],
): InvoiceLineInput[] {
  // A metered item has no line in advance: its usage is billed on the next invoice (`usage`, domain/usage-billing.ts).
  const recurring = itemsOf(state)
    .filter((item) => !isMetered(item))
    .map((item) => cycleLine(state.subscription, state.items ? item : state.plan, period));
  return [
    ...recurring,
    ...usage,
    ...oneTimeLines(state.firstInvoiceItems ?? [], issuedAt),
    ...(state.pendingLines ?? []),
    ...pendingItems,
  ];
}

/**
 * The invoice of billing cycle `cycle` (the first charge after a trial, a renewal, a resume), issued at `now`.
 * With renewals spread (`spreadMinutes`, as nextWake takes it), a calendar renewal that runs within the window
 * after its period starts is issued at the period's start, the boundary, not at the spread instant it runs.
 */
export function cycleInvoice(
  state: SubscriptionState,
  cycle: number,
  now: Date,
  spreadMinutes = 0,
  pendingItems: readonly InvoiceLineInput[] = [],
  usage: readonly InvoiceLineInput[] = [],
): { period: BillingPeriod; invoice: InvoiceInput } {
  const { subscription, plan } = state;
  const period = periodOf(subscription, plan, cycle);
  const late = now.getTime() - period.start.getTime();
  const issuedAt =
    renewalSpreads(subscription, spreadMinutes) && late >= 0 && late < spreadMinutes * 60_000 ? period.start : now;
  return {
    period,
    invoice: {
      billingKey: cycleBillingKey(subscription, cycle),
      subscriptionId: subscription.id,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      currency: plan.currency,
      lines: renewalLines(state, period, issuedAt, pendingItems, usage),
      periodStart: iso(period.start),
      periodEnd: iso(period.end),
      issuedAt: iso(issuedAt),
      livemode: subscription.livemode,
    },
  };
}

// ---- Plan changes -----------------------------------------------------------

/**
 * What a plan change (already allowed by commandProblem) does; a change of quantity is a plan change
 * to the same plan at another quantity, priced at it:
 * - `revert`: back to the current plan and quantity, the pending downgrade is dropped;
 * - `trial`: in a trial the plan simply changes;
 * - `downgrade`: a lower or equal price per day waits for the next renewal;
 * - `upgrade`: a higher price per day takes effect now, prorated (upgradeInvoice).
 */
export function planChangeKind(
  state: SubscriptionState,
  next: PlanTerms,
): 'revert' | 'trial' | 'downgrade' | 'upgrade' {
  const { subscription, plan } = state;
  if (sameTerms(next, plan)) return 'revert';
  if (subscription.status === 'trialing') return 'trial';
  if (dailyRate(termsPrice(next).amount, next.interval) <= dailyRate(termsPrice(plan).amount, plan.interval))
    return 'downgrade';
  return 'upgrade';
}

/**
 * The proration lines of an upgrade at `now` from `plan` to `next` within the
 * current period [start, end): the unused rest of the old plan as a credit, then
 * either the rest of the period on the new plan (same interval) or a full new
 * period of the new plan from `now` to `newPeriodEnd` (interval change).
 */
export function upgradeLines(
  plan: PlanTerms,
  next: PlanTerms,
  current: { start: Date; end: Date },
  now: Date,
  newPeriodEnd: Date | null,
): InvoiceLineInput[] {
  const { start, end } = current;
  const periodMs = end.getTime() - start.getTime();
  const remainingMs = end.getTime() - now.getTime();
  // Each line prorates the price's whole (already rounded) amount at its quantity, rounded once more (domain/proration.ts).
  const lines: InvoiceLineInput[] = [
    priceLine(
      plan,
      `Unused time on ${plan.name} after ${iso(now)}`,
      -prorate(termsPrice(plan).amount, remainingMs, periodMs),
      { start: now, end },
      true,
      null,
    ),
  ];
  const price = termsPrice(next);
  if (newPeriodEnd === null) {
    lines.push(
      priceLine(
        next,
        `Remaining time on ${next.name} after ${iso(now)}`,
        prorate(price.amount, remainingMs, periodMs),
        { start: now, end },
        true,
        null,
      ),
    );
  } else {
    lines.push(priceLine(next, `${next.name}`, price.amount, { start: now, end: newPeriodEnd }, false, price));
  }
  return lines;
}

export interface Upgrade {
  /** `${subscription}:plan_change:${version}`; the charge is keyed `${billingKey}:attempt:1`. */
  billingKey: string;
  /** Same interval: the current period goes on. Otherwise a new period starts at the upgrade. */
  sameInterval: boolean;
  periodStart: string;
  periodEnd: string;
  invoice: InvoiceInput;
}

/** The invoice of an upgrade to `next` at `now`, and the period the subscription is in after it. */
export function upgradeInvoice(state: SubscriptionState, next: PlanTerms, now: Date): Upgrade {
  const { subscription, plan } = state;
  const start = new Date(subscription.currentPeriodStart!);
  const end = new Date(subscription.currentPeriodEnd!);
  const sameInterval = next.interval.unit === plan.interval.unit && next.interval.count === plan.interval.count;
  const newPeriodStart = sameInterval ? start : now;
  const newPeriodEnd = sameInterval
    ? end
    : subscriptionPeriod({ billingAnchor: iso(now), anchorCycle: 0, stubStart: null }, next.interval, 0).end;
  const billingKey = `${subscription.id}:plan_change:${subscription.version}`;
  return {
    billingKey,
    sameInterval,
    periodStart: iso(newPeriodStart),
    periodEnd: iso(newPeriodEnd),
    invoice: {
      billingKey,
      subscriptionId: subscription.id,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      currency: plan.currency,
      lines: upgradeLines(plan, next, { start, end }, now, sameInterval ? null : newPeriodEnd),
      periodStart: iso(newPeriodStart),
      periodEnd: iso(newPeriodEnd),
      issuedAt: iso(now),
      livemode: subscription.livemode,
    },
  };
}

// ---- Item changes (/v1/subscription_items) ----------------------------------

/**
 * What an item change does with money (Stripe's `proration_behavior`):
 * - `create_prorations` (default): prorated lines for the rest of the period, kept for the next invoice;
 * - `always_invoice`: the same lines (and any already kept) invoiced and charged now; when they add up to
 *   zero or a credit there is nothing to charge, and they are kept for the next invoice instead;
 * - `none`: no proration; the next renewal bills the new items.
 * Every change takes effect at once (Stripe's semantics); in a trial it simply changes, with no lines.
 */
export const prorationBehaviors = ['create_prorations', 'always_invoice', 'none'] as const;
export type ProrationBehavior = (typeof prorationBehaviors)[number];

/** Most recurring items one subscription has. */
export const maxItems = 20;

export type ItemChange =
  | { action: 'add'; item: ItemTerms; prorationBehavior: ProrationBehavior }
  /** `item` carries the existing item's id with its new plan and quantity. */
  | { action: 'update'; item: ItemTerms; prorationBehavior: ProrationBehavior }
  | { action: 'remove'; itemId: string; prorationBehavior: ProrationBehavior };

const itemName = (item: PriceTerms): string => `${item.name}${(item.quantity ?? 1) === 1 ? '' : ` × ${item.quantity}`}`;

/** Why `change` cannot be made now, or null (the validator's check, and again when the command runs). */
export function itemChangeProblem(state: SubscriptionState, change: ItemChange): string | null {
  const { subscription, plan, pendingPlan } = state;
  const s = subscription.status;
  if (s !== 'active' && s !== 'trialing') return `The items of a ${s} subscription cannot change.`;
  if (pendingPlan)
    return `A plan change to ${pendingPlan.planId} waits for the renewal; drop it first (POST /v1/subscriptions/${subscription.id}/update with the current plan and quantity).`;
  const items = itemsOf(state);
  if (change.action === 'remove') {
    if (!items.some((i) => i.itemId === change.itemId)) return `The subscription has no item ${change.itemId}.`;
    if (items.length === 1)
      return `${change.itemId} is the subscription's last recurring item; cancel the subscription instead.`;
    return null;
  }
  const next = change.item;
  if (next.currency !== plan.currency)
    return `Plan ${next.planId} bills in ${next.currency}, the subscription in ${plan.currency}.`;
  if (!sharesPeriod(next, plan)) {
    return `Plan ${next.planId} bills every ${next.interval.count} ${next.interval.unit}(s) and the subscription every ${plan.interval.count} ${plan.interval.unit}(s): every item shares the subscription's billing period.`;
  }
  const other = items.find((i) => i.planId === next.planId && i.itemId !== next.itemId);
  if (other) return `Plan ${next.planId} is already item ${other.itemId}; change its quantity instead.`;
  if (change.action === 'add') {
    if (items.some((i) => i.itemId === next.itemId)) return `The subscription already has an item ${next.itemId}.`;
    if (items.length >= maxItems) return `A subscription has at most ${maxItems} recurring items.`;
    return null;
  }
  const current = items.find((i) => i.itemId === next.itemId);
  if (!current) return `The subscription has no item ${next.itemId}.`;
  if (sameTerms(current, next)) return `Item ${next.itemId} is already ${next.planId} × ${next.quantity ?? 1}.`;
  return null;
}

/**
 * The prorated lines of replacing `from` by `to` (either may be absent: an add, a removal) at `at` within the
 * current period [start, end), as a plan upgrade prorates (domain/proration.ts), each rounded once:
 *   credit = −round(price(from) × remaining ÷ period),  charge = round(price(to) × remaining ÷ period).
 */
export function itemProrationLines(
  from: PriceTerms | null,
  to: PriceTerms | null,
  current: { start: Date; end: Date },
  at: Date,
): InvoiceLineInput[] {
  const { start, end } = current;
  const periodMs = end.getTime() - start.getTime();
  const remainingMs = end.getTime() - at.getTime();
  const lines: InvoiceLineInput[] = [];
  if (from)
    lines.push(
      priceLine(
        from,
        `Unused time on ${itemName(from)} after ${iso(at)}`,
        0 - prorate(termsPrice(from).amount, remainingMs, periodMs),
        { start: at, end },
        true,
        null,
      ),
    );
  if (to)
    lines.push(
      priceLine(
        to,
        `Remaining time on ${itemName(to)} after ${iso(at)}`,
        prorate(termsPrice(to).amount, remainingMs, periodMs),
        { start: at, end },
        true,
        null,
      ),
    );
  return lines;
}

export interface ItemChangeResult {
  /** The items after the change; the first is the subscription's `plan`. */
  items: ItemTerms[];
  /** The change's prorated lines (none in a trial, or with proration_behavior none). */
  lines: InvoiceLineInput[];
  /** The prorated lines kept for the next invoice after it (state.pendingLines and, with create_prorations, these). */
  pendingLines: InvoiceLineInput[];
  /** always_invoice with something to charge: the invoice made now of every kept line and these; null otherwise. */
  invoice: InvoiceInput | null;
}

/** What `change` (allowed by itemChangeProblem) does at `at`: the items after it, and where its prorated lines go. */
export function applyItemChange(state: SubscriptionState, change: ItemChange, at: Date): ItemChangeResult {
  const { subscription } = state;
  const before = itemsOf(state);
  const items =
    change.action === 'add'
      ? [...before, change.item]
      : change.action === 'update'
        ? before.map((i) => (i.itemId === change.item.itemId ? change.item : i))
        : before.filter((i) => i.itemId !== change.itemId);
  const kept = state.pendingLines ?? [];
  if (
    subscription.status === 'trialing' ||
    change.prorationBehavior === 'none' ||
    !subscription.currentPeriodStart ||
    !subscription.currentPeriodEnd
  ) {
    return { items, lines: [], pendingLines: kept, invoice: null };
  }
  const current = { start: new Date(subscription.currentPeriodStart), end: new Date(subscription.currentPeriodEnd) };
  const when = new Date(Math.min(Math.max(at.getTime(), current.start.getTime()), current.end.getTime()));
  const from =
    change.action === 'add'
      ? null
      : before.find((i) => i.itemId === (change.action === 'remove' ? change.itemId : change.item.itemId))!;
  const to = change.action === 'remove' ? null : change.item;
  const lines = itemProrationLines(from, to, current, when);
  const all = [...kept, ...lines];
  const owed = all.reduce((sum, line) => sum + lineTotal(line), 0);
  if (change.prorationBehavior === 'create_prorations' || owed <= 0)
    return { items, lines, pendingLines: all, invoice: null };
  const billingKey = `${subscription.id}:item_change:${subscription.version}`;
  return {
    items,
    lines,
    pendingLines: [],
    invoice: {
      billingKey,
      subscriptionId: subscription.id,
      accountId: subscription.accountId,
      customerId: subscription.customerId,
      currency: state.plan.currency,
      lines: all,
      periodStart: iso(when),
      periodEnd: iso(current.end),
      issuedAt: iso(at),
      livemode: subscription.livemode,
    },
  };
}

/** A line's amount in minor units (amount × quantity, or its total): what the invoice adds up. */
export const lineTotal = (line: InvoiceLineInput): number => line.total ?? (line.amount ?? 0) * line.quantity;

/** The state a renewal bills from: a downgrade that waited for it takes effect (its one item follows). */
export function stateAtRenewal(state: SubscriptionState): SubscriptionState {
  if (!state.pendingPlan) return state;
  const plan = state.pendingPlan;
  const items = state.items ? [{ ...plan, itemId: state.items[0]!.itemId }] : state.items;
  return { ...state, plan, pendingPlan: null, ...(items === undefined ? {} : { items }) };
}

// ---- The upcoming invoice ---------------------------------------------------

/**
 * The next invoice the workflow makes for `state` by itself, as it will make it (GET /v1/invoices/upcoming):
 * a trialing subscription's first (at the trial's end), an active one's renewal (a waiting downgrade applied,
 * stateAtRenewal), both through cycleInvoice and so renewalLines. With `changes`, proposed item changes at
 * `at` are applied first (applyItemChange, each as its proration_behavior says; an always_invoice change's
 * invoice is made at once, so it is not part of the next one). Null: no invoice is coming (a cancel at period
 * end, past due, paused, ended). Its `issuedAt` is the instant the period starts. `pendingItems`: the customer's
 * pending invoice items in its currency, which that invoice takes (services/invoices/items.ts pendingItemLines appends
 * them after the subscription's own lines, as renewalLines does).
 */
export function upcomingInvoice(
  state: SubscriptionState,
  spreadMinutes: number,
  changes: readonly ItemChange[] = [],
  at: Date = new Date(0),
  pendingItems: readonly InvoiceLineInput[] = [],
  usage: readonly InvoiceLineInput[] = [],
): InvoiceInput | null {
  let next = state;
  for (const change of changes) {
    const problem = itemChangeProblem(next, change);
    if (problem) throw new RangeError(problem);
    const result = applyItemChange(next, change, at);
    next = { ...next, items: result.items, plan: stripItemId(result.items[0]!), pendingLines: result.pendingLines };
  }
  const s = next.subscription;
  if (s.cancelAtPeriodEnd) return null;
  if (s.status === 'trialing') {
    const from = new Date(s.trialEnd!);
    const anchored = {
      ...next,
      subscription: { ...s, ...billingAnchorFrom(s.billingCycleMode, from, next.plan.interval.unit) },
    };
    return cycleInvoice(anchored, 0, from, 0, pendingItems).invoice;
  }
  if (s.status !== 'active') return null;
  const renewing = stateAtRenewal(next);
  const cycle = s.billingCycle + 1;
  const start = periodOf(s, renewing.plan, cycle).start;
  // `usage`: the current period's usage so far (services/usage/billing.ts usageSoFar), which the renewal bills in arrears.
  return cycleInvoice(renewing, cycle, start, spreadMinutes, pendingItems, usage).invoice;
}

/** An item's terms as the subscription's `plan` (the first item). */
export function stripItemId(item: ItemTerms): PlanTerms {
  const { itemId: _itemId, ...terms } = item;
  return terms;
}

// ---- Dunning ----------------------------------------------------------------

/** What follows a failed attempt: the next scheduled retry, or once the schedule is spent, the end of the grace period (kept once set). */
export function afterFailedAttempt(dunning: DunningState, now: Date): DunningState {
  const next = scheduledAttemptAt(dunning.policy, new Date(dunning.firstFailedAt), dunning.scheduledAttempts + 1);
  const graceEndsAt = next === null ? (dunning.graceEndsAt ?? iso(addDays(now, dunning.gracePeriodDays))) : null;
  return { ...dunning, nextRetryAt: next ? iso(next) : null, graceEndsAt };
}

/** The dunning state after the first failed charge of an invoice, with its next step scheduled (afterFailedAttempt). */
export function startDunning(
  state: SubscriptionState,
  invoice: { invoiceId: string; number: string; billingKey: string; amount: number },
  failure: { failureCode: string; failureMessage: string },
  settings: { gracePeriodDays: number; finalAction: DunningState['finalAction']; retryPolicy: DunningState['policy'] },
  now: Date,
): DunningState {
  return afterFailedAttempt(
    {
      invoiceId: invoice.invoiceId,
      invoiceNumber: invoice.number,
      billingKey: invoice.billingKey,
      amount: invoice.amount,
      currency: state.plan.currency,
      attempts: 1,
      scheduledAttempts: 1,
      firstFailedAt: iso(now),
      nextRetryAt: null,
      graceEndsAt: null,
      gracePeriodDays: state.subscription.gracePeriodDays ?? settings.gracePeriodDays,
      finalAction: settings.finalAction,
      policy: settings.retryPolicy,
      lastFailureCode: failure.failureCode,
      lastFailureMessage: failure.failureMessage,
    },
    now,
  );
}

/** The dunning state after retry number `dunning.attempts + 1` failed too. */
export function failedRetry(
  dunning: DunningState,
  scheduled: boolean,
  failure: { failureCode: string; failureMessage: string },
  now: Date,
): DunningState {
  return afterFailedAttempt(
    {
      ...dunning,
      attempts: dunning.attempts + 1,
      scheduledAttempts: dunning.scheduledAttempts + (scheduled ? 1 : 0),
      lastFailureCode: failure.failureCode,
      lastFailureMessage: failure.failureMessage,
    },
    now,
  );
}

// ---- Resume -----------------------------------------------------------------

/**
 * What a resume at `now` does: `start` billing (it never started: created paused);
 * `continue` the paid period, which has not ended; or a `newPeriod` from now, charged
 * at once (the period is over, or was never paid, as after a dunning pause).
 */
export function resumeKind(subscription: SubscriptionSnapshot, now: Date): 'start' | 'continue' | 'newPeriod' {
  if (subscription.billingAnchor === null) return 'start';
  const unpaid = subscription.pauseReason === 'payment_failed';
  if (!unpaid && subscription.currentPeriodEnd && Date.parse(subscription.currentPeriodEnd) > now.getTime())
    return 'continue';
  return 'newPeriod';
}
