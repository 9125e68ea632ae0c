import { createRoute, z } from '@hono/zod-openapi';
import { parseForApi, decodeSearchPage, searchTransactions } from '../../services/search.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';
import { TransactionSchema, serializeTransaction } from '../../objects/transaction.ts';

const SearchQuery = z
  .object({
    query: z.string().min(1).max(2000).openapi({ description: 'The search language: docs/exports-and-search.md (e.g. `status:succeeded AND amount>=1000`)' }),
    limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: '1 to 100' }),
    page: z.string().min(1).max(200).optional().openapi({ description: 'The next_page of the previous result' }),
  })
  .strict();

const searchRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['Transactions'],
  summary: 'Search transactions',
  description:
    'Clauses `field:value`, `field>value`, `>=`, `<`, `<=` (amount, created), `-field:value`, `AND` or `OR` (not both), quoted strings, ' +
    '`metadata["key"]:"value"`, `reference~"text"` and `email~"text"` (substring, case-insensitive). Newest first; read-your-writes: ' +
    'a transaction is found as soon as the request that wrote it has answered. A bad query is `invalid_request` naming the character position.',
  request: { query: SearchQuery },
  responses: {
    200: {
      description: 'A page of results',
      ...json(z.object({ object: z.literal('search_result'), data: z.array(TransactionSchema), has_more: z.boolean(), next_page: z.string().nullable() })),
    },
    ...errorResponses(400, 401),
  },
});

/** GET /v1/transactions/search, mounted before /v1/transactions so `search` is never read as an id. */
export function transactionSearchApp(deps: ApiDeps) {
  const { orm } = deps;
  return newOpenApiApp().openapi(searchRoute, async (c) => {
    const params = c.req.valid('query');
    const parsed = parseForApi(params.query);
    const after = params.page === undefined ? undefined : decodeSearchPage(params.page);
    const scope = await accountScope(c, orm);
    const result = await searchTransactions(orm.em.fork(), scope, parsed, { limit: params.limit, after });
    return c.json({ object: 'search_result' as const, data: result.rows.map(serializeTransaction), has_more: result.hasMore, next_page: result.nextPage }, 200);
  });
}
