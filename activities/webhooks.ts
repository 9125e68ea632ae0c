/**
 * The webhook activities' Temporal side: the dispatcher's pass run as an activity (heartbeats, cancellation, the
 * worker's client, Temporal's clock) over services/webhooks/dispatch.ts, and Temporal's time for an attempt
 * (services/webhooks/delivery.ts). Everything else about webhooks is in services/webhooks/.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';

import type { WebhookDeliveryDeps } from '../services/webhooks/delivery.ts';
import { dispatchEvents, type DispatchResult } from '../services/webhooks/dispatch.ts';

/**
 * Temporal's time now: at least the server's time when it scheduled the running activity (the wall clock in
 * production; the time-skipping test server runs ahead). The wall clock outside an activity.
 */
export function temporalNow(): Date {
  try {
    const info = Context.current().info;
    return new Date(Math.max(Date.now(), info.currentAttemptScheduledTimestampMs));
  } catch {
    return new Date(); // outside an activity
  }
}

/**
 * The dispatcher's pass as an activity: the worker's own Temporal client starts
 * the delivery workflows; heartbeats as deliveries are handled (at most every
 * 0.5 s) and every 2 s.
 *
 * Inline attempts are recorded on Temporal's clock, which the delivery
 * workflows' timers run on: at least the server's time when it scheduled this
 * activity plus the time since it started here. In production that is the
 * wall clock (the max below picks it); under the time-skipping test server,
 * whose clock runs ahead, it keeps attempt times and timers on one clock.
 */
export async function dispatchEventsActivity(
  em: EntityManager,
  deps: WebhookDeliveryDeps,
  limit: number,
): Promise<DispatchResult> {
  const context = Context.current();
  const scheduledAt = context.info.currentAttemptScheduledTimestampMs;
  const startedAt = Date.now();
  const now = () => {
    const wall = Date.now();
    return new Date(Math.max(wall, scheduledAt + (wall - startedAt)));
  };
  const ticker = setInterval(() => context.heartbeat(), 2_000);
  let beat = 0;
  const progress = () => {
    if (Date.now() - beat < 500) return;
    beat = Date.now();
    context.heartbeat();
  };
  try {
    return await dispatchEvents(
      em,
      { client: context.client, taskQueue: context.info.taskQueue },
      { ...deps, temporalNow },
      {
        limit,
        now,
        progress,
        signal: context.cancellationSignal,
        log: context.log,
      },
    );
  } finally {
    clearInterval(ticker);
  }
}
