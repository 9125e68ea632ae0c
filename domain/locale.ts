/** Validation of account settings, with the platform's own tables (Node ships full ICU). */
const timezones = new Set(Intl.supportedValuesOf('timeZone'));

export function isIanaTimezone(value: string): boolean {
  if (value === 'UTC' || timezones.has(value)) return true;
  try {
    // Aliases (e.g. "Europe/Kiev") are valid IANA names that the list leaves out.
    return new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone.length > 0 && value.includes('/');
  } catch {
    return false;
  }
}

/** A well-formed BCP 47 language tag (en, en-US, pt-BR, zh-Hant-TW). */
export function isBcp47Tag(value: string): boolean {
  try {
    return Intl.getCanonicalLocales(value).length === 1;
  } catch {
    return false;
  }
}
