import { createRoute, z } from '@hono/zod-openapi';
import { type EntityManager, type MikroORM, raw } from '@mikro-orm/postgresql';
import type { Context } from 'hono';

import { Customer, Subscription } from '../../db/entities/index.ts';
import { maxGracePeriodDays } from '../../domain/dunning.ts';
import { maxQuantity } from '../../domain/pricing.ts';
import { billingCycleModes, subscriptionStatuses } from '../../domain/subscription.ts';
import { currency } from '../../objects/common.ts';
import { serializeDiscount } from '../../objects/discount.ts';
import { BillingThresholdsSchema, serializeSubscription, SubscriptionSchema } from '../../objects/subscription.ts';
import { subscriptionDiscounts } from '../../services/discounts/redemptions.ts';
import { customerNow } from '../../services/invoices/items.ts';
import * as commands from '../../services/subscriptions/commands.ts';
import { planToChangeTo } from '../../services/subscriptions/plans.ts';
import { maxTaxRatesPerLine } from '../../services/taxes/rates.ts';
import { clockCondition } from '../../services/test-clocks/clocks.ts';
import { itemsUsageSoFar } from '../../services/usage/billing.ts';
import {
  parseBillingThresholds,
  setBillingThresholds,
  withBillingThresholds,
} from '../../services/usage/thresholds.ts';
import { accountScope } from '../auth/principal.ts';
import { commandRetry } from '../command-retry.ts';
import type { AppDeps } from '../deps.ts';
import { resourceId } from '../middleware/idempotency.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, isoInstant, oneCustomerName, testClockId } from '../schemas.ts';

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

/** `billing_thresholds` as a create or a plan change takes it. */
const BillingThresholdsField = z
  .union([BillingThresholdsSchema, z.literal('')])
  .nullable()
  .optional()
  .openapi({
    description:
      'Progressive billing (docs/usage.md#billing-thresholds): bill the usage early once its amount reaches amount_gte; "" or null removes it',
  });

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
    billing_thresholds: BillingThresholdsField,
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
    billing_thresholds: BillingThresholdsField,
  })
  .strict()
  .refine(
    (value) => value.plan !== undefined || value.quantity !== undefined || value.billing_thresholds !== undefined,
    {
      message: 'required (or quantity, or billing_thresholds)',
      path: ['plan'],
    },
  )
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
    test_clock: testClockId.optional().openapi({
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
const listSubscriptions = listRoute({
  tags: ['Subscriptions'],
  summary: 'List subscriptions, newest first',
  description:
    '`plan` matches a subscription with that plan on any of its recurring items: the main one (`plan`) or any other in `items`. ' +
    "(The Temporal search attribute PlanId is narrower: the main item's plan when the subscription started, never updated; docs/subscriptions-and-dunning.md.)",
  query: ListQuery,
  item: SubscriptionSchema,
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
  const answers = objects.map((o) => {
    const found = discounts.get(o.id);
    return { ...o, discount: found ? serializeDiscount(found.discount, found.coupon, now) : null };
  });
  // And their billing_thresholds (progressive billing, docs/usage.md#billing-thresholds).
  return withBillingThresholds(em, answers);
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

export function subscriptionsApp({ context, config }: AppDeps) {
  const { orm } = context;
  // A create also reads the configuration (the object itself, at each create: a test may change it meanwhile).
  const ctx = { ...context, settings: config };

  /** The caller's subscription, to message (services/subscriptions/commands.ts): 404 when it has none, 409 when it has ended. */
  async function ownLiveSubscription(c: Context, id: string): Promise<Subscription> {
    const scope = await accountScope(c, orm);
    const subscription = await commands.liveSubscription(ctx, scope, id);
    if (!subscription) throw await notFoundInMode(orm.em, Subscription, id, scope, 'subscription');
    return subscription;
  }

  /** A message to the caller's live subscription `id`: `send` is its command; answered with its discount. */
  async function messaged(
    c: Context,
    id: string,
    send: (subscription: Subscription, retry: commands.CommandRetry) => Promise<commands.CommandAnswer>,
  ) {
    return answer(await send(await ownLiveSubscription(c, id), commandRetry(c)));
  }

  /** Serializes a command's answer with its discount. */
  const answer = async (subscription: commands.CommandAnswer) =>
    withDiscount(orm.em.fork(), serializeSubscription(subscription));

  return newOpenApiApp()
    .openapi(createSubscription, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const thresholds = body.billing_thresholds ? parseBillingThresholds(body.billing_thresholds) : null;
      const subscription = await commands.createSubscription(
        ctx,
        { accountId, livemode },
        {
          // With an Idempotency-Key the id (and so the workflow id) is derived from it: a retry after a crash finds the workflow the first try started.
          id: resourceId(c, 'subscription'),
          customerId: (body.customer_id ?? body.customer)!,
          plan: body.plan,
          quantity: body.quantity,
          items: body.items?.map((item) => ({ plan: item.plan, quantity: item.quantity, taxRates: item.tax_rates })),
          currency: body.currency,
          trialPeriodDays: body.trial_period_days,
          pauseUntil: body.pause_until,
          billingCycle: body.billing_cycle,
          gracePeriodDays: body.grace_period_days,
          defaultTaxRates: body.default_tax_rates,
          coupon: body.coupon,
          promotionCode: body.promotion_code,
        },
        commandRetry(c),
      );
      if (thresholds) await setBillingThresholds(orm, { accountId, livemode }, subscription, thresholds);
      return c.json(await answer(subscription), 201);
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
      const subscription = await ownLiveSubscription(c, c.req.valid('param').id);
      const body = c.req.valid('json');
      const thresholds =
        body.billing_thresholds === undefined ? undefined : parseBillingThresholds(body.billing_thresholds);
      let changed: commands.CommandAnswer = subscription;
      if (body.plan !== undefined || body.quantity !== undefined) {
        const plan = await planToChangeTo(orm.em.fork(), subscription, body.plan ?? subscription.planId);
        // Keyed by the Idempotency-Key: a retry after a crash gets the first change's answer instead of changing again.
        changed = await commands.changePlan(ctx, subscription, { plan, quantity: body.quantity }, commandRetry(c));
      }
      // After the plan change, so a refused change leaves the thresholds as they were.
      if (thresholds !== undefined) await setBillingThresholds(orm, subscription, subscription, thresholds);
      return c.json(await answer(changed), 200);
    })
    .openapi(pauseSubscription, async (c) => {
      const { pause_until: pauseUntil } = await optionalJsonBody(c, PauseBody);
      const pause = (s: Subscription, retry: commands.CommandRetry) =>
        commands.pauseSubscription(ctx, s, { pauseUntil }, retry);
      return c.json(await messaged(c, c.req.valid('param').id, pause), 200);
    })
    .openapi(resumeSubscription, async (c) => {
      const resume = (s: Subscription, retry: commands.CommandRetry) => commands.resumeSubscription(ctx, s, retry);
      return c.json(await messaged(c, c.req.valid('param').id, resume), 200);
    })
    .openapi(cancelSubscription, async (c) => {
      const { at_period_end: atPeriodEnd } = await optionalJsonBody(c, CancelBody);
      const cancel = (s: Subscription, retry: commands.CommandRetry) =>
        commands.cancelSubscription(ctx, s, { atPeriodEnd }, retry);
      return c.json(await messaged(c, c.req.valid('param').id, cancel), 200);
    })
    .openapi(undoCancelSubscription, async (c) => {
      const undo = (s: Subscription, retry: commands.CommandRetry) => commands.undoCancel(ctx, s, retry);
      return c.json(await messaged(c, c.req.valid('param').id, undo), 200);
    });
}
