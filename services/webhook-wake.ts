/**
 * The dispatcher's fast path for changes made by workflows (renewals, settled
 * payments, dunning...): their activities record events too, and this worker
 * interceptor wakes the dispatcher after each activity completes (after its
 * database transaction committed), so those events go out at once instead of
 * at the dispatcher's next timer. Only while the deployment has an enabled
 * webhook endpoint (checked at most every 5 s), and at most one wake-up per
 * 200 ms per worker (a trailing one follows a burst), never for the webhook
 * activities themselves.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { wakeEventDispatch } from './webhooks.ts';

const webhookActivities = new Set(['dispatchWebhookEvents', 'attemptWebhookDelivery', 'finishWebhookDelivery', 'webhookDisabledEmail', 'sendEmail']);

export function wakeDispatchAfterActivities(orm: MikroORM): ActivityInterceptorsFactory {
  let hasEndpoints = false;
  let checkedAt = 0;
  let lastWake = 0;
  let trailing: NodeJS.Timeout | undefined;
  const check = async () => {
    if (Date.now() - checkedAt < 5_000) return hasEndpoints;
    checkedAt = Date.now();
    const rows = await orm.em.getConnection().execute<unknown[]>('select 1 from webhook_endpoints where enabled limit 1');
    hasEndpoints = rows.length > 0;
    return hasEndpoints;
  };
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const result = await next(input);
        if (webhookActivities.has(ctx.info.activityType)) return result;
        const wake = () => {
          lastWake = Date.now();
          wakeEventDispatch(ctx.client, ctx.info.taskQueue).catch(() => undefined);
        };
        void check()
          .then((has) => {
            if (!has) return;
            const since = Date.now() - lastWake;
            if (since >= 200) wake();
            else trailing ??= setTimeout(() => {
              trailing = undefined;
              wake();
            }, 200 - since);
          })
          .catch(() => undefined);
        return result;
      },
    },
  });
}
