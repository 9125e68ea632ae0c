/**
 * testClockWorkflow: one per test clock, workflow id = clock id (`clock_...`).
 * It holds the clock's time and the wake-ups of every workflow living on the clock
 * (workflows/clock-sleep.ts), and moves time only when advanced:
 *
 * 1. take the earliest wake-up at or before the target; the clock's time becomes it;
 * 2. tell every workflow due by then ("tick" with ack) and wait until each has
 *    reported back, having seen that time: it has done its work and registered its
 *    next wake-up, or finished. A workflow that work started meanwhile (a payment's
 *    settlement, a webhook retry) was registered by its starter and is waited for too;
 * 3. repeat until nothing is due up to the target; then the time becomes the target,
 *    every bound workflow that has not reported seeing it hears it (no ack), and the clock is recorded `ready`.
 *
 * So work runs in time order, each instant's work finished before the next starts.
 * When the due workflows stop reporting for `quietTimeoutMs` of wall time with some still
 * busy, the advance ends in `internal_failure`, naming them. No timer of the bound workflows is a
 * Temporal timer, so none of this needs the time-skipping test server.
 *
 * The run continues as new between instants when Temporal suggests it (an advance over
 * many subscriptions or many months writes many signals), carrying its state.
 */
import {
  condition,
  ContinueAsNew,
  continueAsNew,
  defineQuery,
  defineSignal,
  deprecatePatch,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import {
  clockRegisterSignal,
  type ClockRegistration,
  type ClockReport,
  clockReportSignal,
  clockUnregisterSignal,
} from './clock-sleep.ts';

export interface TestClockWorkflowInput {
  clockId: string;
  accountId: string;
  /** The clock's time (ISO). */
  frozenTime: string;
  /** Carried over a continue-as-new: the bound workflows, and an advance under way. */
  entries?: Array<[string, ClockEntry]>;
  target?: string | null;
  /** How long (wall time) a due workflow may take to go quiet; default 5 minutes. */
  quietTimeoutMs?: number;
}

export interface ClockEntry {
  /** When the workflow wants to wake (epoch ms), or null: only a message wakes it. */
  wakeAt: number | null;
  /** Set while the clock waits for it to report having seen this time (epoch ms). */
  busyAt: number | null;
  /** The latest clock time it has reported (or was registered) having seen (epoch ms); unset in entries of older runs. */
  known?: number;
}

export interface AdvanceRequest {
  frozenTime: string;
}

export interface TestClockState {
  frozenTime: string;
  target: string | null;
  workflowIds: string[];
  busy: string[];
}

export const advanceClockSignal = defineSignal<[AdvanceRequest]>('advanceTestClock');
/**
 * The sandbox test helper POST /v1/test_helpers/test_clocks/{id}/stall (services/test-clocks/stall.ts):
 * a stand-in for a workflow on the clock that never reports its work, and a quiet timeout this short,
 * so the next advance ends in internal_failure through the same path as a real stuck workflow.
 */
export const stallClockSignal = defineSignal<[{ quietTimeoutMs: number }]>('stallTestClock');
/** The stand-in's id among the clock's workflows (named in the failure). */
export const stalledEntryId = 'stalled_by_test_helper';
export const testClockQuery = defineQuery<TestClockState>('testClock');

const activities = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
/** Waits (polling the database) while the dispatcher hands the clock's events on: as long as the quiet timeout, and then some. */
const local = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * Ticks go out by a local activity sending direct signals, many at a time (services/test-clocks/clocks.ts
 * tickClockWorkflows): as signal-external commands they were transfer tasks answered one by
 * one with an event and a workflow task of the clock each (~1 per second on a loaded dev
 * server), and over 2,000 pending ones fail the clock's workflow task for good.
 */
const ticks = proxyLocalActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

const iso = (ms: number) => new Date(ms).toISOString();

/** Ticks go out through one local activity (tickClockWorkflows) instead of a signal per workflow; deprecated. */
const tickByActivityPatch = 'test-clock-tick-by-activity';
/** A quiet timeout under 30 s (only a stalled sandbox clock's) is waited for in one step, not 30 s ones. */
const shortQuietTimeoutPatch = 'test-clock-short-quiet-timeout';
/** The 1 ms timer after the webhook hand-off only when the dispatcher may have registered a delivery on the clock. */
const sleepOnlyIfBoundPatch = 'test-clock-sleep-only-if-bound';
/** The final tick of an advance goes only to workflows that have not reported its time, 256 signals at a time. */
const finalTickToStalePatch = 'test-clock-final-tick-to-stale';
/**
 * The final tick's signals in flight at once: they only raise each workflow's known time, one small RPC each. On the
 * dev server 256 at a time were no faster than 32 (1,000 signals in 0.65-0.82 s either way: the server's appends bound
 * it; docs/scaling.md#test-clocks), and it took them all without an error; what saves the time is sending fewer.
 */
const finalTickConcurrency = 256;

export async function testClockWorkflow(input: TestClockWorkflowInput): Promise<void> {
  let time = Date.parse(input.frozenTime);
  let target: number | null = input.target ? Date.parse(input.target) : null;
  const entries = new Map<string, ClockEntry>(input.entries ?? []);
  let quietTimeoutMs = input.quietTimeoutMs ?? 5 * 60_000;

  setHandler(testClockQuery, () => ({
    frozenTime: iso(time),
    target: target === null ? null : iso(target),
    workflowIds: [...entries.keys()],
    busy: [...entries].filter(([, e]) => e.busyAt !== null).map(([id]) => id),
  }));
  setHandler(clockRegisterSignal, ({ workflowId, known }: ClockRegistration) => {
    // A workflow the clock knows already exists (its starter is retrying after a timeout): its start will be refused.
    if (entries.has(workflowId)) return;
    entries.set(workflowId, { wakeAt: null, busyAt: Date.parse(known), known: Date.parse(known) });
  });
  setHandler(clockUnregisterSignal, ({ workflowId }: { workflowId: string }) => {
    // Only a registration that never became a workflow: one that has reported a wake-up stays (and one that reports later comes back).
    if (entries.get(workflowId)?.wakeAt === null) entries.delete(workflowId);
  });
  /** Reports heard so far: while they keep coming, the due work is progressing. */
  let reports = 0;
  setHandler(clockReportSignal, (report: ClockReport) => {
    reports++;
    if (report.done) {
      entries.delete(report.workflowId);
      return;
    }
    const entry = entries.get(report.workflowId) ?? { wakeAt: null, busyAt: null };
    entry.wakeAt = report.wakeAt === null ? null : Date.parse(report.wakeAt);
    const known = Date.parse(report.known);
    if (entry.busyAt !== null && known >= entry.busyAt) entry.busyAt = null;
    entry.known = entry.known === undefined ? known : Math.max(entry.known, known);
    entries.set(report.workflowId, entry);
  });
  setHandler(stallClockSignal, ({ quietTimeoutMs: timeout }) => {
    quietTimeoutMs = Math.min(quietTimeoutMs, timeout);
    // Carried over a continue-as-new with the entries.
    input.quietTimeoutMs = quietTimeoutMs;
    // Busy since now and waking for nothing: no tick reaches it, so it never reports.
    entries.set(stalledEntryId, { wakeAt: null, busyAt: time });
  });
  setHandler(advanceClockSignal, ({ frozenTime }: AdvanceRequest) => {
    const at = Date.parse(frozenTime);
    if (at > (target ?? time)) target = at;
  });

  const quiet = () => [...entries.values()].every((e) => e.busyAt === null);
  const busyIds = () => [...entries].filter(([, e]) => e.busyAt !== null).map(([id]) => id);

  /** Signals each workflow; one that no longer exists leaves the clock. */
  async function tell(ids: string[], ack: boolean, concurrency?: number): Promise<void> {
    if (ids.length === 0) return;
    deprecatePatch(tickByActivityPatch);
    const gone = await ticks.tickClockWorkflows({
      ids,
      tick: { now: iso(time), ack },
      ...(concurrency ? { concurrency } : {}),
    });
    for (const id of gone) entries.delete(id);
  }

  /** One advance to `to`, instant by instant (it may continue as new between instants, carrying the advance). */
  async function advance(to: number): Promise<void> {
    for (;;) {
      setCurrentDetails(`Advancing to ${iso(to)}: at ${iso(time)}, waiting for ${busyIds().length} workflow(s).`);
      // Waits for the due workflows to go quiet; every 30 s, the ones still busy hear the time again
      // (a tick only raises a workflow's known time, so a second one is harmless; one seen lost on a
      // loaded dev server left the clock advancing for good).
      // `quietTimeoutMs` counts wall time without a single report (an instant with 1,000 due renewals takes minutes on a busy machine, reporting all along).
      let waited = 0;
      let heard = reports;
      while (!quiet() && waited < quietTimeoutMs) {
        const step = quietTimeoutMs < 30_000 && patched(shortQuietTimeoutPatch) ? quietTimeoutMs : 30_000;
        if (await condition(quiet, step)) break;
        waited += step;
        if (reports !== heard) {
          deprecatePatch(tickByActivityPatch);
          waited = 0;
        }
        heard = reports;
        const again = [...entries]
          .filter(([, e]) => e.busyAt !== null && e.wakeAt !== null && e.busyAt === time)
          .map(([id]) => id);
        if (again.length > 0) {
          deprecatePatch(tickByActivityPatch);
          await ticks.tickClockWorkflows({ ids: again, tick: { now: iso(time), ack: true } });
        }
      }
      if (!quiet()) {
        const stuck = busyIds();
        throw new Error(
          `${stuck.length} workflow(s) did not finish the work due at ${iso(time)} within ${quietTimeoutMs / 1000} s: ${stuck.slice(0, 5).join(', ')}${stuck.length > 5 ? ', ...' : ''}.`,
        );
      }
      deprecatePatch('test-clock-webhooks');
      // The events this instant's work recorded reach the webhook dispatcher first: a delivery that
      // failed is registered on the clock (its retries are due work), and the clock waits for it too.
      // (Histories before patch test-clock-sleep-only-if-bound recorded a bare count.)
      const dispatched: number | { left: number; bound: boolean } = await local.awaitClockEventsDispatched({
        clockId: input.clockId,
        timeoutMs: quietTimeoutMs,
      });
      const { left, bound } = typeof dispatched === 'number' ? { left: dispatched, bound: true } : dispatched;
      if (left > 0)
        throw new Error(
          `${left} event(s) recorded at ${iso(time)} were not handed to the webhook dispatcher within ${quietTimeoutMs / 1000} s.`,
        );
      // The dispatcher registered those deliveries (bindToClock) before marking their events handed on, but a
      // signal that arrives while this workflow task waits on the local activity is applied only in the next
      // task: end this one (a 1 ms timer) so the registrations are seen before `quiet()` is asked (issue #24:
      // an event recorded just before an advance had its retries skipped by it). Only when the dispatcher may
      // have registered one (`bound`: a delivery of the clock's events is not settled): the timer is a workflow
      // task round trip, about 1 s on a loaded server, and most clocks have no failing webhook endpoint.
      deprecatePatch('test-clock-registrations-after-dispatch');
      const skipUnlessBound = patched(sleepOnlyIfBoundPatch);
      if (bound || !skipUnlessBound) await sleep(1);
      if (!quiet()) continue;
      let next: number | null = null;
      for (const entry of entries.values())
        if (entry.wakeAt !== null && entry.wakeAt <= to && (next === null || entry.wakeAt < next)) next = entry.wakeAt;
      if (next === null) break;
      if (workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof testClockWorkflow>({
          ...input,
          frozenTime: iso(time),
          entries: [...entries],
          target: iso(to),
        });
      }
      time = Math.max(time, next);
      const due: string[] = [];
      for (const [id, entry] of entries) {
        if (entry.wakeAt !== null && entry.wakeAt <= time) {
          entry.busyAt = time;
          due.push(id);
        }
      }
      await tell(due, true);
    }
    time = to;
    // Every bound workflow hears the new time before `ready`, so that a command sent right after it (an update,
    // a cancel) computes with it. One that reported having seen it (the last instant was `to`: a renewal due at
    // the target) knows it already; the others hear it all at once.
    if (patched(finalTickToStalePatch)) {
      const stale = [...entries].filter(([, e]) => e.known === undefined || e.known < to).map(([id]) => id);
      await tell(stale, false, finalTickConcurrency);
    } else await tell([...entries.keys()], false);
  }

  for (;;) {
    setCurrentDetails(`At ${iso(time)}; ${entries.size} workflow(s) on the clock.`);
    await condition(() => target !== null || workflowInfo().continueAsNewSuggested);
    if (target === null) {
      // Idle, with a long history (many workflows joined or reported): carry the state into a fresh one.
      await continueAsNew<typeof testClockWorkflow>({
        ...input,
        frozenTime: iso(time),
        entries: [...entries],
        target: null,
      });
    }
    const to = target!;
    try {
      await advance(to);
      await activities.testClockAdvanced({ clockId: input.clockId, frozenTime: iso(time), failure: null });
    } catch (error) {
      if (error instanceof ContinueAsNew) throw error;
      await activities.testClockAdvanced({
        clockId: input.clockId,
        frozenTime: iso(time),
        failure: error instanceof Error ? error.message : String(error),
      });
    }
    if (target === to) target = null;
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof testClockWorkflow>({
        ...input,
        frozenTime: iso(time),
        entries: [...entries],
        target: target === null ? null : iso(target),
      });
    }
  }
}
