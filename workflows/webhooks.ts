/**
 * Webhook delivery as workflows.
 *
 * eventDispatchWorkflow: one per deployment (workflow id
 * `event-dispatch-<task queue>`), started by the first webhook endpoint and
 * living on (continue-as-new keeps its history short). Each pass runs the
 * dispatchWebhookEvents activity over the oldest undispatched events: it makes
 * each delivery's first attempt itself and starts a delivery workflow only for
 * what failed (see services/webhooks/dispatch.ts for why that loses nothing). Woken by
 * the `wake` signal (signal-with-start) that the API sends after each write and
 * a worker interceptor sends after each activity (the fast paths:
 * api/middleware/webhook-wake.ts, activities/wake-dispatch.ts); wake-ups that arrive
 * during a pass make one more pass. Its own timer is the safety net against a
 * lost wake-up: 5 s after a pass that found events, doubling while idle up to 60 s.
 * A wake-up does not cancel that timer (patch `dispatch-timer-kept`): it fires
 * later and at most ends a later wait early, which costs one pass. Cancelling it
 * wedged the dispatcher on the time-skipping test server whenever the timer fired
 * while the wake-up's workflow task was in flight: the server refuses that
 * CancelTimer ("invalid history builder state for action", sdk-java #2606) and
 * loses the timer's TimerFired, so every later task replays to the same refused
 * completion and no pass ever runs again (1 fresh-clone CI run in 7:
 * test/webhooks.test.ts "expected N webhooks, got 0"; test/webhook-dispatch-timer-race.test.ts).
 * A real server takes the cancel; keeping the timer is as correct there.
 *
 * webhookDeliveryWorkflow: one per delivery that needs more than the
 * dispatcher's first attempt (workflow id = delivery id,
 * `whd_<event>_<endpoint>`), and one per redelivery. Each attempt is one run of
 * the attemptWebhookDelivery activity, which is never retried by Temporal: the
 * workflow owns the schedule (domain/webhooks.ts), with durable timers between
 * attempts, so a worker restart or a deploy resumes the schedule where it was.
 * Started after the dispatcher's failed first attempt (`after`), it waits for
 * attempt 2 from that attempt's time.
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineSignal,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { retrySchedule } from '../domain/webhook-schedule.ts';
import type { AttemptMade, AttemptOutcome } from '../services/webhooks/dispatch.ts';
import { type ClockBinding, type WorkflowClock, workflowClock } from './clock-sleep.ts';

export const wakeSignal = defineSignal('wake');

/** A pass makes HTTP attempts (10 s each at most) and heartbeats every 2 s and per delivery: a dead worker is noticed in 15 s. */
const dispatch = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** One HTTP attempt per activity run: no retries here, the workflow's schedule is the retry policy. */
const attempt = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 1 },
});

const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export const dispatchBatchSize = 100;
export const dispatchTimer = { busyMs: 5_000, idleMaxMs: 60_000 };

export interface EventDispatchInput {
  /** The idle timer carried over a continue-as-new. */
  idleMs?: number;
  /** The longest idle wait (default dispatchTimer.idleMaxMs); tests that skip days of time raise it. */
  idleMaxMs?: number;
}

export async function eventDispatchWorkflow(input: EventDispatchInput = {}): Promise<void> {
  let wakeups = 0;
  setHandler(wakeSignal, () => {
    wakeups++;
  });
  let idleMs = input.idleMs ?? dispatchTimer.busyMs;
  const idleMaxMs = input.idleMaxMs ?? dispatchTimer.idleMaxMs;
  // The safety-net timer of the waits, never cancelled: a wait reuses it while it is pending and due no later
  // than the wait wants, else starts another (the one it leaves fires later, for nothing).
  let timer: { due: number; fired: boolean } | undefined;
  /** Waits for a wake-up after `seen`, or `ms` at most; whether it was woken. */
  const idle = async (seen: number, ms: number): Promise<boolean> => {
    // Runs recorded before the patch: condition's own timer, cancelled by a wake-up.
    if (!patched('dispatch-timer-kept')) return condition(() => wakeups > seen, ms);
    const due = Date.now() + ms;
    if (!timer || timer.fired || timer.due > due) {
      const started = { due, fired: false };
      timer = started;
      // A cancelled run: the wait below rejects with the cancellation, not this.
      void sleep(ms).then(
        () => void (started.fired = true),
        () => undefined,
      );
    }
    const waiting = timer;
    await condition(() => wakeups > seen || waiting.fired);
    return wakeups > seen;
  };
  for (let pass = 1; ; pass++) {
    const seen = wakeups;
    const result = await dispatch.dispatchWebhookEvents(dispatchBatchSize);
    setCurrentDetails(
      `Last pass: ${result.dispatched} of ${result.events} events dispatched, ${result.inline} first attempts (${result.inlineSucceeded} succeeded), ${result.workflows} delivery workflows started.`,
    );
    if (!result.more) {
      idleMs = result.events > 0 ? dispatchTimer.busyMs : Math.min(idleMs * 2, idleMaxMs);
      const woken = await idle(seen, idleMs);
      if (woken) idleMs = dispatchTimer.busyMs;
    }
    if (pass >= 500 || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof eventDispatchWorkflow>({ idleMs, idleMaxMs });
    }
  }
}

/** webhookDeliveryWorkflow's input. */
export interface WebhookDeliveryInput {
  deliveryId: string;
  livemode: boolean;
  /** Absent: the workflow makes the first attempt. */
  after?: AttemptMade;
  /** A delivery of an event recorded on a test clock: its attempts wait for the clock's time (workflows/clock-sleep.ts). */
  testClock?: ClockBinding;
}

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<AttemptOutcome['outcome']> {
  // Without a clock: Date.now() and sleep(), the same commands as always; on one, the clock's time.
  const clock = workflowClock(input.testClock);
  const outcome = await deliver(input, clock);
  await clock.finished();
  return outcome;
}

async function deliver(input: WebhookDeliveryInput, clock: WorkflowClock): Promise<AttemptOutcome['outcome']> {
  const schedule = retrySchedule(input.livemode);
  let first = 1;
  if (input.after) {
    // The dispatcher made attempts 1..after.attempt and recorded them; the last one failed.
    const made = input.after;
    if (made.disabled) return notifyDisabled(made.disabled);
    const wait = schedule[made.attempt - 1];
    if (wait === undefined) return 'failed';
    first = made.attempt + 1;
    const due = Date.parse(made.attemptedAt) + wait;
    setCurrentDetails(`Attempt ${made.attempt} failed; attempt ${first} at ${new Date(due).toISOString()}.`);
    if (due > clock.now().getTime())
      await clock.sleepFor(due - clock.now().getTime(), { summary: `Backoff before attempt ${first}` });
  }
  for (let n = first; ; n++) {
    const now = clock.now().getTime();
    const wait = schedule[n - 1];
    const nextAttemptAt = wait === undefined ? null : new Date(now + wait).toISOString();
    let result: AttemptOutcome;
    try {
      result = await attempt.attemptWebhookDelivery({
        deliveryId: input.deliveryId,
        attempt: n,
        attemptedAt: new Date(now).toISOString(),
        nextAttemptAt,
      });
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      // The attempt itself broke (worker lost, database down): it counts as a failed attempt.
      result = { outcome: 'failed' };
      if (nextAttemptAt === null)
        await bookkeeping.finishWebhookDelivery({
          deliveryId: input.deliveryId,
          at: new Date(clock.now().getTime()).toISOString(),
        });
    }
    if (result.outcome !== 'failed') return result.outcome;
    if (result.disabled) return notifyDisabled(result.disabled);
    if (nextAttemptAt === null) return 'failed';
    setCurrentDetails(`Attempt ${n} failed; attempt ${n + 1} at ${nextAttemptAt}.`);
    await clock.sleepFor(wait!, { summary: `Backoff before attempt ${n + 1}` });
  }
}

/** The owner's email about the endpoint an attempt of this delivery disabled. */
async function notifyDisabled(disabled: { endpointId: string; disabledAt: string }): Promise<'failed'> {
  const email = await bookkeeping.webhookDisabledEmail(disabled);
  if (email) await bookkeeping.sendEmail(email);
  return 'failed';
}
