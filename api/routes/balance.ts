import { createRoute, z } from '@hono/zod-openapi';

import { AccountBalance, BalanceTransaction, balanceTransactionTypes } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { BalanceSchema, serializeBalance } from '../../objects/balance.ts';
import { BalanceTransactionSchema, serializeBalanceTransaction } from '../../objects/balance-transaction.ts';
import { currency } from '../../objects/common.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, isoInstant } from '../schemas.ts';

const getBalance = createRoute({
  method: 'get',
  path: '/',
  tags: ['Balance'],
  summary: "The account's balance in this mode",
  description:
    'One entry per currency the account holds. `available`: what payouts and refunds can use now; `pending`: money from payments not yet ' +
    'available (the sandbox processor and Stripe: 2 days after the payment). Readable by everyone with access to the account.',
  responses: { 200: { description: 'The balance', ...json(BalanceSchema) }, ...errorResponses(401) },
});

const ListQuery = z
  .object({
    ...cursorQuery('balanceTransaction'),
    type: z.enum(balanceTransactionTypes).optional(),
    source: z.string().min(1).max(64).optional().openapi({ description: 'A transaction (txn_…) or payout (po_…) id' }),
    currency: currency.optional(),
    'created[gte]': isoInstant.optional().openapi({ format: 'date-time' }),
    'created[lte]': isoInstant.optional().openapi({ format: 'date-time' }),
    date_from: isoInstant.optional().openapi({ format: 'date-time', description: 'As created[gte]' }),
    date_to: isoInstant.optional().openapi({ format: 'date-time', description: 'As created[lte]' }),
  })
  .strict()
  .refine(...oneCursor);

const listBalanceTransactions = listRoute({
  tags: ['Balance'],
  summary: 'List balance transactions, newest first',
  query: ListQuery,
  item: BalanceTransactionSchema,
});
const getBalanceTransaction = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Balance'],
  summary: 'Retrieve a balance transaction',
  request: { params: idParam('btxn') },
  responses: {
    200: { description: 'The balance transaction', ...json(BalanceTransactionSchema) },
    ...errorResponses(401, 404),
  },
});

/** GET /v1/balance. */
export function balanceApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp().openapi(getBalance, async (c) => {
    const scope = await accountScope(c, orm);
    const rows = await orm.em.fork().find(AccountBalance, { accountId: scope.accountId, livemode: scope.livemode });
    return c.json(serializeBalance(rows, scope.livemode), 200);
  });
}

/** GET /v1/balance_transactions and /v1/balance_transactions/{id}. */
export function balanceTransactionsApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp()
    .openapi(listBalanceTransactions, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      if (query.type) where.type = query.type;
      if (query.source) where.source = query.source;
      if (query.currency) where.currency = query.currency;
      const from = query['created[gte]'] ?? query.date_from;
      const to = query['created[lte]'] ?? query.date_to;
      if (from || to) where.createdAt = { ...(from ? { $gte: from } : {}), ...(to ? { $lte: to } : {}) };
      const { page, hasMore } = await keysetPage(orm.em.fork(), BalanceTransaction, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeBalanceTransaction), has_more: hasMore }, 200);
    })
    .openapi(getBalanceTransaction, async (c) => {
      const scope = await accountScope(c, orm);
      const row = await orm.em.fork().findOne(BalanceTransaction, {
        id: c.req.valid('param').id,
        accountId: scope.accountId,
        livemode: scope.livemode,
      });
      if (!row) throw new ApiError('not_found', 'No such balance transaction.');
      return c.json(serializeBalanceTransaction(row), 200);
    });
}
