import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Meter, Plan } from '../../db/entities/index.ts';
import type { PlanCurrencyOption } from '../../db/entities/plan.ts';
import { usageTypes } from '../../db/entities/plan.ts';
import { intervalUnits } from '../../domain/billing-calendar.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { isCurrencyCode } from '../../domain/money.ts';
import {
  maxDecimalPlaces,
  maxPriceAmount,
  maxQuantityDecimalPlaces,
  maxTiers,
  packageRoundings,
  parseQuantity,
  planTypes,
  priceFor,
  pricingProblems,
  type Tier,
  tiersModes,
  type UsagePricing,
  type UsagePricingSchemeName,
  usagePricingSchemes,
} from '../../domain/pricing.ts';
import type { DimensionPrice } from '../../domain/usage-pricing.ts';
import { amount, currency } from '../../objects/common.ts';
import { PlanSchema, serializePlan } from '../../objects/plan.ts';
import { findOwnProduct } from '../../services/catalog/plan-prices.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { describeZodError } from '../errors.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

const TierBody = z
  .object({
    up_to: z
      .union([z.number().int(), z.literal('inf')])
      .openapi({ description: 'The last unit of this tier (inclusive), ascending; the last tier is "inf"' }),
    unit_amount: z
      .number()
      .int()
      .nullable()
      .optional()
      .openapi({ description: 'Per unit, minor units; exactly one of unit_amount and unit_amount_decimal' }),
    unit_amount_decimal: z
      .string()
      .max(32)
      .nullable()
      .optional()
      .openapi({
        description: `Per unit, a decimal string of minor units, up to ${maxDecimalPlaces} decimal places ("0.125")`,
      }),
    flat_amount: z
      .number()
      .int()
      .nullable()
      .optional()
      .openapi({ description: 'Added once when the quantity reaches the tier (graduated) or falls in it (volume)' }),
  })
  .strict();

const CurrencyOptionBody = z
  .object({
    amount: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'per_unit and package plans: the amount in this currency' }),
    tiers: z
      .array(TierBody)
      .max(maxTiers)
      .optional()
      .openapi({ description: "tiered plans: the tiers in this currency (the plan's tiers_mode)" }),
  })
  .strict();

const DimensionPriceBody = z
  .object({
    amount: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'per_unit and package plans: the amount for this value' }),
    tiers: z
      .array(TierBody)
      .max(maxTiers)
      .optional()
      .openapi({ description: "tiered plans: the tiers for this value (the plan's tiers_mode)" }),
    percentage: z
      .string()
      .max(32)
      .optional()
      .openapi({ description: 'percentage plans: the percentage for this value' }),
    fixed_amount_decimal: z
      .string()
      .max(32)
      .nullable()
      .optional()
      .openapi({ description: 'percentage plans: the fee per event for this value' }),
  })
  .strict();

/** Dimension values one metered plan may price apart. */
const maxDimensionPrices = 100;

const CreatePlanBody = z
  .object({
    name: z.string().min(1).max(200),
    product: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'A product id of the same account and mode (404 not_found otherwise)' }),
    type: z.enum(planTypes).default('recurring').openapi({
      description:
        'recurring (default): billed every interval; one_time: a setup fee, charged on the first invoice of a subscription that names it in `items` (no interval)',
    }),
    pricing_scheme: z.enum(usagePricingSchemes).default('per_unit').openapi({
      description:
        'per_unit (default): amount × quantity; package: amount per package_size units; tiered: by tiers and tiers_mode; percentage (metered plans on a sum meter): percentage of the summed usage + fixed_amount_decimal per event (docs/pricing.md)',
    }),
    usage_type: z.enum(usageTypes).default('licensed').openapi({
      description:
        'licensed (default): billed in advance at a quantity; metered: billed in arrears on what its meter aggregated over the period just ended (needs meter)',
    }),
    meter: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'Metered plans: an active meter (mtr_) of the same account and mode' }),
    percentage: z.string().max(32).optional().openapi({
      description:
        'percentage plans: percent of the summed usage, a decimal string from "0" to "100" with up to 6 places ("2.9")',
    }),
    fixed_amount_decimal: z
      .string()
      .max(32)
      .optional()
      .openapi({ description: 'percentage plans: a fee per event, a decimal string of minor units ("30": $0.30)' }),
    free_quantity: z
      .string()
      .max(32)
      .optional()
      .openapi({
        description: `Metered plans: units not billed each period, a decimal string with up to ${maxQuantityDecimalPlaces} places (per dimension value when grouped)`,
      }),
    group_by: z.string().min(1).max(100).optional().openapi({
      description:
        "Metered plans: one of the meter's group_by properties; the usage is billed on one line per value seen",
    }),
    dimension_prices: z
      .record(z.string().max(200), DimensionPriceBody)
      .optional()
      .openapi({
        description: `Metered plans with group_by: a value's price over the plan's own (the scheme's fields: amount, tiers, or percentage and fixed_amount_decimal); at most ${maxDimensionPrices} values`,
      }),
    amount: amount.nullable().optional().openapi({
      description: 'per_unit: per unit; package: per package (both required); tiered: leave out (the tiers price it)',
    }),
    currency,
    tiers_mode: z.enum(tiersModes).optional().openapi({
      description:
        'tiered: graduated (each unit by the tier it falls in) or volume (every unit by the tier the quantity falls in)',
    }),
    tiers: z
      .array(TierBody)
      .max(maxTiers)
      .optional()
      .openapi({ description: 'tiered: ascending up_to, the last "inf"' }),
    package_size: z.number().int().optional().openapi({ description: 'package: units per package' }),
    package_round: z
      .enum(packageRoundings)
      .optional()
      .openapi({ description: 'package: up (default; a started package is paid) or down' }),
    currency_options: z.record(z.string(), CurrencyOptionBody).optional().openapi({
      description:
        'The same price in other currencies, by ISO code: `{"EUR": {"amount": 1800}}` (tiered: `{"EUR": {"tiers": [...]}}`). A subscription chooses with `currency`',
    }),
    interval: z
      .enum(intervalUnits)
      .optional()
      .openapi({ description: 'recurring plans: required; one_time plans: none' }),
    interval_count: z.number().int().min(1).max(365).optional().openapi({ description: 'Default 1' }),
    trial_period_days: z.number().int().min(0).max(730).default(0),
  })
  .strict()
  .openapi({
    example: {
      name: 'Pro monthly',
      product: 'prod_01jd3x5k8q0m2v7c9r4t6y1w3e',
      amount: 2000,
      currency: 'USD',
      interval: 'month',
    },
  });

type CreatePlanInput = z.infer<typeof CreatePlanBody>;
type TierInput = z.infer<typeof TierBody>;

const tierOf = (tier: TierInput): Tier => ({
  up_to: tier.up_to,
  ...(tier.unit_amount != null ? { unit_amount: tier.unit_amount } : {}),
  ...(tier.unit_amount_decimal != null ? { unit_amount_decimal: tier.unit_amount_decimal } : {}),
  ...(tier.flat_amount != null ? { flat_amount: tier.flat_amount } : {}),
});

/** Fields that only some schemes take: a body naming one for another scheme is refused, not ignored. */
const schemeFields: Record<string, UsagePricingSchemeName> = {
  tiers_mode: 'tiered',
  tiers: 'tiered',
  package_size: 'package',
  package_round: 'package',
  percentage: 'percentage',
  fixed_amount_decimal: 'percentage',
};
/** Fields only a metered plan takes. */
const meteredFields = ['meter', 'free_quantity', 'group_by', 'dimension_prices'] as const;

/** A dimension value's price laid over the plan's, checked as the plan's own (same scheme). */
function dimensionPriceProblems(
  pricing: UsagePricing,
  value: string,
  price: z.infer<typeof DimensionPriceBody>,
): { problems: string[]; stored: DimensionPrice } {
  const at = `dimension_prices.${value}`;
  const problems: string[] = [];
  const allowed: Record<UsagePricingSchemeName, string[]> = {
    per_unit: ['amount'],
    package: ['amount'],
    tiered: ['tiers'],
    percentage: ['percentage', 'fixed_amount_decimal'],
  };
  const given = Object.keys(price).filter((key) => price[key as keyof typeof price] !== undefined);
  for (const key of given)
    if (!allowed[pricing.scheme].includes(key))
      problems.push(
        `${at}.${key}: a ${pricing.scheme} plan's dimension price takes ${allowed[pricing.scheme].join(' and ')}.`,
      );
  if (given.length === 0) problems.push(`${at}: give ${allowed[pricing.scheme].join(' or ')}.`);
  const stored: DimensionPrice = {
    ...(price.amount !== undefined ? { amount: price.amount } : {}),
    ...(price.tiers !== undefined ? { tiers: price.tiers.map(tierOf) } : {}),
    ...(price.percentage !== undefined ? { percentage: price.percentage } : {}),
    ...(price.fixed_amount_decimal !== undefined ? { fixed_amount_decimal: price.fixed_amount_decimal } : {}),
  };
  if (problems.length === 0) {
    const merged: UsagePricing =
      pricing.scheme === 'tiered'
        ? { ...pricing, tiers: stored.tiers ?? pricing.tiers }
        : pricing.scheme === 'percentage'
          ? {
              ...pricing,
              percentage: stored.percentage ?? pricing.percentage,
              fixed_amount_decimal:
                stored.fixed_amount_decimal !== undefined ? stored.fixed_amount_decimal : pricing.fixed_amount_decimal,
            }
          : { ...pricing, amount: stored.amount ?? pricing.amount };
    problems.push(...pricingProblems(merged).map((problem) => `${at}.${problem}`));
  }
  return { problems, stored };
}

/**
 * The price a create body describes, checked whole: every problem in one 400 (invalid_request), named
 * by its field. The plan's `amount` for a tiered price is what one unit costs under its tiers.
 */
function priceOf(body: CreatePlanInput): {
  amount: number;
  pricing: UsagePricing;
  currencyOptions: Record<string, PlanCurrencyOption> | null;
  dimensionPrices: Record<string, DimensionPrice> | null;
} {
  const problems: string[] = [];
  const metered = body.usage_type === 'metered';
  if (metered) {
    if (body.type === 'one_time')
      problems.push('usage_type: a one_time plan cannot be metered (usage is billed every period).');
    if (body.meter === undefined)
      problems.push('meter: required for a metered plan (the meter whose usage it prices).');
    if (body.currency_options !== undefined)
      problems.push('currency_options: a metered plan bills in its own currency only.');
    if (body.free_quantity !== undefined && parseQuantity(body.free_quantity) === null)
      problems.push(
        `free_quantity: must be a non-negative decimal string with at most ${maxQuantityDecimalPlaces} decimal places, like "1000".`,
      );
    if (body.dimension_prices !== undefined && body.group_by === undefined)
      problems.push('dimension_prices: give group_by, the meter property whose values they price.');
    if (Object.keys(body.dimension_prices ?? {}).length > maxDimensionPrices)
      problems.push(`dimension_prices: at most ${maxDimensionPrices} values.`);
  } else {
    for (const field of meteredFields)
      if (body[field] !== undefined)
        problems.push(`${field}: only a metered plan takes it (usage_type is licensed; give usage_type "metered").`);
    if (body.pricing_scheme === 'percentage')
      problems.push('pricing_scheme: percentage is for metered plans only (usage_type "metered" on a sum meter).');
  }
  const scheme = body.pricing_scheme;
  for (const [field, owner] of Object.entries(schemeFields)) {
    if (body[field as keyof CreatePlanInput] !== undefined && owner !== scheme)
      problems.push(`${field}: only a ${owner} plan takes it (pricing_scheme is ${scheme}).`);
  }
  if (body.type === 'one_time') {
    if (body.interval !== undefined || body.interval_count !== undefined)
      problems.push('interval: a one_time plan has no interval (it is charged once, on the first invoice).');
    if (body.trial_period_days > 0) problems.push('trial_period_days: a one_time plan has no trial.');
  } else if (body.interval === undefined) {
    problems.push('interval: required for a recurring plan (day, week, month or year).');
  }
  let pricing: UsagePricing;
  if (scheme === 'percentage') {
    if (body.amount != null)
      problems.push('amount: a percentage plan is priced by percentage (and fixed_amount_decimal); leave amount out.');
    if (body.percentage === undefined)
      problems.push('percentage: required for a percentage plan (a decimal string, "2.9").');
    pricing = {
      scheme: 'percentage',
      percentage: body.percentage ?? '0',
      fixed_amount_decimal: body.fixed_amount_decimal ?? null,
    };
  } else if (scheme === 'tiered') {
    if (body.amount != null) problems.push('amount: a tiered plan is priced by its tiers; leave amount out.');
    if (body.tiers_mode === undefined) problems.push('tiers_mode: required for a tiered plan (graduated or volume).');
    pricing = { scheme: 'tiered', tiers_mode: body.tiers_mode ?? 'graduated', tiers: (body.tiers ?? []).map(tierOf) };
  } else {
    if (body.amount == null) problems.push(`amount: required for a ${scheme} plan.`);
    pricing =
      scheme === 'package'
        ? {
            scheme: 'package',
            amount: body.amount ?? 0,
            package_size: body.package_size ?? 0,
            round: body.package_round ?? 'up',
          }
        : { scheme: 'per_unit', amount: body.amount ?? 0 };
    if (scheme === 'package' && body.package_size === undefined)
      problems.push('package_size: required for a package plan.');
  }
  problems.push(...pricingProblems(pricing).filter((problem) => !problem.startsWith('amount:') || body.amount != null));
  const currencyOptions: Record<string, PlanCurrencyOption> = {};
  const options = Object.entries(body.currency_options ?? {});
  if (options.length > maxCurrencyOptions) problems.push(`currency_options: at most ${maxCurrencyOptions} currencies.`);
  for (const [code, option] of options) {
    const at = `currency_options.${code}`;
    const upper = code.toUpperCase();
    if (!isCurrencyCode(upper)) problems.push(`${at}: not an ISO 4217 currency code.`);
    else if (upper === body.currency) problems.push(`${at}: the plan's own currency is priced by the plan itself.`);
    else if (currencyOptions[upper]) problems.push(`${at}: ${upper} is given twice.`);
    if (pricing.scheme === 'tiered') {
      if (option.amount !== undefined) problems.push(`${at}.amount: a tiered plan is priced by its tiers; give tiers.`);
      const tiers = (option.tiers ?? []).map(tierOf);
      const optionPricing: UsagePricing = { ...pricing, tiers };
      problems.push(...pricingProblems(optionPricing).map((problem) => `${at}.${problem}`));
      if (problems.length === 0) currencyOptions[upper] = { amount: priceFor(optionPricing, 1).amount, tiers };
    } else {
      if (option.tiers !== undefined) problems.push(`${at}.tiers: only a tiered plan takes tiers.`);
      if (option.amount === undefined) problems.push(`${at}.amount: required.`);
      else if (!Number.isSafeInteger(option.amount) || option.amount < 1 || option.amount > maxPriceAmount)
        problems.push(`${at}.amount: must be an integer of minor units from 1 to ${maxPriceAmount}.`);
      else currencyOptions[upper] = { amount: option.amount };
    }
  }
  let dimensionPrices: Record<string, DimensionPrice> | null = null;
  if (metered && body.dimension_prices !== undefined && problems.length === 0) {
    dimensionPrices = {};
    for (const [value, price] of Object.entries(body.dimension_prices)) {
      const checked = dimensionPriceProblems(pricing, value, price);
      problems.push(...checked.problems);
      dimensionPrices[value] = checked.stored;
    }
  }
  if (problems.length > 0) throw new ApiError('invalid_request', problems.join(' '));
  const unit =
    pricing.scheme === 'tiered' ? priceFor(pricing, 1).amount : pricing.scheme === 'percentage' ? 0 : pricing.amount;
  return { amount: unit, pricing, currencyOptions: options.length > 0 ? currencyOptions : null, dimensionPrices };
}

const UpdatePlanBody = z
  .object({
    name: z.string().min(1).max(200).optional(),
    active: z
      .boolean()
      .optional()
      .openapi({ description: 'false archives the plan, true takes it out of the archive' }),
  })
  .strict()
  .openapi({ example: { name: 'Pro monthly (2026 price)' } });

const ListQuery = z
  .object({
    ...cursorQuery('plan'),
    active: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
    product: z.string().min(1).max(64).optional().openapi({ description: 'Only the plans of this product' }),
  })
  .strict()
  .refine(...oneCursor);

const forms =
  'Takes JSON or an `application/x-www-form-urlencoded` body (`amount=2000&interval=month`; tiers and currency_options in JSON).';
/** Currencies one plan may add in currency_options. */
const maxCurrencyOptions = 20;
const archiving =
  'A plan is never deleted: subscriptions and invoices name it. An archived plan (active false) stays readable and its ' +
  'subscriptions keep billing on it, but a new subscription on it is refused with plan_archived (409).';

const createPlan = createRoute({
  method: 'post',
  path: '/',
  tags: ['Plans'],
  summary: 'Create a plan',
  description:
    'A price: `pricing_scheme` per_unit (default; `amount` × quantity), package (`amount` per `package_size` units, `package_round` up or down) or tiered ' +
    '(`tiers_mode` graduated or volume, `tiers` of `up_to`, `unit_amount` or `unit_amount_decimal`, `flat_amount`); `type` recurring (default, with an ' +
    "`interval`) or one_time (a setup fee); `currency_options` price it in more currencies. Amounts are integers of minor units; a tier's " +
    "`unit_amount_decimal` may carry sub-minor precision, and a line's amount is rounded once, half away from zero (docs/pricing.md). " +
    `The price never changes once created. ${forms}`,
  request: {
    body: {
      content: {
        'application/json': {
          schema: CreatePlanBody,
          // The interactive docs' "Try it out" body: a graduated tiered plan with a price in EUR (docs/pricing.md has one of each scheme).
          example: {
            name: 'API calls',
            pricing_scheme: 'tiered',
            tiers_mode: 'graduated',
            tiers: [
              { up_to: 10, unit_amount: 1000 },
              { up_to: 'inf', unit_amount_decimal: '750.5', flat_amount: 500 },
            ],
            currency: 'USD',
            interval: 'month',
            currency_options: {
              EUR: {
                tiers: [
                  { up_to: 10, unit_amount: 900 },
                  { up_to: 'inf', unit_amount: 700, flat_amount: 450 },
                ],
              },
            },
          },
        },
      },
      required: true,
    },
  },
  responses: { 201: { description: 'Created', ...json(PlanSchema) }, ...errorResponses(400, 401, 404) },
});

const listPlans = listRoute({
  tags: ['Plans'],
  summary: 'List plans, newest first',
  query: ListQuery,
  item: PlanSchema,
});

const getPlan = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Plans'],
  summary: 'Retrieve a plan',
  request: { params: idParam('plan') },
  responses: { 200: { description: 'The plan', ...json(PlanSchema) }, ...errorResponses(401, 404) },
});

const updateRoute = (method: 'post' | 'patch') =>
  createRoute({
    method,
    path: '/{id}',
    tags: ['Plans'],
    summary:
      method === 'patch'
        ? 'Rename, archive or restore a plan'
        : 'Rename, archive or restore a plan (POST, as Stripe does)',
    description: `Only name and active change: the price (amount, currency, pricing_scheme, tiers, package, currency_options, type, interval) never changes, so subscriptions and invoices that named it stay true; to change a price make a new plan (400 invalid_request names the field). ${archiving} ${forms}`,
    request: { params: idParam('plan'), body: { ...json(UpdatePlanBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(PlanSchema) }, ...errorResponses(400, 401, 404) },
  });

const archivePlan = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['Plans'],
  summary: 'Archive a plan',
  description: `Sets active to false and answers the plan; archiving an archived plan changes nothing. ${archiving}`,
  request: { params: idParam('plan') },
  responses: { 200: { description: 'Archived', ...json(PlanSchema) }, ...errorResponses(401, 404) },
});

/** Fields of a plan that never change: its price (and what bills by it). An update naming one is refused saying so. */
const fixedPlanFields = new Set([
  'amount',
  'currency',
  'type',
  'pricing_scheme',
  'tiers_mode',
  'tiers',
  'package_size',
  'package_round',
  'currency_options',
  'interval',
  'interval_count',
  'trial_period_days',
  'product',
  'usage_type',
  'meter',
  'percentage',
  'fixed_amount_decimal',
  'free_quantity',
  'group_by',
  'dimension_prices',
]);

/** The update routes' validation answer: an attempt to change the price says why it cannot, instead of "unknown field". */
const fixedFieldsHook = (result: { success: boolean; error?: z.ZodError; target?: string }): undefined => {
  if (result.success) return;
  const unknown = result.error!.issues.flatMap((issue) => (issue.code === 'unrecognized_keys' ? issue.keys : []));
  const fixed = unknown.filter((key) => fixedPlanFields.has(key));
  if (fixed.length > 0) {
    throw new ApiError(
      'invalid_request',
      `${fixed.join(', ')}: a plan's price never changes once created, so the subscriptions and invoices that name it stay true. Make a new plan (and archive this one); only name and active change.`,
    );
  }
  throw new ApiError('invalid_request', describeZodError(result.error!, (result.target ?? 'json') as 'json'));
};

/**
 * A metered plan's meter: of the caller's account and mode (else 400 naming it: a plan is not created on a
 * meter the caller cannot see), active, summing when the price is a percentage, and having the group_by.
 */
async function checkMeter(
  em: EntityManager,
  body: CreatePlanInput,
  scope: { accountId: string; livemode: boolean },
): Promise<void> {
  const meter = await em.findOne(Meter, { id: body.meter!, accountId: scope.accountId, livemode: scope.livemode });
  if (!meter)
    throw new ApiError(
      'invalid_request',
      `meter: no such meter ${body.meter} in this account's ${scope.livemode ? 'live' : 'sandbox'} mode.`,
    );
  const problems: string[] = [];
  if (meter.status !== 'active')
    problems.push(
      `meter: ${meter.id} is inactive; reactivate it (POST /v1/meters/${meter.id}/reactivate) or use an active meter.`,
    );
  if (body.pricing_scheme === 'percentage' && meter.aggregation !== 'sum')
    problems.push(
      `pricing_scheme: a percentage price needs a sum meter; ${meter.id} aggregates by ${meter.aggregation}.`,
    );
  if (body.group_by !== undefined && !meter.groupBy.includes(body.group_by)) {
    problems.push(
      `group_by: ${JSON.stringify(body.group_by)} is not one of meter ${meter.id}'s group_by properties (${meter.groupBy.length > 0 ? meter.groupBy.join(', ') : 'it has none'}).`,
    );
  }
  if (problems.length > 0) throw new ApiError('invalid_request', problems.join(' '));
}

async function findOwnPlan(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
  const plan = await em.findOne(Plan, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!plan) throw new ApiError('not_found', 'No such plan.');
  return plan;
}

export function plansApp({ context: { orm } }: AppDeps) {
  const update = async (
    id: string,
    body: z.infer<typeof UpdatePlanBody>,
    scope: { accountId: string; livemode: boolean },
  ) => {
    const em = orm.em.fork();
    const plan = await findOwnPlan(em, id, scope);
    if (body.name !== undefined) plan.name = body.name;
    if (body.active !== undefined) plan.active = body.active;
    await em.flush();
    return serializePlan(plan);
  };

  return newOpenApiApp()
    .openapi(createPlan, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const price = priceOf(body);
      if (body.product !== undefined) await findOwnProduct(em, body.product, scope);
      if (body.usage_type === 'metered') await checkMeter(em, body, scope);
      const { pricing } = price;
      const plan = em.create(Plan, {
        id: newId('plan'),
        accountId: scope.accountId,
        productId: body.product ?? null,
        name: body.name,
        amount: price.amount,
        currency: body.currency,
        type: body.type,
        interval: body.type === 'one_time' ? null : body.interval!,
        intervalCount: body.interval_count ?? 1,
        trialPeriodDays: body.trial_period_days,
        pricingScheme: pricing.scheme,
        tiersMode: pricing.scheme === 'tiered' ? pricing.tiers_mode : null,
        tiers: pricing.scheme === 'tiered' ? pricing.tiers : null,
        packageSize: pricing.scheme === 'package' ? pricing.package_size : null,
        packageRound: pricing.scheme === 'package' ? pricing.round : null,
        currencyOptions: price.currencyOptions,
        usageType: body.usage_type,
        meterId: body.meter ?? null,
        percentage: pricing.scheme === 'percentage' ? pricing.percentage : null,
        fixedAmountDecimal: pricing.scheme === 'percentage' ? (pricing.fixed_amount_decimal ?? null) : null,
        freeQuantity: body.free_quantity ?? null,
        groupBy: body.group_by ?? null,
        dimensionPrices: price.dimensionPrices,
        active: true,
        livemode: scope.livemode,
      });
      await em.flush();
      return c.json(serializePlan(plan), 201);
    })
    .openapi(listPlans, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.active !== undefined) where.active = query.active;
      if (query.product !== undefined) where.productId = query.product;
      const { page, hasMore } = await keysetPage(orm.em.fork(), Plan, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializePlan), has_more: hasMore }, 200);
    })
    .openapi(getPlan, async (c) => {
      const scope = await accountScope(c, orm);
      return c.json(serializePlan(await findOwnPlan(orm.em.fork(), c.req.valid('param').id, scope)), 200);
    })
    .openapi(
      updateRoute('patch'),
      async (c) => c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200),
      fixedFieldsHook,
    )
    .openapi(
      updateRoute('post'),
      async (c) => c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200),
      fixedFieldsHook,
    )
    .openapi(archivePlan, async (c) =>
      c.json(await update(c.req.valid('param').id, { active: false }, await accountScope(c, orm)), 200),
    );
}
