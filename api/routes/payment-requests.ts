/**
 * POST /api/v1/payment-requests (SPEC.md, "Other named interfaces"): `type:
 * one_time` is POST /v1/payments by another name; `type: recurring` starts one
 * long-lived recurringPaymentRequestWorkflow that issues a payment request every
 * interval until canceled.
 */
import { createRoute, z } from '@hono/zod-openapi';

import { RecurringPaymentRequest } from '../../db/entities/index.ts';
import { intervalUnits } from '../../domain/billing-calendar.ts';
import { hasPrefix } from '../../domain/ids.ts';
import { defaultExpiryMs } from '../../domain/payment-requests.ts';
import {
  PaymentRequestSchema,
  RecurringPaymentRequestSchema,
  serializePaymentRequest,
  serializeRecurringPaymentRequest,
} from '../../objects/payment-request.ts';
import type { ServiceContext } from '../../services/context.ts';
import {
  cancelPaymentRequest,
  cancelRecurringPaymentRequest,
  startRecurringPaymentRequest,
} from '../../services/payment-requests/commands.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import {
  createPaymentRequest,
  findOwnPaymentRequest,
  paymentRequestFields,
  requestingAccount,
  requestStartFields,
  testClockOf,
} from '../payment-request-input.ts';
import { errorResponses, idParam } from '../schemas.ts';

const CreateBody = z
  .object({
    type: z.enum(['one_time', 'recurring']),
    account_id: z.string().min(1).max(64).optional().openapi({ description: "Defaults to the caller's account" }),
    ...paymentRequestFields,
    interval: z.enum(intervalUnits).optional().openapi({ description: 'recurring: how often a new request is sent' }),
    interval_count: z
      .number()
      .int()
      .min(1)
      .max(365)
      .optional()
      .openapi({ description: 'recurring: intervals between requests (default 1)' }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.expires_at && body.expires_in !== undefined)
      ctx.addIssue({ code: 'custom', path: ['expires_at'], message: 'use expires_at or expires_in, not both' });
    if (body.type === 'recurring') {
      if (!body.interval)
        ctx.addIssue({ code: 'custom', path: ['interval'], message: 'required for a recurring request' });
      if (body.expires_at)
        ctx.addIssue({
          code: 'custom',
          path: ['expires_at'],
          message: 'a recurring request takes expires_in (per issued request)',
        });
    } else {
      for (const field of ['interval', 'interval_count'] as const) {
        if (body[field] !== undefined)
          ctx.addIssue({ code: 'custom', path: [field], message: 'only for type recurring' });
      }
    }
  })
  .openapi({
    example: {
      type: 'one_time',
      amount: 4900,
      currency: 'USD',
      customer_email: 'jane.doe@example.com',
      reference: 'order_1042',
      expires_in: 604800,
    },
  });

const Created = z.union([PaymentRequestSchema, RecurringPaymentRequestSchema]);

const createRequest = createRoute({
  method: 'post',
  path: '/',
  tags: ['Payment requests'],
  summary: 'Create a one-time or recurring payment request',
  description:
    "`one_time` behaves exactly as POST /v1/payments (account_id defaults to the caller's). `recurring` (with `interval` and " +
    '`interval_count`) sends a new payment request now and at the start of every later period, calendar-correct, until canceled.',
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created', ...json(Created) }, ...errorResponses(400, 401, 404) },
});
const getRequest = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Payment requests'],
  summary: 'Retrieve a payment request (pay_…) or a recurring one (preq_…)',
  request: { params: idParam('preq') },
  responses: { 200: { description: 'The request', ...json(Created) }, ...errorResponses(401, 404) },
});
const cancelRequest = createRoute({
  method: 'post',
  path: '/{id}/cancel',
  tags: ['Payment requests'],
  summary: 'Cancel a payment request, or stop a recurring one',
  description:
    'Canceling a recurring request stops further requests; one already sent stays payable until it is canceled itself or expires.',
  request: { params: idParam('preq') },
  responses: { 200: { description: 'Canceled', ...json(Created) }, ...errorResponses(401, 404, 409) },
});

async function findOwnRecurring(
  { orm }: Pick<ServiceContext, 'orm'>,
  scope: { accountId: string; livemode: boolean },
  id: string,
): Promise<RecurringPaymentRequest> {
  const row = await orm.em
    .fork()
    .findOne(RecurringPaymentRequest, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!row) throw await notFoundInMode(orm.em, RecurringPaymentRequest, id, scope, 'payment request');
  return row;
}

export function paymentRequestsApp(deps: AppDeps) {
  const { context } = deps;
  const { orm, links } = context;
  return newOpenApiApp()
    .openapi(createRequest, async (c) => {
      const body = c.req.valid('json');
      if (body.type === 'one_time') {
        return c.json(serializePaymentRequest(await createPaymentRequest(deps, c, body), links.publicUrl), 201);
      }
      const { scope, account } = await requestingAccount(deps, c, body);
      const testClock = await testClockOf(deps, scope, body.test_clock);
      const created = await startRecurringPaymentRequest(context, {
        ...(testClock ? { testClock } : {}),
        ...requestStartFields(scope, account, body),
        interval: { unit: body.interval!, count: body.interval_count ?? 1 },
        expiresInMs: body.expires_in !== undefined ? body.expires_in * 1000 : defaultExpiryMs,
      });
      return c.json(serializeRecurringPaymentRequest(created), 201);
    })
    .openapi(getRequest, async (c) => {
      const id = c.req.valid('param').id;
      if (hasPrefix(id, 'recurringPaymentRequest')) {
        return c.json(
          serializeRecurringPaymentRequest(await findOwnRecurring(context, await accountScope(c, orm), id)),
          200,
        );
      }
      return c.json(serializePaymentRequest(await findOwnPaymentRequest(deps, c, id), links.publicUrl), 200);
    })
    .openapi(cancelRequest, async (c) => {
      await optionalJsonBody(c, z.object({}).strict());
      const id = c.req.valid('param').id;
      if (hasPrefix(id, 'recurringPaymentRequest')) {
        const row = await findOwnRecurring(context, await accountScope(c, orm), id);
        return c.json(
          serializeRecurringPaymentRequest(await cancelRecurringPaymentRequest(context, row, 'requested')),
          200,
        );
      }
      const request = await findOwnPaymentRequest(deps, c, id);
      return c.json(
        serializePaymentRequest(await cancelPaymentRequest(context, request, 'requested'), links.publicUrl),
        200,
      );
    });
}
