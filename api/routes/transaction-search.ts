import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { CreditNoteSchema, serializeCreditNote } from '../../objects/credit-note.ts';
import { CustomerSchema, serializeCustomer } from '../../objects/customer.ts';
import { invoicePdfUrl, InvoiceSchema, serializeInvoice } from '../../objects/invoice.ts';
import { serializeTransaction, TransactionSchema } from '../../objects/transaction.ts';
import { signedCreditNotePdfUrl } from '../../services/credit-notes/delivery.ts';
import { customerBalancesOf } from '../../services/customers/balance-reads.ts';
import {
  creditNoteSearch,
  customerSearch,
  decodeSearchPage,
  invoiceSearch,
  parseForApi,
  searchCreditNotes,
  searchCustomers,
  searchInvoices,
  type SearchTable,
  searchTransactions,
  transactionSearch,
} from '../../services/search/query.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

/**
 * GET /v1/transactions/search, /v1/invoices/search, /v1/customers/search and /v1/credit_notes/search: one query
 * language (domain/search-query.ts), each resource with its own field table. Each app is
 * mounted before its resource's routes so `search` is never read as an id.
 */

const SearchQuery = (example: string) =>
  z
    .object({
      query: z
        .string()
        .min(1)
        .max(2000)
        .openapi({ description: `The search language: docs/exports-and-search.md (e.g. \`${example}\`)` }),
      limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: '1 to 100' }),
      page: z.string().min(1).max(200).optional().openapi({ description: 'The next_page of the previous result' }),
    })
    .strict();

const searchRoute = <S extends z.ZodType>(
  tag: string,
  summary: string,
  description: string,
  example: string,
  item: S,
) =>
  createRoute({
    method: 'get',
    path: '/',
    tags: [tag],
    summary,
    description,
    request: { query: SearchQuery(example) },
    responses: {
      200: {
        description: 'A page of results',
        ...json(
          z.object({
            object: z.literal('search_result'),
            data: z.array(item),
            has_more: z.boolean(),
            next_page: z.string().nullable(),
          }),
        ),
      },
      ...errorResponses(400, 401),
    },
  });

const transactionsRoute = searchRoute(
  'Transactions',
  'Search transactions',
  'Clauses `field:value`, `field>value`, `>=`, `<`, `<=` (amount, created), `-field:value`, `AND` or `OR` (not both), quoted strings, ' +
    '`metadata["key"]:"value"`, `reference~"text"` and `email~"text"` (substring, case-insensitive). Newest first; read-your-writes: ' +
    'a transaction is found as soon as the request that wrote it has answered. A bad query is `invalid_request` naming the character position.',
  'status:succeeded AND amount>=1000',
  TransactionSchema,
);

const invoicesRoute = searchRoute(
  'Invoices',
  'Search invoices',
  'The transactions search language with the invoice fields: id, number (`~` too), status, customer, email (the customer email on the invoice, `~` too), ' +
    'subscription, total, amount_due, amount_paid (compare with `>`, `<`, `>=`, `<=`), currency, created, period_start, period_end, paid_at (dates; ' +
    '`paid_at:null` for unpaid), plan (an invoice with a line of that plan) and quantity (a line of that quantity; compares too). Newest first, read-your-writes. A bad query is `invalid_request` naming the character position.',
  'status:open AND amount_due>=1000',
  InvoiceSchema,
);

const customersRoute = searchRoute(
  'Customers',
  'Search customers',
  'The transactions search language with the customer fields: id, email and name (`:` exact, `~` substring, case-insensitive; `name:null`), created. ' +
    'Newest first, read-your-writes. A bad query is `invalid_request` naming the character position.',
  'email~"@example.com"',
  CustomerSchema,
);

const creditNotesRoute = searchRoute(
  'Credit notes',
  'Search credit notes',
  "The transactions search language with the credit note fields: id, number (`~` too), status (issued, void), invoice, customer, email (the customer's, `~` too), " +
    'reason (`reason:null`), memo (`~`), total, refund_amount, credit_amount, out_of_band_amount (compare with `>`, `<`, `>=`, `<=`), currency, created, voided_at (`voided_at:null`). ' +
    'Newest first, read-your-writes. A bad query is `invalid_request` naming the character position.',
  'number~"ACME-0007" AND status:issued',
  CreditNoteSchema,
);

/** What every search handler starts with: the query parsed by the resource's field table, its page token read, the caller's scope. */
async function searchRequest(
  c: Context,
  orm: AppDeps['context']['orm'],
  table: SearchTable,
  params: { query: string; limit: number; page?: string | undefined },
) {
  const parsed = parseForApi(params.query, table.schema);
  const after = params.page === undefined ? undefined : decodeSearchPage(params.page, table);
  const scope = await accountScope(c, orm);
  return { scope, parsed, options: { limit: params.limit, after } };
}

export function transactionSearchApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp().openapi(transactionsRoute, async (c) => {
    const { scope, parsed, options } = await searchRequest(c, orm, transactionSearch, c.req.valid('query'));
    const result = await searchTransactions(orm.em.fork(), scope, parsed, options);
    return c.json(
      {
        object: 'search_result' as const,
        data: result.rows.map(serializeTransaction),
        has_more: result.hasMore,
        next_page: result.nextPage,
      },
      200,
    );
  });
}

export function invoiceSearchApp({ config, context: { orm } }: AppDeps) {
  return newOpenApiApp().openapi(invoicesRoute, async (c) => {
    const { scope, parsed, options } = await searchRequest(c, orm, invoiceSearch, c.req.valid('query'));
    const result = await searchInvoices(orm.em.fork(), scope, parsed, options);
    const data = result.rows.map((invoice) => serializeInvoice(invoice, invoicePdfUrl(config, invoice.id)));
    return c.json(
      { object: 'search_result' as const, data, has_more: result.hasMore, next_page: result.nextPage },
      200,
    );
  });
}

export function customerSearchApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp().openapi(customersRoute, async (c) => {
    const { scope, parsed, options } = await searchRequest(c, orm, customerSearch, c.req.valid('query'));
    const em = orm.em.fork();
    const result = await searchCustomers(em, scope, parsed, options);
    const balances = await customerBalancesOf(
      em,
      result.rows.map((customer) => customer.id),
    );
    return c.json(
      {
        object: 'search_result' as const,
        data: result.rows.map((customer) => serializeCustomer(customer, balances.get(customer.id))),
        has_more: result.hasMore,
        next_page: result.nextPage,
      },
      200,
    );
  });
}

export function creditNoteSearchApp({ config, context: { orm } }: AppDeps) {
  return newOpenApiApp().openapi(creditNotesRoute, async (c) => {
    const { scope, parsed, options } = await searchRequest(c, orm, creditNoteSearch, c.req.valid('query'));
    const result = await searchCreditNotes(orm.em.fork(), scope, parsed, options);
    const data = result.rows.map((note) => serializeCreditNote(note, signedCreditNotePdfUrl(config, note.id)));
    return c.json(
      { object: 'search_result' as const, data, has_more: result.hasMore, next_page: result.nextPage },
      200,
    );
  });
}
