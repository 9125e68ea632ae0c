/** Validation of account settings, with the platform's own tables (Node ships full ICU). */
import { dateTimeFormat } from './intl-formats.ts';

const timezones = new Set(Intl.supportedValuesOf('timeZone'));

export function isIanaTimezone(value: string): boolean {
  if (value === 'UTC' || timezones.has(value)) return true;
  try {
    // Aliases (e.g. "Europe/Kiev") are valid IANA names that the list leaves out.
    return (
      new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone.length > 0 && value.includes('/')
    );
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

/** How a reader sees dates: the account's timezone and language (settings.timezone, settings.language). */
export interface DateStyle {
  timeZone?: string;
  locale?: string;
}

function dateFormat(style: DateStyle): Intl.DateTimeFormat {
  try {
    return dateTimeFormat(style.locale || 'en-US', { dateStyle: 'medium', timeZone: style.timeZone || 'UTC' });
  } catch {
    return dateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' });
  }
}

/** A human date: "Jan 31, 2027" (en-US), "31 janv. 2027" (fr). */
export function formatHumanDate(instant: Date, style: DateStyle = {}): string {
  return dateFormat(style).format(instant);
}

/** A billing period as people read it: "Jan 31, 2027 – Feb 28, 2027", both ends in full. */
export function formatPeriod(start: Date, end: Date, style: DateStyle = {}): string {
  const format = dateFormat(style);
  return `${format.format(start)} – ${format.format(end)}`;
}

const isoInstant = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g;

/**
 * Text stored with ISO instants in it (an invoice line's "Unused time on Pro after
 * 2027-01-31T00:00:00.000Z") as customers read it: each instant as a human date.
 * A new invoice stores its lines this way (services/invoices/cycle-invoices.ts openOrCreateInvoice), so the
 * API, emails and PDFs read the same; emails and PDFs apply it too, for lines stored before.
 */
export function humanizeInstants(text: string, style: DateStyle = {}): string {
  return text.replace(isoInstant, (match) => {
    const instant = new Date(match);
    return Number.isNaN(instant.getTime()) ? match : formatHumanDate(instant, style);
  });
}
