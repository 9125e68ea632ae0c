/**
 * Prices: what a plan charges for a quantity. Pure (no I/O, no clock), so the API
 * (validation), the subscription workflow (invoice lines) and the tests share it.
 *
 * Schemes (docs/pricing.md):
 * - `per_unit`: `amount` × quantity.
 * - `package`: `amount` per package of `package_size` units; the number of packages
 *   is quantity ÷ package_size rounded `up` (a started package is paid) or `down`.
 * - `tiered`, `tiers_mode`:
 *   - `graduated`: each unit is priced by the tier it falls in (units 1..up_to of the
 *     first tier, then the next tier's, ...), plus the `flat_amount` of every tier the
 *     quantity reaches into;
 *   - `volume`: every unit is priced by the one tier the whole quantity falls in, plus
 *     that tier's `flat_amount`.
 *   A tier's unit price is `unit_amount` (integer minor units) or `unit_amount_decimal`
 *   (a decimal string of minor units with up to 12 decimal places, as Stripe's:
 *   "0.125" is an eighth of a cent).
 *
 * - `percentage` (metered plans on a `sum` meter only, docs/pricing.md "Usage prices"): `percentage`
 *   percent of the quantity (the period's summed value, in minor units) plus an optional
 *   `fixed_amount_decimal` (minor units) per event: Lago's percentage charge.
 *
 * Quantities are integers, or (usage) exact decimal strings of up to 6 decimal places
 * ("12.5"): a string quantity prices exactly as the same integer would, and its result and rows
 * also carry `quantity_decimal`. An integer quantity's result is unchanged by the decimal path.
 *
 * THE rounding rule: the amount is computed exactly (bigint, in 10^-18 of the minor unit),
 * then rounded ONCE, half away from zero, to an integer of minor units. Tiers are never
 * rounded one by one; the breakdown shows each row's exact amount. Quantity 0 costs 0 in
 * every scheme (no tier is reached, no flat amount applies).
 */

export const pricingSchemes = ['per_unit', 'tiered', 'package'] as const;
export type PricingSchemeName = (typeof pricingSchemes)[number];
/** Every scheme, including those only a metered plan takes (`percentage`). */
export const usagePricingSchemes = [...pricingSchemes, 'percentage'] as const;
export type UsagePricingSchemeName = (typeof usagePricingSchemes)[number];
export const tiersModes = ['graduated', 'volume'] as const;
export type TiersMode = (typeof tiersModes)[number];
export const packageRoundings = ['up', 'down'] as const;
export type PackageRounding = (typeof packageRoundings)[number];
/** A plan bills every interval (`recurring`), or once, on a subscription's first invoice (`one_time`: a setup fee). */
export const planTypes = ['recurring', 'one_time'] as const;
export type PlanType = (typeof planTypes)[number];

/** Decimal places a `unit_amount_decimal` may carry (Stripe's limit). */
export const maxDecimalPlaces = 12;
/** Tiers one price may have. */
export const maxTiers = 50;
/** The largest integer unit, flat or package amount (minor units), as a single charge is capped (objects/common.ts). */
export const maxPriceAmount = 99_999_999;
/** The largest quantity a price is asked for. */
export const maxQuantity = 1_000_000_000;

export interface Tier {
  /** The last unit of this tier (inclusive), ascending; the last tier's is 'inf'. */
  up_to: number | 'inf';
  /** Per unit, integer minor units. Exactly one of unit_amount and unit_amount_decimal. */
  unit_amount?: number | null;
  /** Per unit, a decimal string of minor units ("0.125"). */
  unit_amount_decimal?: string | null;
  /** Added once when the quantity reaches this tier (graduated) or falls in it (volume). */
  flat_amount?: number | null;
}

export type Pricing =
  | { scheme: 'per_unit'; amount: number }
  | { scheme: 'package'; amount: number; package_size: number; round: PackageRounding }
  | { scheme: 'tiered'; tiers_mode: TiersMode; tiers: Tier[] };

/** A metered plan's percentage price: `percentage` percent of the summed quantity, plus `fixed_amount_decimal` per event. */
export type PercentagePricing = { scheme: 'percentage'; percentage: string; fixed_amount_decimal?: string | null };
/** A licensed price, or one only a metered plan takes. */
export type UsagePricing = Pricing | PercentagePricing;

/** One row of a price's breakdown: what an invoice line shows under the amount. */
export interface PriceRow {
  /** The tier's 0-based index (tiered), else null. */
  tier: number | null;
  /** First and last unit this row prices (1-based, inclusive; last null: unbounded). Package: the units the packages cover. */
  from_unit: number;
  up_to: number | null;
  /** Units priced by this row; for a package price, the number of packages; the fixed-fee row of a percentage price: the events. */
  quantity: number;
  /** A decimal quantity's exact units (only when the price was asked for a decimal string). */
  quantity_decimal?: string;
  /** Per unit (per package), exact, in minor units. */
  unit_amount_decimal: string;
  flat_amount: number;
  /** quantity × unit + flat, exact (may carry sub-minor digits). */
  amount_decimal: string;
}

export interface PriceResult {
  quantity: number;
  /** The exact quantity, when it was given as a decimal string. */
  quantity_decimal?: string;
  /** Integer minor units: amount_decimal rounded once, half away from zero. */
  amount: number;
  /** The exact amount before rounding, in minor units. */
  amount_decimal: string;
  rows: PriceRow[];
}

/** A price that cannot be computed (too large; an invalid scheme reached the engine). */
export class PricingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PricingError';
  }
}

// ---- Exact decimals ---------------------------------------------------------

/** Every exact amount is a bigint in 10^-12 of the minor unit. */
const SCALE = 10n ** BigInt(maxDecimalPlaces);
const decimalPattern = /^(0|[1-9]\d{0,11})(\.\d{1,12})?$/;

/** "12.5" → 12.5 × 10^12 as a bigint; null for anything else. */
export function parseDecimal(text: string): bigint | null {
  if (typeof text !== 'string' || !decimalPattern.test(text)) return null;
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole!) * SCALE + BigInt(fraction.padEnd(maxDecimalPlaces, '0'));
}

/** The scaled bigint as a plain decimal string without trailing zeros ("12.5", "-3", "0.125"). */
export function formatDecimal(scaled: bigint): string {
  const sign = scaled < 0n ? '-' : '';
  const abs = scaled < 0n ? -scaled : scaled;
  const whole = abs / SCALE;
  const fraction = (abs % SCALE).toString().padStart(maxDecimalPlaces, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** Rounds a scaled amount to an integer of minor units, half away from zero: THE rounding rule. */
export function roundHalfAwayFromZero(scaled: bigint): bigint {
  const abs = scaled < 0n ? -scaled : scaled;
  const rounded = (2n * abs + SCALE) / (2n * SCALE);
  return scaled < 0n ? -rounded : rounded;
}

const scaledInt = (minor: number): bigint => BigInt(minor) * SCALE;

/** A tier's unit price, scaled. */
function tierUnit(tier: Tier): bigint {
  if (tier.unit_amount_decimal != null) {
    const parsed = parseDecimal(tier.unit_amount_decimal);
    if (parsed === null)
      throw new PricingError(`Invalid unit_amount_decimal ${JSON.stringify(tier.unit_amount_decimal)}.`);
    return parsed;
  }
  return scaledInt(tier.unit_amount ?? 0);
}

// ---- The amount for a quantity ----------------------------------------------

/** Decimal places a usage quantity may carry. */
export const maxQuantityDecimalPlaces = 6;
/** Decimal places a percentage may carry ("2.9", "0.125"). */
export const maxPercentageDecimalPlaces = 6;
/** Quantities are bigints in 10^-6 of a unit; exact amounts in 10^-18 of the minor unit (a 10^-12 unit price × a 10^-6 quantity). */
const QSCALE = 10n ** BigInt(maxQuantityDecimalPlaces);
const XSCALE = SCALE * QSCALE;
const quantityPattern = /^(0|[1-9]\d{0,17})(\.\d{1,6})?$/;
const percentagePattern = /^(0|[1-9]\d{0,2})(\.\d{1,6})?$/;

/** "12.5" → 12.5 × 10^6 as a bigint (a usage quantity); null for anything else (negative, more than 6 places). */
export function parseQuantity(text: string): bigint | null {
  if (typeof text !== 'string' || !quantityPattern.test(text)) return null;
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole!) * QSCALE + BigInt(fraction.padEnd(maxQuantityDecimalPlaces, '0'));
}

/** A percentage ("2.9") as a unit price of the quantity, scaled like parseDecimal: 2.9% → 0.029 per unit. Null when invalid. */
export function percentageUnit(text: string): bigint | null {
  if (typeof text !== 'string' || !percentagePattern.test(text)) return null;
  const [whole, fraction = ''] = text.split('.');
  const micro = BigInt(whole!) * 10n ** 6n + BigInt(fraction.padEnd(maxPercentageDecimalPlaces, '0'));
  // micro is 10^-6 of a percent; a unit price is 10^-12 of a minor unit: × 10^6 / 100, exact.
  return micro * 10n ** 4n;
}

const trimmed = (abs: bigint, scale: bigint, places: number): string => {
  const fraction = (abs % scale).toString().padStart(places, '0').replace(/0+$/, '');
  return `${abs / scale}${fraction ? `.${fraction}` : ''}`;
};
/** A 10^-18 amount as a decimal string without trailing zeros. */
function formatExact(scaled: bigint): string {
  return `${scaled < 0n ? '-' : ''}${trimmed(scaled < 0n ? -scaled : scaled, XSCALE, 18)}`;
}
/** A 10^-6 quantity as a decimal string without trailing zeros. */
export function formatQuantity(micro: bigint): string {
  return trimmed(micro, QSCALE, maxQuantityDecimalPlaces);
}
function roundExact(scaled: bigint): bigint {
  const abs = scaled < 0n ? -scaled : scaled;
  const rounded = (2n * abs + XSCALE) / (2n * XSCALE);
  return scaled < 0n ? -rounded : rounded;
}

/**
 * What `pricing` charges for `quantity` units: integer minor units (rounded once, half
 * away from zero) and the rows that make it up. `quantity` is a non-negative integer, or a
 * decimal string of up to 6 places (usage). `events`: how many events made the quantity (a
 * percentage price's fixed fee per event; default 0). Throws PricingError when the result
 * would not be a safe integer.
 */
export function priceFor(
  pricing: UsagePricing,
  quantity: number | string,
  { events = 0 }: { events?: number } = {},
): PriceResult {
  const decimal = typeof quantity === 'string';
  let q: bigint;
  if (decimal) {
    const parsed = parseQuantity(quantity);
    if (parsed === null)
      throw new PricingError(
        `Quantity must be a non-negative decimal with at most ${maxQuantityDecimalPlaces} decimal places; got ${JSON.stringify(quantity)}.`,
      );
    q = parsed;
  } else {
    if (!Number.isSafeInteger(quantity) || quantity < 0)
      throw new PricingError(`Quantity must be a non-negative integer; got ${quantity}.`);
    q = BigInt(quantity) * QSCALE;
  }
  if (!Number.isSafeInteger(events) || events < 0)
    throw new PricingError(`Events must be a non-negative integer; got ${events}.`);
  /** A row's units as the API shows them: a number, and for a decimal quantity the exact string too. */
  const units = (micro: bigint) => ({
    quantity: Number(formatQuantity(micro)),
    ...(decimal ? { quantity_decimal: formatQuantity(micro) } : {}),
  });
  const unitNumber = (micro: bigint): number => Number(formatQuantity(micro));
  const rows: PriceRow[] = [];
  const row = (r: {
    tier: number | null;
    from_unit: number;
    up_to: number | null;
    micro: bigint;
    unit: bigint;
    flat_amount: number;
  }): bigint => {
    const amount = r.micro * r.unit + BigInt(r.flat_amount) * XSCALE;
    rows.push({
      tier: r.tier,
      from_unit: r.from_unit,
      up_to: r.up_to,
      ...units(r.micro),
      unit_amount_decimal: formatDecimal(r.unit),
      flat_amount: r.flat_amount,
      amount_decimal: formatExact(amount),
    });
    return amount;
  };
  let total = 0n;
  if (q > 0n) {
    switch (pricing.scheme) {
      case 'per_unit':
        total = row({
          tier: null,
          from_unit: 1,
          up_to: unitNumber(q),
          micro: q,
          unit: scaledInt(pricing.amount),
          flat_amount: 0,
        });
        break;
      case 'percentage': {
        const unit = percentageUnit(pricing.percentage);
        if (unit === null) throw new PricingError(`Invalid percentage ${JSON.stringify(pricing.percentage)}.`);
        total = row({ tier: null, from_unit: 1, up_to: unitNumber(q), micro: q, unit, flat_amount: 0 });
        break;
      }
      case 'package': {
        const size = BigInt(pricing.package_size) * QSCALE;
        const packages = pricing.round === 'up' ? (q + size - 1n) / size : q / size;
        // Rounded down, a quantity under one package costs nothing: no row.
        if (packages > 0n) {
          const amount = packages * scaledInt(pricing.amount) * QSCALE;
          rows.push({
            tier: null,
            from_unit: 1,
            up_to: Number(packages) * pricing.package_size,
            quantity: Number(packages),
            ...(decimal ? { quantity_decimal: packages.toString() } : {}),
            unit_amount_decimal: formatDecimal(scaledInt(pricing.amount)),
            flat_amount: 0,
            amount_decimal: formatExact(amount),
          });
          total = amount;
        }
        break;
      }
      case 'tiered': {
        const { tiers } = pricing;
        const boundOf = (tier: Tier): bigint => BigInt(tier.up_to as number) * QSCALE;
        if (pricing.tiers_mode === 'volume') {
          const index = tiers.findIndex((t) => t.up_to === 'inf' || q <= boundOf(t));
          if (index < 0) throw new PricingError('No tier takes this quantity: the last tier must be up_to "inf".');
          const tier = tiers[index]!;
          const from = index === 0 ? 1 : (tiers[index - 1]!.up_to as number) + 1;
          total = row({
            tier: index,
            from_unit: from,
            up_to: tier.up_to === 'inf' ? null : tier.up_to,
            micro: q,
            unit: tierUnit(tier),
            flat_amount: tier.flat_amount ?? 0,
          });
        } else {
          let previous = 0n;
          for (let index = 0; index < tiers.length && previous < q; index++) {
            const tier = tiers[index]!;
            const bound = tier.up_to === 'inf' ? q : boundOf(tier);
            const inTier = (bound < q ? bound : q) - previous;
            if (inTier <= 0n) throw new PricingError('Tiers must ascend.');
            // Tier bounds are whole units, so a tier starts at a whole unit even under a decimal quantity.
            total += row({
              tier: index,
              from_unit: Number(previous / QSCALE + 1n),
              up_to: tier.up_to === 'inf' ? null : tier.up_to,
              micro: inTier,
              unit: tierUnit(tier),
              flat_amount: tier.flat_amount ?? 0,
            });
            previous += inTier;
          }
          if (previous < q) throw new PricingError('No tier takes this quantity: the last tier must be up_to "inf".');
        }
        break;
      }
    }
  }
  // A percentage price's fixed fee per event, whatever the quantity.
  if (pricing.scheme === 'percentage' && events > 0 && pricing.fixed_amount_decimal != null) {
    const fee = parseDecimal(pricing.fixed_amount_decimal);
    if (fee === null)
      throw new PricingError(`Invalid fixed_amount_decimal ${JSON.stringify(pricing.fixed_amount_decimal)}.`);
    if (fee > 0n) {
      const amount = BigInt(events) * fee * QSCALE;
      rows.push({
        tier: null,
        from_unit: 1,
        up_to: events,
        quantity: events,
        ...(decimal ? { quantity_decimal: String(events) } : {}),
        unit_amount_decimal: formatDecimal(fee),
        flat_amount: 0,
        amount_decimal: formatExact(amount),
      });
      total += amount;
    }
  }
  const rounded = roundExact(total);
  if (rounded > BigInt(Number.MAX_SAFE_INTEGER))
    throw new PricingError(`The amount for ${decimal ? quantity : String(quantity)} units is too large.`);
  return {
    quantity: decimal ? unitNumber(q) : (quantity as number),
    ...(decimal ? { quantity_decimal: formatQuantity(q) } : {}),
    amount: Number(rounded),
    amount_decimal: formatExact(total),
    rows,
  };
}

// ---- Validation -------------------------------------------------------------

const isInt = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);

/**
 * Why `pricing` is not a price the engine can bill, one message per problem (empty:
 * valid). Messages name the field as the API takes it (`tiers[1].up_to`).
 */
export function pricingProblems(pricing: UsagePricing): string[] {
  const problems: string[] = [];
  const money = (value: unknown, field: string, { positive }: { positive: boolean }) => {
    if (!isInt(value) || value < (positive ? 1 : 0) || value > maxPriceAmount) {
      problems.push(`${field}: must be an integer of minor units from ${positive ? 1 : 0} to ${maxPriceAmount}.`);
    }
  };
  switch (pricing.scheme) {
    case 'per_unit':
      money(pricing.amount, 'amount', { positive: false });
      break;
    case 'package':
      money(pricing.amount, 'amount', { positive: false });
      if (!isInt(pricing.package_size) || pricing.package_size < 1 || pricing.package_size > maxQuantity)
        problems.push(`package_size: must be an integer from 1 to ${maxQuantity}.`);
      if (!packageRoundings.includes(pricing.round)) problems.push('package_round: must be "up" or "down".');
      break;
    case 'percentage':
      if (percentageUnit(pricing.percentage) === null || percentageUnit(pricing.percentage)! > percentageUnit('100')!) {
        problems.push(
          `percentage: must be a decimal string from "0" to "100" with at most ${maxPercentageDecimalPlaces} decimal places, like "2.9".`,
        );
      }
      if (pricing.fixed_amount_decimal != null) {
        const fee = parseDecimal(pricing.fixed_amount_decimal);
        if (fee === null)
          problems.push(
            `fixed_amount_decimal: must be a decimal string of minor units, like "30" or "0.5", with at most ${maxDecimalPlaces} decimal places.`,
          );
        else if (fee > scaledInt(maxPriceAmount))
          problems.push(`fixed_amount_decimal: must be at most ${maxPriceAmount}.`);
      }
      break;
    case 'tiered': {
      if (!tiersModes.includes(pricing.tiers_mode))
        problems.push('tiers_mode: must be "graduated" or "volume" for a tiered price.');
      const tiers = pricing.tiers;
      if (!Array.isArray(tiers) || tiers.length === 0) {
        problems.push('tiers: a tiered price needs at least one tier, the last with up_to "inf".');
        break;
      }
      if (tiers.length > maxTiers) problems.push(`tiers: at most ${maxTiers} tiers.`);
      let previous = 0;
      tiers.forEach((tier, index) => {
        const at = `tiers[${index}]`;
        const last = index === tiers.length - 1;
        if (tier.up_to === 'inf') {
          if (!last) problems.push(`${at}.up_to: only the last tier may be "inf".`);
        } else if (!isInt(tier.up_to) || tier.up_to < 1 || tier.up_to > maxQuantity) {
          problems.push(`${at}.up_to: must be an integer from 1 to ${maxQuantity}, or "inf" for the last tier.`);
        } else {
          if (tier.up_to <= previous)
            problems.push(
              `${at}.up_to: tiers must ascend; ${tier.up_to} is not above the previous tier's ${previous}.`,
            );
          if (last)
            problems.push(
              `${at}.up_to: the last tier must be "inf" (it takes every quantity above ${previous}); got ${tier.up_to}.`,
            );
          previous = Math.max(previous, tier.up_to);
        }
        const hasInt = tier.unit_amount != null;
        const hasDecimal = tier.unit_amount_decimal != null;
        if (hasInt === hasDecimal) {
          problems.push(
            `${at}: give exactly one of unit_amount and unit_amount_decimal${hasInt ? ', not both' : ' (0 for a tier of only a flat_amount)'}.`,
          );
        }
        if (hasInt) money(tier.unit_amount, `${at}.unit_amount`, { positive: false });
        if (hasDecimal && parseDecimal(tier.unit_amount_decimal!) === null) {
          problems.push(
            `${at}.unit_amount_decimal: must be a decimal string of minor units, like "0.125", with at most ${maxDecimalPlaces} decimal places.`,
          );
        } else if (hasDecimal && parseDecimal(tier.unit_amount_decimal!)! > scaledInt(maxPriceAmount)) {
          problems.push(`${at}.unit_amount_decimal: must be at most ${maxPriceAmount}.`);
        }
        if (tier.flat_amount != null) money(tier.flat_amount, `${at}.flat_amount`, { positive: false });
      });
      break;
    }
    default:
      problems.push(`pricing_scheme: must be one of ${usagePricingSchemes.join(', ')}.`);
  }
  return problems;
}

/** pricingProblems, thrown as one PricingError. */
export function assertValidPricing(pricing: UsagePricing): void {
  const problems = pricingProblems(pricing);
  if (problems.length > 0) throw new PricingError(problems.join(' '));
}
