import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { IntervalUnit } from '../../domain/billing-calendar.ts';
import type { PackageRounding, PlanType, Tier, TiersMode, UsagePricingSchemeName } from '../../domain/pricing.ts';
import type { DimensionPrice } from '../../domain/usage-pricing.ts';

/** licensed: billed in advance at a quantity; metered: billed in arrears on a meter's usage (docs/pricing.md "Usage prices"). */
export const usageTypes = ['licensed', 'metered'] as const;
export type UsageType = (typeof usageTypes)[number];

/** A plan's price in another currency: `amount` (per_unit, package; tiered: one unit's), and a tiered plan's tiers. */
export interface PlanCurrencyOption {
  amount: number;
  tiers?: Tier[] | null;
}

/**
 * A price: its scheme (domain/pricing.ts) and, when recurring, its interval; with a default trial
 * length, optionally of a product. The price fields never change once created (docs/pricing.md).
 */
export const Plan = defineEntity({
  name: 'Plan',
  tableName: 'plans',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    name: p.string(),
    /** per_unit and package: the unit (package) amount; tiered: what one unit costs under the tiers. */
    amount: p.bigint('number'),
    currency: p.string().length(3),
    /** recurring, or one_time (a setup fee): then no interval. */
    type: p.string().$type<PlanType>().default('recurring'),
    /** Null for a one_time plan. */
    interval: p.string().$type<IntervalUnit>().nullable(),
    intervalCount: p.integer().default(1),
    trialPeriodDays: p.integer().default(0),
    pricingScheme: p.string().$type<UsagePricingSchemeName>().default('per_unit'),
    tiersMode: p.string().$type<TiersMode>().nullable(),
    tiers: p.json<Tier[]>().nullable(),
    packageSize: p.integer().nullable(),
    packageRound: p.string().$type<PackageRounding>().nullable(),
    /** The same price in other currencies, by ISO code (not the plan's own currency). */
    currencyOptions: p.json<Record<string, PlanCurrencyOption>>().nullable(),
    usageType: p.string().$type<UsageType>().default('licensed'),
    /** Metered plans: the meter (mtr_) whose aggregate over a period is the quantity priced. */
    meterId: p.string().nullable(),
    /** The percentage scheme: percent of the summed quantity ("2.9"), and a fee per event in minor units ("30"). */
    percentage: p.string().nullable(),
    fixedAmountDecimal: p.string().nullable(),
    /** Metered plans: units not billed each period (a decimal string). */
    freeQuantity: p.string().nullable(),
    /** Metered plans: the meter's dimension priced per value, and the per-value price overrides. */
    groupBy: p.string().nullable(),
    dimensionPrices: p.json<Record<string, DimensionPrice>>().nullable(),
    /** Archived plans (false) stay readable and keep billing their subscriptions, but take no new ones. */
    active: p.boolean().default(true),
    /** The product this plan prices, of the same account and mode; null for a plan on its own. */
    productId: p.string().nullable().index(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Plan = InferEntity<typeof Plan>;
