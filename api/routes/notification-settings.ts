import { createRoute, z } from '@hono/zod-openapi';

import { Account } from '../../db/entities/index.ts';
import type { NotificationPreferences } from '../../domain/notifications.ts';
import { recordModeSettingsEvent } from '../../services/accounts/events.ts';
import { changeModeSettings, loadModeSettings } from '../../services/accounts/mode-settings.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

const NotificationSettingsSchema = z
  .object({
    object: z.literal('notification_settings'),
    payout_confirmations: z.boolean().openapi({ description: 'Email the account when a payout is paid' }),
    failed_payments: z.boolean().openapi({
      description: 'Email customers at each failed subscription charge (reason, billing-details link, next retry)',
    }),
    subscription_cancellations: z
      .boolean()
      .openapi({ description: 'Email customers when their subscription is canceled (or paused when dunning ends)' }),
  })
  .openapi('NotificationSettings');

const PatchBody = z
  .object({
    payout_confirmations: z.boolean().optional(),
    failed_payments: z.boolean().optional(),
    subscription_cancellations: z.boolean().optional(),
  })
  .strict()
  .openapi({ example: { failed_payments: true, payout_confirmations: false } });

const getRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['Settings'],
  summary: "The account's email notification preferences in the caller's mode",
  description:
    'Every key defaults to true. Live and sandbox each have their own: a sandbox key (or x-sandbox-mode: true) reads the sandbox ones, which govern emails about sandbox subscriptions and payouts.',
  responses: { 200: { description: 'Preferences', ...json(NotificationSettingsSchema) }, ...errorResponses(401) },
});
const patchRoute = createRoute({
  method: 'patch',
  path: '/',
  tags: ['Settings'],
  summary: 'Change email notification preferences',
  description:
    "Changes the caller's mode only (a sandbox change never changes live, and the reverse). Keys left out stay as they are. " +
    'Every sender reads the preferences of the mode of what it is about to send about, so a change applies to the next email. Records `account.updated` in that mode.',
  request: { body: { ...json(PatchBody), required: true } },
  responses: {
    200: { description: 'Preferences', ...json(NotificationSettingsSchema) },
    ...errorResponses(400, 401, 403),
  },
});

const serialize = (prefs: NotificationPreferences): z.infer<typeof NotificationSettingsSchema> => ({
  object: 'notification_settings',
  ...prefs,
});

/** GET/PATCH /v1/settings/notifications: the caller's mode's preferences (services/accounts/mode-settings.ts). */
export function notificationSettingsApp({ context: { orm } }: AppDeps) {
  return newOpenApiApp()
    .openapi(getRoute, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(serialize((await loadModeSettings(orm.em.fork(), accountId, livemode)).notifications), 200);
    })
    .openapi(patchRoute, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const settings = await orm.em.fork().transactional(async (tx) => {
        const changed = await changeModeSettings(tx, accountId, livemode, { notifications: body });
        await recordModeSettingsEvent(tx, await tx.findOneOrFail(Account, { id: accountId }), livemode);
        return changed;
      });
      return c.json(serialize(settings.notifications), 200);
    });
}
