/**
 * A price in words, for people: the dashboard's plans list, the customer portal's plan
 * list and the subscription card ("Graduated: 1–10 at $10.00, 11+ at $8.00 every month").
 * Pure (no I/O), so the API and the dashboard (bundled by Vite) share it. Amounts are
 * minor units; a tier's `unit_amount_decimal` keeps its sub-minor digits ("$7.505").
 */
import { currencyExponent } from './money.ts';
import type { Tier } from './pricing.ts';

export interface PriceDescribed {
  type?: 'recurring' | 'one_time' | null;
  pricing_scheme?: 'per_unit' | 'tiered' | 'package' | 'percentage' | null;
  /** The percentage scheme (metered plans): percent of the summed usage, and a fee per event (minor units, decimal). */
  percentage?: string | null;
  fixed_amount_decimal?: string | null;
  amount: number;
  currency: string;
  tiers_mode?: 'graduated' | 'volume' | null;
  tiers?: Tier[] | null;
  package_size?: number | null;
  package_round?: 'up' | 'down' | null;
  interval?: string | null;
  interval_count?: number | null;
}

/** A decimal string of minor units ("750.5") as major units ("7.505") for a currency of `exponent` decimals. */
export function minorToMajor(minor: string, exponent: number): string {
  const negative = minor.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? minor.slice(1) : minor).split('.');
  const shift = fraction.length + exponent;
  const digits = (whole + fraction).padStart(shift + 1, '0');
  const integer = digits.slice(0, digits.length - shift).replace(/^0+(?=\d)/, '');
  const decimals = digits.slice(digits.length - shift).replace(/0+$/, '');
  return `${negative ? '-' : ''}${integer}${decimals ? `.${decimals}` : ''}`;
}

/** Minor units (an integer, or a decimal string with sub-minor digits) as money text: at least the currency's decimals, more when the price has them. */
export function formatMinor(minor: number | string, currency: string, locale = 'en-US'): string {
  const exponent = currencyExponent(currency);
  const major = minorToMajor(String(minor), exponent);
  const decimals = Math.max(exponent, (major.split('.')[1] ?? '').length);
  try {
    // A string keeps every digit (Intl.NumberFormat formats decimal strings exactly).
    return new Intl.NumberFormat(locale, {
      style: 'currency',
      currency,
      minimumFractionDigits: exponent,
      maximumFractionDigits: Math.min(decimals, 20),
    }).format(major as unknown as number);
  } catch {
    return `${major} ${currency}`;
  }
}

const unitPrice = (tier: Tier, currency: string, locale?: string) =>
  tier.unit_amount_decimal != null
    ? formatMinor(tier.unit_amount_decimal, currency, locale)
    : formatMinor(tier.unit_amount ?? 0, currency, locale);

/** "1–10 at $10.00, 11+ at $8.00 + $5.00 flat": each tier's units, unit price and flat amount. */
export function tiersText(tiers: Tier[], currency: string, locale?: string): string {
  let from = 1;
  return tiers
    .map((tier) => {
      const units = tier.up_to === 'inf' ? `${from}+` : tier.up_to === from ? `${from}` : `${from}–${tier.up_to}`;
      if (tier.up_to !== 'inf') from = tier.up_to + 1;
      const flat = tier.flat_amount ? ` + ${formatMinor(tier.flat_amount, currency, locale)} flat` : '';
      const zeroUnit =
        (tier.unit_amount ?? 0) === 0 &&
        (tier.unit_amount_decimal == null || /^0(\.0*)?$/.test(tier.unit_amount_decimal));
      return zeroUnit && flat
        ? `${units} for ${formatMinor(tier.flat_amount!, currency, locale)} flat`
        : `${units} at ${unitPrice(tier, currency, locale)}${flat}`;
    })
    .join(', ');
}

/** How often: "every month", "every 3 months", or "one time". */
export function intervalText(price: Pick<PriceDescribed, 'type' | 'interval' | 'interval_count'>): string {
  if (price.type === 'one_time' || !price.interval) return 'one time';
  const count = price.interval_count ?? 1;
  return count === 1 ? `every ${price.interval}` : `every ${count} ${price.interval}s`;
}

/** The price alone: "$20.00 per unit", "$5.00 per 100 units (rounded up)", "Graduated: 1–10 at $10.00, 11+ at $8.00". */
export function schemeText(price: PriceDescribed, locale?: string): string {
  const { currency } = price;
  switch (price.pricing_scheme ?? 'per_unit') {
    case 'package':
      return `${formatMinor(price.amount, currency, locale)} per ${price.package_size} units (rounded ${price.package_round ?? 'up'})`;
    case 'tiered':
      return `${price.tiers_mode === 'volume' ? 'Volume' : 'Graduated'}: ${tiersText(price.tiers ?? [], currency, locale)}`;
    case 'percentage': {
      const fee =
        price.fixed_amount_decimal && !/^0(\.0*)?$/.test(price.fixed_amount_decimal)
          ? ` + ${formatMinor(price.fixed_amount_decimal, currency, locale)} per event`
          : '';
      return `${price.percentage ?? '0'}% of usage${fee}`;
    }
    default:
      return `${formatMinor(price.amount, currency, locale)} per unit`;
  }
}

/**
 * The whole price: scheme and interval. A per-unit plan reads as before
 * ("$20.00 every month"); the others say their scheme ("Graduated: 1–10 at $10.00,
 * 11+ at $8.00, every month"; "$50.00 one time").
 */
export function priceText(price: PriceDescribed, locale?: string): string {
  const when = intervalText(price);
  if ((price.pricing_scheme ?? 'per_unit') === 'per_unit')
    return `${formatMinor(price.amount, price.currency, locale)} ${when}`;
  return `${schemeText(price, locale)}, ${when}`;
}

/** The same price in another of its currencies (`currency_options`): its amount, or its tiers. */
export function inCurrency<P extends PriceDescribed>(
  price: P,
  currency: string,
  option: { amount: number; tiers?: Tier[] | null } | undefined,
): P {
  if (!option || currency === price.currency) return price;
  return { ...price, currency, amount: option.amount, tiers: option.tiers ?? price.tiers };
}

/**
 * What a person types ("7.505", major units) as minor units: a whole number ("750.5" is not),
 * or a decimal string of minor units with the sub-minor digits (for `unit_amount_decimal`).
 * null when the text is not a plain non-negative decimal number.
 */
export function majorToMinor(text: string, exponent: number): { minor: number } | { decimal: string } | null {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return null;
  const [, whole, fraction = ''] = match;
  const padded = fraction.padEnd(exponent, '0');
  const integer = `${whole}${padded.slice(0, exponent)}`.replace(/^0+(?=\d)/, '');
  const rest = padded.slice(exponent).replace(/0+$/, '');
  return rest ? { decimal: `${integer}.${rest}` } : { minor: Number(integer) };
}
