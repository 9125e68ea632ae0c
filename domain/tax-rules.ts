/**
 * Which tax rates apply to an invoice line, as the built-in tax calculator decides it
 * (services/taxes/calculator.ts, docs/discounts-and-taxes.md#taxes). Pure: the caller loads the
 * rates, the subscription's and the account's defaults and the customer.
 *
 * For each line, the first that names any rate:
 *  1. the line's own rates (a one-off invoice item's `tax_rates`);
 *  2. its subscription item's `tax_rates` (the item billing the line's plan);
 *  3. the subscription's `default_tax_rates`;
 *  4. the account's default tax rates in the mode, those active and whose jurisdiction matches the
 *     customer's address: a rate without a country matches everyone; one with a country matches a
 *     customer in that country; one with a state too, a customer in that state of that country.
 * Rates named explicitly (1–3) apply as named (they were active when assigned, as Stripe keeps an
 * archived rate on the subscriptions that use it). A customer `exempt` or `reverse` pays no tax at all.
 */
import { parsePercentage, type TaxExempt, type TotalsTaxRate } from './invoice-totals.ts';

/** The kinds of tax a rate may name (its `tax_type`, as Stripe's): the API's choices and the dashboard's. */
export const taxTypes = [
  'vat',
  'gst',
  'hst',
  'pst',
  'qst',
  'rst',
  'jct',
  'sales_tax',
  'service_tax',
  'lease_tax',
  'amusement_tax',
  'communications_tax',
] as const;

/** A stored tax rate as the rules read it. */
export interface TaxRateRecord extends TotalsTaxRate {
  active: boolean;
  country: string | null;
  state: string | null;
}

export interface TaxAddress {
  country: string | null;
  state: string | null;
}

/** Whether an account default rate's jurisdiction covers the customer's address. */
export function jurisdictionMatches(rate: Pick<TaxRateRecord, 'country' | 'state'>, address: TaxAddress): boolean {
  if (rate.country === null) return true;
  if (address.country === null || address.country.toUpperCase() !== rate.country.toUpperCase()) return false;
  if (rate.state === null) return true;
  return address.state !== null && address.state.toUpperCase() === rate.state.toUpperCase();
}

export interface LineTaxSources {
  /** The line's own rate ids (a one-off invoice item's); undefined or empty: none. */
  line?: readonly string[] | null;
  /** The subscription item's rate ids; undefined or empty: none. */
  item?: readonly string[] | null;
  /** The subscription's default rate ids. */
  subscription?: readonly string[] | null;
  /** The account's default rate ids in the mode. */
  account?: readonly string[] | null;
}

/** The rates of one line, in the order named (a rate named twice counts once); [] when exempt or reverse. */
export function ratesForLine(
  sources: LineTaxSources,
  rates: ReadonlyMap<string, TaxRateRecord>,
  customer: TaxAddress & { tax_exempt: TaxExempt },
): TaxRateRecord[] {
  if (customer.tax_exempt !== 'none') return [];
  const pick = (ids: readonly string[]) =>
    [...new Set(ids)].map((id) => rates.get(id)).filter((r): r is TaxRateRecord => r !== undefined);
  for (const ids of [sources.line, sources.item, sources.subscription]) {
    if (ids && ids.length > 0) return pick(ids);
  }
  return pick(sources.account ?? []).filter((rate) => rate.active && jurisdictionMatches(rate, customer));
}

/**
 * A percentage as given (a number or a decimal string, 0–100, at most 4 places) in its one
 * written form: no leading zeros, no trailing fractional zeros ("19", "8.875", "0"); null when invalid.
 */
export function normalizePercentage(value: number | string): string | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return null;
    text = String(value);
    if (/e/i.test(text)) return null;
  } else text = value.trim();
  if (!/^\d+(\.\d+)?$/.test(text)) return null;
  let [whole, fraction = ''] = text.split('.');
  whole = whole!.replace(/^0+(?=\d)/, '');
  fraction = fraction.replace(/0+$/, '');
  if (fraction.length > 4 || whole.length > 3) return null;
  const normalized = fraction ? `${whole}.${fraction}` : whole;
  return parsePercentage(normalized) === null ? null : normalized;
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });
/** Whether `code` is an ISO 3166-1 alpha-2 country code (upper case), as ICU knows them (no EU, UK or ZZ). */
export function isCountryCode(code: string): boolean {
  if (!/^[A-Z]{2}$/.test(code) || ['EU', 'EZ', 'UK', 'UN', 'ZZ', 'QO'].includes(code)) return false;
  return regionNames.of(code) !== code;
}
