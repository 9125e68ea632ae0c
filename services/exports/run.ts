import type { Writable } from 'node:stream';

import type { EntityManager } from '@mikro-orm/postgresql';

import {
  balanceTransactionStatuses,
  balanceTransactionTypes,
  couponDurations,
  creditNoteReasons,
  creditNoteStatuses,
  Export,
  type ExportFormat,
  type ExportResource,
  Invoice,
  invoiceStatuses,
  payoutMethods,
  payoutStatuses,
  transactionStatuses,
  transactionTypes,
} from '../../db/entities/index.ts';
import { dateTimeFormat } from '../../domain/intl-formats.ts';
import { billingReasons } from '../../domain/invoice-billing-reason.ts';
import { currencyExponent } from '../../domain/money.ts';
import { planTypes, pricingSchemes } from '../../domain/pricing.ts';
import { parseSearchQuery } from '../../domain/search-query.ts';
import { subscriptionStatuses } from '../../domain/subscription.ts';
import { serializeExport } from '../../objects/export.ts';
import { recordEvent } from '../events/record.ts';
import { invoicePdf } from '../invoices/pdf.ts';
import { compileSearch, searchTables } from '../search/query.ts';
import type { ExportStorage } from './storage.ts';

/**
 * Exports (docs/exports-and-search.md): an account's rows of one resource, paged by
 * keyset (id ascending) and streamed into a file of the asked format, so memory stays
 * flat however many rows. Run by exportWorkflow's activity; each attempt writes a new
 * temporary file from the first row and publishes it only when complete, so a worker
 * killed mid-export leaves no corrupt file: the retry starts over.
 */

type Kind = 'text' | 'int' | 'time' | 'json';
type Column = { name: string; sql: string; kind: Kind };

/** Columns per resource, in file order. An amount column is followed by `currency` and its `_formatted` twin (computed). */
export const exportColumns: Record<ExportResource, Column[]> = {
  transactions: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'type', sql: 't.type', kind: 'text' },
    { name: 'status', sql: 't.status', kind: 'text' },
    { name: 'amount', sql: 't.amount', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'amount_formatted', sql: '', kind: 'text' },
    { name: 'amount_refunded', sql: 't.amount_refunded', kind: 'int' },
    { name: 'reference', sql: 't.reference', kind: 'text' },
    { name: 'customer', sql: 't.customer_id', kind: 'text' },
    { name: 'invoice', sql: 't.invoice_id', kind: 'text' },
    { name: 'subscription', sql: 't.subscription_id', kind: 'text' },
    { name: 'risk_level', sql: 't.risk_level', kind: 'text' },
    { name: 'metadata', sql: 't.metadata', kind: 'json' },
  ],
  balance_transactions: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'type', sql: 't.type', kind: 'text' },
    { name: 'status', sql: 't.status', kind: 'text' },
    { name: 'source', sql: 't.source', kind: 'text' },
    { name: 'amount', sql: 't.amount', kind: 'int' },
    { name: 'fee', sql: 't.fee', kind: 'int' },
    { name: 'net', sql: 't.net', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'amount_formatted', sql: '', kind: 'text' },
    { name: 'available_on', sql: 't.available_on', kind: 'time' },
  ],
  customers: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'email', sql: 't.email', kind: 'text' },
    { name: 'name', sql: 't.name', kind: 'text' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'country', sql: "t.address ->> 'country'", kind: 'text' },
    { name: 'tax_exempt', sql: 't.tax_exempt', kind: 'text' },
  ],
  invoices: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'number', sql: "case when t.status = 'draft' then null else t.number end", kind: 'text' },
    { name: 'status', sql: 't.status', kind: 'text' },
    { name: 'customer', sql: 't.customer_id', kind: 'text' },
    { name: 'customer_email', sql: 't.customer_email', kind: 'text' },
    { name: 'subscription', sql: 't.subscription_id', kind: 'text' },
    { name: 'total', sql: 't.total', kind: 'int' },
    { name: 'amount_paid', sql: 't.amount_paid', kind: 'int' },
    { name: 'amount_due', sql: 't.amount_due', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'total_formatted', sql: '', kind: 'text' },
    { name: 'period_start', sql: 't.period_start', kind: 'time' },
    { name: 'period_end', sql: 't.period_end', kind: 'time' },
    { name: 'paid_at', sql: 't.paid_at', kind: 'time' },
    // Each line's plan, quantity, unit amount (null when the amount is not a whole unit amount × quantity) and amount, in order.
    {
      name: 'lines',
      sql: "(select coalesce(jsonb_agg(jsonb_build_object('description', l->>'description', 'plan', l->'plan', 'quantity', (l->>'quantity')::int, 'unit_amount', l->'amount', 'amount', coalesce((l->>'total')::bigint, (l->>'amount')::bigint * (l->>'quantity')::int), 'proration', coalesce((l->>'proration')::boolean, false)) order by n), '[]'::jsonb) from jsonb_array_elements(t.lines) with ordinality as x(l, n))",
      kind: 'json',
    },
    // How it adds up (docs/discounts-and-taxes.md): subtotal − discount + exclusive tax = total; the balance it used.
    { name: 'subtotal', sql: 't.subtotal', kind: 'int' },
    { name: 'discount', sql: 't.discount', kind: 'int' },
    { name: 'total_excluding_tax', sql: 'coalesce(t.total_excluding_tax, t.total)', kind: 'int' },
    { name: 'tax', sql: 't.tax', kind: 'int' },
    { name: 'tax_by_rate', sql: "coalesce(t.total_tax_amounts, '[]'::jsonb)", kind: 'json' },
    { name: 'starting_balance', sql: 't.starting_balance', kind: 'int' },
    { name: 'ending_balance', sql: 't.ending_balance', kind: 'int' },
    { name: 'customer_tax_exempt', sql: 't.customer_tax_exempt', kind: 'text' },
    // Why it was made (domain/invoice-billing-reason.ts); null only on rows inserted by hand.
    { name: 'billing_reason', sql: 't.billing_reason', kind: 'text' },
  ],
  subscriptions: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'status', sql: 't.status', kind: 'text' },
    { name: 'customer', sql: 't.customer_id', kind: 'text' },
    { name: 'plan', sql: 't.plan_id', kind: 'text' },
    { name: 'quantity', sql: 'coalesce(t.quantity, 1)', kind: 'int' },
    { name: 'pending_plan', sql: 't.pending_plan_id', kind: 'text' },
    {
      name: 'pending_quantity',
      sql: 'case when t.pending_plan_id is null then null else coalesce(t.pending_quantity, t.quantity, 1) end',
      kind: 'int',
    },
    // What it bills in: its own currency, or (made before subscriptions had one) its plan's.
    {
      name: 'currency',
      sql: '(coalesce(t.currency, (select p.currency from plans p where p.id = t.plan_id)))',
      kind: 'text',
    },
    { name: 'current_period_start', sql: 't.current_period_start', kind: 'time' },
    { name: 'current_period_end', sql: 't.current_period_end', kind: 'time' },
    { name: 'cancel_at_period_end', sql: 't.cancel_at_period_end', kind: 'text' },
    { name: 'canceled_at', sql: 't.canceled_at', kind: 'time' },
  ],
  payouts: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'status', sql: 't.status', kind: 'text' },
    { name: 'method', sql: 't.method', kind: 'text' },
    { name: 'amount', sql: 't.amount', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'amount_formatted', sql: '', kind: 'text' },
    { name: 'description', sql: 't.description', kind: 'text' },
    { name: 'paid_at', sql: 't.paid_at', kind: 'time' },
  ],
  plans: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'name', sql: 't.name', kind: 'text' },
    { name: 'active', sql: 't.active', kind: 'text' },
    { name: 'type', sql: 't.type', kind: 'text' },
    { name: 'pricing_scheme', sql: 't.pricing_scheme', kind: 'text' },
    { name: 'amount', sql: 't.amount', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'amount_formatted', sql: '', kind: 'text' },
    { name: 'interval', sql: "case when t.type = 'one_time' then null else t.interval end", kind: 'text' },
    { name: 'interval_count', sql: "case when t.type = 'one_time' then null else t.interval_count end", kind: 'int' },
    { name: 'tiers_mode', sql: 't.tiers_mode', kind: 'text' },
    { name: 'tiers', sql: 't.tiers', kind: 'json' },
    { name: 'package_size', sql: 't.package_size', kind: 'int' },
    { name: 'package_round', sql: 't.package_round', kind: 'text' },
    { name: 'currency_options', sql: "coalesce(t.currency_options, '{}'::jsonb)", kind: 'json' },
  ],
  // What each credit note gave back and how (docs/discounts-and-taxes.md#credit-notes-and-customer-balance).
  credit_notes: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'number', sql: 't.number', kind: 'text' },
    { name: 'status', sql: 't.status', kind: 'text' },
    { name: 'invoice', sql: 't.invoice_id', kind: 'text' },
    { name: 'customer', sql: 't.customer_id', kind: 'text' },
    { name: 'total', sql: 't.total', kind: 'int' },
    { name: 'refund_amount', sql: 't.refund_amount', kind: 'int' },
    { name: 'credit_amount', sql: 't.credit_amount', kind: 'int' },
    { name: 'out_of_band_amount', sql: 't.out_of_band_amount', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'total_formatted', sql: '', kind: 'text' },
    { name: 'reason', sql: 't.reason', kind: 'text' },
    { name: 'memo', sql: 't.memo', kind: 'text' },
    { name: 'refund', sql: 't.refund_transaction_id', kind: 'text' },
    { name: 'voided_at', sql: 't.voided_at', kind: 'time' },
  ],
  // Coupons (docs/discounts-and-taxes.md#coupons): deleted ones too (`deleted_at`), whose discounts go on.
  // Paged by their row key (`cpn_…`, see tables): a deleted coupon's `id` may be in use again.
  coupons: [
    { name: 'id', sql: 't.coupon_id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'name', sql: 't.name', kind: 'text' },
    { name: 'percent_off', sql: 't.percent_off', kind: 'text' },
    { name: 'amount_off', sql: 't.amount_off', kind: 'int' },
    { name: 'currency', sql: 't.currency', kind: 'text' },
    { name: 'amount_off_formatted', sql: '', kind: 'text' },
    { name: 'duration', sql: 't.duration', kind: 'text' },
    { name: 'duration_in_months', sql: 't.duration_in_months', kind: 'int' },
    { name: 'max_redemptions', sql: 't.max_redemptions', kind: 'int' },
    { name: 'times_redeemed', sql: 't.times_redeemed', kind: 'int' },
    { name: 'redeem_by', sql: 't.redeem_by', kind: 'time' },
    { name: 'applies_to_plans', sql: 't.applies_to_plans', kind: 'json' },
    { name: 'applies_to_products', sql: 't.applies_to_products', kind: 'json' },
    { name: 'deleted_at', sql: 't.deleted_at', kind: 'time' },
    { name: 'metadata', sql: 't.metadata', kind: 'json' },
  ],
  promotion_codes: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'code', sql: 't.code', kind: 'text' },
    { name: 'coupon', sql: '(select c.id from coupons c where c.key = t.coupon_key)', kind: 'text' },
    { name: 'active', sql: 't.active', kind: 'text' },
    { name: 'customer', sql: 't.customer_id', kind: 'text' },
    { name: 'max_redemptions', sql: 't.max_redemptions', kind: 'int' },
    { name: 'times_redeemed', sql: 't.times_redeemed', kind: 'int' },
    { name: 'expires_at', sql: 't.expires_at', kind: 'time' },
    { name: 'first_time_transaction', sql: 't.first_time_transaction', kind: 'text' },
    { name: 'minimum_amount', sql: 't.minimum_amount', kind: 'int' },
    { name: 'minimum_amount_currency', sql: 't.minimum_amount_currency', kind: 'text' },
    { name: 'metadata', sql: 't.metadata', kind: 'json' },
  ],
  tax_rates: [
    { name: 'id', sql: 't.id', kind: 'text' },
    { name: 'created', sql: 't.created_at', kind: 'time' },
    { name: 'display_name', sql: 't.display_name', kind: 'text' },
    { name: 'description', sql: 't.description', kind: 'text' },
    { name: 'percentage', sql: 't.percentage', kind: 'text' },
    { name: 'inclusive', sql: 't.inclusive', kind: 'text' },
    { name: 'active', sql: 't.active', kind: 'text' },
    { name: 'country', sql: 't.country', kind: 'text' },
    { name: 'state', sql: 't.state', kind: 'text' },
    { name: 'jurisdiction', sql: 't.jurisdiction', kind: 'text' },
    { name: 'tax_type', sql: 't.tax_type', kind: 'text' },
    { name: 'metadata', sql: 't.metadata', kind: 'json' },
  ],
};
/**
 * The list filters each resource's export takes (`filters` in POST /v1/exports), as
 * equalities on a column; those with a closed set of values are checked against it.
 */
export const exportFilters: Record<ExportResource, Record<string, { sql: string; values?: readonly string[] }>> = {
  transactions: {
    status: { sql: 't.status', values: transactionStatuses },
    type: { sql: 't.type', values: transactionTypes },
    currency: { sql: 't.currency' },
    customer: { sql: 't.customer_id' },
  },
  balance_transactions: {
    type: { sql: 't.type', values: balanceTransactionTypes },
    status: { sql: 't.status', values: balanceTransactionStatuses },
    source: { sql: 't.source' },
    currency: { sql: 't.currency' },
  },
  invoices: {
    status: { sql: 't.status', values: invoiceStatuses },
    customer: { sql: 't.customer_id' },
    subscription: { sql: 't.subscription_id' },
    currency: { sql: 't.currency' },
    billing_reason: { sql: 't.billing_reason', values: billingReasons },
  },
  customers: { email: { sql: 't.email' } },
  subscriptions: {
    status: { sql: 't.status', values: subscriptionStatuses },
    customer: { sql: 't.customer_id' },
    plan: { sql: 't.plan_id' },
    currency: { sql: '(coalesce(t.currency, (select p.currency from plans p where p.id = t.plan_id)))' },
  },
  plans: {
    type: { sql: 't.type', values: planTypes },
    pricing_scheme: { sql: 't.pricing_scheme', values: pricingSchemes },
    currency: { sql: 't.currency' },
    active: { sql: 't.active::text', values: ['true', 'false'] },
  },
  payouts: {
    status: { sql: 't.status', values: payoutStatuses },
    method: { sql: 't.method', values: payoutMethods },
    currency: { sql: 't.currency' },
  },
  credit_notes: {
    status: { sql: 't.status', values: creditNoteStatuses },
    reason: { sql: 't.reason', values: creditNoteReasons },
    invoice: { sql: 't.invoice_id' },
    customer: { sql: 't.customer_id' },
    currency: { sql: 't.currency' },
  },
  coupons: {
    duration: { sql: 't.duration', values: couponDurations },
    currency: { sql: 't.currency' },
    deleted: { sql: '(t.deleted_at is not null)::text', values: ['true', 'false'] },
  },
  promotion_codes: {
    active: { sql: 't.active::text', values: ['true', 'false'] },
    coupon: { sql: '(select c.id from coupons c where c.key = t.coupon_key)' },
    customer: { sql: 't.customer_id' },
  },
  tax_rates: {
    active: { sql: 't.active::text', values: ['true', 'false'] },
    inclusive: { sql: 't.inclusive::text', values: ['true', 'false'] },
    country: { sql: 't.country' },
  },
};

/**
 * A filter of a resource by its name: an own key of exportFilters only, so a name such as
 * `constructor`, `toString` or `__proto__` (inherited from Object.prototype) is unknown.
 */
export function exportFilterOf(
  resource: ExportResource,
  name: string,
): { sql: string; values?: readonly string[] } | undefined {
  const known = exportFilters[resource];
  return Object.hasOwn(known, name) ? known[name] : undefined;
}

/** What is wrong with an export's `filters` for its resource, or null. */
export function filtersProblem(resource: ExportResource, filters: Record<string, string>): string | null {
  const known = exportFilters[resource];
  for (const [name, value] of Object.entries(filters)) {
    const filter = exportFilterOf(resource, name);
    if (!filter) return `filters: ${resource} exports take ${Object.keys(known).join(', ')}; not ${name}.`;
    if (filter.values && !filter.values.includes(value)) return `filters.${name}: one of ${filter.values.join(', ')}.`;
  }
  return null;
}

const tables: Record<ExportResource, string> = {
  transactions: 'transactions',
  balance_transactions: 'balance_transactions',
  customers: 'customers',
  invoices: 'invoices',
  subscriptions: 'subscriptions',
  payouts: 'payouts',
  plans: 'plans',
  credit_notes: 'credit_notes',
  // Keyed by the row key: the merchant's id (coupon_id) is unique only among coupons not deleted.
  coupons:
    '(select key as id, id as coupon_id, account_id, livemode, name, percent_off, amount_off, currency, duration, duration_in_months, max_redemptions, times_redeemed, redeem_by, applies_to_plans, applies_to_products, deleted_at, metadata, created_at from coupons)',
  promotion_codes: 'promotion_codes',
  tax_rates: 'tax_rates',
};
export const contentTypes: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf',
};
export const pageSize = 500;

/** Invoices as `pdf` are a zip of their own PDFs (one per invoice); everything else is one file of its format. */
export const isInvoiceZip = (exp: { resource: ExportResource; format: ExportFormat }) =>
  exp.resource === 'invoices' && exp.format === 'pdf';
export const fileExtension = (exp: { resource: ExportResource; format: ExportFormat }) =>
  isInvoiceZip(exp) ? 'zip' : exp.format;
export const contentTypeOf = (exp: { resource: ExportResource; format: ExportFormat }) =>
  isInvoiceZip(exp) ? 'application/zip' : contentTypes[exp.format];
export const storageKey = (exp: { id: string; resource: ExportResource; format: ExportFormat }) =>
  `${exp.id}.${fileExtension(exp)}`;

/** The columns an export writes: its `columns` (validated by the API) in resource order, or all. */
export function selectedColumns(resource: ExportResource, columns: string[] | null | undefined): Column[] {
  const all = exportColumns[resource];
  return columns?.length ? all.filter((c) => columns.includes(c.name)) : all;
}

/** A time in `timeZone` as `2026-11-01T10:00:00+01:00`. One formatter per zone: building one per cell is slow and holds native memory. */
export function formatTime(date: Date, timeZone: string): string {
  const formatter = dateTimeFormat(
    'en-US',
    {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    },
    `export-time|${timeZone}`,
  );
  const parts = Object.fromEntries(formatter.formatToParts(date).map((p) => [p.type, p.value]));
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : String(parts.timeZoneName).replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
}

/**
 * What a spreadsheet skips before it looks for a formula: whitespace (Unicode spaces, tab,
 * CR, LF, NBSP, BOM), other control characters, and invisible format characters (zero-width
 * space and joiners, word joiner, direction marks).
 */
const trimmedChars = '\\s\\u0000-\\u001f\\u007f\\u00ad\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff';
/** What starts a formula (or DDE): = + - @, and the forms NFKC folds to them (full-width ＝ ＋ － ＠, small ﹦ ﹢ ﹣ ﹫, super- and subscript). */
const formulaChars = '=+\\-@\\uff1d\\ufe66\\u207c\\u208c\\uff0b\\ufe62\\u207a\\u208a\\uff0d\\ufe63\\uff20\\ufe6b';
const riskyStart = new RegExp(`^[${trimmedChars}]*[${formulaChars}]`, 'u');
/** A delimiter of a common locale (, ; tab) or a line break inside a cell, followed by a formula start: where a reader splitting on another delimiter starts a cell. */
const riskyInside = new RegExp(`([,;\\t\\r\\n])(?=[${trimmedChars}]*[${formulaChars}])`, 'gu');
/** A cell holding a quote, a line break or the list separator of a common locale (comma; semicolon where the comma is the decimal mark; tab) is quoted. */
const needsQuotes = /[",;\t\r\n]/;

/** Whether a spreadsheet could read a text cell as a formula: the OWASP CSV-injection cases (= + - @ tab CR) and what they miss (LF, spaces and zero-width characters before them, full-width forms). */
export function csvFormulaRisk(value: string): boolean {
  return /^[\t\r\n]/.test(value) || riskyStart.test(value);
}

/**
 * A csv cell. A text that a spreadsheet could run as a formula (csvFormulaRisk) is prefixed
 * with `'`. A cell holding the delimiter of any common locale (, ; tab), a quote or a line
 * break is quoted, so that `x;=cmd|…` stays one cell where `;` separates; and since a
 * reader splitting on `;` or tab sees this file's quotes mid-field, a formula start after
 * such a delimiter or line break inside the cell gets its own `'` too (`x;'=cmd|…`).
 * Numbers are written as numbers.
 */
export function csvCell(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const safe = (csvFormulaRisk(value) ? `'${value}` : value).replace(riskyInside, "$1'");
  return needsQuotes.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

type Cell = string | number | null;
interface Writer {
  header(names: string[]): Promise<void>;
  /** `id`: the row's id (the invoice zip renders that invoice). */
  row(values: Cell[], id: string): Promise<void>;
  end(): Promise<void>;
}

export interface ExportOptions {
  /** Whether a mode moves no real money (Processors.isTestMode): invoice PDFs say TEST. Test mode only when unset. */
  isTestMode?: (livemode: boolean) => boolean;
}

/**
 * The invoice zip: each row's invoice rendered as its PDF (services/invoices/pdf.ts) and
 * added as `<number>.pdf`, one at a time, waiting for the zip to take each entry before
 * the next is rendered, so memory holds one PDF whatever the count.
 */
async function invoiceZipWriter(em: EntityManager, stream: Writable, testMode: boolean): Promise<Writer> {
  const { default: archiver } = await import('archiver');
  const archive = archiver('zip', { zlib: { level: 6 } });
  archive.pipe(stream);
  const failed = new Promise<never>((_, reject) => archive.once('error', reject));
  failed.catch(() => undefined);
  const names = new Set<string>();
  return {
    header: async () => {},
    row: async (_values, id) => {
      const invoice = await em.fork().findOneOrFail(Invoice, { id });
      const pdf = await invoicePdf(em.fork(), invoice, testMode);
      const base = invoice.number.replace(/[^A-Za-z0-9._-]/g, '_');
      const name = names.has(`${base}.pdf`) ? `${base}-${invoice.id}.pdf` : `${base}.pdf`;
      names.add(name);
      const added = new Promise<void>((resolve) => archive.once('entry', () => resolve()));
      archive.append(pdf, { name, date: invoice.createdAt });
      await Promise.race([added, failed]);
    },
    end: async () => {
      const ended = new Promise<void>((resolve) => archive.once('end', () => resolve()));
      await Promise.race([archive.finalize(), failed]);
      await Promise.race([ended, failed]);
    },
  };
}

function write(stream: Writable, text: string): Promise<void> {
  return stream.write(text) ? Promise.resolve() : new Promise((resolve) => stream.once('drain', () => resolve()));
}

/** exceljs and pdfkit are imported on first use: the API process that never runs an export does not hold them. */
async function writerFor(format: ExportFormat, stream: Writable, title: string): Promise<Writer> {
  if (format === 'csv') {
    return {
      header: (names) => write(stream, `${names.map(csvCell).join(',')}\r\n`),
      row: (values) => write(stream, `${values.map(csvCell).join(',')}\r\n`),
      end: async () => void stream.end(),
    };
  }
  if (format === 'json') {
    let names: string[] = [];
    let first = true;
    return {
      header: async (n) => {
        names = n;
        await write(stream, '[');
      },
      row: async (values) => {
        await write(
          stream,
          `${first ? '\n' : ',\n'}${JSON.stringify(Object.fromEntries(names.map((n, i) => [n, values[i]])))}`,
        );
        first = false;
      },
      end: async () => {
        await write(stream, first ? ']\n' : '\n]\n');
        stream.end();
      },
    };
  }
  if (format === 'xlsx') {
    // The streaming writer commits each row to the zip as it goes (memory stays flat).
    const { default: ExcelJS } = await import('exceljs');
    const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream, useStyles: false, useSharedStrings: false });
    const sheet = workbook.addWorksheet(title.slice(0, 31));
    return {
      header: async (names) => sheet.addRow(names).commit(),
      row: async (values) => sheet.addRow(values).commit(),
      end: async () => {
        sheet.commit();
        await workbook.commit();
      },
    };
  }
  // pdf: one document listing the rows, a line per row.
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({ size: 'A4', layout: 'landscape', margin: 30, compress: true });
  doc.pipe(stream);
  doc.fontSize(12).text(title).moveDown(0.5).fontSize(7);
  return {
    header: async (names) => void doc.font('Helvetica-Bold').text(names.join(' | ')).font('Helvetica'),
    row: async (values) => void doc.text(values.map((v) => (v === null ? '' : String(v))).join(' | ')),
    end: async () => void doc.end(),
  };
}

function cellsOf(row: Record<string, unknown>, columns: Column[], timeZone: string): Cell[] {
  return columns.map((column) => {
    if (column.name.endsWith('_formatted')) {
      // `<amount>_formatted`: that amount in major units, as a plain decimal (empty with no amount: a percent-off coupon).
      const amount = row[column.name.slice(0, -'_formatted'.length)];
      if (amount === null || amount === undefined || row.currency === null || row.currency === undefined) return null;
      const currency = String(row.currency);
      const exponent = currencyExponent(currency);
      return (Number(amount) / 10 ** exponent).toFixed(exponent);
    }
    const value = row[column.name];
    if (value === null || value === undefined) return null;
    if (column.kind === 'int') return Number(value);
    if (column.kind === 'time') return formatTime(value instanceof Date ? value : new Date(String(value)), timeZone);
    if (column.kind === 'json') return JSON.stringify(typeof value === 'string' ? JSON.parse(value) : value);
    return String(value);
  });
}

/** The SQL of one keyset page (ids above `after`) and of the count, with their parameters. */
function pageQuery(exp: Export): { from: string; params: unknown[] } {
  const params: unknown[] = [exp.accountId, exp.livemode];
  let from = `from ${tables[exp.resource]} t`;
  let where = ' where t.account_id = ? and t.livemode = ?';
  if (exp.createdGte) {
    where += ' and t.created_at >= ?';
    params.push(exp.createdGte);
  }
  if (exp.createdLte) {
    where += ' and t.created_at <= ?';
    params.push(exp.createdLte);
  }
  for (const [name, value] of Object.entries(exp.filters ?? {})) {
    const filter = exportFilterOf(exp.resource, name);
    if (!filter) throw new Error(`export ${exp.id}: unknown filter ${name}`);
    // Column names come from exportFilters only; the value is a parameter.
    where += ` and ${filter.sql} = ?`;
    params.push(value);
  }
  const searchTable = Object.hasOwn(searchTables, exp.resource) ? searchTables[exp.resource] : undefined;
  if (exp.query) {
    if (!searchTable) throw new Error(`export ${exp.id}: ${exp.resource} has no search`);
    const compiled = compileSearch(parseSearchQuery(exp.query, searchTable.schema), searchTable);
    if (compiled.joinCustomers && searchTable.join) from += searchTable.join.sql;
    where += ` and ${compiled.sql}`;
    params.push(...compiled.params);
  }
  return { from: from + where, params };
}

/** Expiry of a finished export's file (and of its signed link). */
export const exportRetentionMs = 7 * 24 * 3600 * 1000;

/**
 * Writes an export's file. `progress` is called after each page with the rows written
 * (the activity heartbeats it). Returns the final status; a finished export is left as it is.
 */
export async function runExport(
  em: EntityManager,
  storage: ExportStorage,
  exportId: string,
  progress: (rows: number) => void = () => {},
  options: ExportOptions = {},
): Promise<string> {
  const exp = await em.findOneOrFail(Export, { id: exportId });
  if (exp.status !== 'pending' && exp.status !== 'running') return exp.status;
  const { from, params } = pageQuery(exp);
  const connection = em.getConnection();
  const [counted] = await connection.execute<{ n: string }[]>(`select count(*) as n ${from}`, params);
  await em.nativeUpdate(
    Export,
    { id: exp.id },
    { status: 'running', rowsWritten: 0, rowsExpected: Number(counted!.n), updatedAt: new Date() },
  );

  const columns = selectedColumns(exp.resource, exp.columns);
  // The row carries what cellsOf needs even when a column is not selected (x_formatted needs x and currency).
  const sources = new Set([
    'currency',
    ...columns.filter((c) => c.name.endsWith('_formatted')).map((c) => c.name.slice(0, -'_formatted'.length)),
  ]);
  const needed = [...columns, ...exportColumns[exp.resource].filter((c) => sources.has(c.name))].filter((c) => c.sql);
  const select = [...new Map(needed.map((c) => [c.name, `${c.sql} as "${c.name}"`])).values()].join(', ');
  const file = storage.create(storageKey(exp));
  const writer = isInvoiceZip(exp)
    ? await invoiceZipWriter(em, file.stream, options.isTestMode?.(exp.livemode) ?? !exp.livemode)
    : await writerFor(exp.format, file.stream, `${exp.resource} ${exp.id}`);
  let rows = 0;
  try {
    await writer.header(columns.map((c) => c.name));
    let after = '';
    for (;;) {
      const page = await connection.execute<Record<string, unknown>[]>(
        `select t.id as "__id", ${select} ${from} and t.id > ? order by t.id limit ?`,
        [...params, after, pageSize],
      );
      for (const row of page) await writer.row(cellsOf(row, columns, exp.timeZone), String(row.__id));
      rows += page.length;
      if (page.length) {
        after = String(page[page.length - 1]!.__id);
        await em.nativeUpdate(Export, { id: exp.id }, { rowsWritten: rows, updatedAt: new Date() });
        progress(rows);
      }
      if (page.length < pageSize) break;
    }
    await writer.end();
  } catch (error) {
    await file.abort();
    throw error;
  }
  const { size, sha256 } = await file.commit();
  const now = new Date();
  await em.transactional(async (tx) => {
    const changed = await tx.nativeUpdate(
      Export,
      { id: exp.id, status: 'running' },
      {
        status: 'succeeded',
        rowsWritten: rows,
        rowCount: rows,
        fileSize: size,
        fileSha256: sha256,
        fileContentType: contentTypeOf(exp),
        expiresAt: new Date(now.getTime() + exportRetentionMs),
        updatedAt: now,
      },
    );
    if (changed)
      await recordEvent(tx, {
        accountId: exp.accountId,
        livemode: exp.livemode,
        type: 'export.succeeded',
        object: serializeExport(await tx.findOneOrFail(Export, { id: exp.id }, { refresh: true })),
      });
  });
  return 'succeeded';
}

/** Records an export that could not be written (its retries exhausted) as failed, with its event. */
export async function failExport(em: EntityManager, exportId: string, message: string): Promise<void> {
  await em.transactional(async (tx) => {
    const exp = await tx.findOneOrFail(Export, { id: exportId });
    if (exp.status === 'succeeded' || exp.status === 'failed') return;
    exp.status = 'failed';
    exp.error = message.slice(0, 1000);
    exp.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, {
      accountId: exp.accountId,
      livemode: exp.livemode,
      type: 'export.failed',
      object: serializeExport(exp),
    });
  });
}

/** A temporary export file not written to for this long belongs to a writer that died (the heartbeat timeout is a minute). */
export const abandonedTemporaryAfterMs = 60 * 60_000;

export interface ExportPruneResult {
  /** Expired exports whose file was deleted (now `expired` in the database too). */
  files: number;
  /** Temporary files of writers that died. */
  temporary: number;
}

/**
 * Maintenance (workflows/maintenance.ts): deletes the files of exports past `expires_at`
 * and marks them `expired`, in batches until none is left, then drops abandoned temporary
 * files. The file goes first: a crash between the two leaves an export still `succeeded`
 * (past expiry, so it already reads `expired` and serves nothing) that the next run deletes
 * again (deleting a missing file is no error).
 */
export async function pruneExpiredExports(
  em: EntityManager,
  storage: ExportStorage,
  batchSize = 100,
  now = new Date(),
): Promise<ExportPruneResult> {
  let files = 0;
  for (;;) {
    const due = await em
      .fork()
      .find(
        Export,
        { status: 'succeeded', expiresAt: { $lte: now } },
        { fields: ['id', 'resource', 'format'], orderBy: { expiresAt: 'asc', id: 'asc' }, limit: batchSize },
      );
    for (const exp of due) {
      await storage.remove(storageKey(exp));
      files += await em
        .fork()
        .nativeUpdate(Export, { id: exp.id, status: 'succeeded' }, { status: 'expired', updatedAt: new Date() });
    }
    if (due.length < batchSize) break;
  }
  const temporary = await storage.sweepTemporary(new Date(now.getTime() - abandonedTemporaryAfterMs));
  return { files, temporary };
}
