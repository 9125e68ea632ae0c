/**
 * Webhook side effects: the dispatcher's pass (outbox → first attempts, and
 * delivery workflows for what needs retrying), one HTTP attempt of a delivery,
 * and the disabled-endpoint email.
 *
 * A pass (dispatchEvents), over the oldest undispatched events in id order:
 *  1. inserts a delivery row per (event, enabled endpoint of its account and
 *     mode that wants its type), id `whd_<event>_<endpoint>` (insert ... on
 *     conflict do nothing), and reads back the rows that already existed;
 *  2. makes the FIRST attempt of each new delivery itself, inline, 20 at a time
 *     and at most 4 per endpoint (the same code as every later attempt: fresh
 *     url check, signing, POST, the attempt recorded before going on);
 *  3. starts a webhookDeliveryWorkflow (workflow id = delivery id,
 *     REJECT_DUPLICATE) only for a delivery whose first attempt failed: it
 *     continues at attempt 2 of the schedule, its first timer counted from the
 *     inline attempt's time (or sends the disabled-endpoint email, when that
 *     attempt disabled the endpoint). An endpoint already failing, or one whose
 *     inline attempt failed earlier in this pass, gets its deliveries handed to
 *     workflows that make the first attempt too, so a dead endpoint does not hold
 *     the pass up with timeouts;
 *  4. only then sets `dispatched_at`, on the events whose every delivery is
 *     settled (succeeded, canceled, or owned by a workflow).
 *
 * Why nothing is lost (at least once): a process that dies anywhere before step
 * 4 leaves the event undispatched, and the next pass does it again from what
 * the rows say. A delivery that succeeded is not sent again; one whose failed
 * first attempt was recorded gets its workflow (a start of an id Temporal
 * already has is refused and ignored); one whose attempt was sent but not yet
 * recorded when the process died is sent again, with the same webhook-id (the
 * event id) and body: that copy is a duplicate receivers recognise, and the
 * lost send has no attempt row. So every event reaches every endpoint that
 * wanted it at the time, and each delivery has at most one workflow.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { CancelledFailure, Context } from '@temporalio/activity';
import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';

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
import { idCreatedAt, newId } from '../../domain/ids.ts';
import type { SecretBox } from '../../domain/secret-box.ts';
import {
  checkWebhookUrl,
  type Resolver,
  systemResolver,
  UrlNotAllowedError,
  type WebhookUrlPolicy,
} from '../../domain/webhook-url.ts';
import {
  deliveryId,
  disableWindowMs,
  endpointWants,
  retrySchedule,
  riskScoreHeader,
  signWebhook,
} from '../../domain/webhooks.ts';
import { serializeEvent } from '../../objects/event.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import {
  eventDispatchWorkflow,
  wakeSignal,
  type WebhookDeliveryInput,
  webhookDeliveryWorkflow,
} from '../../workflows/webhooks.ts';
import type { EmailInput } from '../email/send-once.ts';
import { webhookDeliveries, webhookDeliveryLag } from '../observability/metrics.ts';
import { bindToClock, mainTaskQueueOf, taskQueueFor, unbindFromClock } from '../test-clocks/clocks.ts';
import { postWebhook, type WebhookResponse } from './http-post.ts';

/** The dispatcher's workflow id on a task queue (one dispatcher per deployment, on the live queue: a clock queue's is its live queue's). */
export const eventDispatchWorkflowId = (taskQueue: string) => `event-dispatch-${mainTaskQueueOf(taskQueue)}`;

/**
 * The fast path: wakes the dispatcher (starting it if it is not running) right
 * after a change committed. Best effort: a lost wake-up only delays delivery
 * until the dispatcher's own timer (see workflows/webhooks.ts).
 */
export async function wakeEventDispatch(client: Client, taskQueue: string): Promise<void> {
  await client.workflow.signalWithStart(eventDispatchWorkflow, {
    workflowId: eventDispatchWorkflowId(taskQueue),
    taskQueue: mainTaskQueueOf(taskQueue),
    args: [{}],
    signal: wakeSignal,
    signalArgs: [],
  });
}

/**
 * For a test clock between two instants: waits until the dispatcher has handled every
 * event recorded on `clockId` that an endpoint may want (waking it at once and every
 * 2 s), so their failed deliveries are registered on the clock before it moves on.
 * Returns how many are left after `timeoutMs` (0: all dispatched).
 */
export async function awaitClockEventsDispatched(
  em: EntityManager,
  client: Client,
  taskQueue: string,
  clockId: string,
  timeoutMs: number,
): Promise<number> {
  const started = Date.now();
  let pause = 50;
  let lastWake = 0;
  for (;;) {
    const left = await undispatchedClockEvents(em, clockId);
    if (left === 0 || Date.now() - started > timeoutMs) return left;
    if (Date.now() - lastWake > 2_000) {
      await wakeEventDispatch(client, taskQueue);
      lastWake = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 500);
  }
}

export interface DispatchResult {
  /** Undispatched events read. */
  events: number;
  /** Of those, marked dispatched (the others wait for the next pass: the pass ran out of time). */
  dispatched: number;
  /** Deliveries created. */
  deliveries: number;
  /** First attempts made inline, and how many of them succeeded. */
  inline: number;
  inlineSucceeded: number;
  /** Delivery workflows started (retries after a failed inline attempt, and deliveries to failing endpoints). */
  workflows: number;
  /** The batch was full, or some events were left: call again at once. */
  more: boolean;
}

/** The attempt the dispatcher already made for a delivery, so its workflow goes on from there. */
export interface AttemptMade {
  /** Its number (1 for the inline first attempt). */
  attempt: number;
  /** Its recorded time (ISO): the next attempt is due one schedule step after it. */
  attemptedAt: string;
  /** Set when it disabled the endpoint: the workflow only sends the owner's email. */
  disabled?: { endpointId: string; disabledAt: string };
}

/** Starts a delivery's workflow; a start of an id Temporal already has counts as done. Returns whether it started one. */
export async function startDelivery(
  client: Client,
  taskQueue: string,
  delivery: { id: string; livemode: boolean },
  after?: AttemptMade,
  testClock?: ClockBinding,
): Promise<boolean> {
  // A delivery of an event on a test clock retries on the clock: registered first, so the clock waits for it (a clock deleted meanwhile: on the wall clock).
  let binding = testClock;
  if (binding) {
    try {
      await bindToClock(client, binding, delivery.id);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      binding = undefined;
    }
  }
  try {
    await client.workflow.start(webhookDeliveryWorkflow, {
      workflowId: delivery.id,
      taskQueue: taskQueueFor(taskQueue, binding),
      args: [
        {
          deliveryId: delivery.id,
          livemode: delivery.livemode,
          ...(after ? { after } : {}),
          ...(binding ? { testClock: binding } : {}),
        } satisfies WebhookDeliveryInput,
      ],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return true;
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    if (binding) await unbindFromClock(client, binding, delivery.id);
    return false;
  }
}

/**
 * When an event was really recorded (wall clock): its `created_at`, except on a test clock, whose events carry
 * the clock's time; there, its id's (issue #24: an endpoint made after a year-long clock run got the run's
 * events the dispatcher had not handed on yet).
 */
export function recordedAt(event: Pick<Event, 'id' | 'createdAt' | 'testClockId'>): Date {
  return (event.testClockId && idCreatedAt(event.id)) || new Date(event.createdAt);
}

/**
 * The clock an endpoint's failure run is judged on (failing_since, disabled_at): the attempt's own time,
 * except for an event on a test clock, whose attempts carry the clock's time (a year ahead, say), where it
 * is Temporal's time now (the wall clock in production; see dispatchEventsActivity).
 */
function judgedNow(): Date {
  try {
    const info = Context.current().info;
    return new Date(Math.max(Date.now(), info.currentAttemptScheduledTimestampMs));
  } catch {
    return new Date(); // outside an activity
  }
}

/** The binding of an event's delivery workflow: the clock it was recorded on, at the event's time. */
const eventClock = (event: { testClockId?: string | null; createdAt: Date }): ClockBinding | undefined =>
  event.testClockId ? { id: event.testClockId, now: new Date(event.createdAt).toISOString() } : undefined;

/**
 * How many events recorded on `clockId` still wait for the dispatcher, counting only
 * those that an enabled sandbox endpoint of their account may want (the clock waits
 * for them: their deliveries' retries are work on the clock).
 */
export async function undispatchedClockEvents(em: EntityManager, clockId: string): Promise<number> {
  const rows = await em.getConnection().execute<{ count: string }[]>(
    `select count(*) as count from events e where e.test_clock_id = ? and e.dispatched_at is null
       and exists (select 1 from webhook_endpoints w where w.account_id = e.account_id and w.livemode = false and w.enabled)`,
    [clockId],
  );
  return Number(rows[0]?.count ?? 0);
}

/** Runs `task` over `items`, `width` at a time. */
async function inParallel<T>(items: T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await task(items[next++]!);
  });
  await Promise.all(lanes);
}

/**
 * Runs the queued items of each group, at most `width` at once in all and
 * `perGroup` at once per group, taking the groups in turn; starts nothing more
 * once `stop()` is true (what is still queued stays in `groups`). Rejects with
 * the first error, after the tasks already running have ended.
 */
function runGrouped<T>(
  groups: Map<string, T[]>,
  limits: { width: number; perGroup: number; stop: () => boolean },
  task: (item: T) => Promise<void>,
): Promise<void> {
  const keys = [...groups.keys()];
  const running = new Map<string, number>();
  let cursor = 0;
  let active = 0;
  let failed = false;
  let failure: unknown;
  return new Promise((resolve, reject) => {
    const pick = (): string | undefined => {
      for (let i = 0; i < keys.length; i++) {
        const key = keys[(cursor + i) % keys.length]!;
        if (groups.get(key)!.length > 0 && (running.get(key) ?? 0) < limits.perGroup) {
          cursor = (cursor + i + 1) % keys.length;
          return key;
        }
      }
      return undefined;
    };
    const pump = () => {
      while (!failed && active < limits.width && !limits.stop()) {
        const key = pick();
        if (key === undefined) break;
        const item = groups.get(key)!.shift()!;
        active++;
        running.set(key, (running.get(key) ?? 0) + 1);
        task(item)
          .catch((error: unknown) => {
            if (!failed) {
              failed = true;
              failure = error;
            }
          })
          .finally(() => {
            active--;
            running.set(key, running.get(key)! - 1);
            pump();
          });
      }
      if (active === 0) {
        if (failed) reject(failure);
        else resolve();
      }
    };
    pump();
  });
}

export interface DispatchOptions {
  /** Events per pass. */
  limit: number;
  /**
   * The clock an inline attempt is recorded on. The delivery workflow times the
   * next attempts from it with Temporal's clock, so the activity passes
   * Temporal's (see dispatchEventsActivity); the wall clock by default.
   */
  now?: () => Date;
  /** Called as deliveries are handled (the activity's heartbeat). */
  progress?: () => void;
  /** Aborted: start nothing more and fail the pass. */
  signal?: AbortSignal;
  log?: { warn(message: string, meta?: Record<string, unknown>): void };
  /** Inline attempts in flight: in all, and per endpoint. */
  width?: number;
  perEndpoint?: number;
  /** No inline attempt starts later than this after the pass began; the events left wait for the next pass. */
  inlineWindowMs?: number;
}

export const inlineAttempts = { width: 20, perEndpoint: 4, windowMs: 15_000 } as const;

type DeliveryRow = Pick<
  WebhookDelivery,
  'id' | 'livemode' | 'endpointId' | 'eventId' | 'status' | 'attemptCount' | 'lastAttemptAt'
>;

/** One pass of the dispatcher over the oldest `limit` undispatched events (see the comment at the top). */
export async function dispatchEvents(
  em: EntityManager,
  client: Client,
  taskQueue: string,
  deps: WebhookDeliveryDeps,
  options: DispatchOptions,
): Promise<DispatchResult> {
  const began = Date.now();
  const now = options.now ?? (() => new Date());
  const result: DispatchResult = {
    events: 0,
    dispatched: 0,
    deliveries: 0,
    inline: 0,
    inlineSucceeded: 0,
    workflows: 0,
    more: false,
  };
  const events = await em.find(Event, { dispatchedAt: null }, { orderBy: { id: 'asc' }, limit: options.limit });
  if (events.length === 0) return result;
  result.events = events.length;
  const eventIds = events.map((e) => e.id);
  const accountIds = [...new Set(events.map((e) => e.accountId))];
  const endpoints = await em.find(WebhookEndpoint, { enabled: true, accountId: { $in: accountIds } });
  const endpointById = new Map(endpoints.map((e) => [e.id, e]));

  // 1. The delivery rows: those a pass that died already made, and the missing ones.
  const existing = await em.find(
    WebhookDelivery,
    { eventId: { $in: eventIds }, redelivery: false },
    { fields: ['id', 'livemode', 'endpointId', 'eventId', 'status', 'attemptCount', 'lastAttemptAt'] },
  );
  const rows: DeliveryRow[] = [...existing];
  const known = new Set(existing.map((d) => d.id));
  const created: WebhookDelivery[] = [];
  const createdAt = new Date();
  for (const event of events) {
    for (const endpoint of endpoints) {
      // An endpoint gets the events of its account and mode recorded after it was made, in the real order of
      // creation: an event on a test clock carries the clock's time (2027, say), so its id's time decides.
      if (
        endpoint.accountId !== event.accountId ||
        endpoint.livemode !== event.livemode ||
        endpoint.createdAt > recordedAt(event)
      )
        continue;
      if (!endpointWants(endpoint.events, event.type)) continue;
      const id = deliveryId(event.id, endpoint.id);
      if (known.has(id)) continue;
      created.push({
        id,
        accountId: event.accountId,
        livemode: event.livemode,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        redelivery: false,
        status: 'pending',
        attemptCount: 0,
        lastAttemptAt: null,
        nextAttemptAt: createdAt,
        completedAt: null,
        createdAt,
      } as WebhookDelivery);
    }
  }
  if (created.length > 0)
    await em.createQueryBuilder(WebhookDelivery).insert(created).onConflict('id').ignore().execute('run');
  rows.push(...created);
  result.deliveries = created.length;

  // 2. What each delivery needs. An event is dispatched once none of its deliveries is left unsettled.
  const unsettled = new Map<string, number>(eventIds.map((id) => [id, 0]));
  const settle = (row: DeliveryRow) => {
    unsettled.set(row.eventId, unsettled.get(row.eventId)! - 1);
    options.progress?.();
  };
  const handOffs: { row: DeliveryRow; after?: AttemptMade }[] = [];
  const inline = new Map<string, DeliveryRow[]>();
  const canceled: string[] = [];
  for (const row of rows) {
    if (row.status === 'succeeded' || row.status === 'canceled') continue;
    if (row.attemptCount > 0 && row.lastAttemptAt) {
      // A pass that died recorded a failed first attempt but may not have started the workflow. A failed
      // (not pending) row after one attempt means that attempt disabled the endpoint: the workflow sends the email.
      const attemptedAt = new Date(row.lastAttemptAt).toISOString();
      const after: AttemptMade = {
        attempt: row.attemptCount,
        attemptedAt,
        ...(row.status === 'failed' ? { disabled: { endpointId: row.endpointId, disabledAt: attemptedAt } } : {}),
      };
      handOffs.push({ row, after });
    } else if (row.status !== 'pending') {
      continue; // ended by a workflow (finishWebhookDelivery): it exists
    } else if (!endpointById.has(row.endpointId)) {
      canceled.push(row.id); // disabled or deleted since a pass that died made the row
      continue;
    } else if (endpointById.get(row.endpointId)!.failingSince) {
      handOffs.push({ row }); // failing: its workflow makes the first attempt too, off this pass
    } else {
      const queue = inline.get(row.endpointId) ?? [];
      queue.push(row);
      inline.set(row.endpointId, queue);
    }
    unsettled.set(row.eventId, unsettled.get(row.eventId)! + 1);
  }
  if (canceled.length > 0) {
    await em.nativeUpdate(
      WebhookDelivery,
      { id: { $in: canceled }, status: 'pending' },
      { status: 'canceled', nextAttemptAt: null, completedAt: now() },
    );
  }

  // 3. Inline first attempts; workflows for what failed. Event bodies, risk scores and secrets once per pass.
  const eventById = new Map(events.map((e) => [e.id, e]));
  const bodies = new Map<string, string>();
  const body = (event: Event) => {
    let text = bodies.get(event.id);
    if (text === undefined) bodies.set(event.id, (text = JSON.stringify(serializeEvent(event))));
    return text;
  };
  const scores = await riskScores(
    em,
    events.map((e) => e.transactionId).filter((id): id is string => id !== null),
  );
  const failingNow = new Set<string>();
  const opened: OpenedSecrets = new Map();
  const start = async (row: DeliveryRow, after?: AttemptMade) => {
    if (await startDelivery(client, taskQueue, row, after, eventClock(eventById.get(row.eventId)!))) result.workflows++;
    settle(row);
  };
  const windowMs = options.inlineWindowMs ?? inlineAttempts.windowMs;
  const stop = () => options.signal?.aborted === true || Date.now() - began > windowMs;
  const phases = await Promise.allSettled([
    inParallel(handOffs, 16, ({ row, after }) => start(row, after)),
    runGrouped(
      inline,
      {
        width: options.width ?? inlineAttempts.width,
        perGroup: options.perEndpoint ?? inlineAttempts.perEndpoint,
        stop,
      },
      async (row) => {
        const endpoint = endpointById.get(row.endpointId)!;
        if (failingNow.has(endpoint.id)) return start(row);
        const event = eventById.get(row.eventId)!;
        // An event on a test clock is sent at its own (the clock's) time: the retries count from there.
        const attemptedAt = event.testClockId ? new Date(event.createdAt) : now();
        const prepared: Prepared = {
          deliveryId: row.id,
          endpoint,
          event,
          body: body(event),
          riskScore: event.transactionId ? (scores.get(event.transactionId) ?? null) : null,
        };
        const input = {
          attempt: 1,
          attemptedAt,
          nextAttemptAt: new Date(attemptedAt.getTime() + retrySchedule(endpoint.livemode)[0]!),
        };
        let outcome: AttemptOutcome;
        try {
          outcome = await record(
            em,
            prepared,
            input,
            await send(deps, prepared, attemptedAt, opened),
            event.testClockId ? now() : attemptedAt,
          );
        } catch (error) {
          // Not an HTTP failure (those are recorded): the attempt could not be recorded. Its workflow makes attempt 1
          // again (a copy may have gone: at least once), so one delivery's trouble does not hold up the others.
          options.log?.warn('inline webhook attempt failed; its delivery workflow takes over', {
            deliveryId: row.id,
            error: String(error),
          });
          return start(row);
        }
        result.inline++;
        if (outcome.outcome !== 'failed') {
          if (outcome.outcome === 'succeeded') result.inlineSucceeded++;
          return settle(row);
        }
        failingNow.add(endpoint.id);
        await start(row, {
          attempt: 1,
          attemptedAt: attemptedAt.toISOString(),
          ...(outcome.disabled ? { disabled: outcome.disabled } : {}),
        });
      },
    ),
  ]);
  for (const phase of phases) if (phase.status === 'rejected') throw phase.reason;
  if (options.signal?.aborted) throw new CancelledFailure('the dispatcher pass was cancelled');

  // 4. Only now: the events all of whose deliveries are settled.
  const done = eventIds.filter((id) => unsettled.get(id) === 0);
  if (done.length > 0)
    await em.nativeUpdate(Event, { id: { $in: done }, dispatchedAt: null }, { dispatchedAt: new Date() });
  result.dispatched = done.length;
  result.more = events.length === options.limit || done.length < events.length;
  return result;
}

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
}

function describeFailure(response: WebhookResponse): string {
  if (response.error) return response.error;
  const status = response.statusCode!;
  return status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
}

/** What an attempt sends and records. */
interface Prepared {
  deliveryId: string;
  endpoint: WebhookEndpoint;
  event: Event;
  /** The event as GET /v1/events/{id} shows it, serialized. */
  body: string;
  /** The event's transaction's risk score, or null. */
  riskScore: number | null;
}

/** Risk scores of transactions, by id (x-risk-score). */
async function riskScores(em: EntityManager, transactionIds: string[]): Promise<Map<string, number>> {
  if (transactionIds.length === 0) return new Map();
  const rows = await em.find(
    Transaction,
    { id: { $in: [...new Set(transactionIds)] } },
    { fields: ['id', 'riskScore'] },
  );
  return new Map(rows.map((r) => [r.id, r.riskScore]));
}

/** Opened signing secrets by sealed value, for a pass that signs many deliveries to the same endpoints. */
type OpenedSecrets = Map<string, string | null>;

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
async function send(
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
 * (judgedNow), never the clock's. And a clock's events never start a run (issue #24): a failure of one does
 * not set `failing_since`, so an endpoint that live (not clock) deliveries keep healthy is never disabled by
 * them; it ends a run only that live failures began a whole window ago.
 */
async function record(
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
  const response = await send(deps, prepared, attemptedAt);
  return record(
    em,
    prepared,
    {
      attempt: input.attempt,
      attemptedAt,
      nextAttemptAt: input.nextAttemptAt === null ? null : new Date(input.nextAttemptAt),
    },
    response,
    event.testClockId ? judgedNow() : attemptedAt,
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
    return await dispatchEvents(em, context.client, context.info.taskQueue, deps, {
      limit,
      now,
      progress,
      signal: context.cancellationSignal,
      log: context.log,
    });
  } finally {
    clearInterval(ticker);
  }
}
