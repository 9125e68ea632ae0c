import { createRoute, z } from '@hono/zod-openapi';

import { PaymentRequest } from '../../db/entities/index.ts';
import { paymentRequestStatuses } from '../../domain/payment-requests.ts';
import { timestamp } from '../../objects/common.ts';
import { PaymentRequestSchema, serializePaymentRequest } from '../../objects/payment-request.ts';
import { cancelPaymentRequest } from '../../services/payment-requests/commands.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { createPaymentRequest, findOwnPaymentRequest, paymentRequestFields } from '../payment-request-input.ts';
import { errorResponses, idParam, testClockId } from '../schemas.ts';

const CreateBody = z
  .object({ account_id: z.string().min(1).max(64), ...paymentRequestFields })
  .strict()
  .refine((body) => !(body.expires_at && body.expires_in !== undefined), {
    message: 'use expires_at or expires_in, not both',
  })
  .openapi({
    example: {
      account_id: 'acct_01jd3x5k8q0m2v7c9r4t6y1w3e',
      amount: 4900,
      currency: 'USD',
      customer_email: 'jane.doe@example.com',
      reference: 'order_1042',
      expires_in: 86400,
    },
  });

const cursor = z.string().regex(/^pay_[0-9a-z]{26}$/, 'must be a payment request id');
const ListQuery = z
  .object({
    status: z.enum(paymentRequestStatuses).optional(),
    recurring_payment_request_id: z.string().min(1).max(64).optional(),
    test_clock: testClockId.optional().openapi({
      description:
        'Only payment requests on this test clock; without it, those on test clocks are left out (as Stripe)',
    }),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    starting_after: cursor.optional(),
    ending_before: cursor.optional(),
  })
  .strict()
  .refine(...oneCursor);

const StatusSchema = z
  .object({
    id: z.string(),
    status: z.enum(paymentRequestStatuses),
    amount: z.number().int(),
    currency: z.string(),
    reference: z.string().nullable(),
    updated_at: timestamp,
  })
  .openapi('PaymentRequestStatus');

const createRoutePayment = createRoute({
  method: 'post',
  path: '/',
  tags: ['Payment requests'],
  summary: 'Request a payment from a customer',
  description:
    "Starts the request's workflow, which records it as `pending` and emails `customer_email` the `payment_url`. " +
    'The link stays payable for 7 days unless `expires_at` or `expires_in` says otherwise (at most 30 days). ' +
    "`account_id` must be the caller's account (else account_not_found) and `currency` its currency (else currency_mismatch).",
  request: { body: { ...json(CreateBody), required: true } },
  responses: {
    201: { description: 'Created, pending', ...json(PaymentRequestSchema) },
    ...errorResponses(400, 401, 404),
  },
});
const listPaymentRequests = listRoute({
  tags: ['Payment requests'],
  summary: 'List payment requests, newest first',
  query: ListQuery,
  item: PaymentRequestSchema,
});
const getRoute = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Payment requests'],
  summary: 'Retrieve a payment request',
  request: { params: idParam('pay') },
  responses: {
    200: { description: 'The payment request', ...json(PaymentRequestSchema) },
    ...errorResponses(401, 404),
  },
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
  description:
    'Its link then shows that the request was canceled. A request that is no longer pending answers invalid_state (409).',
  request: { params: idParam('pay') },
  responses: { 200: { description: 'Canceled', ...json(PaymentRequestSchema) }, ...errorResponses(401, 404, 409) },
});

export function paymentsApp(deps: AppDeps) {
  const { orm, links } = deps.context;
  return newOpenApiApp()
    .openapi(createRoutePayment, async (c) => {
      const request = await createPaymentRequest(deps, c, c.req.valid('json'));
      return c.json(serializePaymentRequest(request, links.publicUrl), 201);
    })
    .openapi(listPaymentRequests, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      if (query.status) where.status = query.status;
      if (query.recurring_payment_request_id) where.recurringPaymentRequestId = query.recurring_payment_request_id;
      // Requests on a test clock only when asked for (live mode has no clocks: none then).
      where.testClockId = query.test_clock ?? null;
      const { page, hasMore } = await keysetPage(orm.em.fork(), PaymentRequest, where, query);
      return c.json(
        {
          object: 'list' as const,
          data: page.map((r) => serializePaymentRequest(r, links.publicUrl)),
          has_more: hasMore,
        },
        200,
      );
    })
    .openapi(getRoute, async (c) => {
      const request = await findOwnPaymentRequest(deps, c, c.req.valid('param').id);
      return c.json(serializePaymentRequest(request, links.publicUrl), 200);
    })
    .openapi(statusRoute, async (c) => {
      const r = await findOwnPaymentRequest(deps, c, c.req.valid('param').id);
      return c.json(
        {
          id: r.id,
          status: r.status,
          amount: r.amount,
          currency: r.currency,
          reference: r.reference ?? null,
          updated_at: r.updatedAt.toISOString(),
        },
        200,
      );
    })
    .openapi(cancelRoute, async (c) => {
      await optionalJsonBody(c, z.object({}).strict());
      const request = await findOwnPaymentRequest(deps, c, c.req.valid('param').id);
      return c.json(
        serializePaymentRequest(await cancelPaymentRequest(deps.context, request, 'requested'), links.publicUrl),
        200,
      );
    });
}
