/**
 * The customer portal's API and how owners hand it out (docs/dashboard.md).
 *
 * - POST /v1/customers/{id}/portal_link: a signed link, valid 7 days, for one customer
 *   (domain/customer-links.ts); with `send_email` it is also emailed to the customer.
 * - GET/PATCH /v1/settings/customer_portal: what customers may do there (an account setting).
 * - /v1/portal/*: what the portal page calls. The credential is the link's token in the
 *   `x-portal-token` header: it names one customer of one account in one mode, and every
 *   query is scoped to that customer. Subscription changes go to the subscription's
 *   workflow as the owner's calls do, and only when the setting allows them (a quantity change
 *   only with `quantity_changes`, off by default).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Context } from 'hono';

import {
  Account,
  Customer,
  type CustomerPortalPermissions,
  Invoice,
  Meter,
  Plan,
  Subscription,
} from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import type { CustomerLinkClaims } from '../../domain/customer-links.ts';
import { ApiError } from '../../domain/errors.ts';
import { paymentMethodDisplay } from '../../domain/payment-method-display.ts';
import { previewPlanChange } from '../../domain/plan-change-preview.ts';
import { type PriceDescribed, priceText } from '../../domain/price-text.ts';
import { maxQuantity, priceFor } from '../../domain/pricing.ts';
import { timestamp } from '../../objects/common.ts';
import { serializeDiscount } from '../../objects/discount.ts';
import { serializeInvoice } from '../../objects/invoice.ts';
import { serializeSubscription, SubscriptionSchema } from '../../objects/subscription.ts';
import { UpcomingInvoiceSchema } from '../../objects/upcoming-invoice.ts';
import { planPricing } from '../../services/catalog/plan-prices.ts';
import { redeemDiscount, subscriptionDiscounts } from '../../services/discounts/redemptions.ts';
import {
  subscriptionFirstInvoiceAmount,
  tellWorkflowOfDiscount,
} from '../../services/discounts/subscription-discounts.ts';
import { customerNow } from '../../services/invoices/items.ts';
import { billingStateOf, presentUpcomingInvoice } from '../../services/invoices/upcoming.ts';
import * as commands from '../../services/subscriptions/commands.ts';
import { planToChangeTo } from '../../services/subscriptions/plans.ts';
import { changedPlanTerms } from '../../services/subscriptions/terms.ts';
import { clockTimeOf } from '../../services/test-clocks/clocks.ts';
import { itemsUsageSoFar } from '../../services/usage/billing.ts';
import { withBillingThresholds } from '../../services/usage/thresholds.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import { commandRetry } from '../command-retry.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { cursorQuery, keysetPage, oneCursor } from '../pagination.ts';
import { portalPermissionsOf } from '../portal-permissions.ts';
import { errorResponses, idParam } from '../schemas.ts';

/** Most plans the portal setting may list. */
const maxPortalPlans = 50;

const Permissions = z
  .object({
    plan_changes: z
      .boolean()
      .openapi({ description: 'Customers may switch their subscription to another active plan of the same currency' }),
    cancellation: z.boolean().openapi({ description: 'Customers may cancel at the end of the period' }),
    resume: z.boolean().openapi({ description: 'Customers may resume a paused subscription' }),
    quantity_changes: z.boolean().openapi({
      description:
        'Customers may change the quantity (seats) of their subscription: more takes effect at once, prorated and charged now; fewer at the renewal (as POST /v1/subscriptions/{id}/update with quantity). Off by default',
    }),
    promotion_codes: z.boolean().optional().openapi({
      description:
        "Customers may enter a promotion code in the portal, applied as their subscription's discount, and on the hosted pay page of an open one-off invoice, applied to that invoice; every restriction of the code is checked (docs/discounts-and-taxes.md#discounts). Off by default",
    }),
    plans: z
      .array(z.string().min(1).max(64))
      .max(maxPortalPlans)
      .nullable()
      .optional()
      .openapi({
        description:
          'The plans customers may switch to with plan_changes, by id (recurring plans of this account, either mode: each mode offers its own); null (default): every active recurring plan. ' +
          'An archived plan in the list is not offered.',
        example: ['plan_01jd3x5k8q0m2v7c9r4t6y1w3e', 'plan_01jd3x7n2p4r6t8v0x2z4b6d8f'],
      }),
  })
  .openapi('CustomerPortalSettings');

const PortalLink = z
  .object({ object: z.literal('customer_portal_link'), url: z.string(), expires_at: z.string(), emailed: z.boolean() })
  .openapi('CustomerPortalLink');

const PortalPlan = z.object({
  id: z.string(),
  name: z.string(),
  amount: z.number().int(),
  currency: z.string(),
  interval: z.string(),
  interval_count: z.number().int(),
  pricing_scheme: z.enum(['per_unit', 'tiered', 'package', 'percentage']),
  price: z.string().openapi({
    description:
      'The price in words, its scheme included: "$20.00 every month", "Graduated: 1–10 at $10.00, 11+ at $8.00, every month"',
  }),
});
const PortalSubscriptionPlan = PortalPlan.extend({
  price: z.string().openapi({ description: "The plan's price in words, in the subscription's currency" }),
  amount_at_quantity: z
    .number()
    .int()
    .nullable()
    .openapi({ description: "What the subscription's quantity costs each period, in minor units of its currency" }),
});

/** A metered item's usage so far, as GET /v1/subscriptions/{id} shows it, with the meter's name for the customer. */
const PortalItemUsage = z
  .object({
    meter: z.string().openapi({ example: 'mtr_01jd5c7e9g1j3l5n7q9s1u3w5y' }),
    meter_name: z.string().openapi({ description: "The meter's display_name", example: 'API tokens' }),
    quantity: z.string().openapi({
      description: "The meter's aggregate over the period so far (exact decimal, before free units)",
      example: '1250.5',
    }),
    period_start: timestamp.openapi({ example: '2026-11-01T00:00:00.000Z' }),
    period_end: timestamp.openapi({ example: '2026-12-01T00:00:00.000Z' }),
  })
  .openapi({
    description:
      "Metered items of an active subscription: the usage of the current period so far, from its start to now (the customer's test clock time on a clock), " +
      'which the next renewal invoices (docs/usage.md#in-the-portal)',
  })
  .openapi('CustomerPortalItemUsage');

const PortalSession = z
  .object({
    object: z.literal('customer_portal'),
    account: z
      .object({
        name: z.string(),
        brand_color: z.string(),
        brand_text_color: z.string(),
        logo_url: z.string().nullable(),
      })
      .openapi({
        description:
          "The account as its customers know it: branding's business name, colour (and a text colour readable on it) and logo",
      }),
    customer: z.object({
      id: z.string(),
      email: z.string(),
      name: z.string().nullable(),
      payment_method: z.string().nullable(),
      payment_method_details: z
        .object({
          type: z.enum(['card', 'bank_account']),
          brand: z.string().nullable().openapi({ example: 'Visa' }),
          last4: z.string().nullable().openapi({ example: '4242' }),
          label: z.string().openapi({
            example: 'Visa •••• 4242',
            description: 'How the portal shows it; "Card on file" when the brand and digits are not known',
          }),
        })
        .nullable()
        .openapi({ description: 'The payment method as the customer reads it (brand and last 4), never its id' }),
    }),
    livemode: z.boolean(),
    permissions: Permissions,
    subscriptions: z.array(
      SubscriptionSchema.extend({
        plan_details: PortalSubscriptionPlan.nullable(),
        items: z.array(SubscriptionSchema.shape.items.element.extend({ usage: PortalItemUsage.optional() })),
      }),
    ),
    plans: z.array(PortalPlan).openapi({
      description:
        "Plans a subscription may change to: the setting's plans (or every active recurring plan), empty unless plan_changes is allowed",
    }),
    payment_method_url: z
      .string()
      .openapi({ description: "The mode's processor page where the customer updates the payment method" }),
  })
  .openapi('CustomerPortal');

const portalSecurity = [{ portalToken: [] }];
const portalTag = ['Customer portal'];

const createLink = createRoute({
  method: 'post',
  path: '/customers/{id}/portal_link',
  tags: ['Customers'],
  summary: "A signed link to the customer's portal",
  description:
    'Valid 7 days. With `send_email: true` the link is also emailed to the customer. Members may create links.',
  request: {
    params: idParam('cus'),
    body: {
      content: {
        'application/json': {
          schema: z
            .object({ send_email: z.boolean().default(false) })
            .strict()
            .openapi({ example: { send_email: true } }),
        },
      },
      required: false,
    },
  },
  responses: { 201: { description: 'The link', ...json(PortalLink) }, ...errorResponses(400, 401, 404) },
});

const getPermissions = createRoute({
  method: 'get',
  path: '/settings/customer_portal',
  tags: ['Settings'],
  summary: 'What customers may do in the portal',
  responses: { 200: { description: 'The setting', ...json(Permissions) }, ...errorResponses(401) },
});

const patchPermissions = createRoute({
  method: 'patch',
  path: '/settings/customer_portal',
  tags: ['Settings'],
  summary: 'Change what customers may do in the portal',
  description: 'Owners and admins. Omitted fields stay as they are.',
  request: {
    body: {
      content: {
        'application/json': {
          schema: Permissions.partial()
            .strict()
            .openapi({
              example: {
                plan_changes: true,
                cancellation: true,
                resume: false,
                quantity_changes: true,
                plans: ['plan_01jd3x5k8q0m2v7c9r4t6y1w3e'],
              },
            }),
        },
      },
      required: true,
    },
  },
  responses: { 200: { description: 'The setting', ...json(Permissions) }, ...errorResponses(400, 401, 403) },
});

const readPortal = createRoute({
  method: 'get',
  path: '/portal',
  tags: portalTag,
  summary: "The portal: the customer's subscriptions, what they may do, and where to update the card",
  security: portalSecurity,
  responses: { 200: { description: 'The portal', ...json(PortalSession) }, ...errorResponses(401) },
});

const portalInvoices = createRoute({
  method: 'get',
  path: '/portal/invoices',
  tags: portalTag,
  summary: "The customer's invoices and receipts (paid invoices), newest first, with signed PDF links",
  security: portalSecurity,
  request: {
    query: z
      .object({ ...cursorQuery('invoice'), status: z.enum(['open', 'paid', 'void', 'uncollectible']).optional() })
      .refine(...oneCursor),
  },
  responses: {
    200: {
      description: 'A page of invoices',
      ...json(
        z.object({
          object: z.literal('list'),
          data: z.array(
            z.object({
              id: z.string(),
              number: z.string().nullable(),
              status: z.string(),
              total: z.number().int(),
              currency: z.string(),
              created_at: z.string(),
              paid_at: z.string().nullable(),
              pdf: z.string(),
            }),
          ),
          has_more: z.boolean(),
        }),
      ),
    },
    ...errorResponses(400, 401),
  },
});

const subscriptionAnswers = {
  200: { description: 'The subscription', ...json(SubscriptionSchema) },
  ...errorResponses(400, 401, 403, 404, 409),
};
const subscriptionAction = <P extends string>(path: P, summary: string) =>
  createRoute({
    method: 'post',
    path,
    tags: portalTag,
    summary,
    security: portalSecurity,
    request: { params: idParam('sub') },
    responses: subscriptionAnswers,
  });
/** A portal change to one subscription that takes a JSON `body` and answers the subscription. */
const subscriptionChange = <P extends string, B extends z.ZodType>(
  path: P,
  summary: string,
  description: string | undefined,
  body: B,
  responses = subscriptionAnswers,
) =>
  createRoute({
    method: 'post',
    path,
    tags: portalTag,
    summary,
    ...(description === undefined ? {} : { description }),
    security: portalSecurity,
    request: { params: idParam('sub'), body: { ...json(body), required: true } },
    responses,
  });
const portalCancel = subscriptionAction('/portal/subscriptions/{id}/cancel', 'Cancel at the end of the current period');
const portalResume = subscriptionAction('/portal/subscriptions/{id}/resume', 'Resume a paused subscription');
const portalUndoCancel = subscriptionAction(
  '/portal/subscriptions/{id}/undo_cancel',
  'Keep a subscription set to cancel at period end (when the account allows cancellation)',
);
const portalChangePlan = subscriptionChange(
  '/portal/subscriptions/{id}/change_plan',
  'Switch to another plan (when the account allows plan changes)',
  undefined,
  z
    .object({ plan: z.string().min(1).max(64) })
    .strict()
    .openapi({ example: { plan: 'plan_01jd3x5k8q0m2v7c9r4t6y1w3e' } }),
);

const PlanChangePreviewSchema = z
  .object({
    object: z.literal('plan_change_preview'),
    subscription: z.string(),
    plan: z.string().openapi({ description: 'The plan it would change to' }),
    kind: z.enum(['upgrade', 'downgrade', 'trial', 'revert']).openapi({
      description:
        'upgrade: takes effect now, the rest of the period prorated and charged at once (due_now); downgrade: takes effect at the next renewal, nothing charged now; trial: the plan simply changes; revert: back to the current plan, a waiting change dropped',
    }),
    due_now: UpcomingInvoiceSchema.nullable().openapi({
      description:
        "The invoice charged on confirmation (an upgrade's proration), as GET /v1/invoices/upcoming shows invoices; null when nothing is charged now",
    }),
    next_invoice: UpcomingInvoiceSchema.nullable().openapi({
      description: 'The invoice the subscription makes next by itself after the change; null when none is coming',
    }),
  })
  .openapi('PortalPlanChangePreview');

const portalPlanChangePreview = createRoute({
  method: 'get',
  path: '/portal/subscriptions/{id}/change_plan',
  tags: portalTag,
  summary: 'Preview a plan change: what is charged now and the next invoice (nothing changes)',
  description:
    "The subscription workflow's own state with the plan change applied as POST …/change_plan would apply it, priced by the functions of GET /v1/invoices/upcoming " +
    "(discounts, taxes and the customer's balance as they stand now). 403 unless plan_changes allows the plan; 409 when the change would be refused.",
  security: portalSecurity,
  request: {
    params: idParam('sub'),
    query: z
      .object({ plan: z.string().min(1).max(64).openapi({ example: 'plan_01jd3x7n2p4r6t8v0x2z4b6d8f' }) })
      .strict(),
  },
  responses: {
    200: { description: 'The preview', ...json(PlanChangePreviewSchema) },
    ...errorResponses(400, 401, 403, 404, 409),
  },
});

const portalPromotionCode = subscriptionChange(
  '/portal/subscriptions/{id}/promotion_code',
  'Apply a promotion code to the subscription (when the account allows promotion codes)',
  "The code the customer typed (any case) becomes the subscription's discount from its next invoice on, replacing the one it had, as POST /v1/subscriptions/{id}/discount " +
    "with `promotion_code`: the code's active, expires_at, max_redemptions, customer, first_time_transaction and minimum_amount are checked (400, nothing changed). " +
    "An unknown code is 404. 403 forbidden unless the account's customer_portal setting has promotion_codes.",
  z
    .object({ code: z.string().min(1).max(64) })
    .strict()
    .openapi({ example: { code: 'SPRING20' } }),
);

const portalQuantity = subscriptionChange(
  '/portal/subscriptions/{id}/quantity',
  'Change the quantity (when the account allows quantity changes)',
  'The same change as POST /v1/subscriptions/{id}/update with `quantity`: more (a higher price) takes effect at once, the rest of the period prorated and charged now ' +
    '(a decline answers 402 and changes nothing); fewer waits for the renewal and shows as `pending_quantity`; the current quantity again drops a waiting change. ' +
    "403 forbidden unless the account's customer_portal setting has quantity_changes.",
  z
    .object({ quantity: z.number().int().min(1).max(maxQuantity) })
    .strict()
    .openapi({ example: { quantity: 15 } }),
  { ...subscriptionAnswers, ...errorResponses(400, 401, 402, 403, 404, 409) },
);

/** A plan as the portal shows it, in `currency` (the plan's own, or one of its currency_options) and for a subscription's `quantity`. */
function portalPlan(plan: Plan, currency = plan.currency) {
  // A currency the plan has no price in (its option removed, say) shows the plan's own price.
  const inCurrency = planPricing(plan, currency);
  const priced = inCurrency ?? planPricing(plan)!;
  const shown = inCurrency ? currency : plan.currency;
  const described: PriceDescribed = {
    type: plan.type,
    pricing_scheme: plan.pricingScheme ?? 'per_unit',
    amount: priced.amount,
    currency: shown,
    tiers_mode: plan.tiersMode ?? null,
    tiers: priced.pricing.scheme === 'tiered' ? priced.pricing.tiers : null,
    package_size: plan.packageSize ?? null,
    package_round: plan.packageRound ?? null,
    interval: plan.interval ?? null,
    interval_count: plan.intervalCount ?? null,
  };
  return {
    id: plan.id,
    name: plan.name,
    amount: priced.amount,
    currency: shown,
    interval: plan.interval ?? '',
    interval_count: plan.intervalCount ?? 1,
    pricing_scheme: plan.pricingScheme ?? 'per_unit',
    price: priceText(described),
  };
}

function subscriptionPlan(plan: Plan, subscription: Subscription) {
  const currency = subscription.currency ?? plan.currency;
  const shown = portalPlan(plan, currency);
  const priced = planPricing(plan, currency);
  let amountAtQuantity: number | null = null;
  try {
    amountAtQuantity = priced ? priceFor(priced.pricing, subscription.quantity ?? 1).amount : null;
  } catch {
    amountAtQuantity = null;
  }
  return { ...shown, amount_at_quantity: amountAtQuantity };
}

/** Portal subscriptions with their `discount` in force (or null). */
async function portalDiscounts<T extends { id: string }>(
  em: EntityManager,
  subscriptions: T[],
  now = new Date(),
): Promise<(T & { discount: ReturnType<typeof serializeDiscount> | null })[]> {
  const discounts = await subscriptionDiscounts(
    em,
    subscriptions.map((s) => s.id),
    now,
  );
  return subscriptions.map((s) => {
    const found = discounts.get(s.id);
    return { ...s, discount: found ? serializeDiscount(found.discount, found.coupon, now) : null };
  });
}

/** portalDiscounts, and each subscription's billing_thresholds (null: none), for the portal's read. */
const portalSubscriptionsWithThresholds = async <T extends { id: string }>(em: EntityManager, subscriptions: T[]) =>
  withBillingThresholds(em, await portalDiscounts(em, subscriptions));

/**
 * Portal subscriptions whose active metered items carry their usage of the current period so far (itemsUsageSoFar, as the
 * subscription read does) and the meter's name. Licensed subscriptions cost one plan query in all; the clock time is read once.
 */
type PortalUsage = z.infer<typeof PortalItemUsage>;
/**
 * The usage of the current period so far of the active metered items of the customer's `subscriptions`, by subscription and
 * item id: itemsUsageSoFar, as the subscription read computes it, with the meter's name. Licensed subscriptions cost one plan
 * query in all; the clock time is read once.
 */
async function portalUsage(
  orm: MikroORM,
  em: EntityManager,
  customer: Customer,
  subscriptions: Subscription[],
): Promise<Map<string, Map<string, PortalUsage>>> {
  const found = new Map<string, Map<string, PortalUsage>>();
  const active = subscriptions
    .filter((s) => s.status === 'active' && s.currentPeriodStart && s.currentPeriodEnd)
    .map((s) => ({
      subscription: s,
      items: serializeSubscription(s).items.map((item) => ({ id: item.id, planId: item.plan })),
    }));
  const planIds = [...new Set(active.flatMap((s) => s.items.map((i) => i.planId)))];
  if (planIds.length === 0) return found;
  const metered = new Set(
    (
      await em.find(
        Plan,
        { id: { $in: planIds }, accountId: customer.accountId, livemode: customer.livemode, usageType: 'metered' },
        { fields: ['id'] },
      )
    ).map((p) => p.id),
  );
  const withMeters = active.filter((s) => s.items.some((i) => metered.has(i.planId)));
  if (withMeters.length === 0) return found;
  let now: Promise<Date> | undefined;
  const clockNow = () => (now ??= customerNow(em, customer));
  const usages = await Promise.all(
    withMeters.map(({ subscription, items }) =>
      itemsUsageSoFar(orm, {
        accountId: customer.accountId,
        livemode: customer.livemode,
        customerId: customer.id,
        items,
        periodStart: new Date(subscription.currentPeriodStart!),
        periodEnd: new Date(subscription.currentPeriodEnd!),
        now: clockNow,
      }),
    ),
  );
  const meterIds = [...new Set(usages.flatMap((byItem) => [...byItem.values()].map((u) => u.meter)))];
  const names = new Map(
    (await em.find(Meter, { id: { $in: meterIds }, accountId: customer.accountId, livemode: customer.livemode })).map(
      (m) => [m.id, m.displayName],
    ),
  );
  withMeters.forEach(({ subscription }, i) => {
    const byItem = new Map(
      [...usages[i]!].map(([item, usage]) => [item, { ...usage, meter_name: names.get(usage.meter) ?? usage.meter }]),
    );
    if (byItem.size) found.set(subscription.id, byItem);
  });
  return found;
}

export function customerPortalApp({ context }: AppDeps) {
  const { orm, temporal } = context;
  // The process's links and mailer (services/compose.ts), not ones built here.
  const { links, mailer } = context;

  /** The customer the portal token names; unauthorized when it is missing, forged, expired, or its customer or account is gone. */
  async function portalCaller(
    c: Context,
  ): Promise<{ claims: CustomerLinkClaims; customer: Customer; account: Account }> {
    const token = c.req.header('x-portal-token');
    if (!token) throw new ApiError('unauthorized', 'The portal needs its link token in x-portal-token.');
    const claims = await links.verifyPortalToken(token);
    if (!claims) throw new ApiError('unauthorized', 'This portal link is not valid or has expired; ask for a new one.');
    const em = orm.em.fork();
    const [customer, account] = await Promise.all([
      em.findOne(Customer, { id: claims.customerId, accountId: claims.accountId, livemode: claims.livemode }),
      em.findOne(Account, { id: claims.accountId }),
    ]);
    if (!customer || !account || account.status === 'closed')
      throw new ApiError('unauthorized', 'This portal link is no longer valid.');
    return { claims, customer, account };
  }

  /** One of the token's customer's subscriptions, to message (services/subscriptions/commands.ts): 404 otherwise, 409 when ended. */
  async function ownSubscription(c: Context, id: string) {
    const caller = await portalCaller(c);
    const { accountId, livemode } = caller.claims;
    const subscription = await commands.liveSubscription(
      context,
      { accountId, livemode, customerId: caller.customer.id },
      id,
    );
    if (!subscription) throw new ApiError('not_found', `No such subscription: ${id}.`);
    return { ...caller, subscription, permissions: portalPermissionsOf(caller.account) };
  }

  /** Whether the setting offers `plan` (its list, or every plan when it has none). */
  const offers = (permissions: CustomerPortalPermissions, plan: Pick<Plan, 'id'>) =>
    !permissions.plans || permissions.plans.includes(plan.id);

  /** A plan the customer may switch `subscription` to: allowed by the setting, offered, active, of its account and mode (403/404 otherwise). */
  async function offeredPlan(
    permissions: CustomerPortalPermissions,
    subscription: Subscription,
    planId: string,
  ): Promise<Plan> {
    if (!permissions.plan_changes)
      throw new ApiError('forbidden', 'This account does not let customers change plans in the portal.');
    const plan = await orm.em
      .fork()
      .findOne(Plan, { id: planId, accountId: subscription.accountId, livemode: subscription.livemode, active: true });
    if (!plan) throw new ApiError('not_found', `No such plan: ${planId}.`);
    if (!offers(permissions, plan))
      throw new ApiError('forbidden', `This account does not offer ${plan.name} in the portal.`);
    return plan;
  }

  return newOpenApiApp()
    .openapi(createLink, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const body = await optionalJsonBody(c, z.object({ send_email: z.boolean().default(false) }).strict());
      const em = orm.em.fork();
      const customer = await em.findOne(Customer, { id: c.req.valid('param').id, accountId, livemode });
      if (!customer) throw new ApiError('not_found', `No such customer: ${c.req.valid('param').id}.`);
      const account = await em.findOne(Account, { id: accountId });
      const link = await links.portalUrl({ customerId: customer.id, accountId, livemode });
      if (body.send_email) {
        const name = account ? brandOf(account, '').name : undefined;
        await mailer.send({
          to: customer.email,
          fromName: name,
          subject: `Manage your ${name ?? ''} subscription`.replace('  ', ' '),
          text: `Hello${customer.name ? ` ${customer.name}` : ''},\n\nManage your subscriptions, invoices and payment method here (the link works for 7 days):\n${link.url}\n`,
        });
      }
      return c.json(
        {
          object: 'customer_portal_link' as const,
          url: link.url,
          expires_at: link.expiresAt.toISOString(),
          emailed: body.send_email,
        },
        201,
      );
    })
    .openapi(getPermissions, async (c) => {
      const { accountId } = await accountScope(c, orm);
      return c.json(portalPermissionsOf(await orm.em.fork().findOne(Account, { id: accountId })), 200);
    })
    .openapi(patchPermissions, async (c) => {
      requireActor(c, ['admin', 'owner']);
      const { accountId } = await accountScope(c, orm);
      const em = orm.em.fork();
      const account = await em.findOneOrFail(Account, { id: accountId });
      const body = c.req.valid('json');
      if (body.plans) body.plans = await checkedPortalPlans(em, accountId, body.plans);
      const next = { ...portalPermissionsOf(account), ...body };
      account.settings = { ...account.settings, customer_portal: next };
      await em.flush();
      return c.json(next, 200);
    })
    .openapi(readPortal, async (c) => {
      const { claims, customer, account } = await portalCaller(c);
      const em = orm.em.fork();
      const permissions = portalPermissionsOf(account);
      const subscriptions = await em.find(
        Subscription,
        { customerId: customer.id, accountId: claims.accountId, livemode: claims.livemode },
        { orderBy: { id: 'desc' }, limit: 50 },
      );
      const plans = await em.find(
        Plan,
        { accountId: claims.accountId, livemode: claims.livemode },
        { orderBy: { id: 'desc' }, limit: 100 },
      );
      const byId = new Map(plans.map((p) => [p.id, p]));
      const missing = subscriptions.map((s) => s.planId).filter((id) => !byId.has(id));
      if (missing.length) for (const p of await em.find(Plan, { id: { $in: missing } })) byId.set(p.id, p);
      const usage = await portalUsage(orm, em, customer, subscriptions);
      return c.json(
        {
          object: 'customer_portal' as const,
          account: (({ name, color, onColor, logoUrl }) => ({
            name,
            brand_color: color,
            brand_text_color: onColor,
            logo_url: logoUrl,
          }))(brandOf(account, '')),
          customer: {
            id: customer.id,
            email: customer.email,
            name: customer.name ?? null,
            payment_method: customer.paymentMethod ?? null,
            payment_method_details: paymentMethodDisplay(customer.paymentMethod),
          },
          livemode: claims.livemode,
          permissions,
          // With their billing_thresholds: the usage section says what amount bills early (docs/usage.md#in-the-portal).
          subscriptions: await portalSubscriptionsWithThresholds(
            em,
            subscriptions.map((s) => {
              const body = serializeSubscription(s);
              const byItem = usage.get(s.id);
              return {
                ...body,
                items: body.items.map((item) => ({ ...item, usage: byItem?.get(item.id) })),
                plan_details: byId.has(s.planId) ? subscriptionPlan(byId.get(s.planId)!, s) : null,
              };
            }),
          ),
          plans: permissions.plan_changes
            ? plans.filter((p) => p.active && p.type !== 'one_time' && offers(permissions, p)).map((p) => portalPlan(p))
            : [],
          payment_method_url: await links.billingDetailsUrl({ ...claims, fromPortal: true }),
        },
        200,
      );
    })
    .openapi(portalInvoices, async (c) => {
      const { claims, customer } = await portalCaller(c);
      const query = c.req.valid('query');
      const where: Record<string, unknown> = {
        customerId: customer.id,
        accountId: claims.accountId,
        livemode: claims.livemode,
      };
      // A draft (a one-off invoice not finalized yet) is the merchant's: never shown to the customer.
      where.status = query.status ?? { $ne: 'draft' };
      const { page, hasMore } = await keysetPage(orm.em.fork(), Invoice, where, query);
      const data = page.map((invoice) => {
        const full = serializeInvoice(invoice, links.invoicePdfUrl(invoice.id));
        return {
          id: full.id,
          number: full.number,
          status: full.status,
          total: full.total,
          currency: full.currency,
          created_at: full.created_at,
          paid_at: full.paid_at,
          pdf: full.pdf,
        };
      });
      return c.json({ object: 'list' as const, data, has_more: hasMore }, 200);
    })
    .openapi(portalCancel, async (c) => {
      const { permissions, subscription } = await ownSubscription(c, c.req.valid('param').id);
      if (!permissions.cancellation)
        throw new ApiError('forbidden', 'This account does not let customers cancel in the portal.');
      const canceled = await commands.cancelSubscription(context, subscription, { atPeriodEnd: true }, commandRetry(c));
      return c.json(serializeSubscription(canceled), 200);
    })
    .openapi(portalResume, async (c) => {
      const { permissions, subscription } = await ownSubscription(c, c.req.valid('param').id);
      if (!permissions.resume)
        throw new ApiError('forbidden', 'This account does not let customers resume in the portal.');
      return c.json(
        serializeSubscription(await commands.resumeSubscription(context, subscription, commandRetry(c))),
        200,
      );
    })
    .openapi(portalUndoCancel, async (c) => {
      const { permissions, subscription } = await ownSubscription(c, c.req.valid('param').id);
      if (!permissions.cancellation)
        throw new ApiError(
          'forbidden',
          'This account does not let customers cancel or keep subscriptions in the portal.',
        );
      return c.json(serializeSubscription(await commands.undoCancel(context, subscription, commandRetry(c))), 200);
    })
    .openapi(portalChangePlan, async (c) => {
      const { permissions, subscription } = await ownSubscription(c, c.req.valid('param').id);
      const plan = await offeredPlan(permissions, subscription, c.req.valid('json').plan);
      // The new plan in the subscription's currency at its quantity (a one_time plan is refused: 400), sent as the API's
      // plan change is: under the Idempotency-Key's update id, so a retried request does not change twice.
      const changed = await commands.changePlan(context, subscription, { plan }, commandRetry(c));
      return c.json(serializeSubscription(changed), 200);
    })
    .openapi(portalPlanChangePreview, async (c) => {
      const { permissions, subscription } = await ownSubscription(c, c.req.valid('param').id);
      const plan = await offeredPlan(permissions, subscription, c.req.valid('query').plan);
      const view = await billingStateOf(temporal.client, subscription);
      const preview = previewPlanChange(
        view.state,
        changedPlanTerms(plan, subscription),
        new Date(view.now),
        view.spreadMinutes,
      );
      if ('problem' in preview) throw new ApiError('invalid_state', preview.problem);
      return c.json(
        {
          object: 'plan_change_preview' as const,
          subscription: subscription.id,
          plan: plan.id,
          kind: preview.kind,
          due_now: preview.dueNow ? await presentUpcomingInvoice(orm, subscription, preview.dueNow) : null,
          next_invoice: preview.next ? await presentUpcomingInvoice(orm, subscription, preview.next) : null,
        },
        200,
      );
    })
    .openapi(portalPromotionCode, async (c) => {
      const { permissions, subscription, customer, claims } = await ownSubscription(c, c.req.valid('param').id);
      if (!permissions.promotion_codes)
        throw new ApiError('forbidden', 'This account does not let customers enter promotion codes in the portal.');
      const em = orm.em.fork();
      const clock = await clockTimeOf(em, customer.testClockId);
      const now = clock ? new Date(clock.now) : new Date();
      const currency = subscription.currency ?? null;
      const purchase = currency ? { amount: await subscriptionFirstInvoiceAmount(em, subscription), currency } : null;
      const { discount } = await em.transactional((tx) =>
        redeemDiscount(tx, {
          scope: { accountId: claims.accountId, livemode: claims.livemode },
          customer,
          subscriptionId: subscription.id,
          code: c.req.valid('json').code,
          currency,
          purchase,
          now,
        }),
      );
      await tellWorkflowOfDiscount(temporal.client, discount);
      const [answer] = await portalDiscounts(em, [serializeSubscription(subscription)], now);
      return c.json(answer!, 200);
    })
    .openapi(portalQuantity, async (c) => {
      const { permissions, subscription } = await ownSubscription(c, c.req.valid('param').id);
      if (!permissions.quantity_changes)
        throw new ApiError('forbidden', 'This account does not let customers change quantities in the portal.');
      // The current plan (archived or not: the subscription stays on it) at the new quantity, in the subscription's currency.
      const plan = await planToChangeTo(orm.em.fork(), subscription, subscription.planId);
      const quantity = c.req.valid('json').quantity;
      const changed = await commands.changePlan(context, subscription, { plan, quantity }, commandRetry(c));
      return c.json(serializeSubscription(changed), 200);
    });
}

/** The setting's plan list, checked: each a recurring plan of the account (either mode), listed once (400 naming the first that is not). */
async function checkedPortalPlans(em: EntityManager, accountId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await em.find(Plan, { id: { $in: unique }, accountId });
  for (const id of unique) {
    const plan = found.find((p) => p.id === id);
    if (!plan) throw new ApiError('invalid_request', `plans: no such plan: ${id}.`);
    if (plan.type === 'one_time' || !plan.interval)
      throw new ApiError(
        'invalid_request',
        `plans: ${id} is a one_time plan; a subscription changes only to a recurring plan.`,
      );
  }
  return unique;
}
