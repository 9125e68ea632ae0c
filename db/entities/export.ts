import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const exportResources = [
  'transactions',
  'balance_transactions',
  'invoices',
  'customers',
  'subscriptions',
  'payouts',
  'plans',
  'credit_notes',
  'coupons',
  'promotion_codes',
  'tax_rates',
] as const;
export const exportFormats = ['csv', 'xlsx', 'json', 'pdf'] as const;
export const exportStatuses = ['pending', 'running', 'succeeded', 'failed', 'expired'] as const;
export type ExportResource = (typeof exportResources)[number];
export type ExportFormat = (typeof exportFormats)[number];
export type ExportStatus = (typeof exportStatuses)[number];

/** A file of an account's rows in one format, written by exportWorkflow (workflows/export.ts). */
export const Export = defineEntity({
  name: 'Export',
  tableName: 'exports',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    resource: p.string().$type<ExportResource>(),
    format: p.string().$type<ExportFormat>(),
    /** transactions: a search query (docs/exports-and-search.md). */
    query: p.string().length(2000).nullable(),
    createdGte: p.datetime().nullable(),
    createdLte: p.datetime().nullable(),
    columns: p.json<string[]>().nullable(),
    /** Equality filters of the resource's list (exportFilters in services/exports/run.ts). */
    filters: p.json<Record<string, string>>().nullable(),
    timeZone: p.string(),
    status: p.string().$type<ExportStatus>(),
    rowsWritten: p.integer().default(0),
    rowsExpected: p.integer().nullable(),
    rowCount: p.integer().nullable(),
    fileSize: p.bigint('number').nullable(),
    fileContentType: p.string().nullable(),
    fileSha256: p.string().nullable(),
    expiresAt: p.datetime().nullable(),
    error: p.string().length(1000).nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Export = InferEntity<typeof Export>;
