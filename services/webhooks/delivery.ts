/**
 * One attempt of a webhook delivery and its outcome: the url checked again on fresh DNS answers
 * (services/webhooks/url-check.ts), signed with the endpoint's secrets, POSTed once
 * (services/webhooks/http-post.ts), and recorded with the endpoint's run of failures, which disables the
 * endpoint at the mode's window; then the email to the owner about an endpoint so disabled. The dispatcher's
 * inline first attempts (services/webhooks/dispatch.ts) and the delivery workflow's later ones
 * (workflows/webhooks.ts, through activities/index.ts) are the same code.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { webhookUrlPolicyFromEnv } from '../../config.ts';
import {
  Account,
  Event,
  Transaction,
  User,
  WebhookAttempt,
  WebhookDelivery,
  type WebhookDeliveryStatus,
  WebhookEndpoint,
} from '../../db/entities/index.ts';
import { webhookEndpointDisabledEmail } from '../../domain/email-templates.ts';
import { newId } from '../../domain/ids.ts';
import type { SecretBox } from '../../domain/secret-box.ts';
import { type Resolver, UrlNotAllowedError, type WebhookUrlPolicy } from '../../domain/webhook-url.ts';
import { disableWindowMs, riskScoreHeader, signWebhook } from '../../domain/webhooks.ts';
import { serializeEvent } from '../../objects/event.ts';
import type { EmailInput } from '../email/send-once.ts';
import { webhookDeliveries, webhookDeliveryLag } from '../observability/metrics.ts';
import { postWebhook, type WebhookResponse } from './http-post.ts';
import { checkWebhookUrl, systemResolver } from './url-check.ts';

export interface AttemptInput {
  deliveryId: string;
  attempt: number;
  /** The workflow's time of this attempt (ISO): recorded, and the clock of the failure window. */
  attemptedAt: string;
  /** When the next attempt is due if this one fails, or null when this is the last one. */
  nextAttemptAt: string | null;
}

export interface AttemptOutcome {
  /** succeeded: a 2xx. failed: retry (or give up if last). canceled: endpoint or event gone, or endpoint disabled. */
  outcome: 'succeeded' | 'failed' | 'canceled';
  /** Set when this failure disabled the endpoint. */
  disabled?: { endpointId: string; disabledAt: string };
}

export interface WebhookDeliveryDeps {
  secretBox?: SecretBox;
  resolver?: Resolver;
  /** Where sandbox endpoints may point; by default from NODE_ENV and WEBHOOK_ALLOWED_PRIVATE_HOSTS (config.ts). */
  urlPolicy?: WebhookUrlPolicy;
  /**
   * Temporal's time now, the clock an endpoint's failure run is judged on (failing_since, disabled_at) for an event
   * on a test clock, whose attempts carry the clock's time (a year ahead, say): the activity's (activities/webhooks.ts
   * temporalNow; the wall clock in production). The wall clock when unset.
   */
  temporalNow?: () => Date;
}

function describeFailure(response: WebhookResponse): string {
  if (response.error) return response.error;
  const status = response.statusCode!;
  return status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
}

/** What an attempt sends and records. */
export interface Prepared {
  deliveryId: string;
  endpoint: WebhookEndpoint;
  event: Event;
  /** The event as GET /v1/events/{id} shows it, serialized. */
  body: string;
  /** The event's transaction's risk score, or null. */
  riskScore: number | null;
}

/** Risk scores of transactions, by id (x-risk-score). */
export async function riskScores(em: EntityManager, transactionIds: string[]): Promise<Map<string, number>> {
  if (transactionIds.length === 0) return new Map();
  const rows = await em.find(
    Transaction,
    { id: { $in: [...new Set(transactionIds)] } },
    { fields: ['id', 'riskScore'] },
  );
  return new Map(rows.map((r) => [r.id, r.riskScore]));
}

/** Opened signing secrets by sealed value, for a pass that signs many deliveries to the same endpoints. */
export type OpenedSecrets = Map<string, string | null>;

/** The secrets that sign now: the current one, and the previous one during a rotation's overlap; or why they cannot be opened. */
function signingSecrets(
  deps: WebhookDeliveryDeps,
  endpoint: WebhookEndpoint,
  opened: OpenedSecrets,
): { secrets: string[] } | { error: string } {
  const box = deps.secretBox;
  if (!box) throw new Error('This worker has no secret box (createActivities needs secretBox to sign webhooks).');
  const open = (sealed: string) => {
    if (!opened.has(sealed)) {
      try {
        opened.set(sealed, box.open(sealed));
      } catch {
        opened.set(sealed, null); // sealed under another key: AUTH_SECRET changed since
      }
    }
    return opened.get(sealed)!;
  };
  const secrets: (string | null)[] = [open(endpoint.secret)];
  // The overlap is judged on the wall clock, the clock the API stamped the rotation with
  // (in production it and the workflow's clock agree; a time-skipping test server runs ahead).
  if (
    endpoint.previousSecret &&
    endpoint.previousSecretExpiresAt &&
    endpoint.previousSecretExpiresAt.getTime() > Date.now()
  )
    secrets.push(open(endpoint.previousSecret));
  // Recorded as the attempt's error; rotating the secret fixes it.
  if (secrets.includes(null))
    return { error: 'the signing secret cannot be opened (was AUTH_SECRET changed?); rotate the secret' };
  return { secrets: secrets as string[] };
}

/**
 * One attempt's request: checks the url again (SSRF rules, on fresh DNS
 * answers), signs with the current secret (and the previous one during a
 * rotation's overlap at `at`), POSTs once. Never throws for an HTTP failure.
 */
export async function sendAttempt(
  deps: WebhookDeliveryDeps,
  p: Prepared,
  at: Date,
  opened: OpenedSecrets = new Map(),
): Promise<WebhookResponse> {
  const { endpoint, event, body } = p;
  const secrets = signingSecrets(deps, endpoint, opened);
  if ('error' in secrets) return { statusCode: null, latencyMs: 0, body: null, error: secrets.error };
  // The receiver checks webhook-timestamp against its own clock: the real time of sending.
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'billing-engine-webhooks/1',
    'webhook-id': event.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secrets.secrets, event.id, timestamp, body),
    'x-risk-score': riskScoreHeader(p.riskScore),
  };
  try {
    const target = await checkWebhookUrl(
      endpoint.url,
      endpoint.livemode,
      deps.resolver ?? systemResolver,
      deps.urlPolicy ?? webhookUrlPolicyFromEnv(),
    );
    return await postWebhook(target, headers, body);
  } catch (error) {
    if (!(error instanceof UrlNotAllowedError)) throw error;
    return { statusCode: null, latencyMs: 0, body: null, error: `url not allowed: ${error.message}` };
  }
}

/**
 * Records an attempt atomically: the attempt row, the delivery's state, and the
 * endpoint's run of failures. A success (the common case) is one statement; a
 * failure is a transaction that also disables the endpoint when its run of
 * failures reaches the mode's window.
 *
 * The run is judged at `judgedAt`: the attempt's time, or for an event on a test clock Temporal's time now
 * (deps.temporalNow), never the clock's. And a clock's events never start a run (issue #24): a failure of one does
 * not set `failing_since`, so an endpoint that live (not clock) deliveries keep healthy is never disabled by
 * them; it ends a run only that live failures began a whole window ago.
 */
export async function recordAttempt(
  em: EntityManager,
  p: Prepared,
  input: { attempt: number; attemptedAt: Date; nextAttemptAt: Date | null },
  response: WebhookResponse,
  judgedAt: Date = input.attemptedAt,
): Promise<AttemptOutcome> {
  const { endpoint, event, deliveryId: id } = p;
  const { attemptedAt } = input;
  const succeeded = response.statusCode !== null && response.statusCode >= 200 && response.statusCode < 300;
  const error = succeeded ? null : describeFailure(response);
  // PostgreSQL text cannot hold NUL: a receiver's body with one must not make the attempt unrecordable.
  const attempt = {
    id: newId('webhookAttempt'),
    deliveryId: id,
    endpointId: endpoint.id,
    eventId: event.id,
    accountId: event.accountId,
    livemode: event.livemode,
    attempt: input.attempt,
    attemptedAt,
    url: endpoint.url,
    succeeded,
    statusCode: response.statusCode,
    latencyMs: response.latencyMs,
    responseBody: response.body?.replaceAll('\u0000', '') ?? null,
    error,
  };
  if (succeeded) {
    await em.getConnection().execute(
      `with attempt as (
         insert into webhook_delivery_attempts (id, delivery_id, endpoint_id, event_id, account_id, livemode, attempt, attempted_at, url, succeeded, status_code, latency_ms, response_body, error)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, true, ?, ?, ?, null)
       ), healed as (
         update webhook_endpoints set failing_since = null where id = ? and failing_since is not null
       )
       update webhook_deliveries set status = 'succeeded', attempt_count = ?, last_attempt_at = ?, next_attempt_at = null, completed_at = ? where id = ?`,
      [
        attempt.id,
        id,
        endpoint.id,
        event.id,
        event.accountId,
        event.livemode,
        input.attempt,
        attemptedAt,
        endpoint.url,
        attempt.statusCode,
        attempt.latencyMs,
        attempt.responseBody,
        endpoint.id,
        input.attempt,
        attemptedAt,
        attemptedAt,
        id,
      ],
      'run',
    );
    webhookDeliveries.inc({ outcome: 'succeeded' });
    if (!event.testClockId)
      webhookDeliveryLag.observe(Math.max(0, Date.now() - new Date(event.createdAt).getTime()) / 1000);
    return { outcome: 'succeeded' };
  }
  webhookDeliveries.inc({ outcome: 'failed' });
  return em.fork().transactional(async (tx) => {
    tx.create(WebhookAttempt, attempt);
    if (!event.testClockId)
      await tx.nativeUpdate(WebhookEndpoint, { id: endpoint.id, failingSince: null }, { failingSince: judgedAt });
    const windowStart = new Date(judgedAt.getTime() - disableWindowMs(endpoint.livemode));
    const disabled = await tx.nativeUpdate(
      WebhookEndpoint,
      { id: endpoint.id, enabled: true, failingSince: { $lte: windowStart } },
      { enabled: false, disabledReason: 'failing', disabledAt: judgedAt, updatedAt: judgedAt },
    );
    const disabledAt = disabled > 0 ? judgedAt : undefined;
    const last = disabledAt !== undefined || input.nextAttemptAt === null;
    const status: WebhookDeliveryStatus = last ? 'failed' : 'pending';
    await tx.nativeUpdate(
      WebhookDelivery,
      { id },
      {
        status,
        attemptCount: input.attempt,
        lastAttemptAt: attemptedAt,
        nextAttemptAt: last ? null : input.nextAttemptAt,
        completedAt: last ? attemptedAt : null,
      },
    );
    await tx.flush();
    return {
      outcome: 'failed',
      ...(disabledAt ? { disabled: { endpointId: endpoint.id, disabledAt: disabledAt.toISOString() } } : {}),
    };
  });
}

/**
 * One attempt of a delivery, as its workflow makes it: loads the delivery, its
 * endpoint and event (a deleted or disabled endpoint cancels it), then sends and
 * records the attempt as the dispatcher's inline attempt does. Never throws for
 * an HTTP failure: the workflow owns the retries.
 */
export async function attemptWebhookDelivery(
  em: EntityManager,
  deps: WebhookDeliveryDeps,
  input: AttemptInput,
): Promise<AttemptOutcome> {
  const delivery = await em.findOne(WebhookDelivery, { id: input.deliveryId });
  if (!delivery) return { outcome: 'canceled' };
  if (delivery.status === 'succeeded' || delivery.status === 'canceled') return { outcome: delivery.status };
  const attemptedAt = new Date(input.attemptedAt);
  const endpoint = await em.findOne(WebhookEndpoint, { id: delivery.endpointId });
  const event = await em.findOne(Event, { id: delivery.eventId });
  if (!endpoint || !endpoint.enabled || !event) {
    await em.nativeUpdate(
      WebhookDelivery,
      { id: delivery.id, status: 'pending' },
      { status: 'canceled', nextAttemptAt: null, completedAt: attemptedAt },
    );
    return { outcome: 'canceled' };
  }
  const scores = await riskScores(em, event.transactionId ? [event.transactionId] : []);
  const prepared: Prepared = {
    deliveryId: delivery.id,
    endpoint,
    event,
    body: JSON.stringify(serializeEvent(event)),
    riskScore: event.transactionId ? (scores.get(event.transactionId) ?? null) : null,
  };
  const response = await sendAttempt(deps, prepared, attemptedAt);
  return recordAttempt(
    em,
    prepared,
    {
      attempt: input.attempt,
      attemptedAt,
      nextAttemptAt: input.nextAttemptAt === null ? null : new Date(input.nextAttemptAt),
    },
    response,
    event.testClockId ? (deps.temporalNow ?? (() => new Date()))() : attemptedAt,
  );
}

/** Marks a delivery that ended without its last attempt being recorded (the attempt activity itself failed). */
export async function finishWebhookDelivery(
  em: EntityManager,
  input: { deliveryId: string; at: string },
): Promise<void> {
  await em.nativeUpdate(
    WebhookDelivery,
    { id: input.deliveryId, status: 'pending' },
    { status: 'failed', nextAttemptAt: null, completedAt: new Date(input.at) },
  );
}

/** The email to the account's owner about an endpoint this delivery disabled; null if the endpoint is gone, enabled again, or disabled since at another time. */
export async function webhookDisabledEmail(
  em: EntityManager,
  input: { endpointId: string; disabledAt: string },
): Promise<EmailInput | null> {
  const endpoint = await em.findOne(WebhookEndpoint, { id: input.endpointId });
  if (!endpoint || endpoint.enabled || endpoint.disabledAt?.getTime() !== Date.parse(input.disabledAt)) return null;
  const account = await em.findOne(Account, { id: endpoint.accountId });
  if (!account) return null;
  const owner = await em.findOne(
    User,
    { accountId: account.id, role: 'owner', status: 'active' },
    { orderBy: { createdAt: 'asc' } },
  );
  const [last] = await em.find(
    WebhookAttempt,
    { endpointId: endpoint.id },
    { orderBy: { attemptedAt: 'desc' }, limit: 1 },
  );
  const rendered = webhookEndpointDisabledEmail({
    accountName: account.name,
    endpointId: endpoint.id,
    url: endpoint.url,
    failingSince: endpoint.failingSince ?? new Date(input.disabledAt),
    disabledAt: new Date(input.disabledAt),
    lastError: last?.error ?? null,
    livemode: endpoint.livemode,
  });
  return {
    dedupeKey: `webhook_endpoint_disabled:${endpoint.id}:${input.disabledAt}`,
    accountId: account.id,
    to: owner?.email ?? account.email,
    ...rendered,
  };
}
