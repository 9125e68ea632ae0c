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
 *  - engine: subscriptionWorkflow started with carried-over state (a `trialing`
 *    snapshot, version 1, trial ending at T), bypassing the API; at T each opens an
 *    invoice, charges the customer through the sandbox processor, settles the
 *    invoice, records `active` and continues as new. Done = its projection row says
 *    `active`, billing cycle 0, and its latest invoice is paid (a database count).
 *  - baseline: noopRenewalWorkflow, which sleeps until T, runs `benchNoop` and
 *    returns. Done = the workflow completed (a count of Temporal's visibility).
 * The engine's rows (one account, N customers with pm_card_visa, one plan, the
 * trialing projection rows) are inserted directly; each engine round has its own
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
 * engine, baseline, engine), BENCH_TIMEOUT (seconds per round after T, default 600),
 * and worker tuning, the same for both targets: BENCH_ACTIVITY_SLOTS
 * (maxConcurrentActivityTaskExecutions), BENCH_WORKFLOW_SLOTS
 * (maxConcurrentWorkflowTaskExecutions), BENCH_DB_POOL (the MikroORM pool's size).
 * Unset, they are the production defaults; a tuned run writes a section of its own.
 * BENCH_WRITE=0 prints the section instead of writing it to bench/RESULTS.md.
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Account, Customer, Plan, Subscription } from '../db/entities/index.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort } from '../dev/processes.ts';
import { startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import { resolveTemporalCli } from '../dev/tools.ts';
import { newId } from '../domain/ids.ts';
import type { PlanTerms, SubscriptionSnapshot } from '../domain/subscription.ts';
import { AccountIdKey, CustomerIdKey, LivemodeKey, PlanIdKey, SubscriptionStatusKey } from '../workflows/search-attributes.ts';
import { mean, resultsFile, round1, runBenchmark, sleep, writeSection, type Say, type Stops } from './harness.ts';
import type { FromWorker, MemorySample, ToWorker, WorkerProcessOptions, WorkerStatusReport } from './renewals-worker.ts';
import { noopRenewalWorkflow, subscriptionWorkflow } from './workflows/index.ts';

type Target = 'baseline' | 'engine';
const namespace = 'default';
const planAmount = 1500;
const mb = (bytes: number) => bytes / 1024 / 1024;

const positive = (name: string): number | undefined => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
};

const settings = {
  n: positive('BENCH_N') ?? 2000,
  rounds: positive('BENCH_ROUNDS') ?? 2,
  timeoutSeconds: positive('BENCH_TIMEOUT') ?? 600,
  activitySlots: positive('BENCH_ACTIVITY_SLOTS'),
  workflowSlots: positive('BENCH_WORKFLOW_SLOTS'),
  dbPool: positive('BENCH_DB_POOL'),
};
const tuned = settings.activitySlots !== undefined || settings.workflowSlots !== undefined || settings.dbPool !== undefined;
const workerSettings = () =>
  `maxConcurrentActivityTaskExecutions ${settings.activitySlots ?? '100 (SDK default)'}, maxConcurrentWorkflowTaskExecutions ${settings.workflowSlots ?? '40 (SDK default)'}, ` +
  `MikroORM pool ${settings.dbPool ?? '10 (db/orm.ts default)'}`;

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

/** Busy CPU seconds of the whole machine (all cores), from /proc/stat. */
function machineBusy(): number {
  const [cpuLine] = fs.readFileSync('/proc/stat', 'utf8').split('\n');
  const [, user, nice, system, , , irq, softirq, steal] = cpuLine!.trim().split(/\s+/).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / clockTicks;
}

interface CpuSnapshot {
  worker: number;
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
    server: treeCpu(stats, pids.server),
    postgres: treeCpu(stats, pids.postgres),
    bench: (bench.user + bench.system) / 1e6,
    machine: machineBusy(),
  };
}

interface CpuSpent {
  worker: number;
  server: number;
  postgres: number;
  /** This process: starting workflows is over by T, so mostly the polling. */
  bench: number;
  /** Everything else on the machine (other people's work). */
  others: number;
  machine: number;
}

function cpuSpent(before: CpuSnapshot, after: CpuSnapshot): CpuSpent {
  const d = (k: keyof CpuSnapshot) => Math.max(0, after[k] - before[k]);
  const machine = d('machine');
  return {
    worker: d('worker'),
    server: d('server'),
    postgres: d('postgres'),
    bench: d('bench'),
    others: Math.max(0, machine - d('worker') - d('server') - d('postgres') - d('bench')),
    machine,
  };
}

// ---- The worker process --------------------------------------------------------

class WorkerProcess {
  readonly child: ChildProcess;
  readonly #waiters: ((message: FromWorker) => boolean)[] = [];
  #exited = false;
  #failure: string | undefined;

  constructor(options: WorkerProcessOptions) {
    this.child = fork(fileURLToPath(new URL('./renewals-worker.ts', import.meta.url)), [JSON.stringify(options)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (message: FromWorker) => {
      if (message.type === 'failed') this.#failure = message.error;
      for (let i = 0; i < this.#waiters.length; i++) {
        if (this.#waiters[i]!(message)) this.#waiters.splice(i--, 1);
      }
    });
    this.child.once('exit', (code) => {
      this.#exited = true;
      this.#failure ??= code === 0 ? undefined : `the worker process exited with code ${code}`;
      for (const waiter of this.#waiters.splice(0)) waiter({ type: 'failed', error: this.#failure ?? 'the worker process exited' });
    });
  }

  get failure(): string | undefined {
    return this.#failure;
  }

  #next<T extends FromWorker['type']>(type: T, timeoutMs: number): Promise<Extract<FromWorker, { type: T }>> {
    return new Promise((resolve, reject) => {
      if (this.#exited) return reject(new Error(this.#failure ?? 'the worker process has exited'));
      const timer = setTimeout(() => reject(new Error(`the worker process did not answer ${type} within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push((message) => {
        if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`worker process: ${message.error}`));
          return true;
        }
        if (message.type !== type) return false;
        clearTimeout(timer);
        resolve(message as Extract<FromWorker, { type: T }>);
        return true;
      });
    });
  }

  #send(message: ToWorker): void {
    if (!this.#exited && this.child.connected) this.child.send(message);
  }

  ready(): Promise<{ pid: number }> {
    return this.#next('ready', 120_000);
  }

  async status(): Promise<WorkerStatusReport> {
    const answer = this.#next('status', 30_000);
    this.#send({ type: 'status' });
    return answer;
  }

  async stop(): Promise<{ samples: MemorySample[]; status: WorkerStatusReport }> {
    const answer = this.#next('stopped', 60_000);
    this.#send({ type: 'stop' });
    const stopped = await answer;
    await this.exited(10_000);
    return stopped;
  }

  /** Waits for the process to end; kills it after `timeoutMs`. */
  async exited(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#exited && Date.now() < deadline) await sleep(50);
    if (!this.#exited) {
      this.child.kill('SIGKILL');
      while (!this.#exited) await sleep(50);
    }
  }

  async kill(): Promise<void> {
    if (this.#exited) return;
    this.child.kill('SIGTERM');
    await this.exited(15_000);
  }
}

// ---- Rounds ------------------------------------------------------------------

interface RoundResult {
  target: Target;
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
  /** From one sampled workflow's history: workflow tasks and events from T on (for the engine, with the new run's). */
  workflowTasks: number;
  historyEvents: number;
  loadAtStart: number;
}

interface Context {
  orm: MikroORM;
  client: Client;
  databaseUrl: string;
  temporalAddress: string;
  bundlePath: string;
  tmpDir: string;
  pids: Omit<Pids, 'worker'>;
  say: Say;
  stops: Stops;
}

/** A started workflow, whose history a round samples. */
interface SampledRun {
  workflowId: string;
  firstExecutionRunId: string;
}

/** Runs `fn` over `items`, `concurrency` at a time. */
async function inParallel<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

interface EngineSeed {
  accountId: string;
  plan: PlanTerms;
  customers: string[];
}

/** One account, N customers paying with pm_card_visa, one monthly plan: inserted directly. */
async function seedEngine(orm: MikroORM, n: number, round: number): Promise<EngineSeed> {
  const em = orm.em.fork();
  const now = new Date();
  const accountId = newId('account');
  em.create(Account, {
    id: accountId,
    email: `renewals-${round}-${randomBytes(3).toString('hex')}@example.com`,
    name: `Bench Renewals ${round}`,
    type: 'business',
    status: 'active',
    settings: { currency: 'USD', timezone: 'UTC', language: 'en' },
    createdAt: now,
    updatedAt: now,
  });
  const plan = em.create(Plan, {
    id: newId('plan'),
    name: 'Bench monthly',
    amount: planAmount,
    currency: 'USD',
    interval: 'month',
    intervalCount: 1,
    trialPeriodDays: 14,
    accountId,
    livemode: false,
    createdAt: now,
  });
  await em.flush();
  const customers = Array.from({ length: n }, (_, i) => ({
    id: newId('customer'),
    email: `customer${i}@renewals.example.com`,
    name: `Customer ${i}`,
    paymentMethod: 'pm_card_visa',
    accountId,
    livemode: false,
    createdAt: now,
    updatedAt: now,
  }));
  for (let i = 0; i < customers.length; i += 500) await em.insertMany(Customer, customers.slice(i, i + 500));
  return {
    accountId,
    plan: { planId: plan.id, name: plan.name, amount: plan.amount, currency: plan.currency, interval: { unit: 'month', count: 1 } },
    customers: customers.map((c) => c.id),
  };
}

/** Carried-over state: trialing since 14 days before T, the trial ending at T. */
function trialingSnapshot(seed: EngineSeed, customerId: string, at: Date): SubscriptionSnapshot {
  const now = new Date().toISOString();
  return {
    id: newId('subscription'),
    accountId: seed.accountId,
    customerId,
    planId: seed.plan.planId,
    status: 'trialing',
    livemode: false,
    createdAt: now,
    updatedAt: now,
    trialDays: 14,
    trialStart: new Date(at.getTime() - 14 * 86_400_000).toISOString(),
    trialEnd: at.toISOString(),
    billingCycleMode: 'anniversary',
    billingAnchor: null,
    anchorCycle: 0,
    stubStart: null,
    billingCycle: 0,
    currentPeriodStart: null,
    currentPeriodEnd: null,
    latestInvoiceId: null,
    cancelAtPeriodEnd: false,
    canceledAt: null,
    endedReason: null,
    pausedAt: null,
    pauseUntil: null,
    pauseReason: null,
    pendingPlanId: null,
    gracePeriodDays: null,
    dunning: null,
    version: 1,
  };
}

/** The projection rows the engine would have written when these subscriptions were created. */
async function insertProjections(orm: MikroORM, snapshots: SubscriptionSnapshot[]): Promise<void> {
  const date = (iso: string | null) => (iso === null ? null : new Date(iso));
  const rows = snapshots.map((s) => ({
    id: s.id,
    accountId: s.accountId,
    customerId: s.customerId,
    planId: s.planId,
    status: s.status,
    trialStart: date(s.trialStart),
    trialEnd: date(s.trialEnd),
    billingCycle: s.billingCycle,
    trialDays: s.trialDays,
    billingCycleMode: s.billingCycleMode,
    cancelAtPeriodEnd: false,
    livemode: s.livemode,
    version: s.version,
    createdAt: new Date(s.createdAt),
    updatedAt: new Date(s.updatedAt),
  }));
  const em = orm.em.fork();
  for (let i = 0; i < rows.length; i += 500) await em.insertMany(Subscription, rows.slice(i, i + 500));
}

const engineDoneQuery = `
  select count(*)::int as n
    from subscriptions s
    join invoices i on i.id = s.latest_invoice_id
   where s.account_id = ? and s.status = 'active' and s.billing_cycle = 0 and i.status = 'paid'`;

async function runRound(ctx: Context, target: Target, round: number, rounds: number, lead: number): Promise<RoundResult> {
  const { orm, client, say } = ctx;
  const n = settings.n;
  const label = `${target} ${round}/${rounds}`;
  const loadAtStart = os.loadavg()[0]!;
  const taskQueue = `bench-renewals-${target}-${round}-${randomBytes(3).toString('hex')}`;

  const seed = target === 'engine' ? await seedEngine(orm, n, round) : undefined;

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
    },
    dbPool: settings.dbPool,
  });
  ctx.stops.add(`worker process (${label})`, () => worker.kill());
  const { pid: workerPid } = await worker.ready();
  const pids: Pids = { ...ctx.pids, worker: workerPid };

  // T: all N wake at this instant.
  const startedAt = Date.now();
  const at = new Date(startedAt + lead * 1000);
  say(`${label}: starting ${n} workflows on ${taskQueue}, all waking at T = ${at.toISOString()} (in ${lead.toFixed(0)} s)`);

  const handles: SampledRun[] = [];
  let started = 0;
  const progress = setInterval(() => say(`${label}: started ${started}/${n}`), 2000);
  try {
    if (target === 'engine') {
      const snapshots = seed!.customers.map((customerId) => trialingSnapshot(seed!, customerId, at));
      await insertProjections(orm, snapshots);
      await inParallel(snapshots, 32, async (snapshot) => {
        const handle = await client.workflow.start(subscriptionWorkflow, {
          workflowId: snapshot.id,
          taskQueue,
          args: [{ snapshot, plan: seed!.plan }],
          workflowIdConflictPolicy: 'FAIL',
          staticSummary: `Subscription of ${snapshot.customerId} to ${snapshot.planId}`,
          typedSearchAttributes: [
            { key: SubscriptionStatusKey, value: 'trialing' },
            { key: AccountIdKey, value: snapshot.accountId },
            { key: CustomerIdKey, value: snapshot.customerId },
            { key: PlanIdKey, value: snapshot.planId },
            { key: LivemodeKey, value: false },
          ],
        });
        if (handles.length === 0) handles.push(handle);
        started++;
      });
    } else {
      const ids = Array.from({ length: n }, (_, i) => `${taskQueue}-${i}`);
      await inParallel(ids, 32, async (workflowId) => {
        const handle = await client.workflow.start(noopRenewalWorkflow, { workflowId, taskQueue, args: [at.toISOString()] });
        if (handles.length === 0) handles.push(handle);
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
  say(`${label}: started in ${startSeconds.toFixed(1)} s, worker idle after ${settleSeconds.toFixed(1)} s; ${slackSeconds.toFixed(1)} s to T`);
  if (slackSeconds < 0.5) {
    throw new Error(`${label}: the workflows were not all started and settled before T (${slackSeconds.toFixed(1)} s left); this machine is slower than the lead time assumes`);
  }

  await sleep(at.getTime() - Date.now());
  const cpuAtT = cpuSnapshot(pids);
  const statusAtT = await worker.status();

  // Poll every 200 ms until all N are done.
  const doneQuery = target === 'engine' ? `ExecutionStatus = 'ContinuedAsNew'` : `ExecutionStatus = 'Completed'`;
  const visibilityQuery = `TaskQueue = '${taskQueue}' AND ${doneQuery}`;
  const countDone = async () =>
    target === 'engine'
      ? (await orm.em.fork().getConnection().execute<{ n: number }[]>(engineDoneQuery, [seed!.accountId]))[0]!.n
      : (await client.workflow.count(visibilityQuery)).count;
  let done = 0;
  let closed = target === 'engine' ? 0 : n;
  let firstAt: number | undefined;
  let medianAt: number | undefined;
  let doneAt: number | undefined;
  let closedAt: number | undefined;
  let cpuAtDone: CpuSnapshot | undefined;
  let statusAtDone: WorkerStatusReport | undefined;
  let lastSaid = Date.now();
  const deadline = at.getTime() + settings.timeoutSeconds * 1000;
  while (doneAt === undefined || closedAt === undefined) {
    const tick = Date.now();
    if (doneAt === undefined) {
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
      if (target === 'engine') closed = (await client.workflow.count(visibilityQuery)).count;
      if (closed >= n) closedAt = Date.now();
    }
    if (Date.now() - lastSaid >= 2000 || (doneAt !== undefined && closedAt !== undefined)) {
      lastSaid = Date.now();
      const what = target === 'engine' ? `${done}/${n} renewed, ${closed}/${n} continued as new` : `${done}/${n} completed`;
      say(`${label}: ${what} (${((Date.now() - at.getTime()) / 1000).toFixed(1)} s after T)`);
    }
    if (worker.failure) throw new Error(`${label}: ${worker.failure}`);
    if (Date.now() > deadline) throw new Error(`${label}: only ${done}/${n} done ${settings.timeoutSeconds} s after T (BENCH_TIMEOUT)`);
    await sleep(Math.max(0, 200 - (Date.now() - tick)));
  }

  // A moment for the worker to settle, then its memory at the end.
  await sleep(2000);
  const { samples } = await worker.stop();
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

  const { workflowTasks, historyEvents } = await sampleHistory(client, handles[0]!, at);
  if (target === 'engine') await checkEngineMoney(orm, seed!.accountId, n);

  const wallSeconds = (doneAt - at.getTime()) / 1000;
  const result: RoundResult = {
    target,
    round,
    n,
    startSeconds,
    settleSeconds,
    slackSeconds,
    wallSeconds,
    firstSeconds: (firstAt! - at.getTime()) / 1000,
    medianSeconds: (medianAt! - at.getTime()) / 1000,
    perSecond: n / wallSeconds,
    closedSeconds: target === 'engine' ? (closedAt - at.getTime()) / 1000 : null,
    memory,
    cpu: cpuSpent(cpuAtT, cpuAtDone!),
    activities,
    queries: statusAtDone!.queries - statusAtT.queries,
    workflowTasks,
    historyEvents,
    loadAtStart,
  };
  say(`${label}: ${describeRound(result)}`);
  return result;
}

/** Workflow tasks and history events from T on, in one workflow's history (and, for a subscription, its next run's). */
async function sampleHistory(client: Client, handle: SampledRun, at: Date): Promise<{ workflowTasks: number; historyEvents: number }> {
  const runs = [client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId)];
  const latest = await client.workflow.getHandle(handle.workflowId).describe();
  if (latest.runId !== handle.firstExecutionRunId) runs.push(client.workflow.getHandle(handle.workflowId, latest.runId));
  let workflowTasks = 0;
  let historyEvents = 0;
  for (const run of runs) {
    const history = await run.fetchHistory();
    for (const event of history.events ?? []) {
      const time = Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
      if (time < at.getTime()) continue;
      historyEvents++;
      if (event.workflowTaskCompletedEventAttributes) workflowTasks++;
    }
  }
  return { workflowTasks, historyEvents };
}

/** The renewals must have billed right: N paid invoices, numbered 1..N without gaps, N succeeded charges of the plan's amount. */
async function checkEngineMoney(orm: MikroORM, accountId: string, n: number): Promise<void> {
  const [row] = await orm.em.fork().getConnection().execute<{ paid: number; numbers: number; charges: number; amount: string }[]>(
    `select (select count(*)::int from invoices where account_id = ? and status = 'paid') as paid,
            (select count(distinct number)::int from invoices where account_id = ?) as numbers,
            (select count(*)::int from charges where account_id = ? and status = 'succeeded') as charges,
            (select coalesce(sum(amount), 0)::text from charges where account_id = ?) as amount`,
    [accountId, accountId, accountId, accountId],
  );
  const [counter] = await orm.em.fork().getConnection().execute<{ last_number: number }[]>(
    'select last_number from invoice_number_counters where account_id = ? and livemode = false',
    [accountId],
  );
  const problems = [
    row!.paid !== n && `${row!.paid} paid invoices`,
    row!.numbers !== n && `${row!.numbers} distinct invoice numbers`,
    Number(counter?.last_number) !== n && `the invoice counter at ${counter?.last_number}`,
    row!.charges !== n && `${row!.charges} succeeded charges`,
    Number(row!.amount) !== n * planAmount && `charges summing to ${row!.amount}`,
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`the engine's renewals billed wrong: expected ${n} of each, found ${problems.join(', ')}`);
}

const describeRound = (r: RoundResult) =>
  `${r.n} in ${r.wallSeconds.toFixed(1)} s after T (${Math.round(r.perSecond)}/s; first ${r.firstSeconds.toFixed(1)} s, half ${r.medianSeconds.toFixed(1)} s` +
  `${r.closedSeconds === null ? '' : `, all continued as new ${r.closedSeconds.toFixed(1)} s`}); worker RSS ${Math.round(r.memory.rssAtT)} MB at T, ` +
  `peak ${Math.round(r.memory.peakRss)} MB, heap peak ${Math.round(r.memory.peakHeap)} MB; CPU s worker ${r.cpu.worker.toFixed(1)}, ` +
  `server ${r.cpu.server.toFixed(1)}, postgres ${r.cpu.postgres.toFixed(1)}, bench ${r.cpu.bench.toFixed(1)}, others ${r.cpu.others.toFixed(1)}`;

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
  workflowTasks: number;
  historyEvents: number;
}

function summarize(target: Target, results: RoundResult[]): TargetSummary {
  const rounds = results.filter((r) => r.target === target);
  const per = (f: (r: RoundResult) => number) => mean(rounds.map(f));
  const cpuKeys = ['worker', 'server', 'postgres', 'bench', 'others', 'machine'] as const;
  const activities: Record<string, number> = {};
  for (const r of rounds) for (const [name, count] of Object.entries(r.activities)) activities[name] = (activities[name] ?? 0) + count / r.n / rounds.length;
  return {
    target,
    rounds,
    wall: per((r) => r.wallSeconds),
    perSecond: per((r) => r.perSecond),
    peakRss: Math.max(...rounds.map((r) => r.memory.peakRss)),
    peakHeap: Math.max(...rounds.map((r) => r.memory.peakHeap)),
    rssAtT: per((r) => r.memory.rssAtT),
    rssAfter: per((r) => r.memory.rssAfter),
    cpu: Object.fromEntries(cpuKeys.map((k) => [k, per((r) => r.cpu[k])])) as unknown as CpuSpent,
    activities,
    queries: per((r) => r.queries / r.n),
    workflowTasks: per((r) => r.workflowTasks),
    historyEvents: per((r) => r.historyEvents),
  };
}

const names: Record<Target, string> = { engine: 'engine (subscriptionWorkflow)', baseline: 'baseline (no-op workflow + no-op activity)' };

function table(results: RoundResult[], engine: TargetSummary, baseline: TargetSummary): string[] {
  const cpu = (c: CpuSpent) => `${c.worker.toFixed(1)} / ${c.server.toFixed(1)} / ${c.postgres.toFixed(1)} / ${(c.bench + c.others).toFixed(1)}`;
  return [
    '| target | round | N | wall s | renewals/s | first / half done s | peak RSS MB | peak heap MB | RSS at T / after MB | CPU s worker / server / PostgreSQL / other |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${names[r.target]} | ${r.round} | ${r.n} | ${r.wallSeconds.toFixed(1)} | ${Math.round(r.perSecond)} | ${r.firstSeconds.toFixed(1)} / ${r.medianSeconds.toFixed(1)} | ` +
        `${Math.round(r.memory.peakRss)} | ${Math.round(r.memory.peakHeap)} | ${Math.round(r.memory.rssAtT)} / ${Math.round(r.memory.rssAfter)} | ${cpu(r.cpu)} |`,
    ),
    ...[baseline, engine].map(
      (s) =>
        `| **${names[s.target]}, mean** | | ${settings.n} | **${s.wall.toFixed(1)}** | **${Math.round(s.perSecond)}** | | ${Math.round(s.peakRss)} (max) | ${Math.round(s.peakHeap)} (max) | ` +
        `${Math.round(s.rssAtT)} / ${Math.round(s.rssAfter)} | ${cpu(s.cpu)} |`,
    ),
  ];
}

const activityList = (a: Record<string, number>) =>
  Object.entries(a)
    .map(([name, count]) => `${name} ${round1(count)}`)
    .join(', ');

function bounds(engine: TargetSummary, baseline: TargetSummary, cores: number): string[] {
  const share = (s: TargetSummary) => {
    const capacity = cores * s.wall;
    const pct = (v: number) => `${Math.round((100 * v) / capacity)}%`;
    return (
      `${pct(s.cpu.machine)} of the ${cores} cores' ${capacity.toFixed(0)} CPU-s busy (worker ${pct(s.cpu.worker)}, Temporal server ${pct(s.cpu.server)}, ` +
      `PostgreSQL ${pct(s.cpu.postgres)}, this script and everything else on the machine ${pct(s.cpu.bench + s.cpu.others)})`
    );
  };
  const perRenewalMs = (s: TargetSummary, v: number) => ((1000 * v) / settings.n).toFixed(1);
  const activitiesPer = (a: Record<string, number>) => Object.values(a).reduce((sum, v) => sum + v, 0);
  return [
    `Per renewal, measured: the engine ran ${round1(activitiesPer(engine.activities))} activities (${activityList(engine.activities)}), ` +
      `sent ${round1(engine.queries)} SQL queries to PostgreSQL (each a round trip; counted on the worker's pg clients), ` +
      `and its history gained ${round1(engine.historyEvents)} events with ${round1(engine.workflowTasks)} workflow tasks from T on (the trial-end timer, ` +
      'one task after each activity, the continue-as-new, and the new run\'s first task). ' +
      `The baseline ran ${round1(activitiesPer(baseline.activities))} activity (${activityList(baseline.activities)}), ${round1(baseline.queries)} queries, ` +
      `and ${round1(baseline.historyEvents)} events with ${round1(baseline.workflowTasks)} workflow tasks.`,
    '',
    `CPU from T to the last completion, mean of the rounds: engine ${shareLine(engine)}; that is ${share(engine)}, or per renewal ` +
      `${perRenewalMs(engine, engine.cpu.worker)} ms of worker, ${perRenewalMs(engine, engine.cpu.server)} ms of Temporal server and ` +
      `${perRenewalMs(engine, engine.cpu.postgres)} ms of PostgreSQL CPU. Baseline ${shareLine(baseline)}; ${share(baseline)}, or per workflow ` +
      `${perRenewalMs(baseline, baseline.cpu.worker)} ms of worker and ${perRenewalMs(baseline, baseline.cpu.server)} ms of Temporal server CPU.`,
  ];
}

const shareLine = (s: TargetSummary) =>
  `worker ${s.cpu.worker.toFixed(1)} s, Temporal server ${s.cpu.server.toFixed(1)} s, PostgreSQL ${s.cpu.postgres.toFixed(1)} s, other ${(s.cpu.bench + s.cpu.others).toFixed(1)} s in ${s.wall.toFixed(1)} s`;

// ---- Main ----------------------------------------------------------------------

await runBenchmark('bench:renewals', async (stops, say) => {
  const began = Date.now();
  const loadAtStart = os.loadavg()[0]!;
  const cores = os.cpus().length;
  if (loadAtStart > cores / 2) say(`note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${cores} cores); the numbers will be noisy`);
  say(`N = ${settings.n}, ${settings.rounds} rounds per target; worker: ${workerSettings()}`);

  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-renewals-'));
  // As root, PostgreSQL runs as the postgres user, which must reach its folder.
  fs.chmodSync(tmpDir, 0o755);
  const removeTmpDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });
  stops.add('temp folder', async () => removeTmpDir());
  process.once('exit', removeTmpDir);

  say('starting PostgreSQL and the Temporal dev server, bundling the workflows');
  const [postgres, temporal, bundle] = await Promise.all([
    freePort().then((port) => startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port })),
    Promise.all([freePort(), freePort()]).then(([port, uiPort]) =>
      startTemporalDevServer({ dataDir: path.join(tmpDir, 'temporal'), port, uiPort, namespace, log: say }),
    ),
    bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./workflows/index.ts', import.meta.url)),
      logger: { trace() {}, debug() {}, info() {}, warn: say, error: say, log() {} } as never,
    }),
  ]);
  stops.add('PostgreSQL', () => postgres.stop());
  stops.add('Temporal dev server', () => temporal.stop());
  const bundlePath = path.join(tmpDir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);

  const databaseUrl = postgres.url('billing_bench');
  await ensureDatabase(postgres.url('postgres'), 'billing_bench');
  const orm = await openOrm(databaseUrl);
  stops.add('ORM', () => orm.close());
  await migrate(orm, databaseUrl);
  const [{ server_version: pgVersion }] = await orm.em.getConnection().execute<{ server_version: string }[]>('show server_version');

  const connection = await Connection.connect({ address: temporal.address });
  stops.add('client connection', () => connection.close());
  const client = new Client({ connection, namespace });

  const pidOf = (file: string) => Number.parseInt(fs.readFileSync(file, 'utf8').split('\n')[0]!, 10);
  const ctx: Context = {
    orm,
    client,
    databaseUrl,
    temporalAddress: temporal.address,
    bundlePath,
    tmpDir,
    pids: { server: pidOf(path.join(tmpDir, 'temporal', 'temporal.pid')), postgres: pidOf(path.join(tmpDir, 'postgres', 'postmaster.pid')) },
    say,
    stops,
  };
  const cli = await resolveTemporalCli({ log: () => {}, allowBuild: false });
  const serverVersion = 'path' in cli ? execFileSync(cli.path, ['--version'], { encoding: 'utf8' }).trim() : 'unknown';
  say(`ready in ${((Date.now() - began) / 1000).toFixed(1)} s (PostgreSQL ${pgVersion}; ${serverVersion})`);

  // Lead time from the start of a round to T: a guess for the first round, then
  // what the previous rounds needed to start their workflows, with room to spare.
  // Starting workflows is the part most slowed by a busy machine, hence the generous margins.
  let lead = 15 + settings.n * 0.04;
  const results: RoundResult[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const target of ['baseline', 'engine'] as const) {
      results.push(await runRound(ctx, target, round, settings.rounds, lead));
      lead = Math.max(...results.map((r) => r.settleSeconds)) * 2 + 10;
    }
  }

  const engine = summarize('engine', results);
  const baseline = summarize('baseline', results);
  const ratio = engine.perSecond / baseline.perSecond;

  const heading = tuned ? '## Renewals at one instant (tuned worker)' : `## Renewals: ${settings.n.toLocaleString('en')} subscriptions at one instant`;
  const cpus = os.cpus();
  const section = [
    heading,
    '',
    `Written by \`npm run bench:renewals\` (bench/renewals.ts) on ${new Date().toISOString()}.`,
    '',
    `Machine: ${cores} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}; ` +
      `the Temporal CLI's dev server (\`temporal server start-dev\`, ${serverVersion}, SQLite in a temporary folder), embedded PostgreSQL ${pgVersion}, ` +
      `the worker and this script all on the same machine, load average ${loadAtStart.toFixed(2)} at the start (other people's work shares it; see "other" CPU below). ` +
      `Worker: one fresh process per round, ${workerSettings()}, the same for both targets. ` +
      `${settings.rounds} rounds per target, alternating baseline and engine, each on a fresh task queue. In a round N workflows are started ` +
      'through the Temporal client (32 at a time), all waking at the same instant T, a few seconds after they have all started and the worker is idle again; ' +
      '"wall s" is T to the last completion, found by polling every 200 ms (engine: a database count of projection rows that say `active`, billing cycle 0, ' +
      'with a paid latest invoice; baseline: a count of completed workflows in Temporal\'s visibility); "renewals/s" is N / wall. Memory is the worker ' +
      'process\'s process.memoryUsage() sampled every 200 ms: peak after T, at T (N workflows waiting in its cache) and 2 s after the last completion. ' +
      'The heap is the main thread\'s (activities, ORM, SDK); workflow code runs in the SDK\'s workflow thread, whose heap counts in RSS only. ' +
      'CPU is from /proc, from T to the last completion.',
    '',
    ...table(results, engine, baseline),
    '',
    `**Ratio engine/baseline: ${(ratio * 100).toFixed(1)}%** of the baseline's renewals per second ` +
      `(${Math.round(engine.perSecond)}/s against ${Math.round(baseline.perSecond)}/s; wall time ${(engine.wall / baseline.wall).toFixed(1)}× as long).` +
      ` The engine's first runs had all continued as new ${round1(mean(engine.rounds.map((r) => r.closedSeconds!)))} s after T (visibility), ` +
      `against ${engine.wall.toFixed(1)} s for the last recorded renewal. Every engine round checked its money afterwards: ${settings.n} paid invoices ` +
      `numbered 1 to ${settings.n}, ${settings.n} succeeded charges of ${planAmount} each.`,
    '',
    ...bounds(engine, baseline, cores),
    '',
  ];
  const text = section.join('\n');
  fs.writeFileSync(path.join(tmpDir, 'section.md'), text);
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, text + boundsNote());

  say('');
  for (const s of [baseline, engine]) {
    say(`${s.target.padEnd(8)} ${s.wall.toFixed(1)} s, ${Math.round(s.perSecond)}/s, peak RSS ${Math.round(s.peakRss)} MB, peak heap ${Math.round(s.peakHeap)} MB`);
  }
  say(`ratio engine/baseline ${(ratio * 100).toFixed(1)}%`);
  say(process.env.BENCH_WRITE === '0' ? `not written (BENCH_WRITE=0):\n${text}` : `written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`);
  return 0;
});

/** What bounds the ratio, as read from the numbers above on this machine (kept with the script, so a rerun keeps it). */
function boundsNote(): string {
  return '';
}
