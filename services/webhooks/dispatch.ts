/**
 * The webhook dispatcher: its pass (outbox → first attempts, and delivery
 * workflows for what needs retrying), starting and waking it. One attempt of a
 * delivery, its outcome and the disabled-endpoint email are
 * services/webhooks/delivery.ts; the pass as an activity is activities/webhooks.ts.
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
import { CancelledFailure } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';

import { Event, WebhookDelivery, WebhookEndpoint } from '../../db/entities/index.ts';
import { idCreatedAt } from '../../domain/ids.ts';
import { endpointWants, retrySchedule } from '../../domain/webhooks.ts';
import { serializeEvent } from '../../objects/event.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import {
  eventDispatchWorkflow,
  wakeSignal,
  type WebhookDeliveryInput,
  webhookDeliveryWorkflow,
} from '../../workflows/webhooks.ts';
import type { TemporalContext } from '../context.ts';
import { bindToClock, mainTaskQueueOf, taskQueueFor, unbindFromClock } from '../test-clocks/clocks.ts';
import {
  type AttemptOutcome,
  type OpenedSecrets,
  type Prepared,
  recordAttempt,
  riskScores,
  sendAttempt,
  type WebhookDeliveryDeps,
} from './delivery.ts';
import { pendingDelivery } from './pending-delivery.ts';

// A delivery's attempt and outcome live in delivery.ts; these names stay importable from here for the workflows.
export type { AttemptInput, AttemptOutcome, WebhookDeliveryDeps } from './delivery.ts';

/** The dispatcher's workflow id on a task queue (one dispatcher per deployment, on the live queue: a clock queue's is its live queue's). */
export const eventDispatchWorkflowId = (taskQueue: string) => `event-dispatch-${mainTaskQueueOf(taskQueue)}`;

/**
 * The fast path: wakes the dispatcher (starting it if it is not running) right
 * after a change committed. Best effort: a lost wake-up only delays delivery
 * until the dispatcher's own timer (see workflows/webhooks.ts).
 */
export async function wakeEventDispatch({
  client,
  taskQueue,
}: Pick<TemporalContext, 'client' | 'taskQueue'>): Promise<void> {
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
 * Returns how many are left after `timeoutMs` (`left`, 0: all dispatched), and whether
 * the dispatcher may have registered a delivery on the clock (`bound`, see clockDeliveriesUnsettled):
 * only then must the clock's workflow end its task to see the registration (workflows/test-clock.ts).
 */
export async function awaitClockEventsDispatched(
  em: EntityManager,
  temporal: Pick<TemporalContext, 'client' | 'taskQueue'>,
  clockId: string,
  timeoutMs: number,
): Promise<{ left: number; bound: boolean }> {
  const started = Date.now();
  let pause = 50;
  let lastWake = 0;
  for (;;) {
    const left = await undispatchedClockEvents(em, clockId);
    if (left === 0 || Date.now() - started > timeoutMs)
      return { left, bound: left > 0 || (await clockDeliveriesUnsettled(em, clockId)) };
    if (Date.now() - lastWake > 2_000) {
      await wakeEventDispatch(temporal);
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
  { client, taskQueue }: Pick<TemporalContext, 'client' | 'taskQueue'>,
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

/**
 * Whether a delivery of an event on `clockId` is not settled (pending or failed): the dispatcher hands
 * such a delivery to a workflow registered on the clock (bindToClock) before marking its event handed
 * on. When none is, no registration can be in flight: one whose delivery already succeeded or was
 * canceled has its "done" report after it, so the clock hears both or neither.
 */
export async function clockDeliveriesUnsettled(em: EntityManager, clockId: string): Promise<boolean> {
  const rows = await em.getConnection().execute<{ unsettled: boolean }[]>(
    `select exists (select 1 from events e join webhook_deliveries d on d.event_id = e.id
       where e.test_clock_id = ? and d.status not in ('succeeded', 'canceled')) as unsettled`,
    [clockId],
  );
  return rows[0]?.unsettled === true;
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
  temporal: Pick<TemporalContext, 'client' | 'taskQueue'>,
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
      const delivery = pendingDelivery(event, endpoint.id, createdAt);
      if (!known.has(delivery.id)) created.push(delivery);
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
    if (await startDelivery(temporal, row, after, eventClock(eventById.get(row.eventId)!))) result.workflows++;
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
          outcome = await recordAttempt(
            em,
            prepared,
            input,
            await sendAttempt(deps, prepared, attemptedAt, opened),
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
