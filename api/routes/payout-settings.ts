import { createRoute, z } from '@hono/zod-openapi';

import { payoutIntervals, weekdays } from '../../domain/payout-schedule.ts';
import { currency, timestamp } from '../../objects/common.ts';
import {
  type CurrencySchedule,
  ensurePayoutSchedule,
  loadSchedules,
  patchSchedule,
  withNextRuns,
} from '../../services/payouts/schedule.ts';
import { clockBindingOf, findOwnTestClock } from '../../services/test-clocks/clocks.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses, testClockId } from '../schemas.ts';

const tags = ['Payouts'];
const testClockField = testClockId.optional();
const ScheduleSchema = z.object({
  currency: z.string(),
  interval: z.enum(payoutIntervals),
  weekly_anchor: z.enum(weekdays).nullable(),
  monthly_anchor: z.number().int().nullable(),
  delay_days: z.number().int(),
  minimum_amount: z.number().int(),
  next_payout_at: timestamp
    .nullable()
    .openapi({ description: 'The next run (00:00 UTC of its day); null when manual' }),
});
const SettingsSchema = z
  .object({
    object: z.literal('payout_settings'),
    livemode: z.boolean(),
    test_clock: z
      .string()
      .optional()
      .openapi({ description: "The test clock whose own schedules these are (sandbox); absent for the account's" }),
    schedules: z.array(ScheduleSchema),
  })
  .openapi('PayoutSettings');

const PatchBody = z
  .object({
    currency,
    interval: z.enum(payoutIntervals).optional(),
    weekly_anchor: z.enum(weekdays).nullable().optional(),
    monthly_anchor: z
      .number()
      .int()
      .min(1)
      .max(31)
      .nullable()
      .optional()
      .openapi({ description: '1-31; clamped to the last day of shorter months' }),
    delay_days: z
      .number()
      .int()
      .min(0)
      .max(365)
      .optional()
      .openapi({ description: 'Money credited within the last N days stays out of a scheduled payout' }),
    minimum_amount: z
      .number()
      .int()
      .min(0)
      .max(99_999_999)
      .optional()
      .openapi({ description: 'A run with less to pay out skips' }),
    test_clock: testClockField.openapi({
      description:
        "A test clock (sandbox only: live mode answers `livemode_not_allowed`): this changes the clock's own schedule, apart from the account's, run on the clock's time (each run when the clock is advanced past it; its payouts live on the clock)",
    }),
  })
  .strict()
  .openapi({
    example: { currency: 'USD', interval: 'weekly', weekly_anchor: 'friday', delay_days: 2, minimum_amount: 10000 },
  });
const GetQuery = z.object({
  test_clock: testClockField.openapi({
    description: "A test clock's own schedules (sandbox); without it, the account's",
  }),
});

/** `clock`: a test clock's schedules, their next runs from the clock's time. */
function serialize(
  schedules: CurrencySchedule[],
  livemode: boolean,
  clock?: { id: string; frozenTime: Date } | null,
): z.infer<typeof SettingsSchema> {
  return {
    object: 'payout_settings',
    livemode,
    ...(clock ? { test_clock: clock.id } : {}),
    schedules: withNextRuns(schedules, clock?.frozenTime ?? new Date()).map((s) => ({
      currency: s.currency,
      interval: s.interval,
      weekly_anchor: s.weeklyAnchor,
      monthly_anchor: s.monthlyAnchor,
      delay_days: s.delayDays,
      minimum_amount: s.minimumAmount,
      next_payout_at: s.nextRun?.toISOString() ?? null,
    })),
  };
}

const get = createRoute({
  method: 'get',
  path: '/',
  tags,
  summary: "The account's payout schedules in this mode, one per currency",
  request: { query: GetQuery },
  responses: { 200: { description: 'Settings', ...json(SettingsSchema) }, ...errorResponses(400, 401, 404) },
});
const patch = createRoute({
  method: 'patch',
  path: '/',
  tags,
  summary: "Change one currency's payout schedule",
  description:
    '`interval`: daily, weekly (with `weekly_anchor`), monthly (with `monthly_anchor` 1-31, clamped to the month end) or manual (the default). Each run, at 00:00 UTC, pays out the available balance of the currency ' +
    'to its default destination. One long-lived payoutScheduleWorkflow per account and mode runs them. Owners, admins and API keys. ' +
    "With `test_clock` (sandbox): the clock's own schedule, run by its own payoutScheduleWorkflow on the clock's time; it pays out the sandbox's available balance when the clock is advanced past a run (an unknown clock: `not_found`; a clock advancing: `invalid_state`).",
  request: { body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Settings', ...json(SettingsSchema) }, ...errorResponses(400, 401, 403, 404, 409) },
});

export function payoutSettingsApp({ context }: AppDeps) {
  const { orm, temporal } = context;
  return newOpenApiApp()
    .openapi(get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const query = c.req.valid('query');
      const clock = query.test_clock ? await findOwnTestClock(em, query.test_clock, { accountId, livemode }) : null;
      return c.json(
        serialize(await loadSchedules(em, { accountId, livemode, testClockId: clock?.id }), livemode, clock),
        200,
      );
    })
    .openapi(patch, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const { test_clock: clockId, ...body } = c.req.valid('json');
      // A clock's schedule: only while the clock is ready (its schedule joins the clock at the clock's time).
      const clock = clockId ? await findOwnTestClock(em, clockId, { accountId, livemode }) : null;
      const testClock = clock ? await clockBindingOf(em, { testClockId: clock.id }) : undefined;
      const schedules = await patchSchedule(em, { accountId, livemode, testClockId: clock?.id }, body);
      await ensurePayoutSchedule(temporal, { accountId, livemode }, testClock);
      return c.json(serialize(schedules, livemode, clock), 200);
    });
}
