import { numberFormat } from './intl-formats.ts';

/**
 * Money is an integer amount in the currency's minor unit. The exponent (how many
 * minor units make one major unit) comes from ISO 4217; currencies not listed here
 * have two decimals.
 */
const zeroDecimal = new Set([
  'BIF',
  'CLP',
  'DJF',
  'GNF',
  'ISK',
  'JPY',
  'KMF',
  'KRW',
  'PYG',
  'RWF',
  'UGX',
  'UYI',
  'VND',
  'VUV',
  'XAF',
  'XOF',
  'XPF',
]);
const threeDecimal = new Set(['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']);

/** Every active ISO 4217 code, as Intl knows them (Node ships full ICU). */
const knownCurrencies = new Set(Intl.supportedValuesOf('currency'));

export function isCurrencyCode(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && knownCurrencies.has(code);
}

export function currencyExponent(currency: string): number {
  if (zeroDecimal.has(currency)) return 0;
  if (threeDecimal.has(currency)) return 3;
  return 2;
}

/** "USD 12.50" style text for emails, invoices and pages. */
export function formatMoney(amount: number, currency: string, locale = 'en-US'): string {
  const exponent = currencyExponent(currency);
  return numberFormat(locale, {
    style: 'currency',
    currency,
    minimumFractionDigits: exponent,
    maximumFractionDigits: exponent,
  }).format(amount / 10 ** exponent);
}
