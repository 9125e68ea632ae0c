import type { EntityManager } from '@mikro-orm/postgresql';

import { CreditNote, Customer, Invoice, Transaction } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import {
  creditNoteSearchSchema,
  customerSearchSchema,
  invoiceSearchSchema,
  parseSearchQuery,
  type SearchClause,
  type SearchQuery,
  SearchQueryError,
  type SearchSchema,
  transactionSearchSchema,
} from '../../domain/search-query.ts';

/**
 * Search of transactions, invoices, customers and credit notes (docs/exports-and-search.md): the AST of
 * domain/search-query.ts compiled to one parameterized SQL condition. Every value travels
 * as a `?` parameter; the SQL text is built only from this file's constants (table and
 * column names, operators).
 */

/** How a resource's search runs: its table (aliased `t`), each field's column, the joins some fields need. */
export type SearchTable = {
  schema: SearchSchema;
  table: string;
  idPattern: RegExp;
  columns: Readonly<Record<string, string>>;
  /** The jsonb column of `metadata["key"]`, when the schema has it. */
  metadata?: string;
  /** A join (alias `c`) needed by some fields, added only when one of them is used. */
  join?: { fields: readonly string[]; sql: string };
  /**
   * Fields of one element of a jsonb array column (`lines`): the clause matches a row with
   * at least one element for which it holds (`plan:plan_…`, `quantity>=10` on an invoice's lines).
   */
  elements?: { array: string; columns: Readonly<Record<string, string>> };
};

const transactionColumns = {
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

export const transactionSearch: SearchTable = {
  schema: transactionSearchSchema,
  table: 'transactions',
  idPattern: /^txn_[0-9a-z]{26}$/,
  columns: transactionColumns,
  metadata: 't.metadata',
  join: { fields: ['email'], sql: ' left join customers c on c.id = t.customer_id and c.account_id = t.account_id' },
};

export const invoiceSearch: SearchTable = {
  schema: invoiceSearchSchema,
  table: 'invoices',
  idPattern: /^inv_[0-9a-z]{26}$/,
  columns: {
    id: 't.id',
    number: 't.number',
    status: 't.status',
    customer: 't.customer_id',
    // The customer's email when the invoice was issued (an issued invoice does not follow the customer).
    email: 't.customer_email',
    subscription: 't.subscription_id',
    total: 't.total',
    amount_due: 't.amount_due',
    amount_paid: 't.amount_paid',
    discount: 't.discount',
    tax: 't.tax',
    currency: 't.currency',
    created: 't.created_at',
    period_start: 't.period_start',
    period_end: 't.period_end',
    paid_at: 't.paid_at',
  },
  elements: {
    array: 't.lines',
    columns: { plan: "(e.line ->> 'plan')", quantity: "((e.line ->> 'quantity')::bigint)" },
  },
};

export const customerSearch: SearchTable = {
  schema: customerSearchSchema,
  table: 'customers',
  idPattern: /^cus_[0-9a-z]{26}$/,
  columns: {
    id: 't.id',
    email: 't.email',
    name: 't.name',
    external_id: 't.external_id',
    created: 't.created_at',
    country: "(t.address ->> 'country')",
    tax_exempt: 't.tax_exempt',
  },
};

export const creditNoteSearch: SearchTable = {
  schema: creditNoteSearchSchema,
  table: 'credit_notes',
  idPattern: /^cn_[0-9a-z]{26}$/,
  columns: {
    id: 't.id',
    number: 't.number',
    status: 't.status',
    invoice: 't.invoice_id',
    customer: 't.customer_id',
    email: 'c.email',
    reason: 't.reason',
    memo: 't.memo',
    total: 't.total',
    refund_amount: 't.refund_amount',
    credit_amount: 't.credit_amount',
    out_of_band_amount: 't.out_of_band_amount',
    currency: 't.currency',
    created: 't.created_at',
    voided_at: 't.voided_at',
  },
  join: { fields: ['email'], sql: ' left join customers c on c.id = t.customer_id and c.account_id = t.account_id' },
};

/** The resources with a search, by name (exports of these take a `query` too). */
export const searchTables: Readonly<Partial<Record<string, SearchTable>>> = {
  transactions: transactionSearch,
  invoices: invoiceSearch,
  customers: customerSearch,
  credit_notes: creditNoteSearch,
};

const comparisons = { '>': '>', '<': '<', '>=': '>=', '<=': '<=' } as const;

/** `\`, `%` and `_` taken literally in a LIKE pattern (escape character `\`). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

function clauseSql(table: SearchTable, clause: SearchClause, params: unknown[]): string {
  const { value } = clause;
  let sql: string;
  if (clause.field === 'metadata' && table.metadata) {
    params.push(clause.key, (value as { value: string }).value);
    sql = `(${table.metadata} ->> ?) = ?`;
  } else {
    const element =
      table.elements && Object.hasOwn(table.elements.columns, clause.field)
        ? table.elements.columns[clause.field]
        : undefined;
    const column = element ?? table.columns[clause.field];
    // The parser only lets the schema's fields through; a table missing one is a programming error.
    if (!column) throw new Error(`search: no column for ${table.table}.${clause.field}`);
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
    if (element && table.elements)
      sql = `exists (select 1 from jsonb_array_elements(${table.elements.array}) as e(line) where ${sql})`;
  }
  // A negation matches the rows where the clause is false or unknown (a null column).
  return clause.negated ? `not coalesce(${sql}, false)` : sql;
}

/** The WHERE condition of a parsed query, its parameters, and whether it needs the customers join. */
export function compileSearch(
  query: SearchQuery,
  table: SearchTable = transactionSearch,
): { sql: string; params: unknown[]; joinCustomers: boolean } {
  const params: unknown[] = [];
  const parts = query.clauses.map((clause) => clauseSql(table, clause, params));
  const join = table.join;
  return {
    sql: `(${parts.join(query.combinator === 'or' ? ' or ' : ' and ')})`,
    params,
    joinCustomers: !!join && query.clauses.some((c) => join.fields.includes(c.field)),
  };
}

/** The opaque `next_page` cursor: the last id of the page, so the next page starts below it (ids sort by time). */
export function encodeSearchPage(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId }), 'utf8').toString('base64url');
}

export function decodeSearchPage(page: string, table: SearchTable = transactionSearch): string {
  try {
    const decoded = JSON.parse(Buffer.from(page, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof decoded.after === 'string' && table.idPattern.test(decoded.after)) return decoded.after;
  } catch {
    // answered below
  }
  throw new ApiError('invalid_request', 'page: not a next_page value this search returned.');
}

/** Parses a query for the API: a bad one is `invalid_request` naming the position and what was expected. */
export function parseForApi(query: string, schema: SearchSchema = transactionSearchSchema): SearchQuery {
  try {
    return parseSearchQuery(query, schema);
  } catch (error) {
    if (error instanceof SearchQueryError)
      throw new ApiError('invalid_request', `query: ${error.message}`, {
        position: error.position,
        expected: error.expected,
      });
    throw error;
  }
}

/** One page of rows of `table` matching `query` in the account and mode, newest first (raw rows, the caller maps them). */
async function searchRows(
  em: EntityManager,
  table: SearchTable,
  scope: { accountId: string; livemode: boolean },
  query: SearchQuery,
  options: { limit: number; after?: string | undefined },
): Promise<Record<string, unknown>[]> {
  const compiled = compileSearch(query, table);
  const params: unknown[] = [scope.accountId, scope.livemode];
  let sql = `select t.* from ${table.table} t`;
  if (compiled.joinCustomers && table.join) sql += table.join.sql;
  sql += ' where t.account_id = ? and t.livemode = ?';
  if (options.after) {
    sql += ' and t.id < ?';
    params.push(options.after);
  }
  sql += ` and ${compiled.sql} order by t.id desc limit ?`;
  params.push(...compiled.params, options.limit + 1);
  return em.getConnection().execute<Record<string, unknown>[]>(sql, params);
}

type SearchPage<T> = { rows: T[]; hasMore: boolean; nextPage: string | null };

function page<T extends { id: string }>(
  raw: Record<string, unknown>[],
  limit: number,
  map: (row: Record<string, unknown>) => T,
): SearchPage<T> {
  const hasMore = raw.length > limit;
  const rows = raw.slice(0, limit).map(map);
  return { rows, hasMore, nextPage: hasMore && rows.length ? encodeSearchPage(rows[rows.length - 1]!.id) : null };
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
): Promise<SearchPage<Transaction>> {
  return page(await searchRows(em, transactionSearch, scope, query, options), options.limit, (row) =>
    em.map(Transaction, row),
  );
}

/** The same for invoices (invoiceSearchSchema's fields). */
export async function searchInvoices(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  query: SearchQuery,
  options: { limit: number; after?: string | undefined },
): Promise<SearchPage<Invoice>> {
  return page(await searchRows(em, invoiceSearch, scope, query, options), options.limit, (row) => em.map(Invoice, row));
}

/** The same for customers (customerSearchSchema's fields). */
export async function searchCustomers(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  query: SearchQuery,
  options: { limit: number; after?: string | undefined },
): Promise<SearchPage<Customer>> {
  return page(await searchRows(em, customerSearch, scope, query, options), options.limit, (row) =>
    em.map(Customer, row),
  );
}

/** The same for credit notes (creditNoteSearchSchema's fields). */
export async function searchCreditNotes(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  query: SearchQuery,
  options: { limit: number; after?: string | undefined },
): Promise<SearchPage<CreditNote>> {
  return page(await searchRows(em, creditNoteSearch, scope, query, options), options.limit, (row) =>
    em.map(CreditNote, row),
  );
}
