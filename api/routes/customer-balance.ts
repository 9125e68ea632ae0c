/**
 * A customer's balance transactions (Stripe's customer balance API): list, retrieve, and an
 * `adjustment` made by the merchant. Every movement goes through services/customers/balance.ts
 * (the balance row's lock, the transaction and its customer_balance_transaction.created event in one
 * database transaction); credit notes and invoices move the balance through the same function.
 */
import { createRoute, z } from '@hono/zod-openapi';

import { Customer, CustomerBalanceTransaction, customerBalanceTransactionTypes } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { currency as currencyCode } from '../../objects/common.ts';
import {
  CustomerBalanceTransactionSchema,
  serializeCustomerBalanceTransaction,
} from '../../objects/customer-balance-transaction.ts';
import { recordBalanceTransaction } from '../../services/customers/balance.ts';
import { clockTimeOf } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listSchema, oneCursor } from '../pagination.ts';
import { errorResponses } from '../schemas.ts';

const tags = ['Customers'];
const customerParam = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
});
const transactionParams = customerParam.extend({
  txn: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'txn', in: 'path' }, example: 'cbtxn_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
});

const CreateBody = z
  .object({
    amount: z
      .number()
      .int()
      .min(-99_999_999)
      .max(99_999_999)
      .refine((value) => value !== 0, { message: 'must not be 0' })
      .openapi({
        description:
          "Minor units, Stripe's sign: negative credits the customer (applied to its next invoices), positive is owed (added to its next invoice)",
      }),
    currency: currencyCode,
    description: z.string().min(1).max(500).optional(),
  })
  .strict()
  .openapi({ example: { amount: -2500, currency: 'USD', description: 'Goodwill credit for the outage on March 12' } });

const ListQuery = z
  .object({
    ...cursorQuery('customerBalanceTransaction'),
    currency: currencyCode.optional().openapi({ description: 'Only this currency' }),
    type: z.enum(customerBalanceTransactionTypes).optional(),
  })
  .strict()
  .refine(...oneCursor);

const routes = {
  create: createRoute({
    method: 'post',
    path: '/{id}/balance_transactions',
    tags,
    summary: "Adjust a customer's balance",
    description:
      "An `adjustment` of the customer's balance in `currency`: negative is credit (goodwill, a prepayment), which the customer's next invoices in that currency use " +
      'before charging; positive is owed and added to its next invoice. Records `customer_balance_transaction.created`.',
    request: { params: customerParam, body: { ...json(CreateBody), required: true } },
    responses: {
      201: { description: 'Created', ...json(CustomerBalanceTransactionSchema) },
      ...errorResponses(400, 401, 404),
    },
  }),
  list: createRoute({
    method: 'get',
    path: '/{id}/balance_transactions',
    tags,
    summary: "List a customer's balance transactions, newest first",
    description:
      "Adjustments, credit notes' credits, and balances applied to (or given back from) invoices; each with the balance after it (`ending_balance`).",
    request: { params: customerParam, query: ListQuery },
    responses: {
      200: { description: 'A page', ...json(listSchema(CustomerBalanceTransactionSchema)) },
      ...errorResponses(400, 401, 404),
    },
  }),
  get: createRoute({
    method: 'get',
    path: '/{id}/balance_transactions/{txn}',
    tags,
    summary: 'Retrieve a customer balance transaction',
    request: { params: transactionParams },
    responses: {
      200: { description: 'The balance transaction', ...json(CustomerBalanceTransactionSchema) },
      ...errorResponses(401, 404),
    },
  }),
};

export function customerBalanceApp(deps: AppDeps) {
  const { orm } = deps.context;

  async function findOwnCustomer(id: string, scope: { accountId: string; livemode: boolean }) {
    const em = orm.em.fork();
    const customer = await em.findOne(Customer, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!customer) throw await notFoundInMode(em, Customer, id, scope, 'customer');
    return customer;
  }

  return newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const scope = await accountScope(c, orm);
      const customer = await findOwnCustomer(c.req.valid('param').id, scope);
      const body = c.req.valid('json');
      const em = orm.em.fork();
      const row = await onTestClock(await clockTimeOf(em, customer.testClockId), () =>
        em.transactional((tx) =>
          recordBalanceTransaction(tx, {
            accountId: scope.accountId,
            livemode: scope.livemode,
            customerId: customer.id,
            currency: body.currency,
            type: 'adjustment',
            amount: body.amount,
            description: body.description ?? null,
          }),
        ),
      );
      return c.json(serializeCustomerBalanceTransaction(row), 201);
    })
    .openapi(routes.list, async (c) => {
      const scope = await accountScope(c, orm);
      const customer = await findOwnCustomer(c.req.valid('param').id, scope);
      const query = c.req.valid('query');
      const where: Record<string, unknown> = {
        customerId: customer.id,
        accountId: scope.accountId,
        livemode: scope.livemode,
      };
      if (query.currency) where.currency = query.currency;
      if (query.type) where.type = query.type;
      const { page, hasMore } = await keysetPage(orm.em.fork(), CustomerBalanceTransaction, where, query);
      return c.json(
        { object: 'list' as const, data: page.map(serializeCustomerBalanceTransaction), has_more: hasMore },
        200,
      );
    })
    .openapi(routes.get, async (c) => {
      const scope = await accountScope(c, orm);
      const { id, txn } = c.req.valid('param');
      const customer = await findOwnCustomer(id, scope);
      const row = await orm.em.fork().findOne(CustomerBalanceTransaction, {
        id: txn,
        customerId: customer.id,
        accountId: scope.accountId,
        livemode: scope.livemode,
      });
      if (!row) throw new ApiError('not_found', 'No such customer balance transaction.');
      return c.json(serializeCustomerBalanceTransaction(row), 200);
    });
}
