import type { Event, WebhookDelivery } from '../../db/entities/index.ts';
import { deliveryId } from '../../domain/webhooks.ts';

/**
 * A delivery of `event` to an endpoint that no attempt has touched yet, due `at`: the dispatcher's, one for each
 * endpoint that subscribes (services/webhooks/dispatch.ts), and POST /v1/events/{id}/redeliver's
 * (api/routes/webhooks.ts), whose `redelivery` suffix gives it an id of its own.
 */
export function pendingDelivery(
  event: Pick<Event, 'id' | 'accountId' | 'livemode' | 'type'>,
  endpointId: string,
  at: Date,
  redelivery?: string,
): WebhookDelivery {
  return {
    id: deliveryId(event.id, endpointId, redelivery),
    accountId: event.accountId,
    livemode: event.livemode,
    endpointId,
    eventId: event.id,
    eventType: event.type,
    redelivery: Boolean(redelivery),
    status: 'pending',
    attemptCount: 0,
    lastAttemptAt: null,
    nextAttemptAt: at,
    completedAt: null,
    createdAt: at,
  };
}
