import { createRoute, z } from '@hono/zod-openapi';

import { Payout, payoutStatuses } from '../../db/entities/index.ts';
import { payoutPendingMs } from '../../domain/payouts.ts';
import { amount, currency } from '../../objects/common.ts';
import { PayoutSchema, serializePayout } from '../../objects/payout.ts';
import { cancelPayout, createPayout, startPayoutWorkflow, wakePayoutWorkflow } from '../../services/payouts/rail.ts';
import { clockBindingOf, clockTimeOf, findOwnTestClock } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { resourceId } from '../middleware/idempotency.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, testClockId } from '../schemas.ts';

const CreateBody = z
  .object({
    amount,
    currency,
    destination: z.string().min(1).max(64).optional().openapi({
      description:
        'A bank account or PayPal destination (ba_…) in this currency; omitted: the default destination of the currency',
    }),
    description: z.string().min(1).max(500).optional(),
    test_clock: testClockId.optional().openapi({
      description:
        "A test clock (sandbox only: live mode answers `livemode_not_allowed`): the payout is created at the clock's time and goes in_transit and paid (or failed) when the clock is advanced past those times (docs/testing-your-integration.md)",
    }),
  })
  .strict()
  .openapi({
    example: {
      amount: 50000,
      currency: 'USD',
      destination: 'ba_01jd3x5k8q0m2v7c9r4t6y1w3e',
      description: 'November payout',
    },
  });

const ListQuery = z
  .object({
    ...cursorQuery('payout'),
    status: z.enum(payoutStatuses).optional(),
    destination: z.string().max(64).optional(),
    currency: z
      .string()
      .length(3)
      .transform((c) => c.toUpperCase())
      .optional(),
    test_clock: testClockId.optional().openapi({
      description: 'Only payouts on this test clock; without it, payouts on test clocks are left out (as Stripe)',
    }),
  })
  .strict()
  .refine(...oneCursor);

const tags = ['Payouts'];
const createPayoutRoute = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Pay out from the available balance',
  description:
    'Takes `amount` from the available balance of `currency` at once (`insufficient_funds`, 402, when it does not cover it) and answers the payout `pending`. ' +
    "The currency is USD, EUR or GBP (`invalid_request`) and the destination's (`currency_mismatch`); without `destination`, the default destination of the currency (`invalid_request` when there is none). " +
    `A payoutWorkflow owns its time: pending (cancelable) for ${payoutPendingMs / 1000} s, then in_transit until its arrival_date (sandbox: 1 day, 4 for the slow test account), then paid or failed ` +
    '(the money back on the balance). A hold keeps it pending. Idempotency-Key honoured. Events: payout.created, payout.updated, payout.paid | payout.failed | payout.canceled. Owners, admins and API keys only. ' +
    "With `test_clock` (sandbox): every one of those times is the clock's, and the payout moves only when the clock is advanced (an unknown clock: `not_found`; a clock advancing: `invalid_state`).",
  request: { body: { ...json(CreateBody), required: true } },
  responses: {
    201: { description: 'Created, pending', ...json(PayoutSchema) },
    ...errorResponses(400, 401, 402, 403, 404, 409),
  },
});
const listPayouts = listRoute({ tags, summary: 'List payouts, newest first', query: ListQuery, item: PayoutSchema });
const getPayout = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'Retrieve a payout',
  request: { params: idParam('po') },
  responses: { 200: { description: 'The payout', ...json(PayoutSchema) }, ...errorResponses(401, 404) },
});
const cancelRoute = createRoute({
  method: 'post',
  path: '/{id}/cancel',
  tags,
  summary: 'Cancel a pending payout',
  description:
    'Only while `pending` (else `not_cancellable`, 409): its amount returns to the available balance with a `payout_cancel` balance transaction. Event: payout.canceled.',
  request: { params: idParam('po') },
  responses: { 200: { description: 'Canceled', ...json(PayoutSchema) }, ...errorResponses(401, 403, 404, 409) },
});

export function payoutsApp({ context }: AppDeps) {
  const { orm, temporal } = context;
  return newOpenApiApp()
    .openapi(createPayoutRoute, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const id = resourceId(c, 'payout');
      // A retry that takes over the key after a crash finds what the first request recorded, and makes sure its workflow runs.
      const existing = c.get('idempotency')?.takeover
        ? await em.findOne(Payout, { id, accountId: scope.accountId, livemode: scope.livemode })
        : null;
      // On a test clock (sandbox): recorded at the clock's time, its event on the clock, its workflow waiting for the clock.
      const clock = !existing && body.test_clock ? await findOwnTestClock(em, body.test_clock, scope) : null;
      const testClock = existing
        ? await clockTimeOf(em, existing.testClockId)
        : clock
          ? await clockBindingOf(em, { testClockId: clock.id })
          : undefined;
      const payout =
        existing ??
        (await onTestClock(testClock, () =>
          createPayout(em, {
            id,
            accountId: scope.accountId,
            livemode: scope.livemode,
            amount: body.amount,
            currency: body.currency,
            destinationId: body.destination ?? null,
            description: body.description ?? null,
            testClockId: testClock?.id ?? null,
          }),
        ));
      // A crash before this start leaves the payout pending: the maintenance workflow starts it (services/maintenance/sweeps.ts).
      await startPayoutWorkflow(temporal, payout.id, testClock);
      return c.json(serializePayout(payout), 201);
    })
    .openapi(listPayouts, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.status) where.status = query.status;
      if (query.destination) where.destinationId = query.destination;
      if (query.currency) where.currency = query.currency;
      // Payouts on a test clock only when asked for (live mode has no clocks: none then).
      where.testClockId = query.test_clock ?? null;
      const { page, hasMore } = await keysetPage(orm.em.fork(), Payout, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializePayout), has_more: hasMore }, 200);
    })
    .openapi(getPayout, async (c) => {
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const payout = await orm.em.fork().findOne(Payout, { id, accountId: scope.accountId, livemode: scope.livemode });
      if (!payout) throw await notFoundInMode(orm.em, Payout, id, scope, 'payout');
      return c.json(serializePayout(payout), 200);
    })
    .openapi(cancelRoute, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const scope = await accountScope(c, orm);
      const id = c.req.valid('param').id;
      const em = orm.em.fork();
      // A payout on a test clock is canceled at the clock's time (its event on the clock).
      const onClock = await em.findOne(
        Payout,
        { id, accountId: scope.accountId, livemode: scope.livemode, testClockId: { $ne: null } },
        { fields: ['testClockId'] },
      );
      const payout = await onTestClock(await clockTimeOf(em, onClock?.testClockId), () =>
        cancelPayout(em, { accountId: scope.accountId, livemode: scope.livemode }, id),
      );
      if (!payout) throw await notFoundInMode(orm.em, Payout, id, scope, 'payout');
      await wakePayoutWorkflow(temporal.client, payout.id);
      return c.json(serializePayout(payout), 200);
    });
}
