/**
 * Intl formatters, made once per set of options. Building an Intl.NumberFormat or
 * Intl.DateTimeFormat costs far more than using one (tens of microseconds: locale
 * data is looked up and resolved), and every receipt email formats money and dates
 * several times (a renewal wave of thousands of receipts made thousands of them), and an
 * export formats a time in every cell.
 * Formatters are immutable, so one per key serves every caller. The keys come from
 * account settings (a few locales, time zones and currencies); the cache is emptied
 * if it ever grows past `maxEntries`.
 */
const maxEntries = 1_000;
const numberFormats = new Map<string, Intl.NumberFormat>();
const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();

function memo<F>(cache: Map<string, F>, key: string, make: () => F): F {
  let format = cache.get(key);
  if (!format) {
    if (cache.size >= maxEntries) cache.clear();
    format = make();
    cache.set(key, format);
  }
  return format;
}

export function numberFormat(locale: string, options: Intl.NumberFormatOptions): Intl.NumberFormat {
  return memo(numberFormats, `${locale}|${JSON.stringify(options)}`, () => new Intl.NumberFormat(locale, options));
}

/**
 * Throws as the constructor does (an unknown locale or time zone); nothing is cached then.
 * `key`, when given, names the formatter instead of its options (a caller that formats
 * every cell of an export keys by the one option that varies and spares the JSON key).
 */
export function dateTimeFormat(
  locale: string,
  options: Intl.DateTimeFormatOptions,
  key = `${locale}|${JSON.stringify(options)}`,
): Intl.DateTimeFormat {
  return memo(dateTimeFormats, key, () => new Intl.DateTimeFormat(locale, options));
}
