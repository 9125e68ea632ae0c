import { createRoute, z } from '@hono/zod-openapi';
import { type EntityManager, type MikroORM, raw } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, type WorkflowHandle } from '@temporalio/client';
import type { Context } from 'hono';

import { Account, Customer, Discount, Plan, Subscription } from '../../db/entities/index.ts';
import { maxGracePeriodDays } from '../../domain/dunning.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import { maxPriceAmount, maxQuantity } from '../../domain/pricing.ts';
import {
  billingCycleModes,
  endedStatuses,
  initialSnapshot,
  type PlanTerms,
  type PriceTerms,
  subscriptionItemId,
  subscriptionStatuses,
} from '../../domain/subscription.ts';
import { termsPrice } from '../../domain/subscription-decisions.ts';
import { everyInterval, planMemo } from '../../domain/subscription-details.ts';
import { isMetered } from '../../domain/usage-billing.ts';
import { currency } from '../../objects/common.ts';
import { serializeDiscount } from '../../objects/discount.ts';
import { serializeSubscription, SubscriptionSchema } from '../../objects/subscription.ts';
import { lockAccount } from '../../services/accounts/lock.ts';
import { redeemDiscount, removeDiscount, subscriptionDiscounts } from '../../services/discounts/redemptions.ts';
import { customerNow } from '../../services/invoices/items.ts';
import { sendToSubscription, updateRefusal } from '../../services/platform/workflow-messages.ts';
import { changedPlanTerms, chosenCurrency, planTerms, priceTerms } from '../../services/subscriptions/terms.ts';
import { assignableTaxRates, maxTaxRatesPerLine, writeSubscriptionTaxRates } from '../../services/taxes/rates.ts';
import {
  bindToClock,
  checkClockSubscriptionRoom,
  clockBindingOf,
  clockCondition,
  taskQueueFor,
} from '../../services/test-clocks/clocks.ts';
import { itemsUsageSoFar, usageGraceSeconds } from '../../services/usage/billing.ts';
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
  changePlanUpdate,
  pauseSubscriptionUpdate,
  resumeSubscriptionUpdate,
  subscriptionCreatedUpdate,
  subscriptionWorkflow,
  type SubscriptionWorkflowInput,
  undoCancelAtPeriodEndUpdate,
} from '../../workflows/subscription.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { operationId, resourceId } from '../middleware/idempotency.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listSchema, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, isoInstant, oneCustomerName } from '../schemas.ts';

const planField = z.string().min(1).max(64).openapi({ description: 'Plan id' });
/** Plans one create names in `items` (one recurring, the rest one_time). */
const maxSubscriptionItems = 20;

/** Tax rate ids (txr_…) of the caller's account and mode, active (docs/discounts-and-taxes.md#taxes). */
const taxRateIds = z
  .array(z.string().min(1).max(64))
  .max(maxTaxRatesPerLine)
  .openapi({ example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'] });

const customerField = z
  .string()
  .min(1)
  .max(64)
  .openapi({ description: 'Customer id; `customer` is accepted as the same field (give one of the two)' });

const CreateSubscriptionBody = z
  .object({
    customer_id: customerField.optional(),
    customer: customerField.optional(),
    plan: planField.optional().openapi({ description: 'The recurring plan; or give `items` instead' }),
    quantity: z.number().int().min(1).max(maxQuantity).optional().openapi({
      description: "Units of `plan` (seats, say) billed each period, priced by the plan's scheme; default 1",
    }),
    items: z
      .array(
        z
          .object({
            plan: planField,
            quantity: z.number().int().min(1).max(maxQuantity).default(1).openapi({ description: 'Default 1' }),
            tax_rates: taxRateIds.optional().openapi({
              description: "The item's tax rates, instead of default_tax_rates (docs/discounts-and-taxes.md#taxes)",
            }),
          })
          .strict(),
      )
      .min(1)
      .max(maxSubscriptionItems)
      .optional()
      .openapi({
        description:
          'Instead of `plan`: recurring plans with their quantities, all of one interval (they share the billing period; the first is `plan`), ' +
          "in the subscription's currency, and any one_time plans (setup fees) billed on the first invoice only.",
      }),
    currency: currency.optional().openapi({
      description:
        "The currency to bill in: the plan's own or one of its currency_options; default: the customer's currency when it has one (400 naming a plan with no price in it), else the plan's own (docs/pricing.md#currencies)",
    }),
    trial_period_days: z
      .number()
      .int()
      .min(0)
      .max(730)
      .optional()
      .openapi({ description: "Defaults to the plan's trial_period_days" }),
    pause_until: isoInstant
      .optional()
      .openapi({ format: 'date-time', description: 'Start paused: billing (and the trial) begin at this instant' }),
    billing_cycle: z.enum(billingCycleModes).default('anniversary').openapi({
      description:
        'anniversary: periods start when billing starts; calendar: on the 1st (month), Monday (week), January 1st (year) or midnight (day) UTC, the first partial period prorated',
    }),
    grace_period_days: z
      .number()
      .int()
      .min(0)
      .max(maxGracePeriodDays)
      .optional()
      .openapi({ description: "Overrides the account's grace period after the last failed retry" }),
    default_tax_rates: taxRateIds.optional().openapi({
      description:
        "Tax rates for its lines whose item has none; without them the account's default rates matching the customer apply. Change them with POST /v1/subscriptions/{id}/tax_rates",
    }),
    coupon: z.string().min(1).max(64).optional().openapi({
      description:
        'A coupon applied to the subscription from its first invoice on (its `discount`); or give promotion_code',
    }),
    promotion_code: z.string().min(1).max(64).optional().openapi({
      description:
        "A promotion code (its promo_ id, or the code itself in any case) applied as the subscription's discount; its minimum_amount is checked against the first invoice",
    }),
  })
  .strict()
  .refine((value) => value.coupon === undefined || value.promotion_code === undefined, {
    message: 'give coupon or promotion_code, not both',
    path: ['promotion_code'],
  })
  .refine(...oneCustomerName)
  .refine((value) => value.customer_id !== undefined || value.customer !== undefined, {
    message: 'required',
    path: ['customer_id'],
  })
  .refine((value) => value.plan !== undefined || value.items !== undefined, { message: 'required', path: ['plan'] })
  .refine((value) => value.plan === undefined || value.items === undefined, {
    message: 'give plan (with quantity) or items, not both',
    path: ['items'],
  })
  .refine((value) => value.quantity === undefined || value.items === undefined, {
    message: "with items, each item's quantity says it",
    path: ['quantity'],
  })
  // The interactive docs' "Try it out" body: a plain monthly subscription, billed now (the generated one would be a paused 730-day trial).
  .openapi({ example: { customer_id: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e', plan: 'plan_01jd3x5k8q0m2v7c9r4t6y1w3e' } });

const ChangePlanBody = z
  .object({
    plan: planField
      .optional()
      .openapi({ description: 'The new plan; left out: the current one (to change the quantity alone)' }),
    quantity: z
      .number()
      .int()
      .min(1)
      .max(maxQuantity)
      .optional()
      .openapi({ description: 'The new quantity; left out: the current one' }),
  })
  .strict()
  .refine((value) => value.plan !== undefined || value.quantity !== undefined, {
    message: 'required (or quantity)',
    path: ['plan'],
  })
  .openapi({ example: { plan: 'plan_01jd3y0w2c5m8q1t4v7x9z3b6d' } });
const PauseBody = z
  .object({
    pause_until: isoInstant
      .optional()
      .openapi({ format: 'date-time', description: 'Resume by itself at this instant' }),
  })
  .strict()
  .openapi({ example: { pause_until: '2027-03-01T00:00:00Z' } });
const CancelBody = z
  .object({
    at_period_end: z
      .boolean()
      .default(false)
      .openapi({ description: 'true: at the end of the current period (or trial); otherwise now' }),
  })
  .strict()
  .openapi({ example: { at_period_end: true } });

const ListQuery = z
  .object({
    status: z.enum(subscriptionStatuses).optional(),
    customer: z
      .string()
      .max(64)
      .optional()
      .openapi({ description: 'Customer id; `customer_id` is accepted as the same filter (give one of the two)' }),
    customer_id: z.string().max(64).optional().openapi({ description: 'Same as `customer`' }),
    plan: z.string().max(64).optional().openapi({
      description:
        'Plan id: subscriptions billing this plan on any of their recurring items (not a downgrade waiting in `pending_plan`)',
      example: 'plan_01jd3x5k8q0m2v7c9r4t6y1w3e',
    }),
    test_clock: z
      .string()
      .regex(/^clock_[0-9a-z]{26}$/, 'must be a clock_ id')
      .optional()
      .openapi({
        description:
          'Only subscriptions on this test clock; without it (and without a customer), those on test clocks are left out (as Stripe)',
      }),
    ...cursorQuery('subscription'),
  })
  .strict()
  .refine(...oneCursor)
  .refine(...oneCustomerName);

const subscriptionAnswer = (description: string) => ({ description, ...json(SubscriptionSchema) });

const createSubscription = createRoute({
  method: 'post',
  path: '/',
  tags: ['Subscriptions'],
  summary: 'Create a subscription',
  description:
    "Starts the subscription's workflow and answers once it has recorded its first state: `trialing` with a trial, `paused` with pause_until, " +
    'otherwise the outcome of the first charge (`active`, or `past_due` with dunning under way). ' +
    'Without a trial (and without pause_until) the first charge is made at once, so a customer with no payment method is refused with ' +
    '402 `payment_method_required` and nothing is created; with a trial it is allowed (a trial that ends with no payment method expires). ' +
    "`plan` with `quantity` (default 1) bills that many units each period, priced by the plan's scheme; or `items`: recurring plans with their quantities, " +
    'one line each on every invoice, and one_time plans (setup fees) billed on the first invoice only, e.g. `{"customer_id": "cus_…", "items": [{"plan": "plan_seats", "quantity": 12}, ' +
    '{"plan": "plan_support"}, {"plan": "plan_onboarding"}]}`. Recurring plans of different intervals cannot share a billing period (400). ' +
    "`currency` picks one of the plans' currency_options (docs/pricing.md). `coupon` or `promotion_code` applies a discount from the first invoice on " +
    '(docs/discounts-and-taxes.md#discounts); a coupon or code that cannot be redeemed is 400 and nothing is created.',
  request: { body: { ...json(CreateSubscriptionBody), required: true } },
  responses: { 201: subscriptionAnswer('Created'), ...errorResponses(400, 401, 402, 404, 409) },
});
const listSubscriptions = createRoute({
  method: 'get',
  path: '/',
  tags: ['Subscriptions'],
  summary: 'List subscriptions, newest first',
  description:
    '`plan` matches a subscription with that plan on any of its recurring items: the main one (`plan`) or any other in `items`. ' +
    "(The Temporal search attribute PlanId is narrower: the main item's plan when the subscription started, never updated; docs/subscriptions-and-dunning.md.)",
  request: { query: ListQuery },
  responses: { 200: { description: 'A page', ...json(listSchema(SubscriptionSchema)) }, ...errorResponses(400, 401) },
});
const getSubscription = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Subscriptions'],
  summary: 'Retrieve a subscription',
  request: { params: idParam('sub') },
  responses: { 200: subscriptionAnswer('The subscription'), ...errorResponses(401, 404) },
});
const changePlan = createRoute({
  method: 'post',
  path: '/{id}/update',
  tags: ['Subscriptions'],
  summary: 'Change the plan or the quantity',
  description:
    'An upgrade (a higher price per day, at the quantity) takes effect now: the unused part of the current period on the old plan is credited and the rest on the new plan ' +
    'charged, on one invoice with proration lines (a decline answers 402 payment_failed and changes nothing). A plan with another interval starts a new ' +
    'period now. A downgrade takes effect at the next renewal and shows as `pending_plan` (and `pending_quantity`); choosing the current plan and quantity again drops it. ' +
    'In a trial the plan changes at once, with no charge. `quantity` alone changes the seats of the current plan the same way: more now, prorated; fewer at the renewal. ' +
    'A subscription of several items is 409 here: change its items through /v1/subscription_items (docs/pricing.md).',
  request: { params: idParam('sub'), body: { ...json(ChangePlanBody), required: true } },
  responses: { 200: subscriptionAnswer('Updated'), ...errorResponses(400, 401, 402, 404, 409) },
});
const pauseSubscription = createRoute({
  method: 'post',
  path: '/{id}/pause',
  tags: ['Subscriptions'],
  summary: 'Pause billing',
  description:
    'Only an active subscription pauses. Nothing is charged while paused; the period already paid for stays paid. With pause_until it resumes by itself then. ' +
    'Resuming before the paid period ends continues it; resuming after starts a new period at once and charges it.',
  request: { params: idParam('sub'), body: { ...json(PauseBody), required: false } },
  responses: { 200: subscriptionAnswer('Paused'), ...errorResponses(400, 401, 404, 409) },
});
const resumeSubscription = createRoute({
  method: 'post',
  path: '/{id}/resume',
  tags: ['Subscriptions'],
  summary: 'Resume a paused subscription now',
  request: { params: idParam('sub') },
  responses: { 200: subscriptionAnswer('Resumed'), ...errorResponses(401, 402, 404, 409) },
});
const cancelSubscription = createRoute({
  method: 'post',
  path: '/{id}/cancel',
  tags: ['Subscriptions'],
  summary: 'Cancel now or at period end',
  description:
    'Immediate by default (nothing more is charged; an unpaid invoice is marked uncollectible). at_period_end=true sets cancel_at_period_end and ends the ' +
    'subscription when the current period or trial ends, with no further charge. Canceling twice is 409 invalid_state.',
  request: { params: idParam('sub'), body: { ...json(CancelBody), required: false } },
  responses: {
    200: subscriptionAnswer('Canceled (or set to cancel at period end)'),
    ...errorResponses(400, 401, 404, 409),
  },
});
const undoCancelSubscription = createRoute({
  method: 'post',
  path: '/{id}/undo_cancel',
  tags: ['Subscriptions'],
  summary: 'Take back a cancel at period end',
  description:
    'Before the period (or trial) ends, a subscription set to cancel at period end goes on as before: cancel_at_period_end becomes false and it renews. ' +
    'A subscription not set to cancel at period end, or already ended, is 409 invalid_state.',
  request: { params: idParam('sub') },
  responses: { 200: subscriptionAnswer('No longer cancels at period end'), ...errorResponses(401, 404, 409) },
});

/** A workflow update refused because of the subscription's state (or an ApiError saying so). */
function isInvalidState(error: unknown): boolean {
  if (error instanceof ApiError) return error.code === 'invalid_state';
  return updateRefusal(error)?.type === 'invalid_state';
}

/**
 * What a create body subscribes to: `plan` (and `quantity`), or `items`: recurring plans with their quantities
 * (`terms`, the first, and `others`, all of one interval: the subscription's billing period), and one_time plans
 * (setup fees) for the first invoice. Every plan of the caller's account and mode
 * (404), active (409 plan_archived), priced in the subscription's currency (400): `currency`, else the customer's
 * (read while the plans are), else the main plan's own (chosenCurrency).
 */
async function subscriptionItems(
  em: EntityManager,
  body: { plan?: string; quantity?: number; items?: { plan: string; quantity: number }[]; currency?: string },
  scope: { accountId: string; livemode: boolean },
  customer: Promise<{ id: string; currency?: string | null } | null>,
): Promise<{ plan: Plan; terms: PlanTerms; others: PlanTerms[]; firstInvoiceItems: PriceTerms[] }> {
  const wanted = body.items ?? [{ plan: body.plan!, quantity: body.quantity ?? 1 }];
  const ids = wanted.map((item) => item.plan);
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
  if (repeated)
    throw new ApiError('invalid_request', `items: plan ${repeated} is given twice; give it once with its quantity.`);
  const found = await em.find(Plan, { id: { $in: ids }, accountId: scope.accountId, livemode: scope.livemode });
  const plans = wanted.map((item) => {
    const plan = found.find((p) => p.id === item.plan);
    if (!plan) throw new ApiError('not_found', `No such plan: ${item.plan}.`);
    if (!plan.active)
      throw new ApiError('plan_archived', `Plan ${plan.id} is archived; new subscriptions cannot use it.`);
    return { plan, quantity: item.quantity };
  });
  const recurring = plans.filter(({ plan }) => plan.type !== 'one_time');
  if (recurring.length === 0)
    throw new ApiError(
      'invalid_request',
      `${body.items ? 'items' : 'plan'}: a subscription needs one recurring plan; ${ids.join(', ')} ${ids.length === 1 ? 'is' : 'are'} one_time.`,
    );
  const [main] = recurring;
  // Every item shares the subscription's one billing period: the first recurring plan's interval.
  const apart = recurring.filter(
    ({ plan }) => plan.interval !== main!.plan.interval || plan.intervalCount !== main!.plan.intervalCount,
  );
  if (apart.length > 0) {
    const every = (plan: Plan) => `every ${plan.intervalCount} ${plan.interval}${plan.intervalCount === 1 ? '' : 's'}`;
    throw new ApiError(
      'invalid_request',
      `items: every recurring item shares the subscription's billing period, and ${apart.map(({ plan }) => `${plan.id} bills ${every(plan)}`).join(', ')} while ${main!.plan.id} bills ${every(main!.plan)}. Make a subscription per interval.`,
    );
  }
  const currency = chosenCurrency(
    [main!.plan, ...plans.filter(({ plan }) => plan !== main!.plan).map(({ plan }) => plan)],
    body.currency,
    await customer,
  );
  const terms = planTerms(main!.plan, { quantity: main!.quantity, currency });
  const others = recurring.slice(1).map(({ plan, quantity }) => planTerms(plan, { quantity, currency }));
  const firstInvoiceItems = plans
    .filter(({ plan }) => plan.type === 'one_time')
    .map(({ plan, quantity }) => priceTerms(plan, { quantity, currency }));
  const first = [terms, ...others, ...firstInvoiceItems].reduce((sum, item) => sum + termsPrice(item).amount, 0);
  if (first > maxPriceAmount) {
    throw new ApiError(
      'invalid_request',
      `items: the first invoice would be ${formatMoney(first, currency)}, above the largest charge (${formatMoney(maxPriceAmount, currency)}).`,
    );
  }
  return { plan: main!.plan, terms, others, firstInvoiceItems };
}

/** Subscription answers with their `discount` (the one in force, or null): every answer of these routes carries it (events' data.object does not). */
async function withDiscounts<T extends { id: string }>(
  em: EntityManager,
  objects: T[],
): Promise<(T & { discount: ReturnType<typeof serializeDiscount> | null })[]> {
  const now = new Date();
  const discounts = await subscriptionDiscounts(
    em,
    objects.map((o) => o.id),
    now,
  );
  return objects.map((o) => {
    const found = discounts.get(o.id);
    return { ...o, discount: found ? serializeDiscount(found.discount, found.coupon, now) : null };
  });
}
/** The subscription read: each metered item of an active subscription carries its usage of the current period so far (services/usage/billing.ts). */
async function withUsageSoFar(
  orm: MikroORM,
  em: EntityManager,
  subscription: Subscription,
  body: ReturnType<typeof serializeSubscription>,
): Promise<ReturnType<typeof serializeSubscription>> {
  if (subscription.status !== 'active' || !subscription.currentPeriodStart || !subscription.currentPeriodEnd)
    return body;
  const usage = await itemsUsageSoFar(orm, {
    accountId: subscription.accountId,
    livemode: subscription.livemode,
    customerId: subscription.customerId,
    items: body.items.map((item) => ({ id: item.id, planId: item.plan })),
    periodStart: new Date(subscription.currentPeriodStart),
    periodEnd: new Date(subscription.currentPeriodEnd),
    now: async () =>
      customerNow(
        em,
        await em.findOneOrFail(Customer, {
          id: subscription.customerId,
          accountId: subscription.accountId,
          livemode: subscription.livemode,
        }),
      ),
  });
  if (usage.size === 0) return body;
  return {
    ...body,
    items: body.items.map((item) => (usage.has(item.id) ? { ...item, usage: usage.get(item.id)! } : item)),
  };
}
const withDiscount = async <T extends { id: string }>(em: EntityManager, object: T) =>
  (await withDiscounts(em, [object]))[0]!;

export function subscriptionsApp({ orm, temporal, config }: ApiDeps) {
  /** The caller's subscription (404 otherwise) and a handle on its workflow; an ended one takes no messages. */
  async function ownLiveSubscription(
    c: Context,
    id: string,
  ): Promise<{ subscription: Subscription; handle: WorkflowHandle }> {
    const { accountId, livemode } = await accountScope(c, orm);
    const subscription = await orm.em.fork().findOne(Subscription, { id, accountId, livemode });
    if (!subscription) throw await notFoundInMode(orm.em, Subscription, id, { accountId, livemode }, 'subscription');
    if (endedStatuses.includes(subscription.status))
      throw new ApiError('invalid_state', `The subscription is ${subscription.status}.`);
    return { subscription, handle: temporal.workflow.getHandle(id) };
  }

  const send = sendToSubscription;

  return newOpenApiApp()
    .openapi(createSubscription, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const customerId = (body.customer_id ?? body.customer)!;
      const customerRead = em.findOne(Customer, { id: customerId, accountId, livemode });
      const [customer, items, account] = await Promise.all([
        customerRead,
        subscriptionItems(em, body, { accountId, livemode }, customerRead),
        em.findOne(Account, { id: accountId }, { fields: ['name', 'email'] }),
      ]);
      if (!customer) throw new ApiError('not_found', `No such customer: ${customerId}.`);
      const { plan, terms, others, firstInvoiceItems } = items;
      // Tax rates: each of the account and mode and active (400 before anything starts).
      const defaultTaxRates = body.default_tax_rates
        ? await assignableTaxRates(em, { accountId, livemode }, body.default_tax_rates, 'default_tax_rates')
        : [];
      const itemTaxRates: { plan: string; taxRates: string[] }[] = [];
      for (const [i, item] of (body.items ?? []).entries()) {
        if (item.tax_rates?.length)
          itemTaxRates.push({
            plan: item.plan,
            taxRates: await assignableTaxRates(em, { accountId, livemode }, item.tax_rates, `items[${i}].tax_rates`),
          });
      }
      // A customer on a test clock: the subscription lives on the clock's time.
      const testClock = await clockBindingOf(em, customer);
      if (body.pause_until && body.pause_until.getTime() <= (testClock ? Date.parse(testClock.now) : Date.now()))
        throw new ApiError('invalid_request', 'pause_until: must be in the future.');
      const trialDays = body.trial_period_days ?? plan.trialPeriodDays;
      // Without a trial or a paused start the workflow charges at once: a customer with nothing to charge is refused before anything starts.
      if (trialDays === 0 && !body.pause_until && !customer.paymentMethod) {
        throw new ApiError(
          'payment_method_required',
          `Customer ${customer.id} has no payment method, and without a trial the first charge is made at once: add a payment method first, or give trial_period_days.`,
        );
      }

      // With an Idempotency-Key the id (and so the workflow id) is derived from it: a retry after a crash finds the workflow the first try started.
      const idem = c.get('idempotency');
      const id = resourceId(c, 'subscription');
      if (idem?.takeover) {
        // A retry whose subscription exists answers with it (its workflow may have ended since).
        const existing = await em.findOne(Subscription, { id, accountId, livemode });
        if (existing) return c.json(await withDiscount(orm.em.fork(), serializeSubscription(existing)), 201);
      }
      // A customer on a test clock has at most config.testClocks.subscriptionsPerCustomer not ended (docs/testing-your-integration.md#limits).
      await checkClockSubscriptionRoom(em, customer, config.testClocks);
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
            billingCycleMode: body.billing_cycle,
            pauseUntil: body.pause_until?.toISOString() ?? null,
            gracePeriodDays: body.grace_period_days ?? null,
          },
          testClock ? new Date(testClock.now) : new Date(),
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
        ...(config.renewalSpreadMinutes > 0 ? { renewalSpreadMinutes: config.renewalSpreadMinutes } : {}),
      };
      // Update-with-start: one round trip starts the workflow and waits for its
      // first recorded state, so the 201 carries what a GET will read next.
      // The account is checked open under its row lock (services/accounts/lock.ts), before and after.
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
          await writeSubscriptionTaxRates(tx, { accountId, livemode }, id, {
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
        (body.coupon || body.promotion_code) &&
        !(idem?.takeover && (await em.count(Discount, { subscriptionId: id })) > 0)
          ? await em.transactional((tx) =>
              redeemDiscount(tx, {
                scope: { accountId, livemode },
                customer,
                subscriptionId: id,
                coupon: body.coupon,
                promotionCode: body.promotion_code,
                currency: terms.currency,
                purchase: {
                  amount: [terms, ...others, ...firstInvoiceItems].reduce(
                    (sum, item) => sum + termsPrice(item).amount,
                    0,
                  ),
                  currency: terms.currency,
                },
                now: testClock ? new Date(testClock.now) : new Date(),
              }),
            )
          : null;
      // A repeating discount ends on time by the workflow's timer (workflows/subscription.ts discountEnd).
      // Metered items wait the mode's usage grace window from the first renewal on (the workflow reads it from its input; later closings refresh it).
      if ([terms, ...others].some(isMetered))
        input.usageGraceSeconds = await usageGraceSeconds(em, accountId, livemode);
      if (redeemed?.discount.end)
        input.discountEnd = { discountId: redeemed.discount.id, end: redeemed.discount.end.toISOString() };
      if (testClock) await bindToClock(temporal, testClock, id);
      let snapshot;
      try {
        snapshot = await temporal.workflow.executeUpdateWithStart(subscriptionCreatedUpdate, {
          startWorkflowOperation: new WithStartWorkflowOperation(subscriptionWorkflow, {
            workflowId: id,
            taskQueue: taskQueueFor(config.taskQueue, testClock),
            args: [input],
            // A retried key reaches the workflow its first try started; a closed one is never started again.
            workflowIdConflictPolicy: idem ? 'USE_EXISTING' : 'FAIL',
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
        const ended = idem ? await orm.em.fork().findOne(Subscription, { id, accountId, livemode }) : null;
        if (ended) return c.json(await withDiscount(orm.em.fork(), serializeSubscription(ended)), 201);
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
        await temporal.workflow.getHandle(id).signal(accountClosedSignal);
        throw new ApiError('account_closed', 'The account was closed; the subscription was canceled.');
      }
      return c.json(await withDiscount(orm.em.fork(), serializeSubscription(snapshot)), 201);
    })
    .openapi(listSubscriptions, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.status) where.status = query.status;
      const customer = query.customer ?? query.customer_id;
      if (customer) where.customerId = customer;
      // On any item: the main one (plan_id), or any of `items` (set when it has several; the GIN index answers the containment).
      const onPlan = query.plan
        ? {
            [raw('(plan_id = ? or (items is not null and items @> ?::jsonb))', [
              query.plan,
              JSON.stringify([{ planId: query.plan }]),
            ])]: [],
          }
        : null;
      // A customer's subscriptions are theirs whatever their clock; without a customer, those on clocks only when asked for.
      const onClocks = !customer || query.test_clock ? clockCondition({ accountId, livemode }, query.test_clock) : null;
      const { page, hasMore } = await keysetPage(
        orm.em.fork(),
        Subscription,
        { ...where, ...onPlan, ...onClocks },
        query,
      );
      return c.json(
        {
          object: 'list' as const,
          data: await withDiscounts(orm.em.fork(), page.map(serializeSubscription)),
          has_more: hasMore,
        },
        200,
      );
    })
    .openapi(getSubscription, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const subscription = await em.findOne(Subscription, { id: c.req.valid('param').id, accountId, livemode });
      if (!subscription)
        throw await notFoundInMode(
          orm.em,
          Subscription,
          c.req.valid('param').id,
          { accountId, livemode },
          'subscription',
        );
      return c.json(
        await withDiscount(em, await withUsageSoFar(orm, em, subscription, serializeSubscription(subscription))),
        200,
      );
    })
    .openapi(changePlan, async (c) => {
      const { subscription, handle } = await ownLiveSubscription(c, c.req.valid('param').id);
      const body = c.req.valid('json');
      const planId = body.plan ?? subscription.planId;
      const plan = await orm.em
        .fork()
        .findOne(Plan, { id: planId, accountId: subscription.accountId, livemode: subscription.livemode });
      if (!plan) throw new ApiError('not_found', `No such plan: ${planId}.`);
      if (!plan.active && plan.id !== subscription.planId)
        throw new ApiError('plan_archived', `Plan ${plan.id} is archived.`);
      // Keyed by the Idempotency-Key: a retry after a crash gets the first change's answer from Temporal instead of changing again.
      const updateId = operationId(c, `changePlan:${subscription.id}`);
      const terms = changedPlanTerms(plan, subscription, body.quantity);
      try {
        const snapshot = await send(() =>
          handle.executeUpdate(changePlanUpdate, { args: [{ plan: terms }], ...(updateId ? { updateId } : {}) }),
        );
        return c.json(await withDiscount(orm.em.fork(), serializeSubscription(snapshot)), 200);
      } catch (error) {
        // A retry of a change that already happened (its run has since continued as new, so Temporal no longer knows the update id):
        // the subscription is on the plan (or has it pending) as the first try left it, and that is the answer.
        if (c.get('idempotency')?.takeover && isInvalidState(error)) {
          const now = await orm.em.fork().findOne(Subscription, { id: subscription.id });
          const quantity = terms.quantity ?? 1;
          if (
            now &&
            ((now.planId === plan.id && now.quantity === quantity) ||
              (now.pendingPlanId === plan.id && (now.pendingQuantity ?? now.quantity) === quantity))
          ) {
            return c.json(await withDiscount(orm.em.fork(), serializeSubscription(now)), 200);
          }
        }
        throw error;
      }
    })
    .openapi(pauseSubscription, async (c) => {
      const body = await optionalJsonBody(c, PauseBody);
      const { subscription, handle } = await ownLiveSubscription(c, c.req.valid('param').id);
      // On a test clock, "the future" is the clock's (its workflow's validator checks it).
      const onClock =
        !subscription.livemode &&
        (await orm.em.fork().count(Customer, { id: subscription.customerId, testClockId: { $ne: null } })) > 0;
      if (!onClock && body.pause_until && body.pause_until.getTime() <= Date.now())
        throw new ApiError('invalid_request', 'pause_until: must be in the future.');
      const snapshot = await send(() =>
        handle.executeUpdate(pauseSubscriptionUpdate, {
          args: [{ pauseUntil: body.pause_until?.toISOString() ?? null }],
        }),
      );
      return c.json(await withDiscount(orm.em.fork(), serializeSubscription(snapshot)), 200);
    })
    .openapi(resumeSubscription, async (c) => {
      const { handle } = await ownLiveSubscription(c, c.req.valid('param').id);
      const snapshot = await send(() => handle.executeUpdate(resumeSubscriptionUpdate));
      return c.json(await withDiscount(orm.em.fork(), serializeSubscription(snapshot)), 200);
    })
    .openapi(cancelSubscription, async (c) => {
      const body = await optionalJsonBody(c, CancelBody);
      const { handle } = await ownLiveSubscription(c, c.req.valid('param').id);
      const snapshot = await send(() =>
        handle.executeUpdate(cancelSubscriptionUpdate, { args: [{ atPeriodEnd: body.at_period_end }] }),
      );
      return c.json(await withDiscount(orm.em.fork(), serializeSubscription(snapshot)), 200);
    })
    .openapi(undoCancelSubscription, async (c) => {
      const { handle } = await ownLiveSubscription(c, c.req.valid('param').id);
      const snapshot = await send(() => handle.executeUpdate(undoCancelAtPeriodEndUpdate));
      return c.json(await withDiscount(orm.em.fork(), serializeSubscription(snapshot)), 200);
    });
}
