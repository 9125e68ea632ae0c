/**
 * testClockWorkflow: one per test clock, workflow id = clock id (`clock_...`).
 * It holds the clock's time; the wake-ups of every workflow living on the clock
 * (workflows/clock-sleep.ts) are in the clock's registry, a table in PostgreSQL since
 * patch test-clock-registry-in-table (services/test-clocks/registry.ts; runs started
 * before it hold them in their own state, below). It moves time only when advanced:
 *
 * 1. take the earliest wake-up at or before the target; the clock's time becomes it;
 * 2. tell every workflow due by then ("tick" with ack) and wait until each has
 *    reported back (in the table: until the last report of the instant signals it once), having seen that time: it has done its work and registered its
 *    next wake-up, or finished. A workflow that work started meanwhile (a payment's
 *    settlement, a webhook retry) was registered by its starter and is waited for too;
 * 3. repeat until nothing is due up to the target; then the time becomes the target,
 *    every bound workflow that has not reported seeing it hears it (no ack), and the clock is recorded `ready`.
 *
 * So work runs in time order, each instant's work finished before the next starts.
 * When the due workflows stop reporting for `quietTimeoutMs` of wall time with some still
 * busy, and none of those is waiting its turn in Temporal (a workflow task scheduled or
 * running: patch test-clock-queued-not-stuck), the advance ends in `internal_failure`, naming
 * them. No timer of the bound workflows is a Temporal timer, so none of this needs the
 * time-skipping test server.
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
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import type { ClockMessage } from '../services/test-clocks/registry.ts';
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
  /** Carried over a continue-as-new of a clock reading its table: the last round it waited for (a "done" up to it is stale). */
  round?: number;
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
/**
 * Registry in the table (patch test-clock-registry-in-table): the report that leaves nothing busy while the clock
 * waits for round `round` (services/test-clocks/registry.ts) → clock, once per round; an old or repeated one is ignored.
 */
export const clockInstantDoneSignal = defineSignal<[{ round: number }]>('testClockInstantDone');

/** Every activity of the clock retries from 1 s, doubling, up to `maximumInterval`. */
const retryUpTo = (maximumInterval: string) => ({
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval,
});

const activities = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: retryUpTo('1 minute'),
});
/** Waits (polling the database) while the dispatcher hands the clock's events on: as long as the quiet timeout, and then some. */
const local = proxyLocalActivities<Activities>({ startToCloseTimeout: '10 minutes', retry: retryUpTo('1 minute') });

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

/**
 * The clock's registry lives in PostgreSQL, not in this workflow's state (issue #29, services/test-clocks/registry.ts):
 * its history and task time no longer grow with the workflows on the clock. Runs started before it keep their state
 * (and the writers signal them, finding no registry row); their next run (continue-as-new) moves it into the table.
 */
const registryPatch = 'test-clock-registry-in-table';
/**
 * A busy workflow whose workflow task waits in Temporal is not stuck: when the quiet timeout is up, the clock asks
 * whether any of its busy ones (a sample of 5) is queued (checkClockBusy's `queued`) and, if so, starts it again; and
 * the busy ones are not ticked again once the instant's ticks have all gone out. Before it, 100 clocks advanced at
 * once over 10,000 trials ended one clock in internal_failure after 300 s without a report while its 100 renewals
 * waited their turn on the worker, and each 30 s check signalled every still-queued workflow again.
 */
const queuedNotStuckPatch = 'test-clock-queued-not-stuck';

export async function testClockWorkflow(input: TestClockWorkflowInput): Promise<void> {
  if (patched(registryPatch)) return registryClockWorkflow(input);
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

/** The clock's activities on its table (activities/test-clocks.ts), as local activities: a few per instant, whatever is on the clock. */
const registry = proxyLocalActivities<Activities>({ startToCloseTimeout: '5 minutes', retry: retryUpTo('30 seconds') });

/**
 * The ticks of an instant (activities/test-clocks.ts tickClockInstant): an activity, not a local one, so the clock's
 * workflow task ends at once instead of lasting while N signals go out (its ScheduleToClose bounds nothing: a due
 * workflow that never hears it is ticked again by checkClockBusy).
 */
const tickers = proxyActivities<Activities>({ startToCloseTimeout: '5 minutes', retry: retryUpTo('30 seconds') });

/** The ticks of the instant a clock waits for: none sent (work bound before the advance), going out, all out, or failed for good. */
type TickState = 'none' | 'sending' | 'sent' | 'failed';

/**
 * testClockWorkflow with its registry in the table (patch test-clock-registry-in-table). Per instant: one stepClock
 * (the earliest wake-up up to the target; the due entries marked busy), one tickClockInstant activity, ONE
 * `testClockInstantDone` signal when the last of them has reported, and the webhook hand-off; whatever N is. Every
 * guarantee of the header holds: time order, each instant finished before the next, work started meanwhile waited
 * for (its starter wrote its row before starting it), the quiet timeout naming what is stuck, a last tick to what
 * has not seen the target before `ready`, continue-as-new when suggested.
 */
async function registryClockWorkflow(input: TestClockWorkflowInput): Promise<void> {
  const { clockId, accountId } = input;
  let time = Date.parse(input.frozenTime);
  let target: number | null = input.target ? Date.parse(input.target) : null;
  let quietTimeoutMs = input.quietTimeoutMs ?? 5 * 60_000;
  let round = input.round ?? 0;
  let doneRound = round;
  /** Signals of the time before the table (a writer that found no registry row yet): written into the table by the clock. */
  const late: ClockMessage[] = [];

  setHandler(testClockQuery, () => ({
    frozenTime: iso(time),
    target: target === null ? null : iso(target),
    // In the table (services/test-clocks/registry.ts clockEntryIds).
    workflowIds: [],
    busy: [],
  }));
  setHandler(clockRegisterSignal, ({ workflowId, known }: ClockRegistration) => {
    late.push({ kind: 'register', workflowId, known });
  });
  setHandler(clockUnregisterSignal, ({ workflowId }: { workflowId: string }) => {
    late.push({ kind: 'unregister', workflowId });
  });
  setHandler(clockReportSignal, (report: ClockReport) => {
    late.push({ kind: 'report', report });
  });
  setHandler(stallClockSignal, ({ quietTimeoutMs: timeout }) => {
    quietTimeoutMs = Math.min(quietTimeoutMs, timeout);
    input.quietTimeoutMs = quietTimeoutMs;
    // Busy since now and waking for nothing: no tick reaches it, so it never reports.
    late.push({ kind: 'register', workflowId: stalledEntryId, known: iso(time) });
  });
  setHandler(advanceClockSignal, ({ frozenTime }: AdvanceRequest) => {
    const at = Date.parse(frozenTime);
    if (at > (target ?? time)) target = at;
  });
  setHandler(clockInstantDoneSignal, ({ round: done }) => {
    // Only a round the clock has asked for (one it has not reached yet was never its own).
    if (done > doneRound && done <= round) doneRound = done;
  });

  // The entries a run before the table carried (continue-as-new), and the registry row of a clock made before it.
  await registry.adoptClockEntries({ clockId, accountId, entries: input.entries ?? [] });

  async function flushLate(): Promise<void> {
    while (late.length > 0) {
      const ended = await registry.applyClockMessages({ clockId, messages: late.splice(0) });
      if (ended !== null && ended > doneRound) doneRound = ended;
    }
  }

  const carry = (to: number | null): TestClockWorkflowInput => ({
    clockId,
    accountId,
    frozenTime: iso(time),
    target: to === null ? null : iso(to),
    round,
    ...(input.quietTimeoutMs !== undefined ? { quietTimeoutMs: input.quietTimeoutMs } : {}),
  });

  /**
   * Waits for round `waiting` to end: its "done" signal, or the table saying nothing is busy (checked every 30 s, or
   * the quiet timeout when shorter, which ticks the busy ones again until the instant's ticks have all gone out). Fails
   * after `quietTimeoutMs` of wall time without a single report on the clock and with none of the busy ones waiting
   * its turn in Temporal, naming what is still busy.
   */
  async function waitForRound(waiting: number, reportedAt: string | null, ticks: () => TickState): Promise<void> {
    let waited = 0;
    let lastReport = reportedAt;
    for (;;) {
      await flushLate();
      if (doneRound >= waiting) return;
      const step = Math.min(quietTimeoutMs, 30_000);
      if (await condition(() => doneRound >= waiting || late.length > 0, step)) {
        if (doneRound >= waiting) return;
        continue;
      }
      waited += step;
      const queuedNotStuck = patched(queuedNotStuckPatch);
      const check = await registry.checkClockBusy({
        clockId,
        accountId,
        ...(queuedNotStuck
          ? {
              // Ticked again unless the instant's ticks have all gone out: none sent (work from before the advance),
              // failed, or still going out (their activity may be on a worker that died: it times out only after 5 minutes).
              retick: ticks() !== 'sent',
              // About to fail: are the busy ones stuck, or is their workflow task waiting its turn?
              askQueued: waited >= quietTimeoutMs,
            }
          : {}),
      });
      if (check.busy === 0) return;
      // A report since the last check, or a busy workflow whose task waits in Temporal: the clock is not stuck.
      if (check.lastReportAt !== lastReport || (queuedNotStuck && (check.queued ?? 0) > 0)) waited = 0;
      lastReport = check.lastReportAt;
      if (waited >= quietTimeoutMs)
        throw new Error(
          `${check.busy} workflow(s) did not finish the work due at ${iso(time)} within ${quietTimeoutMs / 1000} s: ${check.sample.join(', ')}${check.busy > check.sample.length ? ', ...' : ''}.`,
        );
    }
  }

  /** One advance to `to`, instant by instant (it may continue as new between instants, carrying the advance). */
  async function advance(to: number): Promise<void> {
    await flushLate();
    // Work bound before the advance that has not reported yet (or the stall helper's stand-in) is waited for first.
    let step = await registry.stepClock({ clockId, accountId, round: ++round, time: iso(time), to: null });
    /** The ticks of the instant just marked, going out while the clock waits for its round. */
    let ticking: Promise<unknown> | null = null;
    let ticks: TickState = 'none';
    for (;;) {
      setCurrentDetails(`Advancing to ${iso(to)}: at ${iso(time)}, waiting for ${step.busy} workflow(s).`);
      if (step.busy > 0) await waitForRound(round, step.lastReportAt, () => ticks);
      if (ticking) await ticking;
      ticking = null;
      // The events this instant's work recorded reach the webhook dispatcher: a delivery that failed was written into
      // the table (bindToClock) before its event was marked handed on, so the next step sees it busy and waits for it.
      const dispatched: { left: number; bound: boolean } = await local.awaitClockEventsDispatched({
        clockId,
        timeoutMs: quietTimeoutMs,
      });
      if (dispatched.left > 0)
        throw new Error(
          `${dispatched.left} event(s) recorded at ${iso(time)} were not handed to the webhook dispatcher within ${quietTimeoutMs / 1000} s.`,
        );
      await flushLate();
      if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof testClockWorkflow>(carry(to));
      step = await registry.stepClock({ clockId, accountId, round: ++round, time: iso(time), to: iso(to) });
      if (step.next !== null) {
        time = Math.max(time, Date.parse(step.next));
        // Not failing the advance if it fails for good: checkClockBusy then ticks what is still busy again.
        ticks = 'sending';
        ticking = tickers.tickClockInstant({ clockId, accountId, at: step.next }).then(
          () => (ticks = 'sent'),
          () => (ticks = 'failed'),
        );
      } else if (step.busy === 0) break;
    }
    time = to;
    // Every bound workflow hears the new time before `ready` (a command right after it computes with it), but only
    // those that have not reported seeing it: the ones due at the target know it already.
    await registry.finalTickClock({ clockId, accountId, to: iso(to) });
  }

  for (;;) {
    setCurrentDetails(`At ${iso(time)}.`);
    await condition(() => target !== null || late.length > 0 || workflowInfo().continueAsNewSuggested);
    await flushLate();
    if (target === null) {
      if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof testClockWorkflow>(carry(null));
      continue;
    }
    const to = target;
    try {
      await advance(to);
      await activities.testClockAdvanced({ clockId, frozenTime: iso(time), failure: null });
    } catch (error) {
      if (error instanceof ContinueAsNew) throw error;
      await activities.testClockAdvanced({
        clockId,
        frozenTime: iso(time),
        failure: error instanceof Error ? error.message : String(error),
      });
    }
    if (target === to) target = null;
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof testClockWorkflow>(carry(target));
  }
}
