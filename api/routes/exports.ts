import path from 'node:path';
import { Readable } from 'node:stream';

import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { Account, Export, exportFormats, exportResources } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { checkExportFileSignature, signedExportFileUrl } from '../../domain/export-links.ts';
import { ExportSchema, serializeExport } from '../../objects/export.ts';
import { exportColumns, fileExtension, filtersProblem, storageKey } from '../../services/exports/run.ts';
import { startExport } from '../../services/exports/start.ts';
import { localExportStorage } from '../../services/exports/storage.ts';
import { parseForApi, searchTables } from '../../services/search/query.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, isoInstant } from '../schemas.ts';

const CreateBody = z
  .object({
    resource: z.enum(exportResources),
    format: z.enum(exportFormats),
    query: z.string().min(1).max(2000).optional().openapi({
      description:
        "transactions, invoices, customers and credit_notes: a search query in the resource's fields (docs/exports-and-search.md)",
    }),
    created: z.object({ gte: isoInstant.optional(), lte: isoInstant.optional() }).strict().optional(),
    columns: z.array(z.string().min(1).max(64)).min(1).max(50).optional(),
    filters: z.record(z.string().max(64), z.string().min(1).max(255)).optional().openapi({
      description:
        "The resource's list filters, as equalities (docs/exports-and-search.md): transactions status, type, currency, customer; balance_transactions type, status, source, currency; invoices status, customer, subscription, currency, billing_reason; customers email; subscriptions status, customer, plan, currency; payouts status, method, currency; plans type, pricing_scheme, currency, active (true or false); coupons duration, currency, deleted (true or false); promotion_codes active, coupon, customer; tax_rates active, inclusive, country",
    }),
    time_zone: z
      .string()
      .max(64)
      .refine((tz) => {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: tz });
          return true;
        } catch {
          return false;
        }
      }, 'must be an IANA time zone such as Europe/Paris')
      .default('UTC'),
  })
  .strict()
  .openapi({
    example: {
      resource: 'transactions',
      format: 'csv',
      query: 'status:succeeded AND amount>=1000',
      created: { gte: '2026-10-01T00:00:00Z', lte: '2026-10-31T23:59:59Z' },
      time_zone: 'Europe/Paris',
    },
  });

const fileContent = { content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } } };
const createExport = createRoute({
  method: 'post',
  path: '/',
  tags: ['Exports'],
  summary: 'Start an export',
  description:
    'Answers 202 with the export, `pending`; a workflow writes the file. Poll GET /v1/exports/{id} or listen for export.succeeded / export.failed.',
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 202: { description: 'Accepted', ...json(ExportSchema) }, ...errorResponses(400, 401) },
});
const listExports = listRoute({
  tags: ['Exports'],
  summary: 'List exports, newest first',
  query: z
    .object(cursorQuery('export'))
    .strict()
    .refine(...oneCursor),
  item: ExportSchema,
});
const getExport = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Exports'],
  summary: 'Retrieve an export',
  request: { params: idParam('exp') },
  responses: { 200: { description: 'The export', ...json(ExportSchema) }, ...errorResponses(401, 404) },
});
const getFile = createRoute({
  method: 'get',
  path: '/{id}/file',
  tags: ['Exports'],
  summary: "Download an export's file",
  request: { params: idParam('exp') },
  responses: { 200: { description: 'The file', ...fileContent }, ...errorResponses(401, 404, 409) },
});
const publicFile = createRoute({
  method: 'get',
  path: '/{id}/file',
  tags: ['Exports'],
  summary: "An export's file, by its signed link",
  description:
    'The `url` of an export: no Authorization header, the signature in the link is the credential until `expires`. A wrong signature answers 404; an expired one, or one of a closed account, 410 `link_expired`.',
  security: [],
  request: {
    params: idParam('exp'),
    query: z.object({ expires: z.coerce.number().int().min(0), signature: z.string().max(200) }),
  },
  responses: { 200: { description: 'The file', ...fileContent }, ...errorResponses(404, 409, 410) },
});

export function exportsApps({ config, context, exportStorage }: AppDeps) {
  const { orm, temporal } = context;
  const storage = exportStorage ?? localExportStorage(path.join(config.dataDir, 'exports'));
  const urlOf = (e: Export) =>
    e.status === 'succeeded' && e.expiresAt
      ? signedExportFileUrl(config.publicUrl, config.auth.secret, e.id, Math.floor(e.expiresAt.getTime() / 1000))
      : null;
  const serialize = (e: Export) => serializeExport(e, urlOf(e));

  function fileResponse(c: Context, e: Export): Response {
    const current = serializeExport(e);
    if (current.status === 'expired')
      throw new ApiError('link_expired', 'This export expired; its file was deleted. Start a new export.');
    if (current.status !== 'succeeded')
      throw new ApiError('export_not_ready', `The export is ${current.status}; its file is ready once it succeeded.`);
    const body = Readable.toWeb(storage.open(storageKey(e))) as ReadableStream;
    return c.body(body, 200, {
      'content-type': e.fileContentType!,
      'content-length': String(e.fileSize),
      'content-disposition': `attachment; filename="${e.resource}-${e.id}.${fileExtension(e)}"`,
      'x-content-sha256': e.fileSha256!,
    });
  }

  const v1 = newOpenApiApp()
    .openapi(createExport, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      if (body.query !== undefined) {
        const table = Object.hasOwn(searchTables, body.resource) ? searchTables[body.resource] : undefined;
        if (!table)
          throw new ApiError(
            'invalid_request',
            'query: only transactions, invoices, customers and credit_notes exports take a search query.',
          );
        parseForApi(body.query, table.schema);
      }
      // zod's record drops a "__proto__" key silently: the raw body's own keys are checked too, so it is an unknown filter like any other.
      const raw = (await c.req.json().catch(() => null)) as { filters?: unknown } | null;
      const rawNames =
        raw && typeof raw === 'object' && raw.filters && typeof raw.filters === 'object'
          ? Object.keys(raw.filters)
          : [];
      if (body.filters || rawNames.length) {
        const problem = filtersProblem(body.resource, {
          ...Object.fromEntries(rawNames.map((name) => [name, ''])),
          ...body.filters,
        });
        if (problem) throw new ApiError('invalid_request', problem);
      }
      if (body.columns) {
        const known = exportColumns[body.resource].map((col) => col.name);
        const unknown = body.columns.filter((col) => !known.includes(col));
        if (unknown.length)
          throw new ApiError(
            'invalid_request',
            `columns: ${unknown.join(', ')} not among ${body.resource}'s columns (${known.join(', ')}).`,
          );
      }
      const e = await startExport({ orm, temporal, exportsTaskQueue: config.exportsTaskQueue }, scope, body);
      return c.json(serialize(e), 202);
    })
    .openapi(listExports, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const { page, hasMore } = await keysetPage(
        orm.em.fork(),
        Export,
        { accountId: scope.accountId, livemode: scope.livemode },
        query,
      );
      return c.json({ object: 'list' as const, data: page.map(serialize), has_more: hasMore }, 200);
    })
    .openapi(getExport, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const id = c.req.valid('param').id;
      const e = await em.findOne(Export, { id, accountId: scope.accountId, livemode: scope.livemode });
      if (!e) throw await notFoundInMode(em, Export, id, scope, 'export');
      return c.json(serialize(e), 200);
    })
    .openapi(getFile, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const id = c.req.valid('param').id;
      const e = await em.findOne(Export, { id, accountId: scope.accountId, livemode: scope.livemode });
      if (!e) throw await notFoundInMode(em, Export, id, scope, 'export');
      return fileResponse(c, e) as never;
    });

  const root = newOpenApiApp().openapi(publicFile, async (c) => {
    const { id } = c.req.valid('param');
    const { expires, signature } = c.req.valid('query');
    const check = checkExportFileSignature(config.auth.secret, id, expires, signature, Date.now());
    if (check === 'invalid') throw new ApiError('not_found', 'No such export.');
    if (check === 'expired')
      throw new ApiError('link_expired', 'This link expired; fetch the export again for a fresh one.');
    const em = orm.em.fork();
    const e = await em.findOne(Export, { id });
    if (!e) throw new ApiError('not_found', 'No such export.');
    // Closing an account revokes its signed links, like its portal and pay links.
    const account = await em.findOne(Account, { id: e.accountId }, { fields: ['status'] });
    if (!account || account.status === 'closed')
      throw new ApiError('link_expired', 'This link was revoked: the account that made the export is closed.');
    return fileResponse(c, e) as never;
  });
  return { v1, root };
}
