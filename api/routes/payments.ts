import { createRoute, z } from '@hono/zod-openapi';
import type { FilterQuery } from '@mikro-orm/core';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { Context } from 'hono';
import { allocatePaymentRequest } from '../../activities/payment-requests.ts';
import { Account, PaymentRequest } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { formatMoney } from '../../domain/money.ts';
import {
  defaultExpiryMs,
  maxExpiryMs,
  minExpiryMs,
  paymentRequestStatuses,
  paymentUrl,
  type CancellationReason,
  type PaymentRequestSnapshot,
} from '../../domain/payment-requests.ts';
import { cancelPaymentRequestUpdate, paymentRequestCreatedUpdate, paymentRequestWorkflow, type PaymentRequestWorkflowInput } from '../../workflows/payment-request.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { amount, currency, emailField, errorResponses, idParam, isoInstant, timestamp } from '../schemas.ts';
import { metadata } from './transactions.ts';

export const PaymentRequestSchema = z
  .object({
    id: z.string(),
    object: z.literal('payment_request'),
    account_id: z.string(),
    amount: z.number().int(),
    currency: z.string(),
    status: z.enum(paymentRequestStatuses),
    customer_email: z.string(),
    reference: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    payment_url: z.string().openapi({ description: 'The hosted pay page; its last segment is a 256-bit secret' }),
    expires_at: timestamp,
    transaction_id: z.string().nullable().openapi({ description: 'The ledger transaction of the payment, once succeeded' }),
    paid_at: timestamp.nullable(),
    failure_reason: z.enum(['expired']).nullable().openapi({ description: 'Why the request failed' }),
    canceled_at: timestamp.nullable(),
    cancellation_reason: z.enum(['requested', 'account_closed']).nullable(),
    last_payment_error: z
      .object({ code: z.string(), message: z.string(), payment_method: z.string(), created_at: timestamp })
      .nullable()
      .openapi({ description: 'The latest declined attempt on the pay page' }),
    attempts: z.number().int(),
    recurring_payment_request_id: z.string().nullable().openapi({ description: 'The recurring request that issued this one, if any' }),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('PaymentRequest');

type PaymentRequestLike = PaymentRequestSnapshot | PaymentRequest;
const isoOrNull = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

/** Works on the projection row and on the workflow's own snapshot alike. */
export function serializePaymentRequest(r: PaymentRequestLike, publicUrl: string): z.infer<typeof PaymentRequestSchema> {
  return {
    id: r.id,
    object: 'payment_request',
    account_id: r.accountId,
    amount: r.amount,
    currency: r.currency,
    status: r.status,
    customer_email: r.customerEmail,
    reference: r.reference ?? null,
    metadata: r.metadata,
    payment_url: paymentUrl(publicUrl, r.token),
    expires_at: new Date(r.expiresAt).toISOString(),
    transaction_id: r.transactionId ?? null,
    paid_at: isoOrNull(r.paidAt ?? null),
    failure_reason: r.failureReason ?? null,
    canceled_at: isoOrNull(r.canceledAt ?? null),
    cancellation_reason: r.cancellationReason ?? null,
    last_payment_error: r.lastPaymentError
      ? { code: r.lastPaymentError.code, message: r.lastPaymentError.message, payment_method: r.lastPaymentError.paymentMethod, created_at: r.lastPaymentError.at }
      : null,
    attempts: r.attempts,
    recurring_payment_request_id: r.recurringPaymentRequestId ?? null,
    livemode: r.livemode,
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}

/** Body fields both POST /v1/payments and POST /api/v1/payment-requests take. */
export const paymentRequestFields = {
  amount,
  currency,
  customer_email: emailField,
  reference: z.string().max(500).optional(),
  metadata: metadata.optional(),
  expires_at: isoInstant.optional().openapi({ type: 'string', format: 'date-time', description: 'At least a minute and at most 30 days ahead' }),
  expires_in: z
    .number()
    .int()
    .min(minExpiryMs / 1000)
    .max(maxExpiryMs / 1000)
    .optional()
    .openapi({ description: 'Seconds the link stays payable (60 to 2592000); default 604800 (7 days)' }),
};

const CreateBody = z
  .object({ account_id: z.string().min(1).max(64), ...paymentRequestFields })
  .strict()
  .refine((body) => !(body.expires_at && body.expires_in !== undefined), { message: 'use expires_at or expires_in, not both' });

export interface NewPaymentRequest {
  account_id?: string | undefined;
  amount: number;
  currency: string;
  customer_email: string;
  reference?: string | undefined;
  metadata?: Record<string, string> | undefined;
  expires_at?: Date | undefined;
  expires_in?: number | undefined;
}

/**
 * The account a new payment request (one-off or recurring) asks money for: the
 * caller's own, named or by default. An unknown or foreign id is
 * `account_not_found`, as SPEC.md names it; the currency must be the account's,
 * because the payment lands on its ledger as a transaction.
 */
export async function requestingAccount(deps: ApiDeps, c: Context, body: Pick<NewPaymentRequest, 'account_id' | 'currency'>) {
  const scope = await accountScope(c, deps.orm);
  if (body.account_id !== undefined && body.account_id !== scope.accountId) throw new ApiError('account_not_found', `No such account: ${body.account_id}.`);
  const account = await deps.orm.em.fork().findOne(Account, { id: scope.accountId });
  if (!account) throw new ApiError('account_not_found', `No such account: ${scope.accountId}.`);
  if (body.currency !== account.settings.currency) {
    throw new ApiError('currency_mismatch', `The account's currency is ${account.settings.currency}, not ${body.currency}.`);
  }
  return { scope, account };
}

/** Starts a payment request's workflow and answers with its first recorded state (update-with-start). */
export async function createPaymentRequest(deps: ApiDeps, c: Context, body: NewPaymentRequest): Promise<PaymentRequestSnapshot> {
  const { scope, account } = await requestingAccount(deps, c, body);
  let expiresAt: string | null = null;
  let expiresInMs = defaultExpiryMs;
  if (body.expires_at) {
    const ahead = body.expires_at.getTime() - Date.now();
    if (ahead < minExpiryMs) throw new ApiError('invalid_request', 'expires_at: must be at least a minute in the future.');
    if (ahead > maxExpiryMs) throw new ApiError('invalid_request', 'expires_at: must be at most 30 days ahead.');
    expiresAt = body.expires_at.toISOString();
  } else if (body.expires_in !== undefined) {
    expiresInMs = body.expires_in * 1000;
  }
  const { id, token } = allocatePaymentRequest();
  // Times are set by the workflow from workflow time; these are placeholders it overwrites.
  const epoch = new Date(0).toISOString();
  const input: PaymentRequestWorkflowInput = {
    request: {
      id,
      accountId: scope.accountId,
      livemode: scope.livemode,
      amount: body.amount,
      currency: body.currency,
      customerEmail: body.customer_email,
      reference: body.reference ?? null,
      metadata: body.metadata ?? {},
      token,
      status: 'pending',
      expiresAt: epoch,
      createdAt: epoch,
      updatedAt: epoch,
      transactionId: null,
      paidAt: null,
      failureReason: null,
      canceledAt: null,
      cancellationReason: null,
      lastPaymentError: null,
      attempts: 0,
      recurringPaymentRequestId: null,
      period: null,
      version: 0,
    },
    accountName: account.name,
    locale: account.settings.language,
    publicUrl: deps.config.publicUrl,
    expiresInMs,
    expiresAt,
  };
  return deps.temporal.workflow.executeUpdateWithStart(paymentRequestCreatedUpdate, {
    startWorkflowOperation: new WithStartWorkflowOperation(paymentRequestWorkflow, {
      workflowId: id,
      taskQueue: deps.config.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      staticSummary: `Payment request of ${formatMoney(body.amount, body.currency)} to ${body.customer_email}`,
      typedSearchAttributes: [
        { key: AccountIdKey, value: scope.accountId },
        { key: LivemodeKey, value: scope.livemode },
      ],
    }),
  });
}

export async function findOwnPaymentRequest(deps: ApiDeps, c: Context, id: string): Promise<PaymentRequest> {
  const scope = await accountScope(c, deps.orm);
  const request = await deps.orm.em.fork().findOne(PaymentRequest, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!request) throw new ApiError('not_found', 'No such payment request.');
  return request;
}

/**
 * Cancels a pending request through its workflow, which refuses (`invalid_state`)
 * one that is no longer pending; the answer comes after the projection says canceled.
 */
export async function cancelPaymentRequest(deps: ApiDeps, request: PaymentRequest, reason: CancellationReason): Promise<PaymentRequestSnapshot> {
  if (request.status !== 'pending') throw new ApiError('invalid_state', `This payment request is already ${request.status}.`);
  try {
    return await deps.temporal.workflow.getHandle(request.id).executeUpdate(cancelPaymentRequestUpdate, { args: [{ reason }] });
  } catch (error) {
    // The workflow may have ended (paid, expired) after the projection was read.
    const now = await deps.orm.em.fork().findOne(PaymentRequest, { id: request.id });
    if (now && now.status !== 'pending') throw new ApiError('invalid_state', `This payment request is already ${now.status}.`);
    throw error;
  }
}


const cursor = z.string().regex(/^pay_[0-9a-z]{26}$/, 'must be a payment request id');
const ListQuery = z
  .object({
    status: z.enum(paymentRequestStatuses).optional(),
    recurring_payment_request_id: z.string().min(1).max(64).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    starting_after: cursor.optional(),
    ending_before: cursor.optional(),
  })
  .strict()
  .refine((q) => !(q.starting_after && q.ending_before), { message: 'use starting_after or ending_before, not both' });

const StatusSchema = z
  .object({ id: z.string(), status: z.enum(paymentRequestStatuses), amount: z.number().int(), currency: z.string(), reference: z.string().nullable(), updated_at: timestamp })
  .openapi('PaymentRequestStatus');

const createRoutePayment = createRoute({
  method: 'post',
  path: '/',
  tags: ['Payment requests'],
  summary: 'Request a payment from a customer',
  description:
    'Starts the request\'s workflow, which records it as `pending` and emails `customer_email` the `payment_url`. ' +
    'The link stays payable for 7 days unless `expires_at` or `expires_in` says otherwise (at most 30 days). ' +
    '`account_id` must be the caller\'s account (else account_not_found) and `currency` its currency (else currency_mismatch).',
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created, pending', ...json(PaymentRequestSchema) }, ...errorResponses(400, 401, 404) },
});
const listRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['Payment requests'],
  summary: 'List payment requests, newest first',
  request: { query: ListQuery },
  responses: {
    200: { description: 'A page', ...json(z.object({ object: z.literal('list'), data: z.array(PaymentRequestSchema), has_more: z.boolean() })) },
    ...errorResponses(400, 401),
  },
});
const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Payment requests'],
  summary: 'Retrieve a payment request',
  request: { params: idParam('pay') },
  responses: { 200: { description: 'The payment request', ...json(PaymentRequestSchema) }, ...errorResponses(401, 404) },
});
const statusRoute = createRoute({
  method: 'get',
  path: '/{id}/status',
  tags: ['Payment requests'],
  summary: 'The status of a payment request',
  request: { params: idParam('pay') },
  responses: { 200: { description: 'Its status', ...json(StatusSchema) }, ...errorResponses(401, 404) },
});
const cancelRoute = createRoute({
  method: 'post',
  path: '/{id}/cancel',
  tags: ['Payment requests'],
  summary: 'Cancel a pending payment request',
  description: 'Its link then shows that the request was canceled. A request that is no longer pending answers invalid_state (409).',
  request: { params: idParam('pay') },
  responses: { 200: { description: 'Canceled', ...json(PaymentRequestSchema) }, ...errorResponses(401, 404, 409) },
});

export function paymentsApp(deps: ApiDeps) {
  const { orm, config } = deps;
  return newOpenApiApp()
    .openapi(createRoutePayment, async (c) => {
      const request = await createPaymentRequest(deps, c, c.req.valid('json'));
      return c.json(serializePaymentRequest(request, config.publicUrl), 201);
    })
    .openapi(listRoute, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      if (query.status) where.status = query.status;
      if (query.recurring_payment_request_id) where.recurringPaymentRequestId = query.recurring_payment_request_id;
      // Keyset pages on the time-sortable id: rows that arrive between calls never shift a page.
      const backwards = Boolean(query.ending_before);
      if (query.starting_after) where.id = { $lt: query.starting_after };
      if (query.ending_before) where.id = { $gt: query.ending_before };
      const rows = await orm.em.fork().find(PaymentRequest, where as FilterQuery<PaymentRequest>, { orderBy: { id: backwards ? 'asc' : 'desc' }, limit: query.limit + 1 });
      const hasMore = rows.length > query.limit;
      const page = rows.slice(0, query.limit);
      if (backwards) page.reverse();
      return c.json({ object: 'list' as const, data: page.map((r) => serializePaymentRequest(r, config.publicUrl)), has_more: hasMore }, 200);
    })
    .openapi(getRoute, async (c) => {
      const request = await findOwnPaymentRequest(deps, c, c.req.valid('param').id);
      return c.json(serializePaymentRequest(request, config.publicUrl), 200);
    })
    .openapi(statusRoute, async (c) => {
      const r = await findOwnPaymentRequest(deps, c, c.req.valid('param').id);
      return c.json({ id: r.id, status: r.status, amount: r.amount, currency: r.currency, reference: r.reference ?? null, updated_at: r.updatedAt.toISOString() }, 200);
    })
    .openapi(cancelRoute, async (c) => {
      await optionalJsonBody(c, z.object({}).strict());
      const request = await findOwnPaymentRequest(deps, c, c.req.valid('param').id);
      return c.json(serializePaymentRequest(await cancelPaymentRequest(deps, request, 'requested'), config.publicUrl), 200);
    });
}
