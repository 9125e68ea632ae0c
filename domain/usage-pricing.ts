/**
 * What a metered plan charges for a period's usage (docs/pricing.md "Usage prices"). Pure: the
 * subscription workflow's invoice lines, the upcoming-invoice preview and the tests share it.
 *
 * A metered plan prices the aggregate of its meter over a period (services/usage/store.ts):
 * - `free_quantity` units are not billed: subtracted from each priced quantity before pricing
 *   (per dimension value when the plan groups by a dimension; never below 0);
 * - `group_by` (one of the meter's group_by properties) with `dimension_prices`: one charge per value
 *   seen in the period, priced by `dimension_prices[value]` over the plan's own price (the same scheme;
 *   an override gives its `amount`, `tiers`, or `percentage` and `fixed_amount_decimal`); values
 *   without an override, and events missing the property (value ""), take the plan's price;
 * - a negative aggregate (a sum of corrections) bills 0.
 * Amounts follow domain/pricing.ts: exact, then rounded once per charge, half away from zero.
 */
import { formatQuantity, parseQuantity, priceFor, type PriceResult, type Tier, type UsagePricing } from './pricing.ts';

/** An override of a metered plan's price for one dimension value: the fields of the plan's own scheme. */
export interface DimensionPrice {
  amount?: number | null;
  tiers?: Tier[] | null;
  percentage?: string | null;
  fixed_amount_decimal?: string | null;
}

/** A metered plan's price: its scheme, and what usage pricing adds. */
export interface MeteredPrice {
  pricing: UsagePricing;
  /** Units not billed, a decimal string ("1000"); null: none. */
  freeQuantity?: string | null;
  /** The meter's dimension priced separately; null: one charge over all usage. */
  groupBy?: string | null;
  dimensionPrices?: Record<string, DimensionPrice> | null;
}

/** One aggregate of a meter over a period (the store's UsageAggregate). */
export interface UsageAggregateInput {
  dimensions: Record<string, string>;
  /** Exact decimal string. */
  value: string;
  events: number;
}

/** What one charge of a period bills: an invoice line. */
export interface UsageCharge {
  /** The group_by value this charge prices, or null (ungrouped). */
  dimension: string | null;
  /** The period's aggregate (clamped at 0), exact. */
  quantity: string;
  /** Of which free (free_quantity, at most the quantity). */
  freeQuantity: string;
  /** What was priced: quantity − free. */
  billedQuantity: string;
  events: number;
  price: PriceResult;
}

/** The plan's pricing with a dimension's override laid over it (same scheme). */
export function dimensionPricing(base: UsagePricing, override: DimensionPrice | undefined): UsagePricing {
  if (!override) return base;
  switch (base.scheme) {
    case 'per_unit':
    case 'package':
      return { ...base, amount: override.amount ?? base.amount };
    case 'tiered':
      return { ...base, tiers: override.tiers ?? base.tiers };
    case 'percentage':
      return {
        ...base,
        percentage: override.percentage ?? base.percentage,
        fixed_amount_decimal:
          override.fixed_amount_decimal !== undefined ? override.fixed_amount_decimal : base.fixed_amount_decimal,
      };
  }
}

/** "12.5" → exact micro-units, negative values clamped to 0; more than 6 places are cut (aggregates carry at most 6). */
function nonNegativeMicro(value: string): bigint {
  const text = value.trim();
  if (text.startsWith('-')) return 0n;
  const [whole = '0', fraction = ''] = text.split('.');
  const parsed = parseQuantity(fraction ? `${whole}.${fraction.slice(0, 6)}` : whole);
  if (parsed === null) throw new Error(`Not a usage quantity: ${JSON.stringify(value)}.`);
  return parsed;
}

/**
 * The charges of one metered plan for one period's aggregates: one per dimension value (sorted) when
 * the plan has a group_by, else one (quantity 0 when there was no usage: Stripe shows the line too).
 */
export function usageCharges(price: MeteredPrice, aggregates: readonly UsageAggregateInput[]): UsageCharge[] {
  const free = price.freeQuantity ? nonNegativeMicro(price.freeQuantity) : 0n;
  const charge = (dimension: string | null, value: bigint, events: number): UsageCharge => {
    const freeHere = free < value ? free : value;
    const billed = value - freeHere;
    const pricing =
      dimension === null ? price.pricing : dimensionPricing(price.pricing, price.dimensionPrices?.[dimension]);
    return {
      dimension,
      quantity: formatQuantity(value),
      freeQuantity: formatQuantity(freeHere),
      billedQuantity: formatQuantity(billed),
      events,
      price: priceFor(pricing, formatQuantity(billed), { events }),
    };
  };
  if (!price.groupBy) {
    let value = 0n;
    let events = 0;
    // Ungrouped, the store answers one row; more rows (asked with dimensions) are summed.
    for (const row of aggregates) {
      value += nonNegativeMicro(row.value);
      events += row.events;
    }
    return [charge(null, value, events)];
  }
  const byValue = new Map<string, { value: bigint; events: number }>();
  for (const row of aggregates) {
    const key = row.dimensions[price.groupBy] ?? '';
    const seen = byValue.get(key) ?? { value: 0n, events: 0 };
    byValue.set(key, { value: seen.value + nonNegativeMicro(row.value), events: seen.events + row.events });
  }
  return [...byValue.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, { value, events }]) => charge(key, value, events));
}
