import { createRoute, z } from '@hono/zod-openapi';
import { payoutIntervals, weekdays } from '../../domain/payout-schedule.ts';
import { ensurePayoutSchedule, loadSchedules, patchSchedule, withNextRuns, type CurrencySchedule } from '../../services/payout-schedule.ts';
import { currency, timestamp } from '../../objects/common.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

const tags = ['Payouts'];
const ScheduleSchema = z.object({
  currency: z.string(),
  interval: z.enum(payoutIntervals),
  weekly_anchor: z.enum(weekdays).nullable(),
  monthly_anchor: z.number().int().nullable(),
  delay_days: z.number().int(),
  minimum_amount: z.number().int(),
  next_payout_at: timestamp.nullable().openapi({ description: 'The next run (00:00 UTC of its day); null when manual' }),
});
const SettingsSchema = z
  .object({ object: z.literal('payout_settings'), livemode: z.boolean(), schedules: z.array(ScheduleSchema) })
  .openapi('PayoutSettings');

const PatchBody = z
  .object({
    currency,
    interval: z.enum(payoutIntervals).optional(),
    weekly_anchor: z.enum(weekdays).nullable().optional(),
    monthly_anchor: z.number().int().min(1).max(31).nullable().optional().openapi({ description: '1-31; clamped to the last day of shorter months' }),
    delay_days: z.number().int().min(0).max(365).optional().openapi({ description: 'Money credited within the last N days stays out of a scheduled payout' }),
    minimum_amount: z.number().int().min(0).max(99_999_999).optional().openapi({ description: 'A run with less to pay out skips' }),
  })
  .strict();

function serialize(schedules: CurrencySchedule[], livemode: boolean): z.infer<typeof SettingsSchema> {
  return {
    object: 'payout_settings',
    livemode,
    schedules: withNextRuns(schedules, new Date()).map((s) => ({
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
  responses: { 200: { description: 'Settings', ...json(SettingsSchema) }, ...errorResponses(401) },
});
const patch = createRoute({
  method: 'patch',
  path: '/',
  tags,
  summary: "Change one currency's payout schedule",
  description:
    '`interval`: daily, weekly (with `weekly_anchor`), monthly (with `monthly_anchor` 1-31, clamped to the month end) or manual (the default). Each run, at 00:00 UTC, pays out the available balance of the currency ' +
    'to its default destination. One long-lived payoutScheduleWorkflow per account and mode runs them. Owners, admins and API keys.',
  request: { body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Settings', ...json(SettingsSchema) }, ...errorResponses(400, 401, 403) },
});

export function payoutSettingsApp(deps: ApiDeps) {
  const { orm } = deps;
  return newOpenApiApp()
    .openapi(get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(serialize(await loadSchedules(orm.em.fork(), { accountId, livemode }), livemode), 200);
    })
    .openapi(patch, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const { accountId, livemode } = await accountScope(c, orm);
      const schedules = await patchSchedule(orm.em.fork(), { accountId, livemode }, c.req.valid('json'));
      await ensurePayoutSchedule(deps.temporal, deps.config.taskQueue, { accountId, livemode });
      return c.json(serialize(schedules, livemode), 200);
    });
}
