/**
 * Webhooks as pure logic: the retry schedules, the Standard Webhooks signature,
 * signing secrets, and which endpoints an event goes to. No I/O here; the
 * dispatcher and the delivery (services/webhooks/dispatch.ts, delivery.ts) and the API use these.
 */
import { createHmac, randomBytes } from 'node:crypto';

export * from './webhook-schedule.ts';

/** A new signing secret in the Standard Webhooks format: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The HMAC key of a `whsec_...` secret: the base64 after the prefix, decoded. */
export function secretKeyBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/**
 * The `webhook-signature` header: one `v1,<base64 HMAC-SHA256>` of
 * `<id>.<timestamp>.<body>` per secret, space-separated (during a rotation the
 * old and the new secret both sign, and a receiver accepts any one that matches).
 */
export function signWebhook(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', secretKeyBytes(secret)).update(content).digest('base64')}`)
    .join(' ');
}

/** Whether an endpoint subscribed to `events` (names or `*`) wants an event of `type`. */
export function endpointWants(events: readonly string[], type: string): boolean {
  return events.includes('*') || events.includes(type);
}

/**
 * Workflow ids of deliveries: `whd_<event id>_<endpoint id>` for the first
 * delivery of an event to an endpoint (so dispatching twice never delivers
 * twice), and `..._r<ulid>` for each redelivery asked through the API.
 */
export function deliveryId(eventId: string, endpointId: string, redelivery?: string): string {
  return `whd_${eventId}_${endpointId}${redelivery ? `_r${redelivery}` : ''}`;
}

export const deliveryIdPattern = /^whd_evt_[0-9a-z]{26}_we_[0-9a-z]{26}(_r[0-9a-z]{26})?$/;

/**
 * `x-risk-score`: the 0-100 score of domain/risk.ts that the event's transaction
 * got when it was created (its `risk_level` is low below 30, medium below 60,
 * high from 60). Events without a transaction carry 0: nothing was scored.
 */
export function riskScoreHeader(transactionRiskScore: number | null | undefined): string {
  return String(transactionRiskScore ?? 0);
}
