/**
 * A worker interceptor: after each activity (its database transaction committed),
 * wake the webhook dispatcher, so events recorded by workflow-driven changes
 * (renewals, settled payments, dunning...) go out at once instead of at the
 * dispatcher's next timer. Never for the webhook and email activities themselves.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

import { createDispatchWaker, type DispatchWaker } from '../services/webhooks/wake.ts';

const webhookActivities = new Set([
  'dispatchWebhookEvents',
  'attemptWebhookDelivery',
  'finishWebhookDelivery',
  'webhookDisabledEmail',
  'sendEmail',
]);

/** `taskQueue`: the dispatcher's queue when it is not the activity's own (a dedicated exports worker's activities). */
export function wakeDispatchAfterActivities(orm: MikroORM, taskQueue?: string): ActivityInterceptorsFactory {
  let waker: DispatchWaker | undefined;
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const result = await next(input);
        if (webhookActivities.has(ctx.info.activityType)) return result;
        // One waker per worker (one task queue, one client): built on the first activity, which brings the client.
        waker ??= createDispatchWaker({
          orm,
          client: () => ctx.client,
          taskQueue: taskQueue ?? ctx.info.taskQueue,
          onError: () => undefined,
        });
        waker.afterChange();
        return result;
      },
    },
  });
}
