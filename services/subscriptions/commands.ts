/**
 * The one door for commanding a subscription: create it (its workflow started and its first state awaited, in one
 * update-with-start) and message it (plan or quantity change, items, pause, resume, cancel, undo a cancel). The API's
 * routes (api/routes/subscriptions.ts, subscription-items.ts) and the customer portal (customer-portal.ts) only parse,
 * authorize, call a command and serialize its answer, so a retry, a lock or a clock binding is written once, here.
 *
 * A command answers with the subscription as its workflow recorded it (a SubscriptionSnapshot), or as its projection
 * holds it when a retry finds the first try's work done (a Subscription row); objects/subscription.ts serializes both.
 */
import type { UpdateDefinition } from '@temporalio/client';
import { WithStartWorkflowOperation, type WorkflowUpdateOptions } from '@temporalio/client';

import type { Config } from '../../config.ts';
import { Account, Customer, Discount, type Plan, Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import {
  type BillingCycleMode,
  endedStatuses,
  initialSnapshot,
  subscriptionItemId,
  type SubscriptionSnapshot,
} from '../../domain/subscription.ts';
import { type ItemChange, termsPrice } from '../../domain/subscription-decisions.ts';
import { everyInterval, planMemo } from '../../domain/subscription-details.ts';
import { isMetered } from '../../domain/usage-billing.ts';
import {
  AccountIdKey,
  CustomerIdKey,
  LivemodeKey,
  PlanIdKey,
  SubscriptionStatusKey,
} from '../../workflows/search-attributes.ts';
import {
  accountClosedSignal,
  cancelSubscriptionUpdate,
  changeItemsUpdate,
  changePlanUpdate,
  pauseSubscriptionUpdate,
  resumeSubscriptionUpdate,
  subscriptionCreatedUpdate,
  subscriptionWorkflow,
  type SubscriptionWorkflowInput,
  undoCancelAtPeriodEndUpdate,
} from '../../workflows/subscription.ts';
import { lockAccount } from '../accounts/lock.ts';
import type { ServiceContext } from '../context.ts';
import { redeemDiscount, removeDiscount } from '../discounts/redemptions.ts';
import { sendToSubscription, updateRefusal } from '../platform/workflow-messages.ts';
import { assignableTaxRates, writeSubscriptionTaxRates } from '../taxes/rates.ts';
import { bindToClock, checkClockSubscriptionRoom, clockBindingOf, taskQueueFor } from '../test-clocks/clocks.ts';
import { usageGraceSeconds } from '../usage/billing.ts';
import { type CommandScope, subscribedPlans } from './plans.ts';
import { changedPlanTerms } from './terms.ts';

/** What messaging a subscription needs: the database (its row) and Temporal (its workflow). */
export type SubscriptionCommandContext = Pick<ServiceContext, 'orm' | 'temporal'>;

/** What a create needs besides: the configuration it reads at each create (a test may change it meanwhile). */
export type CreateCommandContext = SubscriptionCommandContext & {
  settings: Pick<Config, 'renewalSpreadMinutes' | 'testClocks'>;
};

/**
 * How a command knows a retry of its request, from the request's Idempotency-Key (api/command-retry.ts reads it):
 * what the first try started or sent is found again, never done twice.
 */
export interface CommandRetry {
  /** An Idempotency-Key was given: the workflow a create starts is found again by the key's retry. */
  keyed: boolean;
  /** This request took over a key whose earlier request died before answering: what it did may already exist. */
  takeover: boolean;
  /** The update id of one message under the key (Temporal answers a repeated id with the first one's result); undefined without a key. */
  updateId(purpose: string): string | undefined;
}

/** A subscription as a command answers it: as its workflow recorded it, or its projection when a retry found the work done. */
export type CommandAnswer = SubscriptionSnapshot | Subscription;

// ---------------------------------------------------------------------------------------------------------------
// Create

export interface CreateSubscriptionRequest {
  /** Its id (and its workflow's): with an Idempotency-Key derived from it, so a retry after a crash finds the workflow the first try started. */
  id: string;
  customerId: string;
  /** The recurring plan at `quantity`; or `items`: recurring plans (the first is `plan`) and one_time plans (setup fees). */
  plan?: string;
  quantity?: number;
  items?: { plan: string; quantity: number; taxRates?: string[] }[];
  currency?: string;
  /** Default: the plan's trial_period_days. */
  trialPeriodDays?: number;
  /** Start paused: billing (and the trial) begin then. */
  pauseUntil?: Date;
  billingCycle: BillingCycleMode;
  gracePeriodDays?: number;
  defaultTaxRates?: string[];
  coupon?: string;
  promotionCode?: string;
}

/**
 * Creates a subscription: checks what it names (customer, plans, tax rates, a payment method to charge at once, room
 * on a test clock), writes its tax rates under the account's lock (closed: 409), redeems its coupon, binds it to its
 * customer's test clock, and starts its workflow with its first state awaited (update-with-start), so the answer
 * carries what a read will find next. An account closed meanwhile cancels it at once.
 */
export async function createSubscription(
  ctx: CreateCommandContext,
  scope: CommandScope,
  request: CreateSubscriptionRequest,
  retry: CommandRetry,
): Promise<CommandAnswer> {
  const { orm, temporal, settings } = ctx;
  const { accountId, livemode } = scope;
  const { id } = request;
  const em = orm.em.fork();
  const customerRead = em.findOne(Customer, { id: request.customerId, accountId, livemode });
  const [customer, subscribed, account] = await Promise.all([
    customerRead,
    subscribedPlans(em, request, scope, customerRead),
    em.findOne(Account, { id: accountId }, { fields: ['name', 'email'] }),
  ]);
  if (!customer) throw new ApiError('not_found', `No such customer: ${request.customerId}.`);
  const { plan, terms, others, firstInvoiceItems } = subscribed;
  // Tax rates: each of the account and mode and active (400 before anything starts).
  const defaultTaxRates = request.defaultTaxRates
    ? await assignableTaxRates(em, scope, request.defaultTaxRates, 'default_tax_rates')
    : [];
  const itemTaxRates: { plan: string; taxRates: string[] }[] = [];
  for (const [i, item] of (request.items ?? []).entries()) {
    if (item.taxRates?.length)
      itemTaxRates.push({
        plan: item.plan,
        taxRates: await assignableTaxRates(em, scope, item.taxRates, `items[${i}].tax_rates`),
      });
  }
  // A customer on a test clock: the subscription lives on the clock's time.
  const testClock = await clockBindingOf(em, customer);
  const now = () => (testClock ? new Date(testClock.now) : new Date());
  if (request.pauseUntil && request.pauseUntil.getTime() <= now().getTime())
    throw new ApiError('invalid_request', 'pause_until: must be in the future.');
  const trialDays = request.trialPeriodDays ?? plan.trialPeriodDays;
  // Without a trial or a paused start the workflow charges at once: a customer with nothing to charge is refused before anything starts.
  if (trialDays === 0 && !request.pauseUntil && !customer.paymentMethod) {
    throw new ApiError(
      'payment_method_required',
      `Customer ${customer.id} has no payment method, and without a trial the first charge is made at once: add a payment method first, or give trial_period_days.`,
    );
  }

  // A retry whose subscription exists answers with it (its workflow may have ended since).
  if (retry.takeover) {
    const existing = await em.findOne(Subscription, { id, accountId, livemode });
    if (existing) return existing;
  }
  // A customer on a test clock has at most config.testClocks.subscriptionsPerCustomer not ended (docs/testing-your-integration.md#limits).
  await checkClockSubscriptionRoom(em, customer, settings.testClocks);
  const input: SubscriptionWorkflowInput = {
    snapshot: initialSnapshot(
      {
        id,
        accountId,
        customerId: customer.id,
        planId: plan.id,
        livemode,
        quantity: terms.quantity!,
        currency: terms.currency,
        trialDays,
        billingCycleMode: request.billingCycle,
        pauseUntil: request.pauseUntil?.toISOString() ?? null,
        gracePeriodDays: request.gracePeriodDays ?? null,
      },
      now(),
    ),
    plan: terms,
    // Several recurring items: each with an id, the first's is the subscription's own (as a one-item subscription's).
    ...(others.length > 0
      ? {
          items: [
            { ...terms, itemId: subscriptionItemId(id) },
            ...others.map((other) => ({ ...other, itemId: newId('subscriptionItem') })),
          ],
        }
      : {}),
    ...(firstInvoiceItems.length > 0 ? { firstInvoiceItems } : {}),
    ...(testClock ? { testClock } : {}),
    // RENEWAL_SPREAD_MINUTES: workflow code cannot read the environment, so the window travels in the input.
    ...(settings.renewalSpreadMinutes > 0 ? { renewalSpreadMinutes: settings.renewalSpreadMinutes } : {}),
  };
  // The account is checked open under its row lock (services/accounts/lock.ts), before the workflow starts and after.
  await em.transactional(async (tx) => {
    if ((await lockAccount(tx, accountId, 'share')) === 'closed')
      throw new ApiError('account_closed', 'The account is closed.');
    // Its tax rates, before the workflow bills its first invoice (services/taxes/calculator.ts reads them); keyed by the subscription id, so a retry writes the same.
    if (defaultTaxRates.length > 0 || itemTaxRates.length > 0) {
      const itemIds = new Map([
        ...(input.items ?? [{ ...terms, itemId: subscriptionItemId(id) }]).map(
          (item) => [item.planId, item.itemId] as const,
        ),
      ]);
      await writeSubscriptionTaxRates(tx, scope, id, {
        defaultTaxRates,
        items: itemTaxRates.map((item) => ({
          id: itemIds.get(item.plan) ?? `once_${item.plan}`,
          plan: item.plan,
          taxRates: item.taxRates,
        })),
      });
    }
  });
  // A coupon or promotion code: redeemed now (one decision under the coupon's lock), so the first invoice applies it.
  const redeemed =
    (request.coupon || request.promotionCode) &&
    !(retry.takeover && (await em.count(Discount, { subscriptionId: id })) > 0)
      ? await em.transactional((tx) =>
          redeemDiscount(tx, {
            scope,
            customer,
            subscriptionId: id,
            coupon: request.coupon,
            promotionCode: request.promotionCode,
            currency: terms.currency,
            purchase: {
              amount: [terms, ...others, ...firstInvoiceItems].reduce((sum, item) => sum + termsPrice(item).amount, 0),
              currency: terms.currency,
            },
            now: now(),
          }),
        )
      : null;
  // A repeating discount ends on time by the workflow's timer (workflows/subscription.ts discountEnd).
  // Metered items wait the mode's usage grace window from the first renewal on (the workflow reads it from its input; later closings refresh it).
  if ([terms, ...others].some(isMetered)) input.usageGraceSeconds = await usageGraceSeconds(em, accountId, livemode);
  if (redeemed?.discount.end)
    input.discountEnd = { discountId: redeemed.discount.id, end: redeemed.discount.end.toISOString() };
  if (testClock) await bindToClock(temporal.client, testClock, id);
  let snapshot: SubscriptionSnapshot;
  try {
    // Update-with-start: one round trip starts the workflow and waits for its first recorded state.
    snapshot = await temporal.client.workflow.executeUpdateWithStart(subscriptionCreatedUpdate, {
      startWorkflowOperation: new WithStartWorkflowOperation(subscriptionWorkflow, {
        workflowId: id,
        taskQueue: taskQueueFor(temporal.taskQueue, testClock),
        args: [input],
        // A retried key reaches the workflow its first try started; a closed one is never started again.
        workflowIdConflictPolicy: retry.keyed ? 'USE_EXISTING' : 'FAIL',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        // What ops read in the Temporal UI: who and what, not only ids. The summary never changes, so it says what the
        // subscription started on; the current plan is the first line of its current details and in its memo
        // (domain/subscription-details.ts).
        staticSummary: `${customer.name ? `${customer.name} <${customer.email}>` : customer.email}, started on ${plan.name}${terms.quantity! > 1 ? ` × ${terms.quantity}` : ''} (${formatMoney(termsPrice(terms).amount, terms.currency)} ${everyInterval(input.plan.interval)})`,
        memo: {
          account: account ? `${account.name} <${account.email}>` : accountId,
          customerEmail: customer.email,
          ...planMemo(input.plan),
        },
        typedSearchAttributes: [
          { key: SubscriptionStatusKey, value: input.snapshot.status },
          { key: AccountIdKey, value: accountId },
          { key: CustomerIdKey, value: customer.id },
          { key: PlanIdKey, value: plan.id },
          { key: LivemodeKey, value: livemode },
        ],
      }),
    });
  } catch (error) {
    const ended = retry.keyed ? await orm.em.fork().findOne(Subscription, { id, accountId, livemode }) : null;
    if (ended) return ended;
    // No subscription: its discount ends with it.
    if (redeemed)
      await orm.em
        .fork()
        .transactional((tx) =>
          removeDiscount(tx, { customerId: customer.id, subscriptionId: id }, redeemed.discount.start),
        );
    throw error;
  }
  const closed = await em.transactional(async (tx) => (await lockAccount(tx, accountId, 'share')) === 'closed');
  if (closed) {
    // The account closed while the workflow started: the subscription ends with it.
    await temporal.client.workflow.getHandle(id).signal(accountClosedSignal);
    throw new ApiError('account_closed', 'The account was closed; the subscription was canceled.');
  }
  return snapshot;
}

// ---------------------------------------------------------------------------------------------------------------
// Messages

/** Whose subscription a message may reach: the account and mode, and for the customer portal one customer. */
export interface SubscriptionOwner extends CommandScope {
  customerId?: string;
}

/** An ended subscription takes no messages (409 invalid_state). */
export function refuseEnded(subscription: Pick<Subscription, 'status'>): void {
  if (endedStatuses.includes(subscription.status))
    throw new ApiError('invalid_state', `The subscription is ${subscription.status}.`);
}

/**
 * The subscription `id` of `owner`, to message: null when the owner has none (the caller answers its own 404),
 * 409 invalid_state when it has ended.
 */
export async function liveSubscription(
  ctx: SubscriptionCommandContext,
  owner: SubscriptionOwner,
  id: string,
): Promise<Subscription | null> {
  const subscription = await ctx.orm.em.fork().findOne(Subscription, {
    id,
    accountId: owner.accountId,
    livemode: owner.livemode,
    ...(owner.customerId !== undefined ? { customerId: owner.customerId } : {}),
  });
  if (subscription) refuseEnded(subscription);
  return subscription;
}

/**
 * Sends `update` to the subscription's workflow, under the retry's update id for `purpose` (a retried request gets
 * the first one's answer instead of changing again); a workflow that finished meanwhile is 409 invalid_state.
 */
async function message<Args extends unknown[]>(
  ctx: SubscriptionCommandContext,
  subscription: Pick<Subscription, 'id'>,
  update: UpdateDefinition<SubscriptionSnapshot, Args>,
  args: Args,
  updateId: string | undefined,
): Promise<SubscriptionSnapshot> {
  const handle = ctx.temporal.client.workflow.getHandle(subscription.id);
  // Temporal types an update with arguments and one without as two overloads; this one signature serves both.
  const executeUpdate = handle.executeUpdate.bind(handle) as (
    update: UpdateDefinition<SubscriptionSnapshot, Args>,
    options: WorkflowUpdateOptions & { args: Args },
  ) => Promise<SubscriptionSnapshot>;
  return sendToSubscription(() => executeUpdate(update, { args, ...(updateId ? { updateId } : {}) }));
}

/** A workflow update refused because of the subscription's state (or an ApiError saying so). */
function isInvalidState(error: unknown): boolean {
  if (error instanceof ApiError) return error.code === 'invalid_state';
  return updateRefusal(error)?.type === 'invalid_state';
}

/**
 * Moves the subscription to `plan` at `quantity` (default: its current quantity), in its currency: an upgrade now,
 * prorated and charged (402 on a decline, nothing changed); a downgrade at the renewal (`pending_plan`). The API's
 * plan change and the portal's plan and quantity changes.
 */
export async function changePlan(
  ctx: SubscriptionCommandContext,
  subscription: Subscription,
  change: { plan: Plan; quantity?: number },
  retry: CommandRetry,
): Promise<CommandAnswer> {
  const terms = changedPlanTerms(change.plan, subscription, change.quantity);
  try {
    return await message(
      ctx,
      subscription,
      changePlanUpdate,
      [{ plan: terms }],
      retry.updateId(`changePlan:${subscription.id}`),
    );
  } catch (error) {
    // A retry of a change that already happened (its run has since continued as new, so Temporal no longer knows the update id):
    // the subscription is on the plan (or has it pending) as the first try left it, and that is the answer.
    if (retry.takeover && isInvalidState(error)) {
      const now = await ctx.orm.em.fork().findOne(Subscription, { id: subscription.id });
      const quantity = terms.quantity ?? 1;
      if (
        now &&
        ((now.planId === change.plan.id && now.quantity === quantity) ||
          (now.pendingPlanId === change.plan.id && (now.pendingQuantity ?? now.quantity) === quantity))
      )
        return now;
    }
    throw error;
  }
}

/** What an item change is, for its update id: one add of a plan, one change or removal of an item. */
const itemChangePurpose = (change: ItemChange): string =>
  change.action === 'add'
    ? `addItem:${change.item.planId}`
    : change.action === 'update'
      ? `updateItem:${change.item.itemId}`
      : `removeItem:${change.itemId}`;

/** Adds, changes or removes one of the subscription's items (changeItemsUpdate), the money as its proration_behavior says. */
export async function changeItems(
  ctx: SubscriptionCommandContext,
  subscription: Subscription,
  change: ItemChange,
  retry: CommandRetry,
): Promise<SubscriptionSnapshot> {
  refuseEnded(subscription);
  const updateId = retry.updateId(`${itemChangePurpose(change)}:${subscription.id}`);
  return message(ctx, subscription, changeItemsUpdate, [change], updateId);
}

/**
 * Pauses an active subscription, until `pauseUntil` when given (in the future: the clock's, on a test clock, which the
 * workflow's validator checks).
 */
export async function pauseSubscription(
  ctx: SubscriptionCommandContext,
  subscription: Subscription,
  pause: { pauseUntil?: Date },
  retry: CommandRetry,
): Promise<SubscriptionSnapshot> {
  const onClock =
    !subscription.livemode &&
    (await ctx.orm.em.fork().count(Customer, { id: subscription.customerId, testClockId: { $ne: null } })) > 0;
  if (!onClock && pause.pauseUntil && pause.pauseUntil.getTime() <= Date.now())
    throw new ApiError('invalid_request', 'pause_until: must be in the future.');
  return message(
    ctx,
    subscription,
    pauseSubscriptionUpdate,
    [{ pauseUntil: pause.pauseUntil?.toISOString() ?? null }],
    retry.updateId(`pause:${subscription.id}`),
  );
}

export function resumeSubscription(
  ctx: SubscriptionCommandContext,
  subscription: Subscription,
  retry: CommandRetry,
): Promise<SubscriptionSnapshot> {
  return message(ctx, subscription, resumeSubscriptionUpdate, [], retry.updateId(`resume:${subscription.id}`));
}

/** Cancels now, or at the end of the current period (or trial). */
export function cancelSubscription(
  ctx: SubscriptionCommandContext,
  subscription: Subscription,
  cancel: { atPeriodEnd: boolean },
  retry: CommandRetry,
): Promise<SubscriptionSnapshot> {
  return message(
    ctx,
    subscription,
    cancelSubscriptionUpdate,
    [{ atPeriodEnd: cancel.atPeriodEnd }],
    retry.updateId(`cancel:${subscription.id}`),
  );
}

/** Takes back a cancel at period end. */
export function undoCancel(
  ctx: SubscriptionCommandContext,
  subscription: Subscription,
  retry: CommandRetry,
): Promise<SubscriptionSnapshot> {
  return message(ctx, subscription, undoCancelAtPeriodEndUpdate, [], retry.updateId(`undoCancel:${subscription.id}`));
}
