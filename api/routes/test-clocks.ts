import { createRoute, z } from '@hono/zod-openapi';

import { TestClock } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { serializeTestClock, TestClockSchema } from '../../objects/test-clock.ts';
import {
  advanceTestClock,
  createTestClock,
  deleteTestClock,
  findOwnTestClock,
} from '../../services/test-clocks/clocks.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, isoInstant } from '../schemas.ts';

/** An instant: ISO 8601, or Unix seconds as Stripe takes it. */
const instant = z
  .union([
    isoInstant,
    z
      .number()
      .int()
      .min(0)
      .max(253_402_300_799)
      .transform((seconds) => new Date(seconds * 1000)),
  ])
  .openapi({ description: 'ISO 8601 (2027-01-01T00:00:00Z) or Unix seconds', example: '2027-01-01T00:00:00Z' });

const CreateBody = z
  .object({ frozen_time: instant, name: z.string().min(1).max(300).optional() })
  .strict()
  .openapi({ example: { frozen_time: '2027-01-01T00:00:00Z', name: 'Monthly renewal, declined card' } });
const AdvanceBody = z
  .object({ frozen_time: instant })
  .strict()
  .openapi({ example: { frozen_time: '2027-02-01T00:00:00Z' } });
const ListQuery = z
  .object({ ...cursorQuery('testClock') })
  .strict()
  .refine(...oneCursor);

const tags = ['Test clocks'];
const sandboxOnly = 'Sandbox only: in live mode it answers 400 `livemode_not_allowed`.';

const createClock = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Create a test clock',
  description: `A clock at \`frozen_time\`. Customers created with \`test_clock\` live on it: their subscriptions, invoices and payments take its time, and move only when it is advanced. An account has at most 100 clocks at once (400 \`invalid_request\` beyond; delete one first); a clock holds at most 3 customers, each with at most 3 subscriptions not ended, and 10 payment requests (docs/testing-your-integration.md#limits). ${sandboxOnly}`,
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created', ...json(TestClockSchema) }, ...errorResponses(400, 401) },
});
const listClocks = listRoute({
  tags,
  summary: 'List test clocks, newest first',
  description: sandboxOnly,
  query: ListQuery,
  item: TestClockSchema,
});
const getClock = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'Retrieve a test clock',
  description: sandboxOnly,
  request: { params: idParam('clock') },
  responses: { 200: { description: 'The test clock', ...json(TestClockSchema) }, ...errorResponses(400, 401, 404) },
});
const advanceClock = createRoute({
  method: 'post',
  path: '/{id}/advance',
  tags,
  summary: 'Advance a test clock',
  description:
    'Moves the clock forward to `frozen_time`, at most two intervals of the longest recurring price on the clock (two days over a daily plan; two years with none), else 400 `invalid_request` naming the latest instant allowed: advance in steps. Answers at once with status `advancing`; the clock becomes `ready` once every piece of work due up to the new time has run, in time order (trial ends, renewals, payment retries and their emails, grace periods, pauses that end, pending payments settling, payment requests expiring, recurring requests, webhook retries). Poll the clock, or listen for `test_clock.ready`. ' +
    sandboxOnly,
  request: { params: idParam('clock'), body: { ...json(AdvanceBody), required: true } },
  responses: { 200: { description: 'Advancing', ...json(TestClockSchema) }, ...errorResponses(400, 401, 404, 409) },
});
const deleteClock = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Delete a test clock',
  description:
    'Deletes the clock and every object on it: its customers, their subscriptions and invoices; their workflows end. Money that moved stays on the sandbox ledger. ' +
    sandboxOnly,
  request: { params: idParam('clock') },
  responses: {
    200: {
      description: 'Deleted',
      ...json(z.object({ id: z.string(), object: z.literal('test_clock'), deleted: z.literal(true) })),
    },
    ...errorResponses(400, 401, 404),
  },
});

export function testClocksApp({ config, context }: AppDeps) {
  const { orm } = context;
  const clocks = { temporal: context.temporal, limits: config.testClocks };
  return newOpenApiApp()
    .openapi(createClock, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const clock = await createTestClock(clocks, orm.em.fork(), {
        accountId,
        livemode,
        frozenTime: body.frozen_time,
        name: body.name ?? null,
      });
      return c.json(serializeTestClock(clock), 201);
    })
    .openapi(listClocks, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      if (livemode)
        throw new ApiError(
          'livemode_not_allowed',
          'Test clocks exist only in the sandbox: send x-sandbox-mode: true, or use a test key.',
        );
      const { page, hasMore } = await keysetPage(
        orm.em.fork(),
        TestClock,
        { accountId, livemode: false },
        c.req.valid('query'),
      );
      return c.json({ object: 'list' as const, data: page.map(serializeTestClock), has_more: hasMore }, 200);
    })
    .openapi(getClock, async (c) => {
      const clock = await findOwnTestClock(orm.em.fork(), c.req.valid('param').id, await accountScope(c, orm));
      return c.json(serializeTestClock(clock), 200);
    })
    .openapi(advanceClock, async (c) => {
      const em = orm.em.fork();
      const clock = await findOwnTestClock(em, c.req.valid('param').id, await accountScope(c, orm));
      return c.json(
        serializeTestClock(await advanceTestClock(clocks, em, clock, c.req.valid('json').frozen_time)),
        200,
      );
    })
    .openapi(deleteClock, async (c) => {
      const em = orm.em.fork();
      const clock = await findOwnTestClock(em, c.req.valid('param').id, await accountScope(c, orm));
      await deleteTestClock(context, em, clock);
      return c.json({ id: clock.id, object: 'test_clock' as const, deleted: true as const }, 200);
    });
}
