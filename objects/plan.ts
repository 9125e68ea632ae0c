import { z } from '@hono/zod-openapi';

import type { Plan } from '../db/entities/index.ts';
import { usageTypes } from '../db/entities/plan.ts';
import { intervalUnits } from '../domain/billing-calendar.ts';
import {
  maxDecimalPlaces,
  packageRoundings,
  planTypes,
  type Tier,
  tiersModes,
  usagePricingSchemes,
} from '../domain/pricing.ts';
import { timestamp } from './common.ts';

/** A plan (a price, and for a recurring one its interval) of the catalog. Pricing schemes: docs/pricing.md. */

export const TierSchema = z
  .object({
    up_to: z
      .union([z.number().int(), z.literal('inf')])
      .openapi({ description: 'The last unit of this tier (inclusive); the last tier is "inf"', example: 10 }),
    unit_amount: z.number().int().nullable().openapi({
      description: 'Per unit, in minor units (exactly one of unit_amount and unit_amount_decimal)',
      example: 1500,
    }),
    unit_amount_decimal: z
      .string()
      .nullable()
      .openapi({
        description: `Per unit, a decimal string of minor units with up to ${maxDecimalPlaces} decimal places ("0.125": an eighth of a cent)`,
        example: null,
      }),
    flat_amount: z.number().int().nullable().openapi({
      description: 'Added once when the quantity reaches this tier (graduated) or falls in it (volume)',
      example: null,
    }),
  })
  .openapi('PlanTier');

export const CurrencyOptionSchema = z
  .object({
    amount: z.number().int().openapi({ description: "As the plan's amount, in this currency" }),
    tiers: z.array(TierSchema).nullable().openapi({ description: "A tiered plan's tiers in this currency" }),
  })
  .openapi('PlanCurrencyOption');

/** One row of a price's breakdown (domain/pricing.ts PriceRow), as invoice lines show it. */
export const PriceRowSchema = z
  .object({
    tier: z.number().int().nullable().openapi({ description: "The tier's 0-based index (tiered prices), else null" }),
    from_unit: z.number().int().openapi({ description: 'First unit this row prices (1-based)' }),
    up_to: z.number().nullable().openapi({
      description: 'Last unit this row prices; null: no upper bound (a per-unit usage row: its decimal quantity)',
    }),
    quantity: z.number().openapi({
      description:
        'Units priced by this row; for a package price, the packages; for the fee row of a percentage price, the events. A usage row may be a decimal (exact in quantity_decimal)',
    }),
    quantity_decimal: z
      .string()
      .optional()
      .openapi({ description: 'Usage rows: the exact decimal quantity (up to 6 places)', example: '12.5' }),
    unit_amount_decimal: z
      .string()
      .openapi({ description: 'Per unit (per package), exact, in minor units', example: '1500' }),
    flat_amount: z.number().int(),
    amount_decimal: z.string().openapi({
      description: 'quantity × unit + flat, exact; the line rounds the sum of its rows once, half away from zero',
      example: '15000',
    }),
  })
  .openapi('PriceRow');

export const PlanSchema = z
  .object({
    id: z.string(),
    object: z.literal('plan'),
    name: z.string(),
    product: z.string().nullable().openapi({ description: 'The product this plan prices, or null' }),
    type: z.enum(planTypes).openapi({
      description:
        'recurring (billed every interval) or one_time (a setup fee: on the first invoice only, no interval)',
    }),
    pricing_scheme: z.enum(usagePricingSchemes).openapi({
      description:
        'per_unit: amount × quantity; package: amount per package_size units; tiered: by tiers and tiers_mode; percentage (metered plans): percentage of the summed usage plus fixed_amount_decimal per event',
    }),
    amount: z.number().int().openapi({
      description: 'per_unit: per unit; package: per package; tiered: what one unit costs under the tiers',
    }),
    currency: z.string(),
    tiers_mode: z.enum(tiersModes).nullable().openapi({ description: 'Tiered plans: graduated or volume' }),
    tiers: z.array(TierSchema).nullable(),
    package_size: z.number().int().nullable().openapi({ description: 'Package plans: units per package' }),
    package_round: z
      .enum(packageRoundings)
      .nullable()
      .openapi({ description: 'Package plans: a started package is paid (up) or not (down)' }),
    currency_options: z.record(z.string(), CurrencyOptionSchema).openapi({
      description: 'The same price in other currencies, by ISO code; a subscription in one of them bills these amounts',
    }),
    usage_type: z.enum(usageTypes).openapi({
      description:
        'licensed: billed in advance at a quantity; metered: billed in arrears on the usage its meter aggregated over the previous period (docs/pricing.md#usage-prices)',
    }),
    meter: z
      .string()
      .nullable()
      .openapi({ description: 'Metered plans: the meter (mtr_) whose aggregate is the quantity priced' }),
    percentage: z
      .string()
      .nullable()
      .openapi({ description: 'The percentage scheme: percent of the summed usage (a decimal string, "2.9")' }),
    fixed_amount_decimal: z
      .string()
      .nullable()
      .openapi({ description: 'The percentage scheme: a fee per event, a decimal string of minor units ("30")' }),
    free_quantity: z
      .string()
      .nullable()
      .openapi({ description: 'Metered plans: units not billed each period (per dimension value when grouped)' }),
    group_by: z.string().nullable().openapi({
      description: "Metered plans: one of the meter's group_by properties; the usage is billed on one line per value",
    }),
    dimension_prices: z
      .record(
        z.string(),
        z.object({
          amount: z.number().int().nullable().optional(),
          tiers: z.array(TierSchema).nullable().optional(),
          percentage: z.string().nullable().optional(),
          fixed_amount_decimal: z.string().nullable().optional(),
        }),
      )
      .nullable()
      .openapi({
        description:
          "Metered plans with group_by: the price of a dimension value, over the plan's own (the same scheme's fields)",
      }),
    interval: z.enum(intervalUnits).nullable().openapi({ description: 'null for a one_time plan' }),
    interval_count: z.number().int().nullable().openapi({ description: 'null for a one_time plan' }),
    trial_period_days: z.number().int(),
    active: z.boolean(),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('Plan', {
    example: {
      id: 'plan_01jd3x5k8q0m2v7c9r4t6y1w3e',
      object: 'plan',
      name: 'API calls',
      product: null,
      type: 'recurring',
      pricing_scheme: 'tiered',
      amount: 1000,
      currency: 'USD',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 10, unit_amount: 1000, unit_amount_decimal: null, flat_amount: null },
        { up_to: 'inf', unit_amount: null, unit_amount_decimal: '750.5', flat_amount: 500 },
      ],
      package_size: null,
      package_round: null,
      currency_options: {},
      usage_type: 'metered',
      meter: 'mtr_01jd3x9c4e6g8j0l2n4q6s8u0w',
      percentage: null,
      fixed_amount_decimal: null,
      free_quantity: '100',
      group_by: 'model',
      dimension_prices: {
        'gpt-large': {
          tiers: [
            { up_to: 10, unit_amount: 3000, unit_amount_decimal: null, flat_amount: null },
            { up_to: 'inf', unit_amount: 2000, unit_amount_decimal: null, flat_amount: null },
          ],
        },
      },
      interval: 'month',
      interval_count: 1,
      trial_period_days: 0,
      active: true,
      livemode: false,
      created_at: '2026-01-31T00:00:00.000Z',
    },
  });

const tierOut = (tier: Tier): z.infer<typeof TierSchema> => ({
  up_to: tier.up_to,
  unit_amount: tier.unit_amount ?? null,
  unit_amount_decimal: tier.unit_amount_decimal ?? null,
  flat_amount: tier.flat_amount ?? null,
});

export function serializePlan(plan: Plan): z.infer<typeof PlanSchema> {
  const oneTime = plan.type === 'one_time';
  return {
    id: plan.id,
    object: 'plan',
    name: plan.name,
    product: plan.productId ?? null,
    type: plan.type ?? 'recurring',
    pricing_scheme: plan.pricingScheme ?? 'per_unit',
    amount: Number(plan.amount),
    currency: plan.currency,
    tiers_mode: plan.tiersMode ?? null,
    tiers: plan.tiers ? plan.tiers.map(tierOut) : null,
    package_size: plan.packageSize ?? null,
    package_round: plan.packageRound ?? null,
    currency_options: Object.fromEntries(
      Object.entries(plan.currencyOptions ?? {}).map(([code, option]) => [
        code,
        { amount: option.amount, tiers: option.tiers ? option.tiers.map(tierOut) : null },
      ]),
    ),
    usage_type: plan.usageType ?? 'licensed',
    meter: plan.meterId ?? null,
    percentage: plan.percentage ?? null,
    fixed_amount_decimal: plan.fixedAmountDecimal ?? null,
    free_quantity: plan.freeQuantity ?? null,
    group_by: plan.groupBy ?? null,
    dimension_prices: plan.dimensionPrices
      ? Object.fromEntries(
          Object.entries(plan.dimensionPrices).map(([value, { tiers, ...price }]) => [
            value,
            { ...price, ...(tiers ? { tiers: tiers.map(tierOut) } : {}) },
          ]),
        )
      : null,
    interval: oneTime ? null : (plan.interval ?? null),
    interval_count: oneTime ? null : plan.intervalCount,
    trial_period_days: plan.trialPeriodDays,
    active: plan.active,
    livemode: plan.livemode,
    created_at: plan.createdAt.toISOString(),
  };
}
