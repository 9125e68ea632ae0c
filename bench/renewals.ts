/**
 * Benchmark: N subscriptions renewing at the same instant on the Temporal dev
 * server, against N no-op workflows that wake at the same kind of instant and run
 * one no-op activity (the least a timer-driven renewal can cost on this machine),
 * both measured in the same run.
 *
 *   npm run bench:renewals        (or: node bench/renewals.ts)
 *
 * It starts everything it needs in a temporary folder (an embedded PostgreSQL
 * with the engine's schema, `temporal server start-dev` with the search
 * attributes registered), bundles bench/workflows once, and runs rounds that
 * alternate baseline and engine, each with a fresh task queue and a fresh worker
 * process (bench/renewals-worker.ts: the engine's activities and worker options).
 *
 * A round: start N workflows through the Temporal client, all waking at the same
 * instant T (a little after they have all started and the worker is idle again),
 * then poll every 200 ms until all N are done, and note when the last one was.
 *  - engine: subscriptionWorkflow started with carried-over state (as a continue-as-new
 *    passes it), bypassing the API: by default (BENCH_SCENARIO=renewal) an `active`
 *    subscription whose billing cycle 0 (30 days) ends at T; with
 *    BENCH_SCENARIO=trial-end a `trialing` one whose trial ends at T. At T each opens an
 *    invoice, charges the customer through the sandbox processor, settles the invoice
 *    and records the new cycle (in the same run since renew-in-place). Done = its
 *    projection row says `active`, the new billing cycle (1, or 0 after a trial), and
 *    its latest invoice is paid (a database count).
 *  - baseline: noopRenewalWorkflow, which sleeps until T, runs `benchNoop` and
 *    returns. Done = the workflow completed (a count of Temporal's visibility).
 *    BENCH_BASELINE=local makes it the floor instead, noopLocalRenewalWorkflow: the
 *    same with `benchNoop` as a local activity, a renewal's own shape (one workflow
 *    task after the timer) with nothing in it, into a section of its own.
 * The engine's rows (one account, N customers with pm_card_visa, one plan, the
 * projection rows) are inserted directly; each engine round has its own
 * account. Afterwards the engine's money is checked: N paid invoices, N
 * succeeded charges, numbered without gaps.
 *
 * Measured per round: wall time from T to the last completion, completions per
 * second, the worker process's memory (process.memoryUsage() every 200 ms: at T,
 * peak after T, and at the end), CPU seconds from T to the last completion of the
 * worker, the Temporal server, PostgreSQL and the rest of the machine (/proc),
 * and per renewal: activities, SQL queries, workflow tasks and history events.
 *
 * Settings (environment): BENCH_N (default 2000), BENCH_ROUNDS (default 2: baseline,
 * engine, baseline, engine), BENCH_TIMEOUT (seconds per round after T, default 1800),
 * and worker tuning, the same for both targets: BENCH_ACTIVITY_SLOTS
 * (maxConcurrentActivityTaskExecutions), BENCH_WORKFLOW_SLOTS
 * (maxConcurrentWorkflowTaskExecutions), BENCH_DB_POOL (the MikroORM pool's size).
 * Unset, they are the production defaults. BENCH_SQLITE_PRAGMAS (e.g.
 * `journal_mode=wal,synchronous=normal`) passes `--sqlite-pragma`s to the dev server,
 * to see how much of the limit is its SQLite file. A tuned run writes a section of its own.
 * BENCH_TEMPORAL=postgres runs the real Temporal server (v1.29.1, persisted in the
 * same embedded PostgreSQL, BENCH_HISTORY_SHARDS shards, default 4; dev/temporal-server.ts)
 * instead of the dev server, into a section of its own.
 * BENCH_WRITE=0 prints the section instead of writing it to bench/RESULTS.md. BENCH_WARMUP
 * (default 200, 0 for none): an unmeasured wave of that many per target before the rounds.
 * BENCH_CACHED_WORKFLOWS sets the worker's maxCachedWorkflows (unset: worker.ts's default,
 * as production). BENCH_TARGETS=engine runs the engine's rounds only (no baseline, no ratio:
 * for memory and wave time at large N, e.g. BENCH_N=10000 BENCH_ROUNDS=1), into a section
 * of its own. BENCH_TARGETS=engine with BENCH_VARIANTS='name:key=value,...;name:...' compares worker
 * settings in one run, the rounds alternating them (parseVariants: sticky, polls, ratio, slots, cache,
 * pool, semi, autoscale), e.g. BENCH_VARIANTS='before:sticky=300;after:sticky=5'.
 *
 * `--usage` (bench/renewals-usage.ts): N subscriptions to a metered plan (a `sum` meter, graduated tiers; each customer's
 * events sent through POST /v1/meter_events/batch of the engine's API, in this process, before the wave) against N flat
 * ones, rounds alternating which goes first; every usage invoice is checked against the customer's own events. Default
 * N 1,000; a section of its own (issue #28's goal: the usage wave within 1.5× the flat one's time).
 *
 * `--black-box` (bench/renewals-black-box.ts): the same kind of wave as a user of the public API makes it,
 * customers and 30-day trials created over HTTP on test clocks, the clocks advanced over the API, against the
 * engine's own API and worker processes; a section of its own.
 *
 * The lead time to T adapts: the first round's is the warm-up's start time scaled to N, each next
 * one what the rounds before needed plus half; a round whose workflows were not all started and
 * settled by T is not measured but run again with a longer lead (runRoundAdapting), instead of the
 * run failing.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import { startApiServer } from '../api/server.ts';
import { loadConfig } from '../config.ts';
import { freePort } from '../dev/processes.ts';
import { defaultHistoryShards } from '../dev/temporal-server.ts';
import { resolveTemporalCli, temporalServerVersion } from '../dev/tools.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';
import { createLogger } from '../logger.ts';
import { workerDefaults } from '../worker.ts';
import {
  AccountIdKey,
  CustomerIdKey,
  LivemodeKey,
  PlanIdKey,
  SubscriptionStatusKey,
} from '../workflows/search-attributes.ts';
import { mean, resultsFile, round1, runBenchmark, type Say, sleep, type Stops, writeSection } from './harness.ts';
import {
  checkEngineMoney,
  codeState,
  engineDoneQuery,
  type EngineSeed,
  inParallel,
  insertProjections,
  type ItemsSeed,
  namespace,
  planAmount,
  renewalInterval,
  renewingItemsSnapshot,
  renewingSnapshot,
  seatAmount,
  seatQuantity,
  seedEngine,
  seedItemsEngine,
  startRenewalsInfrastructure,
  trialingSnapshot,
  WorkerProcess,
} from './renewals-setup.ts';
import {
  checkUsageMoney,
  customerEvents,
  expectedUsageTotal,
  renewingUsageSnapshot,
  seedUsageEngine,
  usageTiers,
} from './renewals-usage.ts';
import type { WorkerProcessOptions, WorkerStatusReport } from './renewals-worker.ts';
import { noopLocalRenewalWorkflow, noopRenewalWorkflow, subscriptionWorkflow } from './workflows/index.ts';

/**
 * `items` (--items): the engine's subscriptions with three items; `engine` then has one (the same seats), bench/renewals-setup.ts
 * seedItemsEngine. `usage` (--usage): subscriptions to a metered plan billing their period's usage (bench/renewals-usage.ts);
 * `engine` then is the flat plan of the default wave.
 */
type Target = 'baseline' | 'engine' | 'items' | 'usage';
const mb = (bytes: number) => bytes / 1024 / 1024;
/** Per-second rates: one decimal below 100. */
const rate = (perSecond: number) => (perSecond < 100 ? perSecond.toFixed(1) : String(Math.round(perSecond)));

const positive = (name: string): number | undefined => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
};

/**
 * A worker setting compared in one run (BENCH_VARIANTS): `name:key=value,key=value;name:...`, keys `sticky` (seconds a
 * task may wait on the sticky queue), `polls` (at most this many workflow task polls at once: workflowTaskPollerBehavior
 * simple-maximum; the SDK's default is 10), `autoscale` (pollers the server's feedback scales, up to this many:
 * workflowTaskPollerBehavior autoscaling), `ratio` (nonStickyToStickyPollRatio),
 * `slots` (maxConcurrentWorkflowTaskExecutions), `cache` (maxCachedWorkflows), `pool` (the MikroORM pool), `semi` (the worker
 * process's --max-semi-space-size in MB). The engine's
 * rounds alternate the variants (each on a fresh worker), so machine load falls on all of them alike; the section says
 * each one's renewals/s and its ratio to the first.
 */
interface Variant {
  name: string;
  spec: string;
  overrides: WorkerProcessOptions['overrides'];
  dbPool?: number;
  /** Node flags of the worker process beyond npm run worker's (`semi`: --max-semi-space-size, V8's young generation in MB). */
  nodeFlags?: string[];
}

function parseVariants(raw: string | undefined): Variant[] {
  if (raw === undefined || raw.trim() === '') return [];
  return raw
    .split(';')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [name, spec = ''] = part.split(':', 2) as [string, string?];
      const variant: Variant = { name: name.trim(), spec: spec.trim(), overrides: {} };
      for (const pair of spec
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)) {
        const [key, value] = pair.split('=');
        const number = Number(value);
        if (!Number.isFinite(number) || number <= 0) throw new Error(`BENCH_VARIANTS: ${pair} needs a positive number`);
        if (key === 'sticky') variant.overrides.stickyQueueScheduleToStartTimeout = `${number}s`;
        // The SDK (1.24) no longer reads maxConcurrentWorkflowTaskPolls: the pollers are workflowTaskPollerBehavior's.
        else if (key === 'polls')
          variant.overrides.workflowTaskPollerBehavior = { type: 'simple-maximum', maximum: number };
        else if (key === 'autoscale')
          variant.overrides.workflowTaskPollerBehavior = { type: 'autoscaling', maximum: number };
        else if (key === 'ratio') variant.overrides.nonStickyToStickyPollRatio = number;
        else if (key === 'slots') variant.overrides.maxConcurrentWorkflowTaskExecutions = number;
        else if (key === 'cache') variant.overrides.maxCachedWorkflows = number;
        else if (key === 'pool') variant.dbPool = number;
        else if (key === 'semi') variant.nodeFlags = [...(variant.nodeFlags ?? []), `--max-semi-space-size=${number}`];
        else
          throw new Error(
            `BENCH_VARIANTS: unknown key ${key} (sticky, polls, autoscale, ratio, slots, cache, pool, semi)`,
          );
      }
      return variant;
    });
}

/** --items (npm run bench:renewal-items): one-item against three-item subscriptions, no baseline, into a section of its own. */
const itemsMode = process.argv.includes('--items');
/** --usage: flat against metered subscriptions (their usage sent through the batch endpoint first), no baseline, into a section of its own. */
const usageMode = process.argv.includes('--usage');
const settings = {
  items: itemsMode,
  usage: usageMode,
  n: positive('BENCH_N') ?? (itemsMode ? 300 : usageMode ? 1000 : 2000),
  rounds: positive('BENCH_ROUNDS') ?? 2,
  // A fresh Temporal server (and PostgreSQL) is slower on its first wave than on the next ones;
  // the baseline, always first, paid for it alone. A small unmeasured wave of each target warms them.
  warmup: process.env.BENCH_WARMUP === '0' ? 0 : (positive('BENCH_WARMUP') ?? (itemsMode ? 100 : 200)),
  timeoutSeconds: positive('BENCH_TIMEOUT') ?? 1800,
  activitySlots: positive('BENCH_ACTIVITY_SLOTS'),
  workflowSlots: positive('BENCH_WORKFLOW_SLOTS'),
  dbPool: positive('BENCH_DB_POOL'),
  cachedWorkflows: positive('BENCH_CACHED_WORKFLOWS'),
  /** Seconds a workflow task may wait on the worker's sticky queue (worker.ts's default unless set). */
  stickySeconds: positive('BENCH_STICKY_SECONDS'),
  engineOnly: ((): boolean => {
    const targets = process.env.BENCH_TARGETS ?? 'baseline,engine';
    if (targets !== 'engine' && targets !== 'baseline,engine')
      throw new Error(`BENCH_TARGETS must be engine or baseline,engine, not ${targets}`);
    return targets === 'engine';
  })(),
  temporal: ((): 'dev' | 'postgres' => {
    const kind = process.env.BENCH_TEMPORAL ?? 'dev';
    if (kind !== 'dev' && kind !== 'postgres') throw new Error(`BENCH_TEMPORAL must be dev or postgres, not ${kind}`);
    return kind;
  })(),
  historyShards: positive('BENCH_HISTORY_SHARDS') ?? defaultHistoryShards,
  /** renewal: active subscriptions renewing (cycle 0 -> 1, the 1st-of-the-month wave); trial-end: trials converting (the first charge). */
  scenario: ((): 'renewal' | 'trial-end' => {
    const scenario = process.env.BENCH_SCENARIO ?? 'renewal';
    if (scenario !== 'renewal' && scenario !== 'trial-end')
      throw new Error(`BENCH_SCENARIO must be renewal or trial-end, not ${scenario}`);
    return scenario;
  })(),
  sqlitePragmas: (process.env.BENCH_SQLITE_PRAGMAS ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean),
  /** BENCH_PGSS=1: pg_stat_statements from T to the last renewal, the statements that took longest (lock waits included). */
  statementStats: process.env.BENCH_PGSS === '1',
  /**
   * BENCH_BASELINE=local: the baseline is the floor, a renewal's shape with nothing in it (noopLocalRenewalWorkflow: the
   * timer, then ONE workflow task running a no-op local activity) instead of a no-op workflow with a remote activity.
   */
  localBaseline: ((): boolean => {
    const kind = process.env.BENCH_BASELINE ?? 'remote';
    if (kind !== 'remote' && kind !== 'local') throw new Error(`BENCH_BASELINE must be remote or local, not ${kind}`);
    return kind === 'local';
  })(),
  /** BENCH_VARIANTS: worker settings compared against each other in one run, engine only (parseVariants). */
  variants: parseVariants(process.env.BENCH_VARIANTS),
};
const tunings = [
  settings.activitySlots !== undefined && `BENCH_ACTIVITY_SLOTS=${settings.activitySlots}`,
  settings.workflowSlots !== undefined && `BENCH_WORKFLOW_SLOTS=${settings.workflowSlots}`,
  settings.dbPool !== undefined && `BENCH_DB_POOL=${settings.dbPool}`,
  settings.cachedWorkflows !== undefined && `BENCH_CACHED_WORKFLOWS=${settings.cachedWorkflows}`,
  settings.stickySeconds !== undefined && `BENCH_STICKY_SECONDS=${settings.stickySeconds}`,
  settings.sqlitePragmas.length > 0 && `BENCH_SQLITE_PRAGMAS=${settings.sqlitePragmas.join(',')}`,
  settings.localBaseline && 'BENCH_BASELINE=local',
].filter((t): t is string => typeof t === 'string');
/** The rollback journal shows when the server writes; in WAL mode it is not there to see. */
const journalObservable =
  settings.temporal === 'dev' && !settings.sqlitePragmas.some((p) => p.toLowerCase().startsWith('journal_mode='));
const workerSettings = () =>
  `maxConcurrentActivityTaskExecutions ${settings.activitySlots ?? '100 (SDK default)'}, maxConcurrentWorkflowTaskExecutions ${settings.workflowSlots ?? '40 (SDK default)'}, ` +
  `MikroORM pool ${settings.dbPool ?? '10 (db/orm.ts default)'}, maxCachedWorkflows ${settings.cachedWorkflows ?? workerDefaults.maxCachedWorkflows ?? 'SDK default'}, ` +
  `stickyQueueScheduleToStartTimeout ${settings.stickySeconds !== undefined ? `${settings.stickySeconds} s` : (workerDefaults.stickyQueueScheduleToStartTimeout ?? '10 s (SDK default)')}`;

// ---- CPU accounting from /proc ------------------------------------------------

const clockTicks = 100; // USER_HZ on Linux

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime, in seconds: the process's own time and that of its children it has reaped. */
  cpu: number;
}

function readProcStats(): Map<number, ProcStat> {
  const stats = new Map<number, ProcStat>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      stats.set(Number(entry), { pid: Number(entry), ppid: Number(fields[1]), cpu: ticks / clockTicks });
    } catch {
      // gone meanwhile
    }
  }
  return stats;
}

/** CPU seconds of a process and all its live descendants (exited ones are in their parents' reaped time). */
function treeCpu(stats: Map<number, ProcStat>, root: number): number {
  let total = 0;
  const children = new Map<number, number[]>();
  for (const s of stats.values()) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s.pid]);
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    total += stats.get(pid)?.cpu ?? 0;
    queue.push(...(children.get(pid) ?? []));
  }
  return total;
}

/**
 * The worker's CPU by thread, from /proc/<pid>/task/<tid>/stat (thread names as Node and the SDK set them): `main`, the
 * JavaScript main thread (activities, MikroORM and pg, the SDK's glue between its core and the workflow thread);
 * `workflows`, the SDK's workflow thread (activations in the V8 sandbox); `gc`, V8's helper threads (concurrent marking,
 * parallel scavenges, compilation); `core`, the SDK core's Rust threads (gRPC with the server, the workflow state machines).
 */
interface WorkerThreadCpu {
  main: number;
  workflows: number;
  gc: number;
  core: number;
  other: number;
}

const threadGroups = ['main', 'workflows', 'gc', 'core', 'other'] as const;

function workerThreads(pid: number): WorkerThreadCpu {
  const cpu: WorkerThreadCpu = { main: 0, workflows: 0, gc: 0, core: 0, other: 0 };
  let tids: string[] = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return cpu; // not started yet, or gone
  }
  for (const tid of tids) {
    try {
      const text = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / clockTicks;
      const group: keyof WorkerThreadCpu =
        name === 'MainThread' || name === 'node'
          ? 'main'
          : name === 'WorkerThread'
            ? 'workflows'
            : name.startsWith('V8Worker')
              ? 'gc'
              : name.startsWith('tokio') || name.startsWith('workflow-proces') || name.startsWith('temporal')
                ? 'core'
                : 'other';
      cpu[group] += seconds;
    } catch {
      // gone meanwhile
    }
  }
  return cpu;
}

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat. */
function machineBusy(): number {
  const [cpuLine] = fs.readFileSync('/proc/stat', 'utf8').split('\n');
  const [, user, nice, system, , , irq, softirq, steal] = cpuLine!.trim().split(/\s+/).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / clockTicks;
}

interface CpuSnapshot {
  worker: number;
  /** The worker process's CPU by thread (workerThreads), in seconds. */
  workerThreads: WorkerThreadCpu;
  server: number;
  postgres: number;
  bench: number;
  machine: number;
}

interface Pids {
  worker: number;
  server: number;
  postgres: number;
}

function cpuSnapshot(pids: Pids): CpuSnapshot {
  const stats = readProcStats();
  const bench = process.cpuUsage();
  return {
    worker: treeCpu(stats, pids.worker),
    workerThreads: workerThreads(pids.worker),
    server: treeCpu(stats, pids.server),
    postgres: treeCpu(stats, pids.postgres),
    bench: (bench.user + bench.system) / 1e6,
    machine: machineBusy(),
  };
}

interface CpuSpent {
  worker: number;
  workerThreads: WorkerThreadCpu;
  server: number;
  postgres: number;
  /** This process: starting workflows is over by T, so mostly the polling. */
  bench: number;
  /** Everything else on the machine (other people's work). */
  others: number;
  machine: number;
}

function cpuSpent(before: CpuSnapshot, after: CpuSnapshot): CpuSpent {
  const d = (k: Exclude<keyof CpuSnapshot, 'workerThreads'>) => Math.max(0, after[k] - before[k]);
  const machine = d('machine');
  const thread = (k: keyof WorkerThreadCpu) => Math.max(0, after.workerThreads[k] - before.workerThreads[k]);
  return {
    worker: d('worker'),
    workerThreads: Object.fromEntries(threadGroups.map((k) => [k, thread(k)])) as unknown as WorkerThreadCpu,
    server: d('server'),
    postgres: d('postgres'),
    bench: d('bench'),
    others: Math.max(0, machine - d('worker') - d('server') - d('postgres') - d('bench')),
    machine,
  };
}

// ---- Rounds ------------------------------------------------------------------

interface Slots {
  workflowTasksPeak: number;
  workflowTasksMean: number;
  activitiesPeak: number;
  activitiesMean: number;
  /** Share of the polls that found every activity (or workflow task) slot in use. */
  activitiesFullShare: number;
  workflowTasksFullShare: number;
  poolBusyMean: number;
  poolWaitingPeak: number;
  poolWaitingMean: number;
}

interface RoundResult {
  target: Target;
  /** BENCH_VARIANTS: the worker setting this round ran with. */
  variant?: string;
  round: number;
  n: number;
  /** Seconds to start the N workflows, and until the worker was idle again. */
  startSeconds: number;
  settleSeconds: number;
  /** Idle seconds left before T. */
  slackSeconds: number;
  /** T to the last completion, and to the first and the median one (resolution: the 200 ms polls). */
  wallSeconds: number;
  firstSeconds: number;
  medianSeconds: number;
  perSecond: number;
  /** Engine: T until Temporal's visibility counted all N first runs as continued-as-new. */
  closedSeconds: number | null;
  memory: { rssAtT: number; heapAtT: number; peakRss: number; peakHeap: number; rssAfter: number; heapAfter: number };
  cpu: CpuSpent;
  activities: Record<string, number>;
  queries: number;
  queryKinds: Record<string, number>;
  /** The worker's slots and DB pool, sampled with each 200 ms poll from T to the last completion. */
  slots: Slots;
  /** Share of the polls that found the dev server's SQLite journal, i.e. a write transaction open. */
  serverWriteShare: number;
  /** Per workflow, from the histories of `historySamples` workflows: workflow tasks and events from T on (with a new run's, if one continued as new). */
  workflowTasks: number;
  historyEvents: number;
  /** Of the workflow tasks sampled, the share that timed out (a sticky task not picked up in time, then scheduled again). */
  timedOutTasks: number;
  /** Where the sampled renewals' time went (seconds, median and p90): see WaveTimings. */
  timings: WaveTimings;
  loadAtStart: number;
  /** --usage: the meter events the round's customers sent through the batch endpoint before the wave, and how long that took. */
  ingest?: { events: number; seconds: number };
}

interface Context {
  orm: MikroORM;
  client: Client;
  databaseUrl: string;
  temporalAddress: string;
  bundlePath: string;
  tmpDir: string;
  pids: Omit<Pids, 'worker'>;
  /** The dev server's SQLite rollback journal: it exists while a write transaction is open. */
  serverJournal: string;
  /** --usage: the engine's API (in this process), through which the usage waves send their events. */
  apiBase?: string;
  say: Say;
  stops: Stops;
}

/** A started workflow, whose history a round samples. */
interface SampledRun {
  workflowId: string;
  firstExecutionRunId: string;
}

/**
 * The statements of both databases (the engine's and, on the PostgreSQL-backed server, Temporal's)
 * that took the most time since T, from pg_stat_statements: execution time includes waiting for
 * row locks, which is how one account's renewals queueing on a row shows (docs/scaling.md).
 */
async function sayStatementStats(ctx: Context, label: string): Promise<void> {
  const rows = await ctx.orm.em
    .fork()
    .getConnection()
    .execute<{ db: string; calls: number; ms: number; planMs: number; query: string }[]>(
      `select d.datname as db, s.calls::int as calls, round(s.total_exec_time)::int as ms, round(s.total_plan_time)::int as "planMs",
              left(regexp_replace(s.query, '\\s+', ' ', 'g'), 150) as query
       from pg_stat_statements s join pg_database d on d.oid = s.dbid order by s.total_exec_time + s.total_plan_time desc limit 16`,
    );
  const [total] = await ctx.orm.em
    .fork()
    .getConnection()
    .execute<
      { calls: number; ms: number; planMs: number }[]
    >(`select sum(calls)::int as calls, round(sum(total_exec_time))::int as ms, round(sum(total_plan_time))::int as "planMs" from pg_stat_statements`);
  if (total)
    ctx.say(
      `${label}: pg_stat_statements in all: ${total.calls} calls, ${total.ms} ms executing, ${total.planMs} ms planning`,
    );
  for (const row of rows)
    ctx.say(
      `${label}: pg_stat_statements ${row.db}: ${row.calls} calls, ${row.ms} ms in all (${(row.ms / Math.max(1, row.calls)).toFixed(2)} ms each), ${row.planMs} ms planning: ${row.query}`,
    );
}

/** What the engine's subscriptions do at T, for the section's heading (the trial-end sections were written before renewal was the default). */
const what = () => (settings.scenario === 'renewal' ? 'renewing' : 'ending their trials');

/** How the servers were warmed before the measured rounds (BENCH_WARMUP). */
const warmupText = () =>
  settings.warmup > 0
    ? `after an unmeasured warm-up wave of ${settings.warmup} per target (a fresh Temporal server and PostgreSQL are slower on their first wave, which the baseline, always first, used to pay for alone)`
    : 'with no warm-up wave (BENCH_WARMUP=0: the first round meets a fresh Temporal server and PostgreSQL)';

/** The billing cycle each engine subscription is in once renewed at T. */
const renewedCycle = () => (settings.scenario === 'renewal' ? 1 : 0);

/**
 * Carried-over state (as a continue-as-new passes it), by scenario: `renewal`, active in
 * billing cycle 0, which ends at T (the renewal charges cycle 1); `trial-end`, trialing
 * since 14 days before T, the trial ending at T (the first charge).
 */
function carriedSnapshot(seed: EngineSeed, customerId: string, at: Date): SubscriptionSnapshot {
  return settings.scenario === 'trial-end'
    ? trialingSnapshot(seed, customerId, at)
    : renewingSnapshot(seed, customerId, at);
}

async function runRound(
  ctx: Context,
  target: Target,
  round: number,
  rounds: number,
  lead: number,
  n = settings.n,
  variant?: Variant,
): Promise<RoundResult> {
  const { orm, client, say } = ctx;
  const label = `${round === 0 ? `${target} warm-up` : `${target} ${round}/${rounds}`}${variant ? ` [${variant.name}]` : ''}`;
  const loadAtStart = os.loadavg()[0]!;
  const taskQueue = `bench-renewals-${target}-${round}-${randomBytes(3).toString('hex')}`;

  const isEngine = target !== 'baseline';
  const usageSeed = target === 'usage' ? await seedUsageEngine(orm, n, round, ctx.apiBase!) : undefined;
  if (usageSeed)
    say(
      `${label}: sent ${usageSeed.events} meter events for ${n} customers through the batch endpoint in ${usageSeed.ingestSeconds.toFixed(1)} s`,
    );
  const seed: ItemsSeed | undefined = usageSeed
    ? usageSeed
    : settings.items
      ? await seedItemsEngine(orm, n, round, target === 'items' ? 3 : 1)
      : isEngine
        ? {
            ...(await seedEngine(
              orm,
              n,
              round,
              settings.scenario === 'renewal' ? renewalInterval : { unit: 'month', count: 1 },
            )),
            items: null,
            perRenewal: planAmount,
          }
        : undefined;

  const worker = new WorkerProcess({
    databaseUrl: ctx.databaseUrl,
    temporalAddress: ctx.temporalAddress,
    namespace,
    taskQueue,
    bundlePath: ctx.bundlePath,
    mailDir: path.join(ctx.tmpDir, 'mail'),
    overrides: {
      ...(settings.activitySlots ? { maxConcurrentActivityTaskExecutions: settings.activitySlots } : {}),
      ...(settings.workflowSlots ? { maxConcurrentWorkflowTaskExecutions: settings.workflowSlots } : {}),
      ...(settings.cachedWorkflows ? { maxCachedWorkflows: settings.cachedWorkflows } : {}),
      ...(settings.stickySeconds ? { stickyQueueScheduleToStartTimeout: `${settings.stickySeconds}s` } : {}),
      ...variant?.overrides,
    },
    dbPool: variant?.dbPool ?? settings.dbPool,
    ...(variant?.nodeFlags ? { nodeFlags: variant.nodeFlags } : {}),
  });
  ctx.stops.add(`worker process (${label})`, () => worker.kill());
  const { pid: workerPid } = await worker.ready();
  const pids: Pids = { ...ctx.pids, worker: workerPid };

  // T: all N wake at this instant.
  const startedAt = Date.now();
  const at = new Date(startedAt + lead * 1000);
  say(
    `${label}: starting ${n} workflows on ${taskQueue}, all waking at T = ${at.toISOString()} (in ${lead.toFixed(0)} s)`,
  );

  const handles: SampledRun[] = [];
  let started = 0;
  const progress = setInterval(() => say(`${label}: started ${started}/${n}`), 2000);
  try {
    if (isEngine) {
      const carried = seed!.customers.map((customerId) =>
        settings.items
          ? renewingItemsSnapshot(seed!, customerId, at)
          : usageSeed
            ? { snapshot: renewingUsageSnapshot(usageSeed, customerId, at), items: undefined }
            : { snapshot: carriedSnapshot(seed!, customerId, at), items: undefined },
      );
      const snapshots = carried.map((c) => c.snapshot);
      await insertProjections(orm, snapshots);
      await inParallel(carried, 32, async ({ snapshot, items }) => {
        const handle = await client.workflow.start(subscriptionWorkflow, {
          workflowId: snapshot.id,
          taskQueue,
          args: [{ snapshot, plan: seed!.plan, ...(items ? { items } : {}) }],
          workflowIdConflictPolicy: 'FAIL',
          staticSummary: `Subscription of ${snapshot.customerId} to ${snapshot.planId}`,
          typedSearchAttributes: [
            { key: SubscriptionStatusKey, value: snapshots[0]!.status },
            { key: AccountIdKey, value: snapshot.accountId },
            { key: CustomerIdKey, value: snapshot.customerId },
            { key: PlanIdKey, value: snapshot.planId },
            { key: LivemodeKey, value: false },
          ],
        });
        handles.push(handle);
        started++;
      });
    } else {
      const ids = Array.from({ length: n }, (_, i) => `${taskQueue}-${i}`);
      await inParallel(ids, 32, async (workflowId) => {
        const handle = await client.workflow.start(
          settings.localBaseline ? noopLocalRenewalWorkflow : noopRenewalWorkflow,
          {
            workflowId,
            taskQueue,
            args: [at.toISOString()],
          },
        );
        handles.push(handle);
        started++;
      });
    }
  } finally {
    clearInterval(progress);
  }
  const startSeconds = (Date.now() - startedAt) / 1000;

  // Each new workflow's first task sets its timer; wait until the worker has been idle for a second.
  let idleSince: number | undefined;
  for (;;) {
    const status = await worker.status();
    if (status.inFlightWorkflowActivations === 0 && status.inFlightActivities === 0) {
      idleSince ??= Date.now();
      if (Date.now() - idleSince >= 1000) break;
    } else {
      idleSince = undefined;
    }
    if (Date.now() > at.getTime()) break;
    await sleep(100);
  }
  const settleSeconds = (Date.now() - startedAt) / 1000;
  const slackSeconds = (at.getTime() - Date.now()) / 1000;
  say(
    `${label}: started in ${startSeconds.toFixed(1)} s, worker idle after ${settleSeconds.toFixed(1)} s; ${slackSeconds.toFixed(1)} s to T`,
  );
  if (slackSeconds < 0.5) {
    await worker.stop().catch(() => {});
    throw new LeadTooShort(
      `${label}: the workflows were not all started and settled before T (${slackSeconds.toFixed(1)} s left); this machine is slower than the lead time assumed`,
      settleSeconds,
    );
  }

  if (settings.statementStats) {
    await sleep(at.getTime() - Date.now() - 300);
    await ctx.orm.em.fork().getConnection().execute('select pg_stat_statements_reset()');
  }
  await sleep(at.getTime() - Date.now());
  const cpuAtT = cpuSnapshot(pids);
  const statusAtT = await worker.status();

  // Poll every 200 ms until all N are done.
  // Engine: the renewal's workflow task completed (it upserts the status `active`, in the same run since renew-in-place).
  const doneQuery = isEngine ? `SubscriptionStatus = 'active'` : `ExecutionStatus = 'Completed'`;
  const visibilityQuery = `TaskQueue = '${taskQueue}' AND ${doneQuery}`;
  const countDone = async () =>
    isEngine
      ? (
          await orm.em
            .fork()
            .getConnection()
            .execute<{ n: number }[]>(engineDoneQuery, [seed!.accountId, renewedCycle()])
        )[0]!.n
      : (await client.workflow.count(visibilityQuery)).count;
  let done = 0;
  let closed = isEngine ? 0 : n;
  let firstAt: number | undefined;
  let medianAt: number | undefined;
  let doneAt: number | undefined;
  let closedAt: number | undefined;
  let cpuAtDone: CpuSnapshot | undefined;
  let statusAtDone: WorkerStatusReport | undefined;
  let lastSaid = Date.now();
  const busy: WorkerStatusReport[] = [];
  const journal: boolean[] = [];
  const deadline = at.getTime() + settings.timeoutSeconds * 1000;
  while (doneAt === undefined || closedAt === undefined) {
    const tick = Date.now();
    if (doneAt === undefined) {
      busy.push(await worker.status());
      journal.push(fs.existsSync(ctx.serverJournal));
      done = await countDone();
      const now = Date.now();
      if (done > 0) firstAt ??= now;
      if (done >= n / 2) medianAt ??= now;
      if (done >= n) {
        doneAt = now;
        cpuAtDone = cpuSnapshot(pids);
        statusAtDone = await worker.status();
      }
    }
    if (closedAt === undefined) {
      if (isEngine && settings.scenario === 'trial-end') closed = (await client.workflow.count(visibilityQuery)).count;
      else if (isEngine && doneAt !== undefined) {
        // An active subscription's status does not change: its renewal's workflow task is done when the worker has none left.
        const idle = await worker.status();
        closed = idle.inFlightWorkflowActivations === 0 && idle.inFlightActivities === 0 ? n : 0;
      }
      if (closed >= n) closedAt = Date.now();
    }
    if (Date.now() - lastSaid >= 2000 || (doneAt !== undefined && closedAt !== undefined)) {
      lastSaid = Date.now();
      const what = isEngine ? `${done}/${n} renewed, ${closed}/${n} recorded in Temporal` : `${done}/${n} completed`;
      const b = busy.at(-1)!;
      say(
        `${label}: ${what} (${((Date.now() - at.getTime()) / 1000).toFixed(1)} s after T; worker: ${b.inFlightWorkflowActivations} workflow tasks, ` +
          `${b.inFlightActivities} activities, ${b.poolBusy} DB connections busy, ${b.poolWaiting} waiting)`,
      );
    }
    if (worker.failure) throw new Error(`${label}: ${worker.failure}`);
    if (Date.now() > deadline)
      throw new Error(`${label}: only ${done}/${n} done ${settings.timeoutSeconds} s after T (BENCH_TIMEOUT)`);
    await sleep(Math.max(0, 200 - (Date.now() - tick)));
  }

  if (settings.statementStats) await sayStatementStats(ctx, label);
  // A moment for the worker to settle (and, for a subscription, its new run to set its next timer), then its memory at the end.
  await sleep(2000);
  const { workflowTasks, historyEvents, timedOutTasks, timings } = await sampleHistories(client, handles, at);
  const { samples, queryTexts } = await worker.stop();
  for (const [text, count] of queryTexts) say(`${label}: ${count}× ${text}`);
  const afterT = samples.filter((s) => s.at >= at.getTime());
  const beforeT = samples.filter((s) => s.at < at.getTime());
  const atT = beforeT.at(-1) ?? samples[0]!;
  const last = samples.at(-1)!;
  const memory = {
    rssAtT: mb(atT.rss),
    heapAtT: mb(atT.heapUsed),
    peakRss: mb(Math.max(...afterT.map((s) => s.rss))),
    peakHeap: mb(Math.max(...afterT.map((s) => s.heapUsed))),
    rssAfter: mb(last.rss),
    heapAfter: mb(last.heapUsed),
  };

  const activities: Record<string, number> = {};
  for (const [name, count] of Object.entries(statusAtDone!.activityCalls)) {
    const diff = count - (statusAtT.activityCalls[name] ?? 0);
    if (diff > 0) activities[name] = diff;
  }

  if (usageSeed) {
    await checkEngineMoney(orm, usageSeed.accountId, n, 0, expectedUsageTotal(usageSeed));
    await checkUsageMoney(orm, usageSeed);
  } else if (isEngine) await checkEngineMoney(orm, seed!.accountId, n, seed!.perRenewal);

  const wallSeconds = (doneAt - at.getTime()) / 1000;
  const result: RoundResult = {
    target,
    ...(variant ? { variant: variant.name } : {}),
    round,
    n,
    startSeconds,
    settleSeconds,
    slackSeconds,
    wallSeconds,
    firstSeconds: (firstAt! - at.getTime()) / 1000,
    medianSeconds: (medianAt! - at.getTime()) / 1000,
    perSecond: n / wallSeconds,
    closedSeconds: isEngine ? (closedAt - at.getTime()) / 1000 : null,
    memory,
    cpu: cpuSpent(cpuAtT, cpuAtDone!),
    activities,
    queries: statusAtDone!.queries - statusAtT.queries,
    serverWriteShare: journal.filter(Boolean).length / journal.length,
    slots: {
      workflowTasksPeak: Math.max(...busy.map((b) => b.inFlightWorkflowActivations)),
      workflowTasksMean: mean(busy.map((b) => b.inFlightWorkflowActivations)),
      activitiesPeak: Math.max(...busy.map((b) => b.inFlightActivities)),
      activitiesMean: mean(busy.map((b) => b.inFlightActivities)),
      activitiesFullShare:
        busy.filter((b) => b.inFlightActivities >= (settings.activitySlots ?? 100)).length / busy.length,
      workflowTasksFullShare:
        busy.filter((b) => b.inFlightWorkflowActivations >= (settings.workflowSlots ?? 40)).length / busy.length,
      poolBusyMean: mean(busy.map((b) => b.poolBusy)),
      poolWaitingPeak: Math.max(...busy.map((b) => b.poolWaiting)),
      poolWaitingMean: mean(busy.map((b) => b.poolWaiting)),
    },
    queryKinds: Object.fromEntries(
      Object.entries(statusAtDone!.queryKinds)
        .map(([kind, count]) => [kind, count - (statusAtT.queryKinds[kind] ?? 0)] as const)
        .filter(([, count]) => count > 0),
    ),
    workflowTasks,
    historyEvents,
    timedOutTasks,
    timings,
    loadAtStart,
    ...(usageSeed ? { ingest: { events: usageSeed.events, seconds: usageSeed.ingestSeconds } } : {}),
  };
  say(`${label}: ${describeRound(result)}`);
  return result;
}

/** A round whose workflows were not all started and settled by T: it is not measured, and runs again with a longer lead. */
class LeadTooShort extends Error {
  readonly settleSeconds: number;
  constructor(message: string, settleSeconds: number) {
    super(message);
    this.settleSeconds = settleSeconds;
  }
}

/**
 * runRound, and if the machine started the workflows slower than the lead allowed, the round again with a lead of
 * what it took plus half (at most twice): the lead adapts instead of the run failing. The abandoned round's workflows
 * stay asleep on their own task queue with no worker; their timers fire at their T, during the retry's start phase,
 * before the retry's T.
 */
async function runRoundAdapting(
  ctx: Context,
  target: Target,
  round: number,
  rounds: number,
  lead: number,
  n = settings.n,
  variant?: Variant,
): Promise<RoundResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runRound(ctx, target, round, rounds, lead, n, variant);
    } catch (error) {
      if (!(error instanceof LeadTooShort) || attempt > 2) throw error;
      const longer = Math.max(lead * 1.5, error.settleSeconds * 1.5 + 15);
      ctx.say(`${error.message}; again with a lead of ${longer.toFixed(0)} s instead of ${lead.toFixed(0)} s`);
      lead = longer;
    }
  }
}

/** How many workflows' histories are read per round (spread over the order they were started in). */
const historySamples = 40;

/**
 * Where a sampled renewal's time went, from its history's event times (seconds; median and p90 over the samples):
 * `fired`, T to its TimerFired (the Temporal server's timer queue); `waited`, TimerFired to the WorkflowTaskStarted of
 * the task that completed (the task queue: the sticky queue, and after a sticky timeout the shared one); `ran`, that
 * start to WorkflowTaskCompleted (the worker: the activation and the renewCycle local activity).
 */
export interface WaveTimings {
  fired: [number, number];
  waited: [number, number];
  ran: [number, number];
}

/**
 * Workflow tasks and history events from T on, per workflow, averaged over `historySamples`
 * workflows spread over the round (one that renewed first says little about the queue's
 * tail: a workflow task that waited past the sticky queue's timeout times out and is
 * scheduled again, with two more events); the share of the sampled tasks that timed out; and where their time went.
 */
async function sampleHistories(
  client: Client,
  handles: SampledRun[],
  at: Date,
): Promise<{ workflowTasks: number; historyEvents: number; timedOutTasks: number; timings: WaveTimings }> {
  const step = Math.max(1, Math.floor(handles.length / historySamples));
  const sampled = handles.filter((_, i) => i % step === 0).slice(0, historySamples);
  const counts = await Promise.all(sampled.map((handle) => sampleHistory(client, handle, at)));
  const total = (key: 'workflowTasks' | 'historyEvents' | 'timedOut') => counts.reduce((sum, c) => sum + c[key], 0);
  const [tasks, timedOut] = [total('workflowTasks'), total('timedOut')];
  const spread = (key: keyof WaveTimings): [number, number] => {
    const values = counts.flatMap((c) => (c.timings ? [c.timings[key]] : [])).sort((a, b) => a - b);
    const quantile = (q: number) => values[Math.min(values.length - 1, Math.floor(q * values.length))] ?? NaN;
    return [quantile(0.5), quantile(0.9)];
  };
  return {
    workflowTasks: tasks / counts.length,
    historyEvents: total('historyEvents') / counts.length,
    timedOutTasks: timedOut / Math.max(1, tasks + timedOut),
    timings: { fired: spread('fired'), waited: spread('waited'), ran: spread('ran') },
  };
}

/**
 * Workflow tasks and history events from T on, in one workflow's history and, for
 * a subscription that continued as new, its next run's, once that run's first task (which sets its timer) is done;
 * and the times of its first timer fired after T and of the workflow task that then completed.
 */
async function sampleHistory(
  client: Client,
  handle: SampledRun,
  at: Date,
): Promise<{
  workflowTasks: number;
  historyEvents: number;
  timedOut: number;
  timings: { fired: number; waited: number; ran: number } | null;
}> {
  const first = client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId);
  const latest = await client.workflow.getHandle(handle.workflowId).describe();
  const histories = [await first.fetchHistory()];
  if (latest.runId !== handle.firstExecutionRunId) {
    const next = client.workflow.getHandle(handle.workflowId, latest.runId);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const history = await next.fetchHistory();
      if ((history.events ?? []).some((e) => e.workflowTaskCompletedEventAttributes) || Date.now() > deadline) {
        histories.push(history);
        break;
      }
      await sleep(200);
    }
  }
  let workflowTasks = 0;
  let historyEvents = 0;
  let timedOut = 0;
  let [fired, started, completed] = [0, 0, 0];
  for (const history of histories) {
    for (const event of history.events ?? []) {
      const time = Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
      if (time < at.getTime()) continue;
      historyEvents++;
      if (event.workflowTaskCompletedEventAttributes) workflowTasks++;
      if (event.workflowTaskTimedOutEventAttributes) timedOut++;
      if (event.timerFiredEventAttributes && !fired) fired = time;
      // The last start before the first completion after the timer: a task that timed out on the sticky queue was started again.
      if (event.workflowTaskStartedEventAttributes && fired && !completed) started = time;
      if (event.workflowTaskCompletedEventAttributes && started && !completed) completed = time;
    }
  }
  const t = at.getTime();
  const timings = completed
    ? { fired: (fired - t) / 1000, waited: (started - fired) / 1000, ran: (completed - started) / 1000 }
    : null;
  return { workflowTasks, historyEvents, timedOut, timings };
}

const describeRound = (r: RoundResult) =>
  `${r.n} in ${r.wallSeconds.toFixed(1)} s after T (${rate(r.perSecond)}/s; first ${r.firstSeconds.toFixed(1)} s, half ${r.medianSeconds.toFixed(1)} s` +
  `${r.closedSeconds === null ? '' : `, all recorded in Temporal ${r.closedSeconds.toFixed(1)} s`}); worker RSS ${Math.round(r.memory.rssAtT)} MB at T, ` +
  `peak ${Math.round(r.memory.peakRss)} MB, heap peak ${Math.round(r.memory.peakHeap)} MB; CPU s worker ${r.cpu.worker.toFixed(1)} ` +
  `(${threadSplit(r.cpu.workerThreads)}), ` +
  `server ${r.cpu.server.toFixed(1)}, postgres ${r.cpu.postgres.toFixed(1)}, bench ${r.cpu.bench.toFixed(1)}, others ${r.cpu.others.toFixed(1)}; ` +
  `per workflow (${historySamples} sampled) ${round1(r.workflowTasks)} workflow tasks, ${round1(r.historyEvents)} history events, ${Math.round(r.timedOutTasks * 100)}% of tasks timed out; ` +
  `s p50/p90: timer fired ${pair(r.timings.fired)} after T, task waited ${pair(r.timings.waited)}, ran ${pair(r.timings.ran)}`;
/** The mean over rounds of each thread's CPU, in ms per renewal. */
const perRenewal = (rounds: RoundResult[], of: (r: RoundResult) => WorkerThreadCpu): WorkerThreadCpu =>
  Object.fromEntries(
    threadGroups.map((k) => [k, mean(rounds.map((r) => (1000 * of(r)[k]) / r.n))]),
  ) as unknown as WorkerThreadCpu;
const threadSplit = (t: WorkerThreadCpu) =>
  `main ${t.main.toFixed(1)}, workflow thread ${t.workflows.toFixed(1)}, V8 helpers ${t.gc.toFixed(1)}, SDK core ${t.core.toFixed(1)}, other ${t.other.toFixed(1)}`;
const pair = ([p50, p90]: [number, number]) => `${p50.toFixed(1)}/${p90.toFixed(1)}`;

// ---- Report ------------------------------------------------------------------

interface TargetSummary {
  target: Target;
  rounds: RoundResult[];
  wall: number;
  perSecond: number;
  peakRss: number;
  peakHeap: number;
  rssAtT: number;
  rssAfter: number;
  cpu: CpuSpent;
  activities: Record<string, number>;
  queries: number;
  queryKinds: Record<string, number>;
  slots: Slots;
  /** Mean per round of the server's CPU seconds per second of wall time (1 = one core). */
  serverCores: number;
  serverWriteShare: number;
  workflowTasks: number;
  historyEvents: number;
  timedOutTasks: number;
}

function summarize(target: Target, results: RoundResult[]): TargetSummary {
  const rounds = results.filter((r) => r.target === target);
  const per = (f: (r: RoundResult) => number) => mean(rounds.map(f));
  const cpuKeys = ['worker', 'server', 'postgres', 'bench', 'others', 'machine'] as const;
  const activities: Record<string, number> = {};
  for (const r of rounds)
    for (const [name, count] of Object.entries(r.activities))
      activities[name] = (activities[name] ?? 0) + count / r.n / rounds.length;
  const queryKinds: Record<string, number> = {};
  for (const r of rounds)
    for (const [kind, count] of Object.entries(r.queryKinds))
      queryKinds[kind] = (queryKinds[kind] ?? 0) + count / r.n / rounds.length;
  return {
    target,
    rounds,
    wall: per((r) => r.wallSeconds),
    perSecond: per((r) => r.perSecond),
    peakRss: Math.max(...rounds.map((r) => r.memory.peakRss)),
    peakHeap: Math.max(...rounds.map((r) => r.memory.peakHeap)),
    rssAtT: per((r) => r.memory.rssAtT),
    rssAfter: per((r) => r.memory.rssAfter),
    cpu: {
      ...(Object.fromEntries(cpuKeys.map((k) => [k, per((r) => r.cpu[k])])) as Omit<CpuSpent, 'workerThreads'>),
      workerThreads: Object.fromEntries(
        threadGroups.map((k) => [k, per((r) => r.cpu.workerThreads[k])]),
      ) as unknown as WorkerThreadCpu,
    },
    activities,
    queries: per((r) => r.queries / r.n),
    queryKinds,
    slots: {
      workflowTasksPeak: Math.max(...rounds.map((r) => r.slots.workflowTasksPeak)),
      workflowTasksMean: per((r) => r.slots.workflowTasksMean),
      activitiesPeak: Math.max(...rounds.map((r) => r.slots.activitiesPeak)),
      activitiesMean: per((r) => r.slots.activitiesMean),
      activitiesFullShare: per((r) => r.slots.activitiesFullShare),
      workflowTasksFullShare: per((r) => r.slots.workflowTasksFullShare),
      poolBusyMean: per((r) => r.slots.poolBusyMean),
      poolWaitingPeak: Math.max(...rounds.map((r) => r.slots.poolWaitingPeak)),
      poolWaitingMean: per((r) => r.slots.poolWaitingMean),
    },
    serverCores: per((r) => r.cpu.server / r.wallSeconds),
    serverWriteShare: per((r) => r.serverWriteShare),
    workflowTasks: per((r) => r.workflowTasks),
    historyEvents: per((r) => r.historyEvents),
    timedOutTasks: per((r) => r.timedOutTasks),
  };
}

const baselineName = settings.localBaseline
  ? 'floor (timer + no-op local activity)'
  : 'baseline (no-op workflow + no-op activity)';
const names: Record<Target, string> = settings.items
  ? {
      engine: 'one item (12 seats, per_unit)',
      items: 'three items (12 seats, graduated tiers × 25, flat add-on)',
      usage: 'usage',
      baseline: baselineName,
    }
  : settings.usage
    ? {
        engine: 'flat (one plan at 15.00)',
        usage: 'usage (metered plan, graduated tiers)',
        items: 'items',
        baseline: baselineName,
      }
    : {
        engine: 'engine (subscriptionWorkflow)',
        items: 'engine, three items',
        usage: 'engine, usage',
        baseline: baselineName,
      };

function table(results: RoundResult[], summaries: TargetSummary[]): string[] {
  const cpu = (c: CpuSpent) =>
    `${c.worker.toFixed(1)} / ${c.server.toFixed(1)} / ${c.postgres.toFixed(1)} / ${(c.bench + c.others).toFixed(1)}`;
  return [
    '| target | round | N | wall s | renewals/s | first / half done s | peak RSS MB | peak heap MB | RSS at T / after MB | CPU s worker / server / PostgreSQL / other |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${names[r.target]} | ${r.round} | ${r.n} | ${r.wallSeconds.toFixed(1)} | ${rate(r.perSecond)} | ${r.firstSeconds.toFixed(1)} / ${r.medianSeconds.toFixed(1)} | ` +
        `${Math.round(r.memory.peakRss)} | ${Math.round(r.memory.peakHeap)} | ${Math.round(r.memory.rssAtT)} / ${Math.round(r.memory.rssAfter)} | ${cpu(r.cpu)} |`,
    ),
    ...summaries.map(
      (s) =>
        `| **${names[s.target]}, mean** | | ${settings.n} | **${s.wall.toFixed(1)}** | **${rate(s.perSecond)}** | | ${Math.round(s.peakRss)} (max) | ${Math.round(s.peakHeap)} (max) | ` +
        `${Math.round(s.rssAtT)} / ${Math.round(s.rssAfter)} | ${cpu(s.cpu)} |`,
    ),
  ];
}

const activityList = (a: Record<string, number>) =>
  Object.entries(a)
    .map(([name, count]) => `${name} ${round1(count)}`)
    .join(', ');

function bounds(engine: TargetSummary, baseline: TargetSummary, cores: number): string[] {
  const ms = (seconds: number) => `${((1000 * seconds) / settings.n).toFixed(1)} ms`;
  const own = (s: TargetSummary) => s.cpu.worker + s.cpu.server + s.cpu.postgres;
  const busyShare = (s: TargetSummary) => s.cpu.machine / (cores * s.wall);
  const pct = (v: number) => `${Math.round(100 * v)}%`;
  const activitiesPer = (a: Record<string, number>) => Object.values(a).reduce((sum, v) => sum + v, 0);
  const activitySlots = settings.activitySlots ?? 100;
  const workflowSlots = settings.workflowSlots ?? 40;
  const pool = settings.dbPool ?? 10;
  const ratio = engine.perSecond / baseline.perSecond;
  const cpuRatio = own(baseline) / own(engine);
  const serverRatio = baseline.cpu.server / engine.cpu.server;
  const workerIdle = engine.slots.activitiesMean + engine.slots.workflowTasksMean < 5;
  // The worker waits (few tasks in hand) and PostgreSQL is nearly idle: what the renewals wait for is the server.
  const serverBound = workerIdle;
  // A limit binds when the slots are all in use for a good part of the rounds, not in the burst at T alone.
  const slotsFull = Math.max(engine.slots.activitiesFullShare, engine.slots.workflowTasksFullShare) >= 0.2;
  const poolQueued = engine.slots.poolWaitingMean >= 1;
  /** The renew-cycle path (workflows/subscription.ts): one local activity per renewal. */
  const local = (engine.activities.renewCycle ?? 0) > 0;
  /** renew-in-place: the renewal's one workflow task sets the next timer in the same run (no continue-as-new). */
  const inPlace = local && engine.workflowTasks < 1.5;
  const timer = settings.scenario === 'renewal' ? 'renewal' : 'trial-end';
  return [
    '### What bounds it',
    '',
    `**Work per renewal.** Measured from T on: the engine's renewal ran ${round1(activitiesPer(engine.activities))} activities ` +
      `(${activityList(engine.activities)}${local ? ', a local activity: it runs inside its workflow task, with no round trip of its own' : ''}) and ` +
      `${round1(engine.workflowTasks)} workflow tasks (${inPlace ? `the one on the ${timer} timer, which runs renewCycle and sets the next timer in the same run` : local ? `the one on the ${timer} timer, which runs renewCycle and continues as new, and the new run's first` : `on the ${timer} timer, after each activity, the last of which continues as new, and the new run's first`}), ` +
      `${round1(engine.historyEvents)} history events (mean of ${historySamples} workflows per round, spread over the wave; ${Math.round(engine.timedOutTasks * 100)}% of their workflow tasks timed out waiting on the sticky queue and were scheduled again), and sent ${round1(engine.queries)} SQL ` +
      `statements to PostgreSQL, each a round trip (${activityList(engine.queryKinds)}; counted on the worker's pg clients). The baseline ran ` +
      `${round1(activitiesPer(baseline.activities))} activity and ${round1(baseline.workflowTasks)} workflow tasks, ${round1(baseline.historyEvents)} ` +
      `history events, ${round1(baseline.queries)} statements. Every workflow task and (remote) activity is a round trip worker → Temporal server → its ` +
      `persistence → worker, and each waits for the one before it: ${inPlace ? `a renewal is one such hop, the baseline ${settings.localBaseline ? 'one too' : 'three'}` : local ? 'a renewal is a chain of two such hops and a workflow start (its new run), the baseline of three' : 'a renewal is a chain of about ten such hops, the baseline of three'}.`,
    '',
    `**CPU.** From T to the last completion (mean of the rounds), per renewal: engine ${ms(engine.cpu.server)} of Temporal server, ` +
      `${ms(engine.cpu.worker)} of worker and ${ms(engine.cpu.postgres)} of PostgreSQL CPU (${ms(own(engine))} in all); baseline ` +
      `${ms(baseline.cpu.server)} of server, ${ms(baseline.cpu.worker)} of worker, ${ms(baseline.cpu.postgres)} of PostgreSQL (${ms(own(baseline))}). ` +
      `The machine's ${cores} cores were ${pct(busyShare(engine))} busy during the engine's rounds and ${pct(busyShare(baseline))} during the baseline's; ` +
      `work outside the benchmark's processes (other people's, and this script's polling) took ` +
      `${pct((engine.cpu.others + engine.cpu.bench) / (cores * engine.wall))} and ${pct((baseline.cpu.others + baseline.cpu.bench) / (cores * baseline.wall))} of them.`,
    '',
    `**${serverBound ? 'The Temporal server is the bottleneck' : 'The Temporal server'}.** ` +
      (settings.temporal === 'postgres'
        ? `The server persists histories, timers, task queues and visibility in PostgreSQL over ${settings.historyShards} history shards, each shard writing in parallel; ` +
          'the PostgreSQL process serves both Temporal and the engine here. '
        : 'The dev server keeps all its state (histories, timers, ' +
          'task queues, visibility) in one SQLite file, opened through a single connection (one descriptor on temporal.db), ') +
      (settings.temporal === 'postgres'
        ? ''
        : journalObservable
          ? 'in rollback-journal mode, so its writes happen one transaction at a time, each with its fsyncs. Polled every 200 ms, its journal file ' +
            `(present while a write transaction is open) was there ${pct(engine.serverWriteShare)} of the time during the engine's rounds and ` +
            `${pct(baseline.serverWriteShare)} during the baseline's. `
          : `here with ${settings.sqlitePragmas.join(', ')}, so its writes still happen one transaction at a time. `) +
      `The server process used ${engine.serverCores.toFixed(1)} cores on average during the engine's rounds and ${baseline.serverCores.toFixed(1)} during the ` +
      `baseline's, while the engine's worker had on average ${round1(engine.slots.activitiesMean)} activities and ${round1(engine.slots.workflowTasksMean)} ` +
      'workflow tasks in hand (below). ' +
      (serverBound
        ? "So throughput is the server's serial work per renewal: "
        : 'The worker had work waiting too, so the server is not the only limit; for comparison, ') +
      `the server's CPU per renewal alone predicts a ratio of ${pct(serverRatio)} ` +
      `(baseline server CPU per workflow / engine server CPU per renewal), all three processes' CPU ${pct(cpuRatio)}, against the ${pct(ratio)} measured. ` +
      `The engine asks the server for ${round1(engine.historyEvents / baseline.historyEvents)}× the history events per renewal: ` +
      `${round1(engine.workflowTasks)} workflow tasks instead of ${round1(baseline.workflowTasks)}, ${round1(activitiesPer(engine.activities))} activities ` +
      `instead of ${round1(activitiesPer(baseline.activities))}${local ? ' (a local one, recorded as a marker)' : ', a search-attribute upsert (a visibility write)'}${inPlace ? ' and no new run' : ' and a continue-as-new, which starts a new run'}. ` +
      ' A production Temporal cluster (PostgreSQL, MySQL or Cassandra persistence over many history shards) writes in parallel; there the ' +
      "worker's and PostgreSQL's costs per renewal, the other figures here, weigh more." +
      (settings.sqlitePragmas.length === 0 && settings.temporal === 'dev'
        ? ' How much of the limit is the SQLite file: `BENCH_SQLITE_PRAGMAS=journal_mode=wal,synchronous=normal npm run bench:renewals` ' +
          'measures the same with the dev server in WAL mode, into a section of its own.'
        : ''),
    '',
    `**Worker slots and connections.** Sampled with each poll: the engine's worker had at most ${engine.slots.activitiesPeak} activities in flight ` +
      `(mean ${round1(engine.slots.activitiesMean)}) of its ${activitySlots} activity slots, all of them in use in ${pct(engine.slots.activitiesFullShare)} ` +
      `of the polls, and at most ${engine.slots.workflowTasksPeak} workflow activations (mean ${round1(engine.slots.workflowTasksMean)}) of its ` +
      `${workflowSlots} workflow task slots, all in use in ${pct(engine.slots.workflowTasksFullShare)} of the polls; its MikroORM pool of ${pool} had ` +
      `${round1(engine.slots.poolBusyMean)} connections checked out on average, with at most ${engine.slots.poolWaitingPeak} requests waiting ` +
      `(mean ${round1(engine.slots.poolWaitingMean)}). ` +
      (slotsFull
        ? 'The slots were often all in use, so raising them (BENCH_ACTIVITY_SLOTS, BENCH_WORKFLOW_SLOTS) is worth measuring. '
        : 'The slots were seldom all in use: the worker mostly took tasks as fast as the server handed them out, so more slots would not help much. ') +
      (poolQueued
        ? 'Activities did queue for database connections, so a larger pool (BENCH_DB_POOL) is worth measuring.'
        : 'On average fewer than one activity waited for a database connection, so the pool is not the limit either.'),
    '',
    `**Memory.** The worker held the ${settings.n} sleeping workflows in its cache at T with ${Math.round(engine.rssAtT)} MB RSS (engine) and ` +
      `${Math.round(baseline.rssAtT)} MB (baseline), means of the rounds; renewing took it to a peak of ${Math.round(engine.peakRss)} MB against ` +
      `${Math.round(baseline.peakRss)} MB, with the main thread's heap (activities, MikroORM, the SDK) peaking at ${Math.round(engine.peakHeap)} MB ` +
      `against ${Math.round(baseline.peakHeap)} MB. RSS moves by a hundred MB or more between rounds of the same target (the table), so read the ` +
      'memory figures as sizes, not as small differences.',
  ];
}

// ---- Main ----------------------------------------------------------------------

// --black-box: the wave through the public API, the engine's own processes, test clocks (bench/renewals-black-box.ts; it exits when done).
if (process.argv.includes('--black-box')) await import('./renewals-black-box.ts');

await runBenchmark('bench:renewals', async (stops, say) => {
  const began = Date.now();
  const loadAtStart = os.loadavg()[0]!;
  const cores = os.cpus().length;
  if (loadAtStart > cores / 2)
    say(
      `note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${cores} cores); the numbers will be noisy`,
    );
  say(`N = ${settings.n}, ${settings.rounds} rounds per target; worker: ${workerSettings()}`);

  const { tmpDir, onPostgres, temporal, bundlePath, databaseUrl, orm, pgVersion, client } =
    await startRenewalsInfrastructure({
      prefix: 'billing-bench-renewals-',
      temporal: settings.temporal,
      historyShards: settings.historyShards,
      sqlitePragmas: settings.sqlitePragmas,
      statementStats: settings.statementStats,
      say,
      stops,
    });

  const pidOf = (file: string) => Number.parseInt(fs.readFileSync(file, 'utf8').split('\n')[0]!, 10);
  const ctx: Context = {
    orm,
    client,
    databaseUrl,
    temporalAddress: temporal.address,
    bundlePath,
    tmpDir,
    pids: {
      server: pidOf(
        onPostgres
          ? path.join(tmpDir, 'temporal-server', 'temporal-server.pid')
          : path.join(tmpDir, 'temporal', 'temporal.pid'),
      ),
      postgres: pidOf(path.join(tmpDir, 'postgres', 'postmaster.pid')),
    },
    serverJournal: path.join(tmpDir, 'temporal', 'temporal.db-journal'),
    say,
    stops,
  };
  const cli = await resolveTemporalCli({ log: () => {}, allowBuild: false });
  const serverVersion = onPostgres
    ? `temporal-server ${temporalServerVersion}`
    : 'path' in cli
      ? execFileSync(cli.path, ['--version'], { encoding: 'utf8' }).trim()
      : 'unknown';
  say(`ready in ${((Date.now() - began) / 1000).toFixed(1)} s (PostgreSQL ${pgVersion}; ${serverVersion})`);
  const code = codeState();
  say(`measuring ${code}`);

  // Lead time from the start of a round to T: a guess for the first round, then
  // what the previous rounds needed to start their workflows, with room to spare.
  // Starting workflows is the part most slowed by a busy machine, hence the generous margins.
  const firstLead = (n: number) => 15 + n * 0.04;
  if ((settings.items || settings.usage) && (settings.engineOnly || settings.scenario !== 'renewal'))
    throw new Error(
      '--items and --usage measure the renewal scenario against flat one-item subscriptions: leave BENCH_TARGETS and BENCH_SCENARIO unset',
    );
  if (settings.items && settings.usage) throw new Error('--items or --usage, not both');
  if (settings.usage) {
    // The usage waves send their events through the engine's API (POST /v1/meter_events/batch), here in this process.
    const api = await startApiServer(
      { orm, temporal: client, config: loadConfig({ NODE_ENV: 'test' }), logger: createLogger('silent') },
      await freePort(),
      '127.0.0.1',
    );
    stops.add('API server', () => api.close());
    ctx.apiBase = `http://127.0.0.1:${api.port}`;
  }
  const targets: readonly Target[] = settings.items
    ? ['engine', 'items']
    : settings.usage
      ? ['engine', 'usage']
      : settings.engineOnly
        ? ['engine']
        : ['baseline', 'engine'];
  if (settings.variants.length > 0 && (settings.items || settings.usage || !settings.engineOnly))
    throw new Error(
      'BENCH_VARIANTS compares worker settings on the engine alone: set BENCH_TARGETS=engine, without --items',
    );
  const warmups: RoundResult[] = [];
  if (settings.warmup > 0) {
    for (const target of targets)
      warmups.push(
        await runRoundAdapting(ctx, target, 0, settings.rounds, firstLead(settings.warmup), settings.warmup),
      );
  }
  // The first lead scales the warm-ups' settle time to N (a loaded machine starts workflows far slower than the guess).
  let lead =
    warmups.length > 0
      ? Math.max(
          firstLead(settings.n),
          Math.max(...warmups.map((r) => r.settleSeconds)) * (settings.n / settings.warmup) * 1.5 + 20,
        )
      : firstLead(settings.n);
  if (settings.variants.length > 0) {
    const results: RoundResult[] = [];
    for (let round = 1; round <= settings.rounds; round++) {
      // The order rotates, so no variant always meets the warmer (or busier) server first.
      const order = settings.variants.map((_, i) => settings.variants[(i + round - 1) % settings.variants.length]!);
      for (const variant of order) {
        results.push(await runRoundAdapting(ctx, 'engine', round, settings.rounds, lead, settings.n, variant));
        lead = Math.max(...results.map((r) => r.settleSeconds)) * 1.5 + 10;
      }
    }
    return variantsSection(results, code, loadAtStart, cores, onPostgres, serverVersion, pgVersion, say);
  }
  const results: RoundResult[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    // --items, --usage: the order alternates (flat first in odd rounds, the other in even ones), so neither always meets the warmer server.
    for (const target of (settings.items || settings.usage) && round % 2 === 0 ? [...targets].reverse() : targets) {
      results.push(await runRoundAdapting(ctx, target, round, settings.rounds, lead));
      // --items, --usage: the other wave settles slower than the flat one before it, and a loaded machine varies more: a wider margin.
      lead =
        settings.items || settings.usage
          ? Math.max(...results.map((r) => r.settleSeconds)) * 2 + 20
          : Math.max(...results.map((r) => r.settleSeconds)) * 1.5 + 10;
    }
  }

  const engine = summarize('engine', results);
  if (settings.usage)
    return usageSection(
      engine,
      summarize('usage', results),
      results,
      code,
      loadAtStart,
      cores,
      serverVersion,
      pgVersion,
      say,
    );
  if (settings.items)
    return itemsSection(
      engine,
      summarize('items', results),
      results,
      code,
      loadAtStart,
      cores,
      serverVersion,
      pgVersion,
      say,
    );
  if (settings.engineOnly)
    return engineOnlySection(engine, results, code, loadAtStart, cores, onPostgres, serverVersion, pgVersion);
  const baseline = summarize('baseline', results);
  const ratio = engine.perSecond / baseline.perSecond;

  const heading = `## Renewals: ${settings.n.toLocaleString('en')} subscriptions ${what()} at one instant${onPostgres ? ', Temporal server on PostgreSQL' : ''}${tunings.length > 0 ? ` (tuned: ${tunings.join(' ')})` : ''}`;
  const cpus = os.cpus();
  const section = [
    heading,
    '',
    `Written by \`npm run bench:renewals\` (bench/renewals.ts) on ${new Date().toISOString()}, measuring ${code}.`,
    '',
    `Machine: ${cores} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}; ` +
      (onPostgres
        ? `the real Temporal server (${serverVersion}, all four services in one process, ${settings.historyShards} history shards, persistence and visibility in the same embedded PostgreSQL ${pgVersion} as the engine, so "PostgreSQL" CPU below includes Temporal's own statements; dev/temporal-server.ts), `
        : `the Temporal CLI's dev server (\`temporal server start-dev\`, ${serverVersion}, SQLite in a temporary folder${settings.sqlitePragmas.length > 0 ? `, with --sqlite-pragma ${settings.sqlitePragmas.join(' --sqlite-pragma ')}` : ''}), embedded PostgreSQL ${pgVersion}, `) +
      `the worker and this script all on the same machine, load average ${loadAtStart.toFixed(2)} at the start (other people's work shares it; see "other" CPU below). ` +
      `Worker: one fresh process per round, ${workerSettings()}, the same for both targets. ` +
      `${settings.rounds} rounds per target, alternating baseline and engine, each on a fresh task queue, ${warmupText()}. In a round N workflows are started ` +
      'through the Temporal client (32 at a time), all waking at the same instant T, a few seconds after they have all started and the worker is idle again; ' +
      '"wall s" is T to the last completion, found by polling every 200 ms (engine: a database count of projection rows that say `active`, billing cycle 0, ' +
      'with a paid latest invoice; baseline: a count of completed workflows in Temporal\'s visibility); "renewals/s" is N / wall. Memory is the worker ' +
      "process's process.memoryUsage() sampled every 200 ms: peak after T, at T (N workflows waiting in its cache) and 2 s after the last completion. " +
      "The heap is the main thread's (activities, ORM, SDK); workflow code runs in the SDK's workflow thread, whose heap counts in RSS only. " +
      'CPU is from /proc, from T to the last completion.',
    '',
    ...table(results, [baseline, engine]),
    '',
    `**Ratio engine/baseline: ${(ratio * 100).toFixed(1)}%** of the baseline's renewals per second ` +
      `(${rate(engine.perSecond)}/s against ${rate(baseline.perSecond)}/s; wall time ${(engine.wall / baseline.wall).toFixed(1)}× as long).` +
      ` The engine's renewals were all recorded in Temporal ${round1(mean(engine.rounds.map((r) => r.closedSeconds!)))} s after T ` +
      `(${settings.scenario === 'renewal' ? 'the worker had no workflow task left' : "the status search attribute said active in Temporal's visibility"}), ` +
      `against ${engine.wall.toFixed(1)} s for the last recorded renewal. Every engine round checked its money afterwards: ${settings.n} paid invoices ` +
      `numbered 1 to ${settings.n}, ${settings.n} succeeded charges of ${planAmount} each.`,
    '',
    ...bounds(engine, baseline, cores),
    '',
  ];
  const text = section.join('\n');
  fs.writeFileSync(path.join(tmpDir, 'section.md'), text);
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, text);

  say('');
  for (const s of [baseline, engine]) {
    say(
      `${s.target.padEnd(8)} ${s.wall.toFixed(1)} s, ${rate(s.perSecond)}/s, peak RSS ${Math.round(s.peakRss)} MB, peak heap ${Math.round(s.peakHeap)} MB`,
    );
  }
  say(`ratio engine/baseline ${(ratio * 100).toFixed(1)}%`);
  say(
    process.env.BENCH_WRITE === '0'
      ? `not written (BENCH_WRITE=0):\n${text}`
      : `written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`,
  );
  return 0;
});

/** BENCH_VARIANTS: worker settings against each other, the engine's rounds alternating them in one run. */
function variantsSection(
  results: RoundResult[],
  code: string,
  loadAtStart: number,
  cores: number,
  onPostgres: boolean,
  serverVersion: string,
  pgVersion: string,
  say: Say,
): number {
  const cpu = (c: CpuSpent) =>
    `${c.worker.toFixed(1)} / ${c.server.toFixed(1)} / ${c.postgres.toFixed(1)} / ${(c.bench + c.others).toFixed(1)}`;
  const ms = (r: RoundResult) => ((1000 * (r.cpu.worker + r.cpu.server + r.cpu.postgres)) / r.n).toFixed(1);
  const of = (v: Variant) => results.filter((r) => r.variant === v.name);
  const perSecond = (v: Variant) => mean(of(v).map((r) => r.perSecond));
  const first = perSecond(settings.variants[0]!);
  const heading = `## Renewals: ${settings.n.toLocaleString('en')} subscriptions ${what()} at one instant, worker settings compared${onPostgres ? ', Temporal server on PostgreSQL' : ''} (${settings.variants.map((v) => v.name).join(' / ')})`;
  const section = [
    heading,
    '',
    `Written by \`BENCH_TARGETS=engine BENCH_VARIANTS='${settings.variants.map((v) => `${v.name}:${v.spec}`).join(';')}' npm run bench:renewals\` (bench/renewals.ts) on ${new Date().toISOString()}, measuring ${code}.`,
    '',
    `Machine: ${cores} cores, Node ${process.version}; ${onPostgres ? `the real Temporal server (${serverVersion}, ${settings.historyShards} history shards, on the same embedded PostgreSQL ${pgVersion})` : `the Temporal dev server (${serverVersion}${settings.sqlitePragmas.length > 0 ? `, --sqlite-pragma ${settings.sqlitePragmas.join(' --sqlite-pragma ')}` : ''}), embedded PostgreSQL ${pgVersion}`}, ` +
      `load average ${loadAtStart.toFixed(2)} at the start (other agents' work shares the machine: "other" CPU below). Worker: one fresh process per round, ${workerSettings()}, ` +
      `each variant overriding: ${settings.variants.map((v) => `**${v.name}** ${v.spec || '(nothing)'}`).join('; ')} (sticky: stickyQueueScheduleToStartTimeout in seconds; polls: at most this many workflow task polls at once; autoscale: pollers scaled by the server's feedback up to this many; ratio: nonStickyToStickyPollRatio; ` +
      `slots: maxConcurrentWorkflowTaskExecutions; cache: maxCachedWorkflows; pool: the MikroORM pool; semi: the worker's --max-semi-space-size in MB). ${warmupText()}. The variants' rounds alternate in one run, the order rotating each round; ` +
      `"timed out" is the share of the workflow tasks of ${historySamples} sampled workflows per round` +
      " that timed out and were scheduled again on the shared queue (most waited out the sticky queue's timeout; on a starved machine some ran past the 10 s a started task has); " +
      '"WFT / LA in flight" the worker\'s workflow activations and activities in hand (mean of the 200 ms polls), "pool waiting" the requests waiting for a database connection (mean).',
    '',
    '| variant | round | N | wall s | renewals/s | first / half done s | timed out | history events | WFT / LA in flight | pool waiting | CPU ms per renewal (worker+server+PostgreSQL) | CPU s worker / server / PostgreSQL / other | peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.variant} | ${r.round} | ${r.n} | ${r.wallSeconds.toFixed(1)} | ${rate(r.perSecond)} | ${r.firstSeconds.toFixed(1)} / ${r.medianSeconds.toFixed(1)} | ${Math.round(r.timedOutTasks * 100)}% | ` +
        `${round1(r.historyEvents)} | ${round1(r.slots.workflowTasksMean)} / ${round1(r.slots.activitiesMean)} | ${round1(r.slots.poolWaitingMean)} | ${ms(r)} | ${cpu(r.cpu)} | ${Math.round(r.memory.peakRss)} |`,
    ),
    '',
    ...settings.variants.map(
      (v) =>
        `- **${v.name}** (${v.spec || 'defaults'}): ${rate(perSecond(v))} renewals/s (mean of ${of(v).length}), ${Math.round(mean(of(v).map((r) => r.timedOutTasks)) * 100)}% of tasks timed out` +
        (v === settings.variants[0]
          ? ''
          : `; **${((perSecond(v) / first) * 100).toFixed(0)}%** of ${settings.variants[0]!.name}'s rate`) +
        `; worker CPU ms per renewal by thread: ${threadSplit(perRenewal(of(v), (r) => r.cpu.workerThreads))}` +
        `; s p50/p90 (its first round's samples): timer fired ${pair(of(v)[0]!.timings.fired)} after T, task waited ${pair(of(v)[0]!.timings.waited)}, ran ${pair(of(v)[0]!.timings.ran)}`,
    ),
    '',
    `Every round checked its money: ${settings.n} paid invoices, ${settings.n} succeeded charges.`,
    '',
  ];
  const text = section.join('\n');
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, text);
  say(text);
  return 0;
}

/** BENCH_TARGETS=engine: the engine's rounds alone (memory and wave time at a size the baseline need not repeat). */
function engineOnlySection(
  engine: TargetSummary,
  results: RoundResult[],
  code: string,
  loadAtStart: number,
  cores: number,
  onPostgres: boolean,
  serverVersion: string,
  pgVersion: string,
): number {
  const cpu = (c: CpuSpent) =>
    `${c.worker.toFixed(1)} / ${c.server.toFixed(1)} / ${c.postgres.toFixed(1)} / ${(c.bench + c.others).toFixed(1)}`;
  const heading = `## Renewals: ${settings.n.toLocaleString('en')} subscriptions ${what()} at one instant, engine only${onPostgres ? ', Temporal server on PostgreSQL' : ''}${tunings.length > 0 ? ` (tuned: ${tunings.join(' ')})` : ''}`;
  const section = [
    heading,
    '',
    `Written by \`BENCH_TARGETS=engine npm run bench:renewals\` (bench/renewals.ts) on ${new Date().toISOString()}, measuring ${code}.`,
    '',
    `Machine: ${cores} cores, Node ${process.version}; ${onPostgres ? `the real Temporal server (${serverVersion}, ${settings.historyShards} history shards, on the same embedded PostgreSQL ${pgVersion})` : `the Temporal dev server (${serverVersion}${settings.sqlitePragmas.length > 0 ? `, --sqlite-pragma ${settings.sqlitePragmas.join(' --sqlite-pragma ')}` : ''}), embedded PostgreSQL ${pgVersion}`}, ` +
      `load average ${loadAtStart.toFixed(2)} at the start. Worker: one fresh process per round, ${workerSettings()}; ${warmupText()}. ` +
      "The same rounds as the comparison above, without the baseline: N subscriptions all renewing at the same instant T; RSS is the worker process's.",
    '',
    '| round | N | wall s | renewals/s | first / half done s | peak RSS MB | peak heap MB | RSS at T / after MB | CPU s worker / server / PostgreSQL / other |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.round} | ${r.n} | ${r.wallSeconds.toFixed(1)} | ${rate(r.perSecond)} | ${r.firstSeconds.toFixed(1)} / ${r.medianSeconds.toFixed(1)} | ` +
        `${Math.round(r.memory.peakRss)} | ${Math.round(r.memory.peakHeap)} | ${Math.round(r.memory.rssAtT)} / ${Math.round(r.memory.rssAfter)} | ${cpu(r.cpu)} |`,
    ),
    '',
    `Per renewal: ${round1(Object.values(engine.activities).reduce((a, b) => a + b, 0))} activities (${activityList(engine.activities)}), ${round1(engine.workflowTasks)} workflow tasks, ` +
      `${round1(engine.historyEvents)} history events, ${round1(engine.queries)} SQL statements (${activityList(engine.queryKinds)}). Every round checked its money: ` +
      `${settings.n} paid invoices, ${settings.n} succeeded charges.`,
    '',
  ];
  const text = section.join('\n');
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, text);
  console.log(text);
  return 0;
}

/**
 * --items (npm run bench:renewal-items): N one-item subscriptions (12 seats) against N three-item ones (the same seats, a
 * graduated tiered plan, a flat add-on) renewing at one instant, in the same run, rounds alternating which goes first.
 * The goal of issue #26: a multi-item renewal costs at most 1.3× a one-item one.
 */
function itemsSection(
  one: TargetSummary,
  three: TargetSummary,
  results: RoundResult[],
  code: string,
  loadAtStart: number,
  cores: number,
  serverVersion: string,
  pgVersion: string,
  say: Say,
): number {
  const goal = 1.3;
  const own = (s: TargetSummary) => s.cpu.worker + s.cpu.server + s.cpu.postgres;
  const ms = (seconds: number) => `${((1000 * seconds) / settings.n).toFixed(1)} ms`;
  const x = (value: number) => `${value.toFixed(2)}×`;
  const wallRatio = three.wall / one.wall;
  const cpuRatio = own(three) / own(one);
  const workerRatio = three.cpu.worker / one.cpu.worker;
  const queryRatio = three.queries / one.queries;
  const worst = Math.max(wallRatio, cpuRatio);
  const pct = (v: number) => `${Math.round(100 * v)}%`;
  const busyElsewhere = (s: TargetSummary) => (s.cpu.others + s.cpu.bench) / (cores * s.wall);
  const heading = `## Renewals: ${settings.n.toLocaleString('en')} three-item against ${settings.n.toLocaleString('en')} one-item subscriptions renewing at one instant${tunings.length > 0 ? ` (tuned: ${tunings.join(' ')})` : ''}`;
  const cpus = os.cpus();
  const section = [
    heading,
    '',
    `Written by \`npm run bench:renewal-items\` (bench/renewals.ts --items) on ${new Date().toISOString()}, measuring ${code}.`,
    '',
    `Machine: ${cores} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}; the Temporal CLI's dev server ` +
      `(\`temporal server start-dev\`, ${serverVersion}, SQLite in a temporary folder${settings.sqlitePragmas.length > 0 ? `, with --sqlite-pragma ${settings.sqlitePragmas.join(' --sqlite-pragma ')}` : ''}), ` +
      `embedded PostgreSQL ${pgVersion}, the worker and this script all on the same machine, load average ${loadAtStart.toFixed(2)} at the start ` +
      `(other people's work shares it; see "other" CPU below). Worker: one fresh process per round, ${workerSettings()}, the same for both waves. ` +
      `N = ${settings.n} per wave (a size that finishes in a few minutes on this machine), ${settings.rounds} rounds per wave, each on a fresh task queue and its own account, ` +
      `${warmupText().replace('which the baseline, always first, used to pay for alone', 'here the wave that goes first would pay for it alone')}; ` +
      'the rounds alternate which wave goes first (one item in odd rounds, three items in even ones). ' +
      `One item: 12 seats of a per_unit plan at 15.00, one line of ${seatAmount * seatQuantity} per renewal. Three items: the same seats, a graduated tiered plan at 25 units ` +
      '(10 × 10.00, then 5.00 each with a 20.00 flat fee for the second tier) and a flat 5.00 add-on, all every 30 days: three lines of ' +
      `${settingsItemsTotal()} per renewal. Both are active subscriptions whose period ends at T (started with carried-over state, ` +
      'as bench:renewals does); each renewal opens the invoice with its lines, charges the sandbox processor, settles and projects, in one local activity (renewCycle). ' +
      '"wall s" is T to the last renewal (a database count of paid latest invoices, polled every 200 ms); CPU is from /proc, from T to the last renewal.',
    '',
    ...table(results, [one, three]),
    '',
    `**Three items cost ${x(worst)} a one-item renewal** (goal: at most ${goal}×; ${worst <= goal ? 'met' : 'NOT met'}). Per renewal: wall time ${x(wallRatio)} ` +
      `(${rate(three.perSecond)}/s against ${rate(one.perSecond)}/s), CPU of the worker, the Temporal server and PostgreSQL together ${x(cpuRatio)} ` +
      `(${ms(own(three))} against ${ms(own(one))}; worker alone ${x(workerRatio)}: ${ms(three.cpu.worker)} against ${ms(one.cpu.worker)}), ` +
      `SQL statements ${x(queryRatio)} (${round1(three.queries)} against ${round1(one.queries)}: ${activityList(three.queryKinds)} against ${activityList(one.queryKinds)}).`,
    '',
    `**The machine.** Work outside the benchmark's processes (other people's, and this script's polling) took ${pct(busyElsewhere(three))} of the ${cores} cores ` +
      `during the three-item waves and ${pct(busyElsewhere(one))} during the one-item ones (the table's "other" CPU). It slows both waves alike and the rounds ` +
      'alternate which goes first, so the ratios hold better than the absolute rates' +
      (Math.max(busyElsewhere(three), busyElsewhere(one)) > 0.25
        ? ", which are well below bench:renewals' sections measured on a quieter machine."
        : '.'),
    '',
    `Both waves ran ${round1(Object.values(three.activities).reduce((a, b) => a + b, 0))} and ${round1(Object.values(one.activities).reduce((a, b) => a + b, 0))} activities per renewal ` +
      `(${activityList(three.activities)}; ${activityList(one.activities)}), ${round1(three.workflowTasks)} and ${round1(one.workflowTasks)} workflow tasks, ` +
      `${round1(three.historyEvents)} and ${round1(one.historyEvents)} history events (three items first, then one). Every round checked its money afterwards: ` +
      `${settings.n} paid invoices numbered 1 to ${settings.n}, ${settings.n} succeeded charges of the renewal's total each.`,
    '',
  ];
  const text = section.join('\n');
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, text);
  say(
    `three items / one item: wall ${x(wallRatio)}, CPU ${x(cpuRatio)}, worker CPU ${x(workerRatio)}, SQL ${x(queryRatio)}`,
  );
  console.log(text);
  return 0;
}

/**
 * --usage (npm run bench:renewals -- --usage): N flat subscriptions against N metered ones renewing at one instant, in the
 * same run, rounds alternating which goes first. The goal of issue #28: a usage renewal's wave takes at most 1.5× a flat one's.
 */
function usageSection(
  flat: TargetSummary,
  usage: TargetSummary,
  results: RoundResult[],
  code: string,
  loadAtStart: number,
  cores: number,
  serverVersion: string,
  pgVersion: string,
  say: Say,
): number {
  const goal = 1.5;
  const own = (s: TargetSummary) => s.cpu.worker + s.cpu.server + s.cpu.postgres;
  const ms = (seconds: number) => `${((1000 * seconds) / settings.n).toFixed(1)} ms`;
  const x = (value: number) => `${value.toFixed(2)}×`;
  const wallRatio = usage.wall / flat.wall;
  const cpuRatio = own(usage) / own(flat);
  const workerRatio = usage.cpu.worker / flat.cpu.worker;
  const postgresRatio = usage.cpu.postgres / flat.cpu.postgres;
  const queryRatio = usage.queries / flat.queries;
  const pct = (v: number) => `${Math.round(100 * v)}%`;
  const busyElsewhere = (s: TargetSummary) => (s.cpu.others + s.cpu.bench) / (cores * s.wall);
  const ingests = results.filter((r) => r.ingest).map((r) => r.ingest!);
  const eventsPerWave = mean(ingests.map((i) => i.events));
  const ingestRate = mean(ingests.map((i) => i.events / i.seconds));
  const sums = Array.from({ length: settings.n }, (_, i) => customerEvents(i).reduce((a, b) => a + b, 0));
  const crossing = sums.filter((q) => q > 100).length;
  const heading = `## Renewals: ${settings.n.toLocaleString('en')} usage against ${settings.n.toLocaleString('en')} flat subscriptions renewing at one instant${tunings.length > 0 ? ` (tuned: ${tunings.join(' ')})` : ''}`;
  const cpus = os.cpus();
  const loadAtEnd = os.loadavg()[0]!;
  const section = [
    heading,
    '',
    `Written by \`npm run bench:renewals -- --usage\` (bench/renewals.ts, bench/renewals-usage.ts) on ${new Date().toISOString()}, measuring ${code}.`,
    '',
    `Machine: ${cores} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}; the Temporal CLI's dev server ` +
      `(\`temporal server start-dev\`, ${serverVersion}, SQLite in a temporary folder${settings.sqlitePragmas.length > 0 ? `, with --sqlite-pragma ${settings.sqlitePragmas.join(' --sqlite-pragma ')}` : ''}), ` +
      `embedded PostgreSQL ${pgVersion}, the worker, the engine's API and this script all on the same machine, **load average ${loadAtStart.toFixed(2)} at the start and ${loadAtEnd.toFixed(2)} at the end** ` +
      `(other agents' work shared the machine, see "other" CPU below: the absolute rates are low and noisy; the ratio of the two waves, measured in the same run with the rounds alternating, is what this section is for). ` +
      `Worker: one fresh process per round, ${workerSettings()}, the same for both waves. N = ${settings.n} per wave, ${settings.rounds} rounds per wave, each on a fresh task queue and its own account, ` +
      `${warmupText().replace('which the baseline, always first, used to pay for alone', 'here the wave that goes first would pay for it alone')}; ` +
      'the rounds alternate which wave goes first (flat in odd rounds, usage in even ones). ' +
      `Flat: a plan at ${planAmount} every 30 days, one line per renewal (bench:renewals' wave). Usage: a metered plan on a \`sum\` meter, graduated tiers ` +
      `(${usageTiers.map((t) => `up to ${t.up_to}: ${t.unit_amount} a unit${'flat_amount' in t ? ` + ${t.flat_amount} flat` : ''}`).join('; ')}), billed in arrears: ` +
      `before each usage wave, the meter and the plan are made through the API and its ${settings.n} customers send 3 to 7 events each (${Math.round(eventsPerWave)} in all) ` +
      `through POST /v1/meter_events/batch in batches of 1,000 (${Math.round(ingestRate)} events/s), stamped in the period that ended an hour (the default usage grace window) before T; ` +
      `${crossing} of the ${settings.n} customers' sums cross into the second tier. At T each usage renewal closes its period (the closeUsagePeriod local activity: ` +
      'the watermark moves, the meter aggregates once), then opens the invoice with its usage line, charges the sandbox processor, settles and projects (renewCycle), ' +
      'as a flat renewal does. "wall s" is T to the last renewal (a database count of paid latest invoices, polled every 200 ms); CPU is from /proc, from T to the last renewal.',
    '',
    ...table(results, [flat, usage]),
    '',
    `**A usage renewal wave takes ${x(wallRatio)} a flat one** (goal of issue #28: within ${goal}×; ${wallRatio <= goal ? 'met' : 'NOT met'}): ` +
      `${rate(usage.perSecond)} renewals/s against ${rate(flat.perSecond)}/s. CPU of the worker, the Temporal server and PostgreSQL together per renewal ${x(cpuRatio)} ` +
      `(${ms(own(usage))} against ${ms(own(flat))}; worker ${x(workerRatio)}, PostgreSQL ${x(postgresRatio)}), ` +
      `SQL statements ${x(queryRatio)} (${round1(usage.queries)} against ${round1(flat.queries)}: ${activityList(usage.queryKinds)} against ${activityList(flat.queryKinds)}).`,
    '',
    `Activities per renewal: usage ${round1(Object.values(usage.activities).reduce((a, b) => a + b, 0))} (${activityList(usage.activities)}), ` +
      `flat ${round1(Object.values(flat.activities).reduce((a, b) => a + b, 0))} (${activityList(flat.activities)}); workflow tasks ${round1(usage.workflowTasks)} and ${round1(flat.workflowTasks)}, ` +
      `history events ${round1(usage.historyEvents)} and ${round1(flat.historyEvents)}.`,
    '',
    `**The machine.** Work outside the benchmark's processes (other agents', and this script's polling) took ${pct(busyElsewhere(usage))} of the ${cores} cores ` +
      `during the usage waves and ${pct(busyElsewhere(flat))} during the flat ones (the table's "other" CPU).`,
    '',
    `**Money, checked after every round.** Flat: ${settings.n} paid invoices numbered 1 to ${settings.n}, ${settings.n} succeeded charges of ${planAmount}. ` +
      `Usage: ${settings.n} paid invoices numbered 1 to ${settings.n}, and per customer exactly one invoice whose one usage line has the quantity its events sum to and whose total is ` +
      "what the tiers charge for it (computed by the bench on its own, not by the engine's pricing), and exactly one succeeded charge of that total; the wave's charges sum to the expected total. " +
      'A round that found anything else would have failed the run.',
    '',
  ];
  const text = section.join('\n');
  writeSection(resultsFile, heading, text);
  say(`usage / flat: wall ${x(wallRatio)}, CPU ${x(cpuRatio)}, worker CPU ${x(workerRatio)}, SQL ${x(queryRatio)}`);
  console.log(text);
  return 0;
}

/** What a three-item renewal charges (bench/renewals-setup.ts seedItemsEngine): 12 × 1500 + (10 × 1000 + 2000 + 15 × 500) + 500. */
function settingsItemsTotal(): number {
  return seatAmount * seatQuantity + (10 * 1000 + 2000 + 15 * 500) + 500;
}
