/**
 * Webhook side effects: the dispatcher's step (outbox → delivery workflows),
 * one HTTP attempt of a delivery, and the disabled-endpoint email.
 *
 * Why nothing is lost (at least once) and nothing is sent twice by dispatching:
 * an event row commits with its change (the outbox). dispatchEvents reads rows
 * with `dispatched_at is null` in id order, inserts a delivery row per (event,
 * matching endpoint) (insert ... on conflict do nothing), starts one
 * webhookDeliveryWorkflow per delivery with workflow id = delivery id
 * (`whd_<event>_<endpoint>`, REJECT_DUPLICATE), and only then sets
 * `dispatched_at`. A process that dies anywhere in between leaves the event
 * undispatched, so the next run does it again: the rows already exist, and a
 * start of an id Temporal already has (running or closed) is refused and
 * ignored. So every event reaches every endpoint that wanted it at the time,
 * through exactly one delivery workflow, which then retries until a 2xx.
 */
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import { serializeEvent } from '../api/serializers.ts';
import { Account, Event, User, WebhookAttempt, WebhookDelivery, WebhookEndpoint, type WebhookDeliveryStatus } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import { checkWebhookUrl, systemResolver, UrlNotAllowedError, type Resolver } from '../domain/webhook-url.ts';
import { deliveryId, disableWindowMs, endpointWants, riskScoreHeader, signWebhook } from '../domain/webhooks.ts';
import type { EmailInput } from './email.ts';
import { webhookEndpointDisabledEmail } from './email-templates.ts';
import { postWebhook, type WebhookResponse } from './webhook-http.ts';

/** The dispatcher's workflow id on a task queue (one dispatcher per deployment). */
export const eventDispatchWorkflowId = (taskQueue: string) => `event-dispatch-${taskQueue}`;

/**
 * The fast path: wakes the dispatcher (starting it if it is not running) right
 * after a change committed. Best effort: a lost wake-up only delays delivery
 * until the dispatcher's own timer (see workflows/webhooks.ts).
 */
export async function wakeEventDispatch(client: Client, taskQueue: string): Promise<void> {
  await client.workflow.signalWithStart('eventDispatchWorkflow', {
    workflowId: eventDispatchWorkflowId(taskQueue),
    taskQueue,
    args: [{}],
    signal: 'wake',
    signalArgs: [],
  });
}

export interface DispatchResult {
  events: number;
  deliveries: number;
  /** The batch was full: call again at once. */
  more: boolean;
}

export interface DeliveryInput {
  deliveryId: string;
  livemode: boolean;
}

/** Starts a delivery's workflow; a start of an id Temporal already has counts as done. */
export async function startDelivery(client: Client, taskQueue: string, delivery: { id: string; livemode: boolean }): Promise<void> {
  try {
    await client.workflow.start('webhookDeliveryWorkflow', {
      workflowId: delivery.id,
      taskQueue,
      args: [{ deliveryId: delivery.id, livemode: delivery.livemode } satisfies DeliveryInput],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** Runs `task` over `items`, `width` at a time. */
async function inParallel<T>(items: T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await task(items[next++]!);
  });
  await Promise.all(lanes);
}

/** One pass of the dispatcher over the oldest `limit` undispatched events (see the comment at the top). */
export async function dispatchEvents(em: EntityManager, client: Client, taskQueue: string, limit: number): Promise<DispatchResult> {
  const events = await em.find(Event, { dispatchedAt: null }, { orderBy: { id: 'asc' }, limit, fields: ['id', 'accountId', 'livemode', 'type', 'createdAt'] });
  if (events.length === 0) return { events: 0, deliveries: 0, more: false };
  const accountIds = [...new Set(events.map((e) => e.accountId))];
  const endpoints = await em.find(WebhookEndpoint, { enabled: true, accountId: { $in: accountIds } }, { fields: ['id', 'accountId', 'livemode', 'events', 'createdAt'] });
  const deliveries: WebhookDelivery[] = [];
  const now = new Date();
  for (const event of events) {
    for (const endpoint of endpoints) {
      // An endpoint gets the events of its account and mode recorded after it was made.
      if (endpoint.accountId !== event.accountId || endpoint.livemode !== event.livemode || endpoint.createdAt > event.createdAt) continue;
      if (!endpointWants(endpoint.events, event.type)) continue;
      deliveries.push({
        id: deliveryId(event.id, endpoint.id),
        accountId: event.accountId,
        livemode: event.livemode,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        redelivery: false,
        status: 'pending',
        attemptCount: 0,
        lastAttemptAt: null,
        nextAttemptAt: now,
        completedAt: null,
        createdAt: now,
      } as WebhookDelivery);
    }
  }
  if (deliveries.length > 0) {
    await em.createQueryBuilder(WebhookDelivery).insert(deliveries).onConflict('id').ignore().execute('run');
    await inParallel(deliveries, 32, (d) => startDelivery(client, taskQueue, d));
  }
  await em.nativeUpdate(Event, { id: { $in: events.map((e) => e.id) }, dispatchedAt: null }, { dispatchedAt: new Date() });
  return { events: events.length, deliveries: deliveries.length, more: events.length === limit };
}

export interface AttemptInput {
  deliveryId: string;
  attempt: number;
  /** The workflow's time of this attempt (ISO): recorded, and the clock of the failure window and the secret overlap. */
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
}

function describeFailure(response: WebhookResponse): string {
  if (response.error) return response.error;
  const status = response.statusCode!;
  return status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
}

/**
 * One attempt of a delivery: checks the url again (SSRF rules, on fresh DNS
 * answers), signs with the current secret (and the previous one during a
 * rotation's overlap), POSTs once, and records the attempt, the delivery's
 * state and the endpoint's run of failures, disabling the endpoint when that run
 * reaches the mode's window. Never throws for an HTTP failure: the workflow owns
 * the retries.
 */
export async function attemptWebhookDelivery(em: EntityManager, deps: WebhookDeliveryDeps, input: AttemptInput): Promise<AttemptOutcome> {
  const delivery = await em.findOne(WebhookDelivery, { id: input.deliveryId });
  if (!delivery) return { outcome: 'canceled' };
  if (delivery.status === 'succeeded' || delivery.status === 'canceled') return { outcome: delivery.status };
  const attemptedAt = new Date(input.attemptedAt);
  const endpoint = await em.findOne(WebhookEndpoint, { id: delivery.endpointId });
  const event = await em.findOne(Event, { id: delivery.eventId });
  if (!endpoint || !endpoint.enabled || !event) {
    await em.nativeUpdate(WebhookDelivery, { id: delivery.id, status: 'pending' }, { status: 'canceled', nextAttemptAt: null, completedAt: attemptedAt });
    return { outcome: 'canceled' };
  }
  if (!deps.secretBox) throw new Error('This worker has no secret box (createActivities needs secretBox to sign webhooks).');

  const body = JSON.stringify(serializeEvent(event));
  const secrets: string[] = [];
  let secretError: string | null = null;
  try {
    secrets.push(deps.secretBox.open(endpoint.secret));
    if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > attemptedAt) {
      secrets.push(deps.secretBox.open(endpoint.previousSecret));
    }
  } catch {
    // Sealed under another key: AUTH_SECRET changed since. Recorded as the attempt's error; rotating the secret fixes it.
    secretError = 'the signing secret cannot be opened (was AUTH_SECRET changed?); rotate the secret';
  }
  let riskScore: number | null = null;
  if (event.transactionId) {
    const [row] = await em.getConnection().execute<{ risk_score: number }[]>('select risk_score from transactions where id = ?', [event.transactionId]);
    riskScore = row?.risk_score ?? null;
  }
  // The receiver checks webhook-timestamp against its own clock: the real time of sending.
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'billing-engine-webhooks/1',
    'webhook-id': event.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secrets, event.id, timestamp, body),
    'x-risk-score': riskScoreHeader(riskScore),
  };

  let response: WebhookResponse = { statusCode: null, latencyMs: 0, body: null, error: secretError };
  if (!secretError) {
    try {
      const target = await checkWebhookUrl(endpoint.url, endpoint.livemode, deps.resolver ?? systemResolver);
      response = await postWebhook(target, headers, body);
    } catch (error) {
      if (!(error instanceof UrlNotAllowedError)) throw error;
      response = { statusCode: null, latencyMs: 0, body: null, error: `url not allowed: ${error.message}` };
    }
  }
  const succeeded = response.statusCode !== null && response.statusCode >= 200 && response.statusCode < 300;
  const error = succeeded ? null : describeFailure(response);

  return em.transactional(async (tx) => {
    tx.create(WebhookAttempt, {
      id: newId('webhookAttempt'),
      deliveryId: delivery.id,
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
      responseBody: response.body,
      error,
    });
    let disabledAt: Date | undefined;
    if (succeeded) {
      await tx.nativeUpdate(WebhookEndpoint, { id: endpoint.id, failingSince: { $ne: null } }, { failingSince: null });
    } else {
      await tx.nativeUpdate(WebhookEndpoint, { id: endpoint.id, failingSince: null }, { failingSince: attemptedAt });
      const windowStart = new Date(attemptedAt.getTime() - disableWindowMs(endpoint.livemode));
      const disabled = await tx.nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id, enabled: true, failingSince: { $lte: windowStart } },
        { enabled: false, disabledReason: 'failing', disabledAt: attemptedAt, updatedAt: attemptedAt },
      );
      if (disabled > 0) disabledAt = attemptedAt;
    }
    const last = succeeded || disabledAt !== undefined || input.nextAttemptAt === null;
    const status: WebhookDeliveryStatus = succeeded ? 'succeeded' : last ? 'failed' : 'pending';
    await tx.nativeUpdate(
      WebhookDelivery,
      { id: delivery.id },
      {
        status,
        attemptCount: input.attempt,
        lastAttemptAt: attemptedAt,
        nextAttemptAt: last ? null : new Date(input.nextAttemptAt!),
        completedAt: last ? attemptedAt : null,
      },
    );
    await tx.flush();
    return { outcome: succeeded ? 'succeeded' : 'failed', ...(disabledAt ? { disabled: { endpointId: endpoint.id, disabledAt: disabledAt.toISOString() } } : {}) };
  });
}

/** Marks a delivery that ended without its last attempt being recorded (the attempt activity itself failed). */
export async function finishWebhookDelivery(em: EntityManager, input: { deliveryId: string; at: string }): Promise<void> {
  await em.nativeUpdate(WebhookDelivery, { id: input.deliveryId, status: 'pending' }, { status: 'failed', nextAttemptAt: null, completedAt: new Date(input.at) });
}

/** The email to the account's owner about an endpoint this delivery disabled; null if the endpoint is gone or enabled again. */
export async function webhookDisabledEmail(em: EntityManager, input: { endpointId: string; disabledAt: string }): Promise<EmailInput | null> {
  const endpoint = await em.findOne(WebhookEndpoint, { id: input.endpointId });
  if (!endpoint || endpoint.enabled) return null;
  const account = await em.findOne(Account, { id: endpoint.accountId });
  if (!account) return null;
  const owner = await em.findOne(User, { accountId: account.id, role: 'owner', status: 'active' }, { orderBy: { createdAt: 'asc' } });
  const [last] = await em.find(WebhookAttempt, { endpointId: endpoint.id }, { orderBy: { attemptedAt: 'desc' }, limit: 1 });
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

/** The dispatcher step as an activity: the worker's own Temporal client starts the delivery workflows. */
export async function dispatchEventsActivity(em: EntityManager, limit: number): Promise<DispatchResult> {
  const context = Context.current();
  return dispatchEvents(em, context.client, context.info.taskQueue, limit);
}
