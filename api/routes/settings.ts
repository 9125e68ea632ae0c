import { createRoute, z } from '@hono/zod-openapi';
import { recordAccountEvent } from '../../services/account-events.ts';
import { Account } from '../../db/entities/index.ts';
import { defaultGracePeriodDays, defaultRetryPolicy, maxGracePeriodDays, retryPolicyProblem } from '../../domain/dunning.ts';
import { ApiError } from '../../domain/errors.ts';
import { dunningFinalActions } from '../../domain/subscription.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';


const RetryPolicySchema = z
  .object({
    max_attempts: z.number().int().min(1).max(10),
    intervals: z.array(z.string().max(10)).min(1).max(10).openapi({ description: '"immediate" first, then growing offsets from the first failure: 30m, 24h, 3d...' }),
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
  .strict();

const getSettings = createRoute({
  method: 'get',
  path: '/',
  tags: ['Settings'],
  summary: "The account's billing settings",
  responses: { 200: { description: 'Settings', ...json(BillingSettingsSchema) }, ...errorResponses(401) },
});
const patchSettings = createRoute({
  method: 'patch',
  path: '/',
  tags: ['Settings'],
  summary: 'Change billing settings',
  description:
    'Dunning reads these when a payment first fails: a subscription already past due keeps the policy it started with. ' +
    'dunning_final_action: what happens when the grace period after the last retry ends (cancel, or pause).',
  request: { body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Settings', ...json(BillingSettingsSchema) }, ...errorResponses(400, 401) },
});
const setGracePeriod = createRoute({
  method: 'post',
  path: '/grace_period',
  tags: ['Settings'],
  summary: 'Set the grace period (days)',
  description: `Days a subscription stays past due after its last failed retry before it is canceled or paused. 0 to ${maxGracePeriodDays}; SPEC recommends 3 to 7; default ${defaultGracePeriodDays}.`,
  request: { body: { ...json(z.object({ days: gracePeriodDays }).strict()), required: true } },
  responses: { 200: { description: 'Settings', ...json(BillingSettingsSchema) }, ...errorResponses(400, 401) },
});

function serialize(account: Account): z.infer<typeof BillingSettingsSchema> {
  return {
    object: 'billing_settings',
    grace_period_days: account.settings.grace_period_days ?? defaultGracePeriodDays,
    retry_policy: account.settings.retry_policy ?? defaultRetryPolicy,
    dunning_final_action: account.settings.dunning_final_action ?? 'cancel',
  };
}

/** Account-wide billing settings (both modes): grace period, retry policy, what ends dunning. */
export function settingsApp({ orm }: ApiDeps) {
  async function change(c: Parameters<typeof accountScope>[0], changes: z.infer<typeof PatchBody>) {
    requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
    if (changes.retry_policy) {
      const problem = retryPolicyProblem(changes.retry_policy);
      if (problem) throw new ApiError('invalid_request', `retry_policy: ${problem}.`);
    }
    const { accountId } = await accountScope(c, orm);
    const em = orm.em.fork();
    const account = await em.findOneOrFail(Account, { id: accountId });
    account.settings = { ...account.settings, ...changes };
    await em.transactional(async (tx) => {
      await tx.flush();
      await recordAccountEvent(tx, account, 'account.updated');
    });
    return serialize(account);
  }

  return newOpenApiApp()
    .openapi(getSettings, async (c) => {
      const { accountId } = await accountScope(c, orm);
      return c.json(serialize(await orm.em.fork().findOneOrFail(Account, { id: accountId })), 200);
    })
    .openapi(patchSettings, async (c) => c.json(await change(c, c.req.valid('json')), 200))
    .openapi(setGracePeriod, async (c) => c.json(await change(c, { grace_period_days: c.req.valid('json').days }), 200));
}
