import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, Customer, Transaction, transactionStatuses, transactionTypes } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { amount, currency, metadata, metadataLimits, timestamp } from '../../objects/common.ts';
import { serializeTransaction, TransactionSchema } from '../../objects/transaction.ts';
import { chargePendingPayment, payByCard } from '../../services/money/payments.ts';
import { completeRefund, reserveRefund } from '../../services/money/refunds.ts';
import { recordTransactionEvents } from '../../services/money/transaction-events.ts';
import { newTransactionFields, recordSucceededTransaction } from '../../services/money/transactions.ts';
import { clockBindingOf, clockCondition } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope, type Actor, actorOf } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { resourceId } from '../middleware/idempotency.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, isoInstant, testClockId } from '../schemas.ts';

const CreateBody = z
  .object({
    account_id: z.string().min(1).max(64),
    amount,
    currency,
    type: z.enum(transactionTypes),
    reference: z.string().max(500).optional(),
    metadata: metadata.optional(),
    payment_method: z.string().min(1).max(100).optional().openapi({
      description: 'For payments: the sandbox test method to charge (docs/money-and-ledger.md lists them)',
    }),
    customer: z
      .string()
      .regex(/^cus_[0-9a-z]{26}$/, 'must be a customer id')
      .optional()
      .openapi({
        description:
          "For payments: the paying customer. A customer on a test clock puts the payment on the clock: its timestamps are the clock's, and its pending settlement and funds availability wait for the clock's time (docs/testing-your-integration.md)",
      }),
    source_transaction: z
      .string()
      .regex(/^txn_[0-9a-z]{26}$/, 'must be a transaction id')
      .optional()
      .openapi({
        description: 'For refunds: the succeeded payment to refund, in part or in full (through the payment processor)',
      }),
  })
  .strict()
  .openapi({
    example: {
      account_id: 'acct_01jd3x5k8q0m2v7c9r4t6y1w3e',
      amount: 2000,
      currency: 'USD',
      type: 'payment',
      reference: 'order_1042',
      payment_method: 'pm_card_visa',
      metadata: { order_id: '1042' },
    },
  });

const cursor = z.string().regex(/^txn_[0-9a-z]{26}$/, 'must be a transaction id');
const ListQuery = z
  .object({
    status: z.enum(transactionStatuses).optional(),
    type: z.enum(transactionTypes).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    starting_after: cursor.optional(),
    ending_before: cursor.optional(),
    date_from: isoInstant.optional().openapi({ format: 'date-time' }),
    date_to: isoInstant.optional().openapi({ format: 'date-time' }),
    test_clock: testClockId.optional().openapi({
      description: 'Only transactions of customers on this test clock; without it, those are left out (as Stripe)',
    }),
  })
  .strict()
  .refine(...oneCursor);

const PatchBody = z
  .object({
    reference: z.string().max(500).nullable().optional(),
    metadata: z
      .record(z.string().min(1).max(metadataLimits.keyLength), z.string().max(metadataLimits.valueLength))
      .optional(),
    amount: z.unknown().optional(),
    currency: z.unknown().optional(),
    type: z.unknown().optional(),
  })
  .strict()
  .openapi({ example: { reference: 'order_1042', metadata: { note: 'paid by phone' } } });

const createTransaction = createRoute({
  method: 'post',
  path: '/',
  tags: ['Transactions'],
  summary: 'Create a payment, credit or refund',
  description:
    'credit adds to the balance; refund takes from it (insufficient_funds when it does not cover the amount); payment charges `payment_method` ' +
    "through the payment processor and adds to the pending balance when it succeeds (available after the processor's delay). " +
    'A refund with `source_transaction` gives back part or all of that payment through the processor (several refunds up to the amount paid; ' +
    "more is `invalid_request` naming what is left), taking the money from that payment's own pending funds first, then from available. " +
    "The currency must be the account's (settings.currency). " +
    'In live mode only a platform admin may create a credit, and members may not refund (403 `forbidden`); sandbox credits and refunds are open to owners, members and API keys.',
  request: { body: { ...json(CreateBody), required: true } },
  responses: {
    201: { description: 'Created', ...json(TransactionSchema) },
    ...errorResponses(400, 401, 402, 403, 404),
  },
});
const listTransactions = listRoute({
  tags: ['Transactions'],
  summary: 'List transactions, newest first',
  query: ListQuery,
  item: TransactionSchema,
});
const getTransaction = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Transactions'],
  summary: 'Retrieve a transaction',
  request: { params: idParam('txn') },
  responses: { 200: { description: 'The transaction', ...json(TransactionSchema) }, ...errorResponses(401, 404) },
});
const patchTransaction = createRoute({
  method: 'patch',
  path: '/{id}',
  tags: ['Transactions'],
  summary: 'Update reference and metadata',
  description:
    'metadata merges key by key; a key set to "" is removed. Sending amount, currency or type is a conflict (409) and changes nothing: ' +
    'correct with a refund or a new transaction.',
  request: { params: idParam('txn'), body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Updated', ...json(TransactionSchema) }, ...errorResponses(400, 401, 404, 409) },
});
const cancelTransaction = createRoute({
  method: 'delete',
  path: '/{id}',
  tags: ['Transactions'],
  summary: 'Cancel a pending transaction',
  request: { params: idParam('txn') },
  responses: {
    200: {
      description: 'Canceled',
      ...json(z.object({ id: z.string(), status: z.literal('canceled'), canceled_at: timestamp, message: z.string() })),
    },
    ...errorResponses(401, 404, 409),
  },
});

/**
 * Who may move live money without a charge (docs/security.md): a live credit adds payable
 * balance from nothing, so only a platform admin makes one; members make neither live
 * credits nor live refunds. Sandbox money is not payable: owners, members and keys may.
 * Checked before anything is written.
 */
function refuseLiveMoneyFromNothing(actor: Actor, livemode: boolean, type: (typeof transactionTypes)[number]): void {
  if (!livemode || actor === 'admin') return;
  if (type === 'credit') {
    throw new ApiError(
      'forbidden',
      'In live mode only a platform admin can create a credit: a credit adds payable balance without a payment. Use a sandbox credential to test credits.',
    );
  }
  if (type === 'refund' && actor === 'member')
    throw new ApiError('forbidden', 'Members cannot refund in live mode; ask an owner.');
}

export function transactionsApp(deps: AppDeps) {
  // The process's services (services/context.ts): card payments take them whole (services/money/payments.ts payByCard).
  const { context } = deps;
  const { orm, processors } = context;

  async function findOwn(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
    const transaction = await em.findOne(Transaction, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!transaction) throw await notFoundInMode(em, Transaction, id, scope, 'transaction');
    return transaction;
  }

  return newOpenApiApp()
    .openapi(createTransaction, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      // Another account's id answers exactly like an unknown one.
      if (body.account_id !== scope.accountId) throw new ApiError('not_found', 'No such account.');
      refuseLiveMoneyFromNothing(actorOf(scope.principal), scope.livemode, body.type);
      const em = orm.em.fork();
      // The caller's own account was read with the credential (api/auth/principal.ts); an admin's named account is read here.
      const own = c.get('callerAccount');
      const account =
        own?.id === scope.accountId
          ? { settings: own.settings, createdAt: new Date(own.created_at) }
          : await em.findOneOrFail(Account, { id: scope.accountId });
      if (body.currency !== account.settings.currency) {
        throw new ApiError(
          'currency_mismatch',
          `The account's currency is ${account.settings.currency}, not ${body.currency}.`,
        );
      }
      if (body.type === 'payment' && !body.payment_method)
        throw new ApiError('invalid_request', 'payment_method: required for a payment.');
      if (body.type !== 'payment' && body.payment_method)
        throw new ApiError('invalid_request', 'payment_method: only payments take one.');
      if (body.type !== 'refund' && body.source_transaction)
        throw new ApiError('invalid_request', 'source_transaction: only refunds take one.');

      if (body.customer && body.type !== 'payment')
        throw new ApiError('invalid_request', 'customer: only payments take one.');
      const customer = body.customer
        ? await em.findOne(Customer, { id: body.customer, accountId: scope.accountId, livemode: scope.livemode })
        : null;
      if (body.customer && !customer) throw new ApiError('not_found', `No such customer: ${body.customer}.`);
      // A refund of a payment of a customer on a test clock goes on that clock too (its events retry on the clock).
      const refunded =
        body.type === 'refund' && body.source_transaction
          ? await em.findOne(
              Transaction,
              { id: body.source_transaction, accountId: scope.accountId, livemode: scope.livemode },
              { fields: ['customerId'] },
            )
          : null;
      const refundedCustomer = refunded?.customerId
        ? await em.findOne(Customer, { id: refunded.customerId }, { fields: ['testClockId'] })
        : null;
      // A customer on a test clock: everything below runs on the clock's time (services/test-clocks/now.ts).
      const testClock = customer
        ? await clockBindingOf(em, customer)
        : refundedCustomer
          ? await clockBindingOf(em, refundedCustomer)
          : undefined;
      return onTestClock(testClock, async () => {
        // With an Idempotency-Key the id is derived from it: a retry that takes over the key after a crash finds the
        // transaction the first try recorded (and, for a payment, repeats its charge under the same processor key).
        const id = resourceId(c, 'transaction');
        if (c.get('idempotency')?.takeover) {
          const existing = await em.findOne(Transaction, { id, accountId: scope.accountId, livemode: scope.livemode });
          if (existing && (existing.type !== 'payment' || existing.status !== 'pending'))
            return c.json(serializeTransaction(existing), 201);
          if (existing) return c.json(serializeTransaction(await chargePendingPayment(context, existing, em)), 201);
        }
        const details = {
          accountId: scope.accountId,
          livemode: scope.livemode,
          amount: body.amount,
          currency: body.currency,
          reference: body.reference ?? null,
          metadata: body.metadata ?? {},
          paymentMethod: body.payment_method ?? null,
          ...(customer ? { links: { customerId: customer.id } } : {}),
        };
        // A payment: recorded as pending, charged once (the transaction id keys the charge), then settled: at once,
        // or by a workflow when the processor answers pending (services/money/payments.ts payByCard). If this
        // process dies in between, the maintenance workflow finishes the job (services/maintenance/sweeps.ts).
        if (body.type === 'payment')
          return c.json(serializeTransaction(await payByCard(context, { ...details, id }, { owner: account })), 201);

        const fields = { ...(await newTransactionFields(em, { ...details, type: body.type }, account)), id };

        if (body.type === 'refund' && body.source_transaction) {
          // A refund of a charge: reserved under a lock on the payment, refunded by the processor, then recorded (services/money/refunds.ts).
          const reserved = await reserveRefund(em, fields, { sourceTransactionId: body.source_transaction, scope });
          return c.json(
            serializeTransaction(await completeRefund(orm.em.fork(), processors.forMode(scope.livemode), reserved.id)),
            201,
          );
        }

        // A credit, or a refund of no charge: money on the ledger at once.
        const { transaction } = await em.transactional((tx) => recordSucceededTransaction(tx, fields));
        return c.json(serializeTransaction(transaction), 201);
      });
    })
    .openapi(listTransactions, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      if (query.status) where.status = query.status;
      if (query.type) where.type = query.type;
      if (query.date_from || query.date_to)
        where.createdAt = {
          ...(query.date_from ? { $gte: query.date_from } : {}),
          ...(query.date_to ? { $lte: query.date_to } : {}),
        };
      // Transactions of customers on test clocks only when asked for; those of no customer stay.
      const { page, hasMore } = await keysetPage(
        orm.em.fork(),
        Transaction,
        { ...where, ...clockCondition(scope, query.test_clock) },
        query,
        { rows: 'plain' },
      );
      return c.json({ object: 'list' as const, data: page.map(serializeTransaction), has_more: hasMore }, 200);
    })
    .openapi(getTransaction, async (c) => {
      const scope = await accountScope(c, orm);
      return c.json(serializeTransaction(await findOwn(orm.em.fork(), c.req.valid('param').id, scope)), 200);
    })
    .openapi(patchTransaction, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const transaction = await findOwn(em, c.req.valid('param').id, scope);
      const restricted = (['amount', 'currency', 'type'] as const).filter((field) => field in body);
      if (restricted.length)
        throw new ApiError(
          'conflict',
          `${restricted.join(', ')} cannot be changed; use a refund or a new transaction.`,
        );
      if (body.reference !== undefined) transaction.reference = body.reference;
      if (body.metadata) {
        const merged = { ...transaction.metadata };
        for (const [key, value] of Object.entries(body.metadata)) {
          if (value === '') delete merged[key];
          else merged[key] = value;
        }
        if (Object.keys(merged).length > metadataLimits.keys)
          throw new ApiError('invalid_request', `metadata: at most ${metadataLimits.keys} keys.`);
        transaction.metadata = merged;
      }
      transaction.updatedAt = new Date();
      await em.transactional(async (tx) => {
        await tx.flush();
        await recordTransactionEvents(tx, transaction, 'updated');
      });
      return c.json(serializeTransaction(transaction), 200);
    })
    .openapi(cancelTransaction, async (c) => {
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const em = orm.em.fork();
      await findOwn(em, id, scope);
      const canceledAt = new Date();
      // Only a pending transaction moves; the condition makes a racing settlement win cleanly.
      await em.transactional(async (tx) => {
        // A refund of a charge is pending only while the processor answers, its money already reserved: it cannot be canceled.
        const changed = await tx.nativeUpdate(
          Transaction,
          { id, status: 'pending', type: 'payment' },
          { status: 'canceled', canceledAt, updatedAt: canceledAt },
        );
        if (changed === 0)
          throw new ApiError('not_cancellable', 'Only a pending transaction can be canceled; refund it instead.');
        await recordTransactionEvents(tx, await tx.findOneOrFail(Transaction, { id }, { refresh: true }), 'status');
      });
      return c.json(
        { id, status: 'canceled' as const, canceled_at: canceledAt.toISOString(), message: 'Transaction canceled.' },
        200,
      );
    });
}
