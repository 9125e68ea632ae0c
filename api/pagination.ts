import { createRoute, z } from '@hono/zod-openapi';
import {
  ALIAS_REPLACEMENT,
  type EntityMetadata,
  type EntityName,
  type EntityProperty,
  type FilterQuery,
  Raw,
} from '@mikro-orm/core';
import type { EntityManager, QBFilterQuery } from '@mikro-orm/postgresql';

import { type IdKind, idPrefixes } from '../domain/ids.ts';
import { json } from './openapi-app.ts';
import { errorResponses } from './schemas.ts';

/**
 * Cursor lists as GET /v1/transactions has them: newest first, keyset pages on the
 * time-sortable ids (rows that arrive between calls never shift a page), `limit` 1 to
 * 100 (default 20), `starting_after` (the next, older page) or `ending_before` (the
 * previous, newer page), and `{ object: "list", data, has_more }`.
 */
export function cursorQuery(kind: IdKind) {
  const cursor = z
    .string()
    .regex(new RegExp(`^${idPrefixes[kind]}_[0-9a-z]{26}$`), `must be a ${idPrefixes[kind]}_ id`);
  return {
    limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: '1 to 100' }),
    starting_after: cursor
      .optional()
      .openapi({ description: 'An id from the previous page: the page of older items after it' }),
    ending_before: cursor
      .optional()
      .openapi({ description: 'An id from the current page: the page of newer items before it' }),
  };
}

/** For `.refine` on a list query: only one cursor at a time. */
export const oneCursor = [
  (q: { starting_after?: string; ending_before?: string }) => !(q.starting_after && q.ending_before),
  { message: 'use starting_after or ending_before, not both' },
] as const;

/** A query-string boolean: exactly "true" or "false". */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');

export const listSchema = <T extends z.ZodType>(item: T) =>
  z.object({ object: z.literal('list'), data: z.array(item), has_more: z.boolean() });

/**
 * GET / of a cursor list: `query` in, one page of `item`s in the list envelope out (200 "A page"), and
 * the error answers `errors` (400 for a bad query and 401 unless said otherwise).
 */
export const listRoute = <Q extends z.ZodObject | z.ZodPipe, T extends z.ZodType>(route: {
  tags: string[];
  summary: string;
  description?: string;
  query: Q;
  item: T;
  errors?: number[];
}) =>
  createRoute({
    method: 'get',
    path: '/',
    tags: route.tags,
    summary: route.summary,
    ...(route.description === undefined ? {} : { description: route.description }),
    request: { query: route.query },
    responses: {
      200: { description: 'A page', ...json(listSchema(route.item)) },
      ...errorResponses(...(route.errors ?? [400, 401])),
    },
  });

/**
 * One page of `entity` matching `where`, newest first, keyset on the time-sortable
 * id; `has_more` says whether the walk in that direction goes on. `rows: 'plain'`
 * reads plain rows (the entity's property names and types) instead of managed
 * entities, for pages that are only read: hydrating managed entities costs more
 * CPU than the rest of a list request (bench/RESULTS.md).
 */
export async function keysetPage<T extends { id: string }>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Record<string, unknown>,
  query: { limit: number; starting_after?: string | undefined; ending_before?: string | undefined },
  options: { rows?: 'entities' | 'plain' } = {},
): Promise<{ page: T[]; hasMore: boolean }> {
  const backwards = Boolean(query.ending_before);
  const filter = { ...where };
  if (query.starting_after) filter.id = { $lt: query.starting_after };
  if (query.ending_before) filter.id = { $gt: query.ending_before };
  const orderBy = { id: backwards ? 'asc' : 'desc' } as never;
  const rows =
    options.rows === 'plain'
      ? ((await plainRows(em, entity, filter, backwards, query.limit + 1)) ??
        (await em
          .createQueryBuilder(entity)
          .select('*')
          .where(filter as QBFilterQuery<T>)
          .orderBy(orderBy)
          .limit(query.limit + 1)
          .execute<T[]>('all')))
      : ((await em.find(entity, filter as FilterQuery<T>, { orderBy, limit: query.limit + 1 })) as T[]);
  const hasMore = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  if (backwards) page.reverse();
  return { page, hasMore };
}

const comparisons: Record<string, string> = { $lt: '<', $lte: '<=', $gt: '>', $gte: '>=' };

/**
 * The page as plain rows in one parameterized statement built from the entity's
 * metadata, for the filters lists use (equality, null, and $lt/$lte/$gt/$gte on a
 * column; raw fragments without an alias); undefined for any other filter, which
 * then goes through the query builder. Building the SQL through MikroORM's query
 * builder cost more CPU than the rest of a list request (bench/RESULTS.md); the rows
 * go through MikroORM's own result mapper, so they equal the query builder's
 * (test/pagination.test.ts).
 */
async function plainRows<T>(
  em: EntityManager,
  entity: EntityName<T>,
  filter: Record<string, unknown>,
  ascending: boolean,
  limit: number,
): Promise<T[] | undefined> {
  const meta = em.getMetadata().get(entity) as EntityMetadata<T>;
  const clauses: string[] = [];
  const params: unknown[] = [];
  const column = (key: string) => {
    const prop = (meta.properties as Record<string, EntityProperty<T> | undefined>)[key];
    return prop && prop.fieldNames?.length === 1 ? `"${prop.fieldNames[0]}"` : undefined;
  };
  for (const [key, value] of Object.entries(filter)) {
    const name = column(key);
    if (!name) return undefined;
    if (value === null) clauses.push(`${name} is null`);
    else if (
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      value instanceof Date
    ) {
      clauses.push(`${name} = ?`);
      params.push(value);
    } else if (typeof value === 'object') {
      for (const [operator, operand] of Object.entries(value as Record<string, unknown>)) {
        const sql = comparisons[operator];
        if (!sql || operand === null || (typeof operand === 'object' && !(operand instanceof Date))) return undefined;
        clauses.push(`${name} ${sql} ?`);
        params.push(operand);
      }
    } else return undefined;
  }
  // Raw SQL fragments keyed into the filter (services/test-clocks/clocks.ts clockCondition): as the query builder takes them.
  for (const key of Object.getOwnPropertySymbols(filter)) {
    const fragment = Raw.getKnownFragment(key);
    const value = (filter as Record<symbol, unknown>)[key];
    if (!fragment || !Array.isArray(value) || value.length > 0 || fragment.sql.includes(ALIAS_REPLACEMENT))
      return undefined; // an alias plainRows' statement does not have
    clauses.push(`(${fragment.sql})`);
    params.push(...fragment.params);
  }
  const idColumn = column('id');
  if (!idColumn) return undefined;
  const sql = `select * from "${meta.tableName}"${clauses.length ? ` where ${clauses.join(' and ')}` : ''} order by ${idColumn} ${ascending ? 'asc' : 'desc'} limit ${limit}`;
  const raw = await em
    .getConnection()
    .execute<Record<string, unknown>[]>(sql, params, 'all', em.getTransactionContext());
  // MikroORM's own result mapper (column → property, dates, custom types), as the query builder maps rows.
  const driver = em.getDriver();
  return raw.map((row) => driver.mapResult(row as never, meta as never) as T);
}
