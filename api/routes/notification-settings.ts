import { createRoute, z } from '@hono/zod-openapi';
import { LockMode } from '@mikro-orm/core';
import { recordAccountEvent } from '../../services/account-events.ts';
import { Account } from '../../db/entities/index.ts';
import { notificationPreferences, type NotificationPreferences } from '../../domain/notifications.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';


const NotificationSettingsSchema = z
  .object({
    object: z.literal('notification_settings'),
    payout_confirmations: z.boolean().openapi({ description: 'Email the account when a payout is paid' }),
    failed_payments: z.boolean().openapi({ description: 'Email customers at each failed subscription charge (reason, billing-details link, next retry)' }),
    subscription_cancellations: z.boolean().openapi({ description: 'Email customers when their subscription is canceled (or paused when dunning ends)' }),
  })
  .openapi('NotificationSettings');

const PatchBody = z
  .object({ payout_confirmations: z.boolean().optional(), failed_payments: z.boolean().optional(), subscription_cancellations: z.boolean().optional() })
  .strict();

const getRoute = createRoute({
  method: 'get',
  path: '/',
  tags: ['Settings'],
  summary: "The account's email notification preferences",
  description: 'Every key defaults to true. Account-wide (both modes).',
  responses: { 200: { description: 'Preferences', ...json(NotificationSettingsSchema) }, ...errorResponses(401) },
});
const patchRoute = createRoute({
  method: 'patch',
  path: '/',
  tags: ['Settings'],
  summary: 'Change email notification preferences',
  description: 'Keys left out stay as they are. Every sender reads them when it is about to send, so a change applies to the next email. Records `account.updated`.',
  request: { body: { ...json(PatchBody), required: true } },
  responses: { 200: { description: 'Preferences', ...json(NotificationSettingsSchema) }, ...errorResponses(400, 401, 403) },
});

const serialize = (prefs: NotificationPreferences): z.infer<typeof NotificationSettingsSchema> => ({ object: 'notification_settings', ...prefs });

/** GET/PATCH /v1/settings/notifications, kept in Account.settings.notifications. */
export function notificationSettingsApp({ orm }: ApiDeps) {
  return newOpenApiApp()
    .openapi(getRoute, async (c) => {
      const { accountId } = await accountScope(c, orm);
      const account = await orm.em.fork().findOneOrFail(Account, { id: accountId });
      return c.json(serialize(notificationPreferences(account.settings)), 200);
    })
    .openapi(patchRoute, async (c) => {
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const body = c.req.valid('json');
      const { accountId } = await accountScope(c, orm);
      const account = await orm.em.fork().transactional(async (tx) => {
        const row = await tx.findOneOrFail(Account, { id: accountId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        row.settings = { ...row.settings, notifications: { ...notificationPreferences(row.settings), ...body } };
        await tx.flush();
        await recordAccountEvent(tx, row, 'account.updated');
        return row;
      });
      return c.json(serialize(notificationPreferences(account.settings)), 200);
    });
}
