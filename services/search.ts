import type { EntityManager } from '@mikro-orm/postgresql';
import { Transaction } from '../db/entities/index.ts';
import { ApiError } from '../domain/errors.ts';
import { parseSearchQuery, SearchQueryError, type SearchClause, type SearchQuery } from '../domain/search-query.ts';

/**
 * The transactions search (docs/exports-and-search.md): the AST of domain/search-query.ts
 * compiled to one parameterized SQL condition. Every value travels as a `?` parameter;
 * the SQL text is built only from this file's constants (column names, operators).
 */

const columns = {
  id: 't.id',
  status: 't.status',
  type: 't.type',
  amount: 't.amount',
  currency: 't.currency',
  reference: 't.reference',
  customer: 't.customer_id',
  invoice: 't.invoice_id',
  subscription: 't.subscription_id',
  created: 't.created_at',
  risk_level: 't.risk_level',
  email: 'c.email',
} as const;

const comparisons = { '>': '>', '<': '<', '>=': '>=', '<=': '<=' } as const;

/** `\`, `%` and `_` taken literally in a LIKE pattern (escape character `\`). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

function clauseSql(clause: SearchClause, params: unknown[]): string {
  const { value } = clause;
  let sql: string;
  if (clause.field === 'metadata') {
    params.push(clause.key, (value as { value: string }).value);
    sql = `(t.metadata ->> ?) = ?`;
  } else {
    const column = columns[clause.field];
    if (value.kind === 'null') sql = `${column} is null`;
    else if (value.kind === 'time') {
      const [start, end] = [new Date(value.start), new Date(value.end)];
      // The value is a span [start, end): `:` is inside it, `>` after it, `<` before it.
      if (clause.op === ':') {
        params.push(start, end);
        sql = `(${column} >= ? and ${column} < ?)`;
      } else {
        const bound = clause.op === '>' || clause.op === '<=' ? end : start;
        const op = clause.op === '>' ? '>=' : clause.op === '<=' ? '<' : comparisons[clause.op as '<' | '>='];
        params.push(bound);
        sql = `${column} ${op} ?`;
      }
    } else if (clause.op === '~') {
      params.push(`%${likeLiteral(value.value as string)}%`);
      sql = `${column} ilike ? escape '\\'`;
    } else if (clause.op === ':') {
      params.push(value.value);
      sql = `${column} = ?`;
    } else {
      params.push(value.value);
      sql = `${column} ${comparisons[clause.op]} ?`;
    }
  }
  // A negation matches the rows where the clause is false or unknown (a null column).
  return clause.negated ? `not coalesce(${sql}, false)` : sql;
}

/** The WHERE condition of a parsed query, its parameters, and whether it needs the customers join. */
export function compileSearch(query: SearchQuery): { sql: string; params: unknown[]; joinCustomers: boolean } {
  const params: unknown[] = [];
  const parts = query.clauses.map((clause) => clauseSql(clause, params));
  return { sql: `(${parts.join(query.combinator === 'or' ? ' or ' : ' and ')})`, params, joinCustomers: query.clauses.some((c) => c.field === 'email') };
}

/** The opaque `next_page` cursor: the last id of the page, so the next page starts below it (ids sort by time). */
export function encodeSearchPage(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId }), 'utf8').toString('base64url');
}

export function decodeSearchPage(page: string): string {
  try {
    const decoded = JSON.parse(Buffer.from(page, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof decoded.after === 'string' && /^txn_[0-9a-z]{26}$/.test(decoded.after)) return decoded.after;
  } catch {
    // answered below
  }
  throw new ApiError('invalid_request', 'page: not a next_page value this search returned.');
}

/** Parses a query for the API: a bad one is `invalid_request` naming the position and what was expected. */
export function parseForApi(query: string): SearchQuery {
  try {
    return parseSearchQuery(query);
  } catch (error) {
    if (error instanceof SearchQueryError) throw new ApiError('invalid_request', `query: ${error.message}`, { position: error.position, expected: error.expected });
    throw error;
  }
}

/**
 * One page of the caller's transactions matching `query`, newest first. Scoped to the
 * account and mode before anything else; reads the table itself, so a transaction is
 * searchable as soon as its write committed.
 */
export async function searchTransactions(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  query: SearchQuery,
  options: { limit: number; after?: string | undefined },
): Promise<{ rows: Transaction[]; hasMore: boolean; nextPage: string | null }> {
  const compiled = compileSearch(query);
  const params: unknown[] = [scope.accountId, scope.livemode];
  let sql = 'select t.* from transactions t';
  if (compiled.joinCustomers) sql += ' left join customers c on c.id = t.customer_id and c.account_id = t.account_id';
  sql += ' where t.account_id = ? and t.livemode = ?';
  if (options.after) {
    sql += ' and t.id < ?';
    params.push(options.after);
  }
  sql += ` and ${compiled.sql} order by t.id desc limit ?`;
  params.push(...compiled.params, options.limit + 1);
  const raw = await em.getConnection().execute<Record<string, unknown>[]>(sql, params);
  const hasMore = raw.length > options.limit;
  const rows = raw.slice(0, options.limit).map((row) => em.map(Transaction, row));
  return { rows, hasMore, nextPage: hasMore && rows.length ? encodeSearchPage(rows[rows.length - 1]!.id) : null };
}
