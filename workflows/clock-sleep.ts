/**
 * Time for workflows that may live on a test clock (workflows/test-clock.ts).
 *
 * Every workflow takes "now" and waits for an instant through `workflowClock(binding)`:
 *
 * - without a binding (every live object, and sandbox objects not on a clock) it is
 *   exactly what the workflows did before test clocks: `now()` is workflow time,
 *   `sleepUntil` is `condition(wake, remaining)` and `sleepFor` is `sleep(ms)`, with
 *   the same commands, so recorded histories replay unchanged;
 * - with a binding, no timer is ever started: the workflow tells the clock when it
 *   wants to wake ("report", a row in the clock's registry table since issue #29),
 *   and waits for the clock's "tick" signal saying
 *   the clock's time has reached that instant. `now()` is the clock's time as this
 *   workflow last heard it. Each report carries the clock time the workflow had seen,
 *   so the clock knows the workflow has finished the work due at that time (it has
 *   gone quiet) before it moves to the next instant.
 *
 * Nothing here depends on Temporal's time-skipping server: the clock moves only when
 * asked to, on any Temporal server.
 *
 * To put another workflow on clocks (payouts and their schedules, webhook retries):
 * give its input an optional `testClock: ClockBinding`, replace its `sleep`/`condition`
 * timers and `Date.now()` by this helper's (same commands without a clock), call
 * `finished()` before it returns, carry `binding()` into a continue-as-new, and have
 * whoever starts it call services/test-clocks/clocks.ts `bindToClock` first (an activity on
 * a clock finds the binding in services/test-clocks/now.ts `currentTestClock()`).
 */
import {
  condition,
  defineSignal,
  deprecatePatch,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';

/** A workflow's test clock: the clock's id (its workflow id) and its time when this run started. */
export interface ClockBinding {
  id: string;
  now: string;
}

/** Clock → bound workflow: the clock's time is now `now`; `ack`: the clock waits for a report. */
export interface ClockTick {
  now: string;
  ack: boolean;
}
/** Bound workflow → clock: wake me at `wakeAt` (null: only a message wakes me), having seen clock time `known`; `done`: I have finished. */
export interface ClockReport {
  workflowId: string;
  wakeAt: string | null;
  known: string;
  done?: boolean;
}
/** Whoever starts a workflow on a clock → clock: it exists and is busy until it reports having seen `known`. */
export interface ClockRegistration {
  workflowId: string;
  known: string;
}

export const clockTickSignal = defineSignal<[ClockTick]>('testClockTick');
export const clockReportSignal = defineSignal<[ClockReport]>('testClockReport');
export const clockRegisterSignal = defineSignal<[ClockRegistration]>('testClockRegister');
/** Whoever registered a workflow that then did not start (it existed already) → clock. */
export const clockUnregisterSignal = defineSignal<[{ workflowId: string }]>('testClockUnregister');

export interface SleepOptions {
  /** The timer's summary (Temporal UI), without a clock. */
  summary?: string;
}

export interface WorkflowClock {
  /** The binding to carry into a continue-as-new or hand to work this workflow starts (the clock's current time); undefined without a clock. */
  binding(): ClockBinding | undefined;
  /** Workflow time, or the clock's time. */
  now(): Date;
  /**
   * Waits until `wake()` holds (returns true) or `instant` comes (returns false);
   * `instant` null: only `wake()` ends the wait. An instant already past returns
   * `wake()` at once, as a zero timer would.
   */
  sleepUntil(instant: Date | null, wake: () => boolean, options?: SleepOptions): Promise<boolean>;
  /** Sleeps `ms` (a whole `sleep` without a clock). */
  sleepFor(ms: number, options?: SleepOptions): Promise<void>;
  /** Tells the clock this workflow has finished; without a clock, nothing. */
  finished(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Reports go to the clock by a local activity: into the clock's registry table (services/test-clocks/registry.ts), or a
 * direct signal to a clock whose run started before it; never a signal-external command (registry.ts tickClockWorkflows says why).
 */
const clockActivities = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** The activity header that carries a workflow's test clock (workflows/test-clock-interceptors.ts). */
export const testClockHeader = 'billing-test-clock';

/** Per workflow (globalThis is each workflow's own in the sandbox): the binding of the clock it lives on. */
const slot = globalThis as { __billingTestClock?: () => ClockBinding };

/** The test clock of the running workflow, with its current time, or undefined. */
export function currentClockBinding(): ClockBinding | undefined {
  return slot.__billingTestClock?.();
}

export function workflowClock(binding: ClockBinding | null | undefined): WorkflowClock {
  if (!binding) {
    return {
      binding: () => undefined,
      now: () => new Date(),
      async sleepUntil(instant, wake, options) {
        if (instant === null) {
          await condition(wake);
          return true;
        }
        const remaining = instant.getTime() - Date.now();
        if (remaining <= 0) return wake();
        return options?.summary ? condition(wake, remaining, { summary: options.summary }) : condition(wake, remaining);
      },
      async sleepFor(ms, options) {
        await sleep(ms, options?.summary ? { summary: options.summary } : undefined);
      },
      async finished() {},
    };
  }

  const clockId = binding.id;
  let known = Date.parse(binding.now);
  let ackWanted = false;
  setHandler(clockTickSignal, (tick: ClockTick) => {
    known = Math.max(known, Date.parse(tick.now));
    if (tick.ack) ackWanted = true;
  });

  async function report(wakeAt: number | null, done = false): Promise<void> {
    ackWanted = false;
    const message: ClockReport = {
      workflowId: workflowInfo().workflowId,
      wakeAt: wakeAt === null ? null : iso(wakeAt),
      known: iso(known),
      ...(done ? { done } : {}),
    };
    deprecatePatch('test-clock-report-by-activity');
    await clockActivities.reportToClock({ clockId, report: message });
  }

  async function sleepUntil(instant: Date | null, wake: () => boolean): Promise<boolean> {
    const at = instant === null ? null : instant.getTime();
    if (wake()) return true;
    if (at !== null && at <= known) return false;
    for (;;) {
      await report(at);
      await condition(() => wake() || (at !== null && known >= at) || ackWanted);
      if (wake()) return true;
      if (at !== null && known >= at) return false;
      // The clock moved (not yet to our instant) and waits to hear from us: report again.
    }
  }

  slot.__billingTestClock = () => ({ id: clockId, now: iso(known) });
  return {
    binding: () => ({ id: clockId, now: iso(known) }),
    now: () => new Date(known),
    sleepUntil,
    async sleepFor(ms) {
      await sleepUntil(new Date(known + ms), () => false);
    },
    finished: () => report(null, true),
  };
}
