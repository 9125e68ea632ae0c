import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * A URL an account receives events at. `secret` and `previousSecret` are sealed
 * (domain/secret-box.ts): signing needs them back, so they are encrypted, not
 * hashed; the API shows a secret once, when it is made. `failingSince` is the
 * first failed attempt since the last success: an endpoint failing for the
 * mode's window is disabled.
 */
export const WebhookEndpoint = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    url: p.text(),
    description: p.text().nullable(),
    events: p.json<string[]>(),
    enabled: p.boolean().default(true),
    disabledReason: p.string().nullable(),
    disabledAt: p.datetime().nullable(),
    secret: p.text().hidden(),
    previousSecret: p.text().nullable().hidden(),
    previousSecretExpiresAt: p.datetime().nullable(),
    failingSince: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpoint>;

export const webhookDeliveryStatuses = ['pending', 'succeeded', 'failed', 'canceled'] as const;
export type WebhookDeliveryStatus = (typeof webhookDeliveryStatuses)[number];

/**
 * One event sent to one endpoint (`whd_<event>_<endpoint>`, with `_r<ulid>` for
 * a redelivery). The dispatcher makes the first attempt; if it fails, the
 * webhookDeliveryWorkflow with the same id owns the retries (a redelivery is
 * such a workflow from its first attempt). `canceled`: the endpoint was deleted
 * or disabled before an attempt succeeded.
 */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  indexes: [{ properties: ['endpointId', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    endpointId: p.string(),
    eventId: p.string().index(),
    eventType: p.string(),
    redelivery: p.boolean().default(false),
    status: p.string().$type<WebhookDeliveryStatus>(),
    attemptCount: p.integer().default(0),
    lastAttemptAt: p.datetime().nullable(),
    nextAttemptAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;

/** One HTTP attempt of a delivery: when, the status code, how long, the first 1 KB of the response, or the error. */
export const WebhookAttempt = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_delivery_attempts',
  indexes: [{ properties: ['deliveryId', 'attempt'] }],
  properties: {
    id: p.string().primary(),
    deliveryId: p.string(),
    endpointId: p.string(),
    eventId: p.string(),
    accountId: p.string(),
    livemode: p.boolean(),
    attempt: p.integer(),
    attemptedAt: p.datetime(),
    url: p.text(),
    succeeded: p.boolean(),
    statusCode: p.integer().nullable(),
    latencyMs: p.integer().nullable(),
    responseBody: p.text().nullable(),
    error: p.text().nullable(),
  },
});
export type WebhookAttempt = InferEntity<typeof WebhookAttempt>;
