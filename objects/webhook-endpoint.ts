import { z } from '@hono/zod-openapi';

import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../db/entities/index.ts';
import { isoOrNull, timestamp } from './common.ts';

/** A webhook endpoint, and a delivery of an event to it with its attempts. */

export const WebhookEndpointSchema = z
  .object({
    id: z.string(),
    object: z.literal('webhook_endpoint'),
    url: z.string(),
    description: z.string().nullable(),
    events: z.array(z.string()),
    enabled: z.boolean(),
    disabled_reason: z
      .enum(['failing', 'manual'])
      .nullable()
      .openapi({ description: 'failing: disabled after failing for the whole window; manual: PATCH enabled=false' }),
    disabled_at: timestamp.nullable(),
    failing_since: timestamp.nullable().openapi({ description: 'The first failed attempt since the last success' }),
    previous_secret_expires_at: timestamp
      .nullable()
      .openapi({ description: 'Until then the secret before the last rotation signs too' }),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('WebhookEndpoint');

export const WithSecretSchema = WebhookEndpointSchema.extend({
  secret: z.string().openapi({
    description: 'The signing secret (whsec_...). Shown only in this response.',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  }),
}).openapi('WebhookEndpointWithSecret');

const AttemptSchema = z.object({
  attempt: z.number().int(),
  attempted_at: timestamp,
  url: z.string(),
  succeeded: z.boolean(),
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int().nullable(),
  response_body: z.string().nullable().openapi({ description: 'The first 1 KB of the response' }),
  error: z.string().nullable(),
});

export const DeliverySchema = z
  .object({
    id: z.string().openapi({ description: 'Also the id of the webhookDeliveryWorkflow in Temporal' }),
    object: z.literal('webhook_delivery'),
    endpoint_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    redelivery: z.boolean(),
    status: z.enum(['pending', 'succeeded', 'failed', 'canceled']),
    attempt_count: z.number().int(),
    last_attempt_at: timestamp.nullable(),
    next_attempt_at: timestamp.nullable(),
    completed_at: timestamp.nullable(),
    livemode: z.boolean(),
    created_at: timestamp,
    attempts: z.array(AttemptSchema),
  })
  .openapi('WebhookDelivery');

export function serializeWebhookEndpoint(endpoint: WebhookEndpoint): z.infer<typeof WebhookEndpointSchema> {
  return {
    id: endpoint.id,
    object: 'webhook_endpoint',
    url: endpoint.url,
    description: endpoint.description ?? null,
    events: endpoint.events,
    enabled: endpoint.enabled,
    disabled_reason: (endpoint.disabledReason as 'failing' | 'manual' | null) ?? null,
    disabled_at: isoOrNull(endpoint.disabledAt),
    failing_since: isoOrNull(endpoint.failingSince),
    previous_secret_expires_at: endpoint.previousSecret ? isoOrNull(endpoint.previousSecretExpiresAt) : null,
    livemode: endpoint.livemode,
    created_at: isoOrNull(endpoint.createdAt)!,
    updated_at: isoOrNull(endpoint.updatedAt)!,
  };
}

export function serializeDelivery(
  delivery: WebhookDelivery,
  attempts: WebhookAttempt[],
): z.infer<typeof DeliverySchema> {
  return {
    id: delivery.id,
    object: 'webhook_delivery',
    endpoint_id: delivery.endpointId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    redelivery: delivery.redelivery,
    status: delivery.status,
    attempt_count: delivery.attemptCount,
    last_attempt_at: isoOrNull(delivery.lastAttemptAt),
    next_attempt_at: isoOrNull(delivery.nextAttemptAt),
    completed_at: isoOrNull(delivery.completedAt),
    livemode: delivery.livemode,
    created_at: isoOrNull(delivery.createdAt)!,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      attempted_at: isoOrNull(a.attemptedAt)!,
      url: a.url,
      succeeded: a.succeeded,
      status_code: a.statusCode ?? null,
      latency_ms: a.latencyMs ?? null,
      response_body: a.responseBody ?? null,
      error: a.error ?? null,
    })),
  };
}
