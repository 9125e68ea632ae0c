import { createRoute, z } from '@hono/zod-openapi';

import { Account } from '../../db/entities/index.ts';
import { defaultGracePeriodDays, maxGracePeriodDays, retryPolicyProblem } from '../../domain/dunning.ts';
import { ApiError } from '../../domain/errors.ts';
import { dunningFinalActions } from '../../domain/subscription.ts';
import { defaultUsageGraceSeconds, maxUsageGraceSeconds } from '../../domain/usage-billing.ts';
import { lateEventsPolicies } from '../../domain/usage-late-events.ts';
import { recordModeSettingsEvent } from '../../services/accounts/events.ts';
import { type BillingSettings, changeModeSettings, loadModeSettings } from '../../services/accounts/mode-settings.ts';
import { setUsageSettings as saveUsageSettings, usageSettingsOf } from '../../services/usage/settings.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

const RetryPolicySchema = z
  .object({
    max_attempts: z.number().int().min(1).max(10),
    intervals: z
      .array(z.string().max(10))
      .min(1)
      .max(10)
      .openapi({ description: '"immediate" first, then growing offsets from the first failure: 30m, 24h, 3d...' }),
  })
  .strict()
  .openapi('RetryPolicy');

const BillingSettingsSchema = z
  .object({
    object: z.literal('billing_settings'),
    grace_period_days: z.number().int(),
    retry_policy: RetryPolicySchema,
    dunning_final_action: z.enum(dunningFinalActions),
  })
  .openapi('BillingSettings');

const gracePeriodDays = z.number().int().min(0).max(maxGracePeriodDays);
const PatchBody = z
  .object({
    grace_period_days: gracePeriodDays.optional(),
    retry_policy: RetryPolicySchema.optional(),
    dunning_final_action: z.enum(dunningFinalActions).optional(),
  })
  .strict()
  .openapi({
    example: {
      grace_period_days: 7,
      retry_policy: { max_attempts: 4, intervals: ['immediate', '24h', '3d', '7d'] },
      dunning_final_action: 'cancel',
    },
  });

const getSettings = createRoute({
  method: 'get',
  path: '/',
  tags: ['Settings'],
  summary: "The account's billing settings in the caller's mode",
  description:
    'Live and sandbox each have their own: a sandbox key (or x-sandbox-mode: true) reads the sandbox settings.',
  responses: { 200: { description: 'Settings', ...json(BillingSettingsSchema) }, ...errorResponses(401) },
});
const patchSettings = createRoute({
  method: 'patch',
  path: '/',
  tags: ['Settings'],
  summary: 'Change billing settings',
  description:
    "Changes the caller's mode only: a change made with a sandbox key (or x-sandbox-mode: true) never changes live, and the reverse. " +
    "Dunning reads the subscription's mode's settings when a payment first fails: a subscription already past due keeps the policy it started with. " +
    'dunning_final_action: what happens when the grace period after the last retry ends (cancel, or pause).',
  request: { body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Settings', ...json(BillingSettingsSchema) }, ...errorResponses(400, 401, 403) },
});
const setGracePeriod = createRoute({
  method: 'post',
  path: '/grace_period',
  tags: ['Settings'],
  summary: 'Set the grace period (days)',
  description: `In the caller's mode only. Days a subscription stays past due after its last failed retry before it is canceled or paused. 0 to ${maxGracePeriodDays}; SPEC recommends 3 to 7; default ${defaultGracePeriodDays}.`,
  request: {
    body: {
      ...json(
        z
          .object({ days: gracePeriodDays })
          .strict()
          .openapi({ example: { days: 7 } }),
      ),
      required: true,
    },
  },
  responses: { 200: { description: 'Settings', ...json(BillingSettingsSchema) }, ...errorResponses(400, 401, 403) },
});

const UsageSettingsSchema = z
  .object({
    object: z.literal('usage_settings'),
    usage_grace_period_seconds: z
      .number()
      .int()
      .openapi({
        description: `Seconds after a period's end that late meter events still count before its usage is invoiced (default ${defaultUsageGraceSeconds})`,
        example: 3600,
      }),
    late_events: z.enum(lateEventsPolicies).openapi({
      description:
        "Meter events stamped before a period already invoiced: `refuse` (default: 409 period_invoiced) or `bill_next_invoice` (accepted; the subscription's next invoice bills them as a usage adjustment line, priced on the old period's tiers)",
      example: 'bill_next_invoice',
    }),
  })
  .openapi('UsageSettings');
const getUsageSettings = createRoute({
  method: 'get',
  path: '/usage',
  tags: ['Settings'],
  summary: "The account's usage billing settings in the caller's mode",
  responses: { 200: { description: 'Usage settings', ...json(UsageSettingsSchema) }, ...errorResponses(401) },
});
const setUsageSettings = createRoute({
  method: 'post',
  path: '/usage',
  tags: ['Settings'],
  summary: 'Set the usage grace window (seconds) and what becomes of late meter events',
  description:
    `In the caller's mode only. A subscription with metered plans invoices a period's usage this long after the period ends, so late events still count; ` +
    `then the period is closed and later events in it are refused period_invoiced. 0 to ${maxUsageGraceSeconds}; default ${defaultUsageGraceSeconds} (Stripe's hour). ` +
    "A subscription takes a change from its next period's closing on (the closing it waits for was timed with the window it knew). " +
    '`late_events`: `refuse` (default) or `bill_next_invoice`: events after the closing are then accepted and billed on the next invoice as a usage adjustment (docs/usage.md#late-events); it applies to events ingested from then on. ' +
    'At least one field; a field left out is unchanged.',
  request: {
    body: {
      ...json(
        z
          .object({
            usage_grace_period_seconds: z.number().int().min(0).max(maxUsageGraceSeconds).optional(),
            late_events: z.enum(lateEventsPolicies).optional(),
          })
          .strict()
          .refine((body) => body.usage_grace_period_seconds !== undefined || body.late_events !== undefined, {
            message: 'usage_grace_period_seconds or late_events: at least one',
          })
          .openapi({ example: { usage_grace_period_seconds: 600, late_events: 'bill_next_invoice' } }),
      ),
      required: true,
    },
  },
  responses: { 200: { description: 'Usage settings', ...json(UsageSettingsSchema) }, ...errorResponses(400, 401, 403) },
});

function serialize(settings: BillingSettings): z.infer<typeof BillingSettingsSchema> {
  return {
    object: 'billing_settings',
    grace_period_days: settings.gracePeriodDays,
    retry_policy: settings.retryPolicy,
    dunning_final_action: settings.finalAction,
  };
}

/** Billing settings of the caller's mode (live and sandbox each have their own): grace period, retry policy, what ends dunning. */
export function settingsApp({ context: { orm } }: AppDeps) {
  async function change(c: Parameters<typeof accountScope>[0], changes: z.infer<typeof PatchBody>) {
    requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
    if (changes.retry_policy) {
      const problem = retryPolicyProblem(changes.retry_policy);
      if (problem) throw new ApiError('invalid_request', `retry_policy: ${problem}.`);
    }
    const { accountId, livemode } = await accountScope(c, orm);
    return orm.em.fork().transactional(async (tx) => {
      const settings = await changeModeSettings(tx, accountId, livemode, {
        gracePeriodDays: changes.grace_period_days,
        retryPolicy: changes.retry_policy,
        finalAction: changes.dunning_final_action,
      });
      await recordModeSettingsEvent(tx, await tx.findOneOrFail(Account, { id: accountId }), livemode);
      return serialize(settings.billing);
    });
  }

  async function usageSettings(accountId: string, livemode: boolean) {
    const settings = await usageSettingsOf(orm.em.fork(), accountId, livemode);
    return {
      object: 'usage_settings' as const,
      usage_grace_period_seconds: settings.graceSeconds,
      late_events: settings.lateEvents,
    };
  }

  return newOpenApiApp()
    .openapi(getSettings, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(serialize((await loadModeSettings(orm.em.fork(), accountId, livemode)).billing), 200);
    })
    .openapi(patchSettings, async (c) => c.json(await change(c, c.req.valid('json')), 200))
    .openapi(setGracePeriod, async (c) => c.json(await change(c, { grace_period_days: c.req.valid('json').days }), 200))
    .openapi(getUsageSettings, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(await usageSettings(accountId, livemode), 200);
    })
    .openapi(setUsageSettings, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const { accountId, livemode } = await accountScope(c, orm);
      const body = c.req.valid('json');
      // One transaction with its account.updated event (in this mode only), as the billing settings'.
      await orm.em.fork().transactional(async (tx) => {
        await saveUsageSettings(tx, accountId, livemode, {
          graceSeconds: body.usage_grace_period_seconds,
          lateEvents: body.late_events,
        });
        await recordModeSettingsEvent(tx, await tx.findOneOrFail(Account, { id: accountId }), livemode);
      });
      return c.json(await usageSettings(accountId, livemode), 200);
    });
}
