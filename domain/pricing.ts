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
 * THE rounding rule: the amount is computed exactly (bigint, in 10^-12 of the minor unit),
 * then rounded ONCE, half away from zero, to an integer of minor units. Tiers are never
 * rounded one by one; the breakdown shows each row's exact amount. Quantity 0 costs 0 in
 * every scheme (no tier is reached, no flat amount applies).
 */

export const pricingSchemes = ['per_unit', 'tiered', 'package'] as const;
export type PricingSchemeName = (typeof pricingSchemes)[number];
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

/** One row of a price's breakdown: what an invoice line shows under the amount. */
export interface PriceRow {
  /** The tier's 0-based index (tiered), else null. */
  tier: number | null;
  /** First and last unit this row prices (1-based, inclusive; last null: unbounded). Package: the units the packages cover. */
  from_unit: number;
  up_to: number | null;
  /** Units priced by this row; for a package price, the number of packages. */
  quantity: number;
  /** Per unit (per package), exact, in minor units. */
  unit_amount_decimal: string;
  flat_amount: number;
  /** quantity × unit + flat, exact (may carry sub-minor digits). */
  amount_decimal: string;
}

export interface PriceResult {
  quantity: number;
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
    if (parsed === null) throw new PricingError(`Invalid unit_amount_decimal ${JSON.stringify(tier.unit_amount_decimal)}.`);
    return parsed;
  }
  return scaledInt(tier.unit_amount ?? 0);
}

// ---- The amount for a quantity ----------------------------------------------

/**
 * What `pricing` charges for `quantity` units: integer minor units (rounded once, half
 * away from zero) and the rows that make it up. Throws PricingError when the result
 * would not be a safe integer.
 */
export function priceFor(pricing: Pricing, quantity: number): PriceResult {
  if (!Number.isSafeInteger(quantity) || quantity < 0) throw new PricingError(`Quantity must be a non-negative integer; got ${quantity}.`);
  const q = BigInt(quantity);
  const rows: PriceRow[] = [];
  const row = (r: Omit<PriceRow, 'unit_amount_decimal' | 'amount_decimal'> & { unit: bigint }): bigint => {
    const amount = BigInt(r.quantity) * r.unit + scaledInt(r.flat_amount);
    rows.push({ tier: r.tier, from_unit: r.from_unit, up_to: r.up_to, quantity: r.quantity, unit_amount_decimal: formatDecimal(r.unit), flat_amount: r.flat_amount, amount_decimal: formatDecimal(amount) });
    return amount;
  };
  let total = 0n;
  if (quantity > 0) {
    switch (pricing.scheme) {
      case 'per_unit':
        total = row({ tier: null, from_unit: 1, up_to: quantity, quantity, unit: scaledInt(pricing.amount), flat_amount: 0 });
        break;
      case 'package': {
        const size = BigInt(pricing.package_size);
        const packages = pricing.round === 'up' ? (q + size - 1n) / size : q / size;
        // Rounded down, a quantity under one package costs nothing: no row.
        if (packages > 0n) {
          total = row({ tier: null, from_unit: 1, up_to: Number(packages * size), quantity: Number(packages), unit: scaledInt(pricing.amount), flat_amount: 0 });
        }
        break;
      }
      case 'tiered': {
        const { tiers } = pricing;
        if (pricing.tiers_mode === 'volume') {
          const index = tiers.findIndex((t) => t.up_to === 'inf' || q <= BigInt(t.up_to));
          if (index < 0) throw new PricingError('No tier takes this quantity: the last tier must be up_to "inf".');
          const tier = tiers[index]!;
          const from = index === 0 ? 1 : (tiers[index - 1]!.up_to as number) + 1;
          total = row({ tier: index, from_unit: from, up_to: tier.up_to === 'inf' ? null : tier.up_to, quantity, unit: tierUnit(tier), flat_amount: tier.flat_amount ?? 0 });
        } else {
          let previous = 0n;
          for (let index = 0; index < tiers.length && previous < q; index++) {
            const tier = tiers[index]!;
            const bound = tier.up_to === 'inf' ? q : BigInt(tier.up_to);
            const units = (bound < q ? bound : q) - previous;
            if (units <= 0n) throw new PricingError('Tiers must ascend.');
            total += row({ tier: index, from_unit: Number(previous + 1n), up_to: tier.up_to === 'inf' ? null : tier.up_to, quantity: Number(units), unit: tierUnit(tier), flat_amount: tier.flat_amount ?? 0 });
            previous += units;
          }
          if (previous < q) throw new PricingError('No tier takes this quantity: the last tier must be up_to "inf".');
        }
        break;
      }
    }
  }
  const rounded = roundHalfAwayFromZero(total);
  if (rounded > BigInt(Number.MAX_SAFE_INTEGER)) throw new PricingError(`The amount for ${quantity} units is too large.`);
  return { quantity, amount: Number(rounded), amount_decimal: formatDecimal(total), rows };
}

// ---- Validation -------------------------------------------------------------

const isInt = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);

/**
 * Why `pricing` is not a price the engine can bill, one message per problem (empty:
 * valid). Messages name the field as the API takes it (`tiers[1].up_to`).
 */
export function pricingProblems(pricing: Pricing): string[] {
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
      if (!isInt(pricing.package_size) || pricing.package_size < 1 || pricing.package_size > maxQuantity) problems.push(`package_size: must be an integer from 1 to ${maxQuantity}.`);
      if (!packageRoundings.includes(pricing.round)) problems.push('package_round: must be "up" or "down".');
      break;
    case 'tiered': {
      if (!tiersModes.includes(pricing.tiers_mode)) problems.push('tiers_mode: must be "graduated" or "volume" for a tiered price.');
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
          if (tier.up_to <= previous) problems.push(`${at}.up_to: tiers must ascend; ${tier.up_to} is not above the previous tier's ${previous}.`);
          if (last) problems.push(`${at}.up_to: the last tier must be "inf" (it takes every quantity above ${previous}); got ${tier.up_to}.`);
          previous = Math.max(previous, tier.up_to);
        }
        const hasInt = tier.unit_amount != null;
        const hasDecimal = tier.unit_amount_decimal != null;
        if (hasInt === hasDecimal) {
          problems.push(`${at}: give exactly one of unit_amount and unit_amount_decimal${hasInt ? ', not both' : ' (0 for a tier of only a flat_amount)'}.`);
        }
        if (hasInt) money(tier.unit_amount, `${at}.unit_amount`, { positive: false });
        if (hasDecimal && parseDecimal(tier.unit_amount_decimal!) === null) {
          problems.push(`${at}.unit_amount_decimal: must be a decimal string of minor units, like "0.125", with at most ${maxDecimalPlaces} decimal places.`);
        } else if (hasDecimal && parseDecimal(tier.unit_amount_decimal!)! > scaledInt(maxPriceAmount)) {
          problems.push(`${at}.unit_amount_decimal: must be at most ${maxPriceAmount}.`);
        }
        if (tier.flat_amount != null) money(tier.flat_amount, `${at}.flat_amount`, { positive: false });
      });
      break;
    }
    default:
      problems.push(`pricing_scheme: must be one of ${pricingSchemes.join(', ')}.`);
  }
  return problems;
}

/** pricingProblems, thrown as one PricingError. */
export function assertValidPricing(pricing: Pricing): void {
  const problems = pricingProblems(pricing);
  if (problems.length > 0) throw new PricingError(problems.join(' '));
}
