import { z } from '@hono/zod-openapi';

import { type Export, exportFormats, exportResources, exportStatuses } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** An export: a file of an account's rows (docs/exports-and-search.md). */
export const ExportSchema = z
  .object({
    id: z.string(),
    object: z.literal('export'),
    livemode: z.boolean(),
    resource: z.enum(exportResources),
    format: z.enum(exportFormats),
    query: z.string().nullable(),
    filters: z.record(z.string(), z.string()).nullable(),
    created: z.object({ gte: timestamp.nullable(), lte: timestamp.nullable() }),
    columns: z.array(z.string()).nullable(),
    time_zone: z.string(),
    status: z.enum(exportStatuses),
    progress: z.object({ rows_written: z.number().int(), rows_expected: z.number().int().nullable() }),
    row_count: z.number().int().nullable(),
    file: z.object({ size: z.number().int(), content_type: z.string(), sha256: z.string() }).nullable(),
    url: z.string().nullable().openapi({
      description:
        'A signed link to the file that opens without a token, until expires_at; null until the export succeeded',
    }),
    expires_at: timestamp.nullable(),
    error: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Export');

/** `url`: the signed link (api only; events carry null: fetch the export for a link). */
export function serializeExport(e: Export, url: string | null = null): z.infer<typeof ExportSchema> {
  const expired =
    e.status === 'succeeded' &&
    e.expiresAt !== null &&
    e.expiresAt !== undefined &&
    e.expiresAt.getTime() <= Date.now();
  const status = expired ? 'expired' : e.status;
  return {
    id: e.id,
    object: 'export',
    livemode: e.livemode,
    resource: e.resource,
    format: e.format,
    query: e.query ?? null,
    filters: e.filters ?? null,
    created: { gte: e.createdGte?.toISOString() ?? null, lte: e.createdLte?.toISOString() ?? null },
    columns: e.columns ?? null,
    time_zone: e.timeZone,
    status,
    progress: { rows_written: e.rowsWritten, rows_expected: e.rowsExpected ?? null },
    row_count: e.rowCount ?? null,
    file:
      status === 'succeeded' && e.fileSize != null
        ? { size: Number(e.fileSize), content_type: e.fileContentType!, sha256: e.fileSha256! }
        : null,
    url: status === 'succeeded' ? url : null,
    expires_at: e.expiresAt?.toISOString() ?? null,
    error: e.error ?? null,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
}
