/**
 * The worker process of `npm run bench:renewals` and `npm run bench:scale-out`:
 * bench/renewals.ts forks one per round (a fresh process, so each round's memory
 * is its own), bench/scale-out.ts one or two per wave on the same task queue, and
 * they talk to it over the IPC channel (WorkerProcess, bench/renewals-setup.ts).
 *
 * It is the engine's worker: the options createBillingWorker (worker.ts) passes,
 * the engine's activities (createActivities) on its own MikroORM pool, plus the
 * baseline's `benchNoop` activity and the bench workflow bundle (bench/workflows).
 * For the measurements it samples process.memoryUsage() every 200 ms, counts
 * activity calls by name, and counts the SQL queries its pg clients send (one
 * query is one round trip to PostgreSQL).
 */
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import pg from 'pg';

import { createActivities } from '../activities/index.ts';
import { openOrm } from '../db/orm.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { createFileMailer } from '../services/email/mailer.ts';
import { installTemporalRuntime, workerDefaults } from '../worker.ts';

export interface WorkerProcessOptions {
  databaseUrl: string;
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  bundlePath: string;
  mailDir: string;
  /** Worker tuning (BENCH_ACTIVITY_SLOTS, BENCH_WORKFLOW_SLOTS); empty: the SDK's defaults, as production. */
  overrides: Partial<
    Pick<
      WorkerOptions,
      | 'maxCachedWorkflows'
      | 'maxConcurrentActivityTaskExecutions'
      | 'maxConcurrentWorkflowTaskExecutions'
      | 'stickyQueueScheduleToStartTimeout'
      | 'workflowTaskPollerBehavior'
      | 'nonStickyToStickyPollRatio'
    >
  >;
  /** The MikroORM pool's size (BENCH_DB_POOL); undefined: db/orm.ts's default, as production. */
  dbPool: number | undefined;
  /** Node flags of the worker process beyond npm run worker's (a BENCH_VARIANTS variant's `semi`). */
  nodeFlags?: string[];
}

export interface MemorySample {
  at: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

export interface WorkerStatusReport {
  type: 'status';
  at: number;
  inFlightWorkflowActivations: number;
  inFlightActivities: number;
  /** Clients of the worker's pg pools that are checked out, and requests waiting for one. */
  poolBusy: number;
  poolWaiting: number;
  queries: number;
  /** Queries by their first word (select, insert, update, begin, commit...). */
  queryKinds: Record<string, number>;
  activityCalls: Record<string, number>;
}

export type FromWorker =
  | { type: 'ready'; pid: number }
  | WorkerStatusReport
  | { type: 'stopped'; samples: MemorySample[]; status: WorkerStatusReport; queryTexts: [string, number][] }
  | { type: 'failed'; error: string };
export type ToWorker = { type: 'status' } | { type: 'stop' };

const send = (message: FromWorker) =>
  new Promise<void>((resolve) => {
    if (!process.send || !process.connected) return resolve();
    try {
      process.send(message, () => resolve());
    } catch {
      resolve();
    }
  });

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '') as WorkerProcessOptions;

  // Count what reaches PostgreSQL: every query of every pool client (MikroORM uses pg's Pool).
  let queries = 0;
  const queryKinds: Record<string, number> = {};
  const queryTexts = new Map<string, number>();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    queries++;
    const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string } | undefined)?.text ?? '');
    const kind = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? 'other';
    queryKinds[kind] = (queryKinds[kind] ?? 0) + 1;
    // BENCH_QUERY_LOG=1: the parent prints the most frequent statements.
    if (process.env.BENCH_QUERY_LOG === '1') {
      const key = text
        .replace(/'(?:[^']|'')*'/g, '?')
        .replace(/\b\d+\b/g, '?')
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, 200);
      queryTexts.set(key, (queryTexts.get(key) ?? 0) + 1);
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;

  // Find the pools MikroORM creates, to report how busy they are.
  const pools = new Set<pg.Pool>();
  const connect = pg.Pool.prototype.connect;
  pg.Pool.prototype.connect = function (this: pg.Pool, ...args: unknown[]) {
    pools.add(this);
    return (connect as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof connect;

  installTemporalRuntime('error');
  const orm = await openOrm(options.databaseUrl, options.dbPool ? { pool: { min: 0, max: options.dbPool } } : {});
  const connection = await NativeConnection.connect({ address: options.temporalAddress });
  const mailer = createFileMailer(options.mailDir, 'Bench <bench@example.com>');
  const activityCalls: Record<string, number> = {};
  const counted = <T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T =>
    Object.fromEntries(
      Object.entries(activities).map(([name, fn]) => [
        name,
        (...args: never[]) => {
          activityCalls[name] = (activityCalls[name] ?? 0) + 1;
          return fn(...args);
        },
      ]),
    ) as T;
  const activities = {
    ...createActivities({
      orm,
      mailer,
      links: createCustomerLinks({ publicUrl: 'http://localhost', secret: 'bench' }),
    }),
    async benchNoop(): Promise<void> {},
  };
  // The options createBillingWorker passes, with the bench bundle and the no-op activity added.
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: { codePath: options.bundlePath },
    activities: counted(activities),
    ...workerDefaults,
    ...options.overrides,
  });

  const samples: MemorySample[] = [];
  const sample = () => {
    const m = process.memoryUsage();
    samples.push({ at: Date.now(), rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external });
  };
  sample();
  const sampler = setInterval(sample, 200);
  const status = (): WorkerStatusReport => {
    const s = worker.getStatus();
    return {
      type: 'status',
      at: Date.now(),
      inFlightWorkflowActivations: s.numInFlightWorkflowActivations,
      inFlightActivities: s.numInFlightActivities,
      poolBusy: [...pools].reduce((sum, p) => sum + p.totalCount - p.idleCount, 0),
      poolWaiting: [...pools].reduce((sum, p) => sum + p.waitingCount, 0),
      queries,
      queryKinds: { ...queryKinds },
      activityCalls: { ...activityCalls },
    };
  };

  const running = worker.run();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    sample();
    clearInterval(sampler);
    const final = status();
    worker.shutdown();
    await running;
    await send({
      type: 'stopped',
      samples,
      status: final,
      queryTexts: [...queryTexts].sort((a, b) => b[1] - a[1]).slice(0, 40),
    });
    await connection.close();
    mailer.close();
    await orm.close();
    process.exit(0);
  };
  process.on('message', (message: ToWorker) => {
    if (message.type === 'status') void send(status());
    if (message.type === 'stop') void stop();
  });
  // Ctrl-C reaches the whole process group; the parent decides when we stop.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
  running.catch(async (error) => {
    await send({ type: 'failed', error: String(error?.stack ?? error) });
    process.exit(1);
  });
  await send({ type: 'ready', pid: process.pid });
}

main().catch(async (error) => {
  await send({ type: 'failed', error: String(error?.stack ?? error) });
  process.exit(1);
});
