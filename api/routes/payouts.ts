import { createRoute, z } from '@hono/zod-openapi';
import { createPayout, startPayoutWorkflow } from '../../services/payouts.ts';
import { Account, Payout, payoutMethods, payoutStatuses } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { payoutCurrencyProblem, sandboxPayoutArrivalMs } from '../../domain/payouts.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listSchema, oneCursor } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';
import { amount, currency } from '../../objects/common.ts';
import { PayoutSchema, serializePayout } from '../../objects/payout.ts';



const CreateBody = z
  .object({
    amount,
    currency,
    method: z.enum(payoutMethods).openapi({ description: 'bank_transfer (ACH/SEPA), paypal or wire (SPEC.md)' }),
    description: z.string().min(1).max(500).optional(),
  })
  .strict();

const ListQuery = z
  .object({ ...cursorQuery('payout'), status: z.enum(payoutStatuses).optional() })
  .strict()
  .refine(...oneCursor);

const createPayoutRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['Payouts'],
  summary: 'Pay out from the available balance',
  description:
    "Takes `amount` from the available balance at once (`insufficient_funds`, 402, when it does not cover it) and answers the payout `pending`. The currency must be the account's " +
    '(`currency_mismatch`) and one of USD, EUR, GBP (`invalid_request`). A payoutWorkflow records it `paid` when the rail has sent it ' +
    `(the sandbox rail: after ${sandboxPayoutArrivalMs / 1000} s) and emails the account a confirmation. Events: payout.created, payout.paid (payout.failed gives the money back). ` +
    'Owners, admins and API keys only.',
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created, pending', ...json(PayoutSchema) }, ...errorResponses(400, 401, 402, 403) },
});
const listPayouts = createRoute({
  method: 'get',
  path: '/',
  tags: ['Payouts'],
  summary: 'List payouts, newest first',
  request: { query: ListQuery },
  responses: { 200: { description: 'A page', ...json(listSchema(PayoutSchema)) }, ...errorResponses(400, 401) },
});
const getPayout = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Payouts'],
  summary: 'Retrieve a payout',
  request: { params: idParam('po') },
  responses: { 200: { description: 'The payout', ...json(PayoutSchema) }, ...errorResponses(401, 404) },
});

export function payoutsApp(deps: ApiDeps) {
  const { orm } = deps;
  return newOpenApiApp()
    .openapi(createPayoutRoute, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const account = await em.findOneOrFail(Account, { id: scope.accountId });
      const problem = payoutCurrencyProblem(body.currency);
      if (problem) throw new ApiError('invalid_request', `currency: ${problem}`);
      if (body.currency !== account.settings.currency) {
        throw new ApiError('currency_mismatch', `The account's currency is ${account.settings.currency}, not ${body.currency}.`);
      }
      const payout = await createPayout(em, {
        accountId: scope.accountId,
        livemode: scope.livemode,
        amount: body.amount,
        currency: body.currency,
        method: body.method,
        description: body.description ?? null,
      });
      // A crash before this start leaves the payout pending: the maintenance workflow starts it (activities/maintenance.ts).
      await startPayoutWorkflow(deps.temporal, deps.config.taskQueue, payout.id);
      return c.json(serializePayout(payout), 201);
    })
    .openapi(listPayouts, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.status) where.status = query.status;
      const { page, hasMore } = await keysetPage(orm.em.fork(), Payout, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializePayout), has_more: hasMore }, 200);
    })
    .openapi(getPayout, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const payout = await orm.em.fork().findOne(Payout, { id: c.req.valid('param').id, accountId, livemode });
      if (!payout) throw new ApiError('not_found', 'No such payout.');
      return c.json(serializePayout(payout), 200);
    });
}
