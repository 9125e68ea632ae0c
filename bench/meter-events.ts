/**
 * Benchmark: usage ingestion (issue #28, docs/usage.md#measured).
 *
 *   npm run bench:meter-events        (or: node bench/meter-events.ts)
 *
 * Starts an embedded PostgreSQL, the engine's API and a bare Hono app (bench/harness.ts), and measures
 * in one run:
 * 1. sustained ingestion through HTTP, batches of 100 and of 1,000 events (1% duplicate identifiers),
 *    engine (POST /v1/meter_events/batch) against a bare route that authenticates the same API key and
 *    runs the same one-statement insert (services/usage/postgres-store.ts ingestSql), alternating;
 * 2. single events (POST /v1/meter_events), engine and bare;
 * 3. event → visible in GET /v1/meters/{id}/event_summaries while ingesting at 5,000 events/s;
 * 4. aggregate latency for one customer's 30-day period, every aggregation, over a meter holding
 *    BENCH_METER_EVENTS events (default 2,000,000; 100,000 customers) made with generate_series.
 * Every answer must be 2xx and every accepted event counted once (checked against the table), or it exits 1.
 * The engine's API runs as production runs it, `node api/server.ts` in a process of its own (on a Temporal dev server
 * of its own, bench/harness.ts startApiProcess); its resident memory (/proc/<pid>/status) is sampled every 100 ms and
 * reported per phase (the issue's goal: under 300 MB under this load).
 *
 * BENCH_ONLY=singles runs only the single events (16 and 64 connections) into a section of its own, with the
 * engine's API in this process (it counts the events per statement on the engine's group committer), or with
 * BENCH_SINGLES_API=process in its own process as production runs it (the load generator then has a core to itself
 * less often than the API; events per statement are not counted).
 * Each round also reports the CPU time per event of the API process (process mode), of PostgreSQL (its server and
 * backends) and of this process (/proc), and BENCH_ONLY=singles ends with a VERDICT line on the 2,000/s goal;
 * BENCH_RESULTS_FILE=<path> writes its section there instead of bench/RESULTS.md (a trial run).
 * BENCH_DURATION, BENCH_WARMUP (seconds), BENCH_ROUNDS, BENCH_METER_EVENTS shorten or lengthen a run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import type { MikroORM } from '@mikro-orm/postgresql';
import { Hono } from 'hono';

import { newId } from '../domain/ids.ts';
import { singleEventCommitterFor } from '../services/usage/group-commit.ts';
import { createUsagePool, ingestSql, PostgresUsageStore, usageStoreFor } from '../services/usage/postgres-store.ts';
import type { Aggregation, MeterRef } from '../services/usage/store.ts';
import {
  bareCaller,
  call,
  resultsFile,
  round1,
  RssSampler,
  runBenchmark,
  type Say,
  settingsFromEnv,
  signUp,
  startEnvironment,
  writeSection,
} from './harness.ts';
import type { LoadJob, LoadReport } from './meter-events-load.ts';

const sectionHeading = '## Usage: meter event ingestion, visibility and aggregation';
const singlesHeading = '## Usage: single meter events (group commit)';
/** Where BENCH_ONLY=singles writes its section: bench/RESULTS.md, or BENCH_RESULTS_FILE (a trial run that must not replace it). */
const singlesResultsFile = process.env.BENCH_RESULTS_FILE || resultsFile;
const customerCount = 1_000;
const bigEvents = Number(process.env.BENCH_METER_EVENTS ?? 2_000_000);
const bigCustomers = 100_000;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** CPU seconds (user + system) of a process from /proc/<pid>/stat; with `children`, also its waited-for children's. */
function processCpuSeconds(pid: number, children = false): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0);
    return ticks / clockTicks;
  } catch {
    return 0;
  }
}
const clockTicks = 100; // USER_HZ on Linux (getconf CLK_TCK)

/** The PostgreSQL server's CPU seconds: the postmaster, its live backends, and the ones that exited (its children's time). */
function postgresCpuSeconds(postmasterPid: number): number {
  let total = processCpuSeconds(postmasterPid, true);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmasterPid) total += processCpuSeconds(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** CPU seconds, now, of what serves a round: the API process (process mode), PostgreSQL, and this process (bare route, load generator). */
interface CpuSnapshot {
  api: number;
  postgres: number;
  bench: number;
}

function runLoad(job: LoadJob): Promise<LoadReport> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./meter-events-load.ts', import.meta.url), { workerData: job });
    worker.once('message', (message: { report?: LoadReport; error?: string }) => {
      void worker.terminate();
      if (message.report) resolve(message.report);
      else reject(new Error(message.error));
    });
    worker.once('error', reject);
  });
}

/** The bare app: the same API key lookup and the same one-statement insert, nothing else (no validation, no middleware). */
function bareApp(orm: MikroORM, databaseUrl: string) {
  const pool = createUsagePool(databaseUrl);
  const app = new Hono();
  const insert = async (
    accountId: string,
    livemode: boolean,
    events: { event_name: string; customer: string; identifier: string; payload: object }[],
  ) => {
    const n = events.length;
    const idx = new Array<number>(n);
    const names = new Array<string>(n);
    const customers = new Array<string>(n);
    const timestamps = new Array<null>(n).fill(null);
    const identifiers = new Array<string>(n);
    const payloads = new Array<string>(n);
    events.forEach((e, i) => {
      idx[i] = i;
      names[i] = e.event_name;
      customers[i] = e.customer;
      identifiers[i] = e.identifier;
      payloads[i] = JSON.stringify(e.payload);
    });
    return (
      await pool.query(ingestSql, [accountId, livemode, idx, names, customers, timestamps, identifiers, payloads])
    ).rows as { accepted: boolean }[];
  };
  app.post('/v1/meter_events/batch', async (c) => {
    const caller = await bareCaller(orm, c);
    if (!caller) return c.json({ error: 'unauthorized' }, 401);
    const { events } = (await c.req.json()) as {
      events: { event_name: string; customer: string; identifier: string; payload: object }[];
    };
    const rows = await insert(caller.account_id, caller.livemode, events);
    const accepted = rows.filter((r) => r.accepted).length;
    return c.json({ accepted, duplicates: rows.length - accepted, refused: 0 });
  });
  app.post('/v1/meter_events', async (c) => {
    const caller = await bareCaller(orm, c);
    if (!caller) return c.json({ error: 'unauthorized' }, 401);
    const event = (await c.req.json()) as { event_name: string; customer: string; identifier: string; payload: object };
    const [row] = await insert(caller.account_id, caller.livemode, [event]);
    return c.json({ identifier: event.identifier }, row!.accepted ? 201 : 200);
  });
  return { app, close: () => pool.end() };
}

await runBenchmark('meter-events', async (stops, say: Say) => {
  const settings = settingsFromEnv();
  let bare: ReturnType<typeof bareApp> | undefined;
  const singlesOnly = process.env.BENCH_ONLY === 'singles';
  const singlesApi = process.env.BENCH_SINGLES_API === 'process' ? 'process' : 'inline';
  const env = await startEnvironment(
    stops,
    say,
    ({ orm, config }) => {
      void config;
      bare = bareApp(orm, orm.config.get('clientUrl')!);
      return bare.app;
    },
    { api: singlesOnly ? singlesApi : 'process' },
  );
  stops.add('bare pool', () => bare!.close());
  const { orm, engineBase, bareBase } = env;
  // The API process's memory, per phase (not in BENCH_ONLY=singles, whose engine is in this process).
  const memory = env.apiPid === undefined ? undefined : new RssSampler(env.apiPid);
  if (memory) stops.add('memory sampler', async () => memory.stop());
  const tenant = await signUp(engineBase, 'Usage bench');
  const key = await call(
    'POST',
    `${engineBase}/v1/api_keys`,
    { name: 'bench', mode: 'test' },
    { authorization: `Bearer ${tenant.accessToken}` },
  );
  const headers = { authorization: `Bearer ${String(key.body!.secret)}` };
  const meter = await call(
    'POST',
    `${engineBase}/v1/meters`,
    { display_name: 'Tokens', event_name: 'bench_tokens', aggregation: 'sum', group_by: ['region'] },
    headers,
  );
  if (meter.status !== 201) throw new Error(`meter: ${JSON.stringify(meter.body)}`);
  const meterId = String(meter.body!.id);
  const connection = orm.em.getConnection();
  const customers = Array.from({ length: customerCount }, () => newId('customer'));
  await connection.execute(
    `insert into customers (id, email, account_id, livemode, created_at, updated_at) select unnest(?::text[]), 'bench@example.com', ?, false, now(), now()`,
    [`{${customers.join(',')}}`, tenant.accountId],
  );
  say(`tenant ${tenant.accountId}, meter ${meterId}, ${customerCount} customers`);

  // CPU per event: the API process's, PostgreSQL's and this process's CPU time over each round (/proc, Linux).
  const [{ data_directory: dataDirectory }] =
    await connection.execute<{ data_directory: string }[]>('show data_directory');
  const postmasterPid = Number(fs.readFileSync(`${dataDirectory}/postmaster.pid`, 'utf8').split('\n')[0]);
  const cpuNow = (): CpuSnapshot => ({
    api: env.apiPid === undefined ? 0 : processCpuSeconds(env.apiPid),
    postgres: postgresCpuSeconds(postmasterPid),
    bench: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
  });
  const cpuPerEvent: Record<string, { api: number; postgres: number; bench: number; events: number }> = {};

  const targets = { engine: engineBase, bare: bareBase } as const;
  const lines: string[] = [];
  let failed = false;
  let runIndex = 0;
  const measure = async (label: string, batchSize: number, connections: number, single = false) => {
    const results: Record<string, LoadReport[]> = { engine: [], bare: [] };
    const job = (base: string, seconds: number): LoadJob => ({
      url: `${base}/v1/meter_events${single ? '' : '/batch'}`,
      headers,
      customers,
      eventName: 'bench_tokens',
      batchSize,
      single,
      connections,
      seconds,
      duplicateShare: 0.01,
      prefix: `r${runIndex++}`,
    });
    for (const base of Object.values(targets)) await runLoad(job(base, settings.warmupSeconds));
    for (let round = 0; round < settings.rounds; round++)
      for (const [name, base] of Object.entries(targets)) {
        const cpuBefore = cpuNow();
        const report = await runLoad(job(base, settings.durationSeconds));
        const cpuAfter = cpuNow();
        results[name]!.push(report);
        const cpu = (cpuPerEvent[`${label}\u0000${name}`] ??= { api: 0, postgres: 0, bench: 0, events: 0 });
        cpu.api += cpuAfter.api - cpuBefore.api;
        cpu.postgres += cpuAfter.postgres - cpuBefore.postgres;
        cpu.bench += cpuAfter.bench - cpuBefore.bench;
        cpu.events += report.events;
        const us = (seconds: number) => Math.round((seconds * 1e6) / report.events);
        say(
          `${label}: ${name}: ${Math.round(report.events / report.seconds)} events/s (${Math.round(report.requests / report.seconds)} req/s), p99 ${round1(percentile(report.latenciesMs, 99))} ms, non-2xx ${report.non2xx}; ` +
            `CPU µs/event: API process ${env.apiPid === undefined ? 'n/a' : us(cpuAfter.api - cpuBefore.api)}, PostgreSQL ${us(cpuAfter.postgres - cpuBefore.postgres)}, ` +
            `bench process ${us(cpuAfter.bench - cpuBefore.bench)}; load average ${os.loadavg()[0]!.toFixed(1)}`,
        );
        if (report.non2xx) failed = true;
      }
    const rate = (name: string) => results[name]!.reduce((s, r) => s + r.events / r.seconds, 0) / results[name]!.length;
    const p99 = (name: string) =>
      results[name]!.reduce((s, r) => s + percentile(r.latenciesMs, 99), 0) / results[name]!.length;
    const ratio = rate('engine') / rate('bare');
    lines.push(
      `| ${label} | ${Math.round(rate('engine'))} | ${round1(p99('engine'))} | ${Math.round(rate('bare'))} | ${round1(p99('bare'))} | ${(ratio * 100).toFixed(1)}% |`,
    );
    return { engine: rate('engine'), bare: rate('bare'), ratio };
  };

  if (singlesOnly) {
    // Single events alone (group commit, services/usage/group-commit.ts), in a section of their own.
    say('ingestion: single events only');
    // How many events each statement carried: the group committer of the engine's store (same process).
    const committer = singlesApi === 'inline' ? singleEventCommitterFor(usageStoreFor(orm)) : undefined;
    const coalescing = async (run: () => Promise<{ engine: number; bare: number; ratio: number }>) => {
      const before = { batches: committer?.batches ?? 0, events: committer?.events ?? 0 };
      const rates = await run();
      if (!committer) return { ...rates, perStatement: undefined };
      return { ...rates, perStatement: (committer.events - before.events) / (committer.batches - before.batches || 1) };
    };
    const perStatement = (value: number | undefined) => (value === undefined ? 'not counted' : value.toFixed(1));
    const at16 = await coalescing(() => measure('single events (16 connections)', 1, 16, true));
    const at64 = await coalescing(() => measure('single events (64 connections)', 1, 64, true));
    const cpus = os.cpus();
    const cpuLines = Object.entries(cpuPerEvent).map(([key, cpu]) => {
      const [label, name] = key.split('\u0000');
      const us = (seconds: number) => Math.round((seconds * 1e6) / cpu.events);
      return `| ${label} | ${name} | ${singlesApi === 'process' && name === 'engine' ? us(cpu.api) : 'n/a'} | ${us(cpu.postgres)} | ${us(cpu.bench)} |`;
    });
    const verdict = (rate: number) => `${Math.round(rate)}/s, ${rate >= 2000 ? 'met' : 'NOT met'}`;
    say(
      `VERDICT, issue #28's single events ≥ 2,000/s: 16 connections ${verdict(at16.engine)}; 64 connections ${verdict(at64.engine)} ` +
        `(load average ${env.loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0]!.toFixed(1)} now)`,
    );
    writeSection(
      singlesResultsFile,
      singlesHeading,
      [
        singlesHeading,
        '',
        `Written by \`BENCH_ONLY=singles npm run bench:meter-events\` on ${new Date().toISOString().slice(0, 10)}: ${cpus.length} cores, Node ${process.version}, ` +
          `load average ${env.loadAtStart.toFixed(2)} at the start and ${os.loadavg()[0]!.toFixed(2)} at the end (above 2 means other work shared the machine). ` +
          `${settings.warmupSeconds} s warm-up per target, ${settings.rounds} round(s) of ${settings.durationSeconds} s, alternating. ` +
          (singlesApi === 'process'
            ? "The engine's API runs in its own process as `npm run api` starts it (BENCH_SINGLES_API=process); the bare route runs in this one. "
            : "The engine's API runs in this process, beside the bare route. ") +
          "The engine coalesces concurrent single events into one statement and commit (group commit: the events of a turn of the event loop, or those that arrived while the account's four statements ran); the bare route commits each request alone.",
        '',
        '| ingestion | engine events/s | engine p99 ms | bare events/s | bare p99 ms | engine/bare |',
        '|---|---:|---:|---:|---:|---:|',
        ...lines,
        '',
        `Events per ingestion statement on the engine (warm-up included): ${perStatement(at16.perStatement)} at 16 connections, ${perStatement(at64.perStatement)} at 64.`,
        '',
        'CPU time per event over the measured rounds (/proc): the API process (BENCH_SINGLES_API=process only), PostgreSQL (the server and its backends), ' +
          'and the bench process (the bare route when it is measured, the load generator always, the inline engine when BENCH_SINGLES_API is not process).',
        '',
        '| ingestion | target | API process µs/event | PostgreSQL µs/event | bench process µs/event |',
        '|---|---|---:|---:|---:|',
        ...cpuLines,
        '',
        `Goal of issue #28: single events ≥ 2,000/s (16 connections: ${Math.round(at16.engine)}, 64: ${Math.round(at64.engine)}).`,
      ].join('\n'),
    );
    say(`results written to ${path.relative(process.cwd(), singlesResultsFile)}`);
    return failed ? 1 : 0;
  }

  const mb = (value: number | undefined) => (value === undefined ? 'n/a' : `${Math.round(value)} MB`);
  const idle = memory!.read();
  say(`API process ${env.apiPid}: ${mb(idle?.rss)} RSS before any load`);
  const phase = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    memory!.phase(name);
    const result = await run();
    memory!.phase(undefined);
    say(`${name}: the API process peaked at ${mb(memory!.peaks.get(name))} RSS`);
    return result;
  };
  say('ingestion: batches of 100');
  const b100 = await phase('batches of 100', () => measure('batches of 100 (8 connections)', 100, 8));
  say('ingestion: batches of 1,000');
  const b1000 = await phase('batches of 1,000', () => measure('batches of 1,000 (4 connections)', 1000, 4));
  say('ingestion: single events');
  const singles = await phase('single events', () => measure('single events (16 connections)', 1, 16, true));

  // Exactly once: every identifier in the table once; the table's count equals what was answered accepted (checked through the identifiers).
  const [{ events: stored, identifiers }] = await connection.execute<{ events: string; identifiers: string }[]>(
    `select (select count(*) from meter_events where account_id = ?) as events, (select count(*) from meter_event_identifiers where account_id = ?) as identifiers`,
    [tenant.accountId, tenant.accountId],
  );
  if (stored !== identifiers) {
    say(`FAILED: ${stored} events stored for ${identifiers} identifiers`);
    failed = true;
  }
  say(`stored ${stored} events, ${identifiers} identifiers`);

  // Visibility while ingesting at 5,000 events/s (50 batches of 100 per second, paced).
  say('visibility: probing while ingesting at 5,000 events/s');
  memory!.phase('visibility at 5,000 events/s');
  const background = runLoad({
    url: `${engineBase}/v1/meter_events/batch`,
    headers,
    customers,
    eventName: 'bench_tokens',
    batchSize: 100,
    single: false,
    connections: 4,
    seconds: 20,
    duplicateShare: 0.01,
    ratePerSecond: 5000,
    prefix: 'vis',
  });
  // Awaited below; should a probe fail first, its rejection (the servers stopping) must not end the process before the stops.
  background.catch(() => {});
  const probeCustomer = customers[0]!;
  const visibility: number[] = [];
  const since = Math.floor(Date.now() / 1000) - 60;
  let probes = 0;
  const probeUntil = Date.now() + 18_000;
  while (Date.now() < probeUntil) {
    const t0 = performance.now();
    const identifier = `probe-${probes++}`;
    const sent = await call(
      'POST',
      `${engineBase}/v1/meter_events/batch`,
      {
        events: [
          { event_name: 'bench_tokens', customer: probeCustomer, identifier, payload: { value: 1, region: 'probe' } },
        ],
      },
      headers,
    );
    if (sent.status !== 200) throw new Error(`probe: ${JSON.stringify(sent.body)}`);
    for (;;) {
      const summary = await call(
        'GET',
        `${engineBase}/v1/meters/${meterId}/event_summaries?customer=${probeCustomer}&start_time=${since}&end_time=${since + 3600}&group_by=region`,
        undefined,
        headers,
      );
      const probeRow = (summary.body!.data as { dimensions: { region: string }; events: number }[]).find(
        (d) => d.dimensions.region === 'probe',
      );
      if (probeRow && probeRow.events >= probes) break;
    }
    visibility.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 50));
  }
  const backgroundReport = await background;
  memory!.phase(undefined);
  const afterLoad = memory!.read();
  say(
    `visibility: ${visibility.length} probes, p50 ${round1(percentile(visibility, 50))} ms, p99 ${round1(percentile(visibility, 99))} ms; background ${Math.round(backgroundReport.events / backgroundReport.seconds)} events/s`,
  );
  const benchRss = process.memoryUsage().rss;
  const memoryPhases = [...memory!.peaks.entries()];
  const peakRss = Math.max(...memoryPhases.map(([, v]) => v));
  say(
    `API process memory: ${memoryPhases.map(([name, v]) => `${name} ${mb(v)}`).join(', ')}; VmHWM ${mb(afterLoad?.hwm)}`,
  );
  if (peakRss >= 300) say(`note: the API process peaked at ${mb(peakRss)} RSS, over the issue's 300 MB`);

  // Aggregation over a large table.
  say(
    `aggregation: generating ${bigEvents.toLocaleString('en')} events for ${bigCustomers.toLocaleString('en')} customers with generate_series...`,
  );
  const bigMeter = 'mtr_bench_big';
  const generated = Date.now();
  await connection.execute(
    `insert into meter_events (account_id, livemode, meter_id, customer_id, identifier, "timestamp", value, payload)
     select ?, false, ?, 'cus_big_' || (g % ${bigCustomers}), 'big-' || g, now() - make_interval(secs => (g * 7919) % (30 * 86400)), (g % 1000) + 0.5,
       jsonb_build_object('value', (g % 1000) + 0.5, 'user', 'u' || (g % 37), 'region', case when g % 3 = 0 then 'eu' else 'us' end)
     from generate_series(1::bigint, ?::bigint) g`,
    [tenant.accountId, bigMeter, bigEvents],
  );
  await connection.execute('analyze meter_events');
  const generateSeconds = (Date.now() - generated) / 1000;
  say(`aggregation: generated in ${round1(generateSeconds)} s`);
  const store = new PostgresUsageStore(createUsagePool(orm.config.get('clientUrl')!, 4));
  stops.add('usage store', () => store.close());
  const end = new Date();
  const start = new Date(end.getTime() - 30 * 86_400_000);
  const aggregations: Aggregation[] = ['count', 'sum', 'max', 'unique_count', 'last', 'weighted_sum'];
  const aggregateLines: string[] = [];
  for (const aggregation of aggregations) {
    for (const groupBy of [undefined, ['region']]) {
      const ref: MeterRef = {
        id: bigMeter,
        eventName: 'big',
        aggregation,
        valueProperty: aggregation === 'unique_count' ? 'user' : 'value',
      };
      const times: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t0 = performance.now();
        await store.aggregate({
          accountId: tenant.accountId,
          livemode: false,
          customerId: `cus_big_${(i * 7907) % bigCustomers}`,
          meter: ref,
          start,
          end,
          groupBy,
        });
        times.push(performance.now() - t0);
      }
      aggregateLines.push(
        `| ${aggregation}${groupBy ? ' by region' : ''} | ${round1(percentile(times, 50))} | ${round1(percentile(times, 99))} |`,
      );
      say(
        `aggregation ${aggregation}${groupBy ? ' by region' : ''}: p50 ${round1(percentile(times, 50))} ms, p99 ${round1(percentile(times, 99))} ms`,
      );
    }
  }
  const [{ size }] = await connection.execute<{ size: string }[]>(
    `select pg_size_pretty(sum(pg_total_relation_size(c.oid))) as size from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'meter_events'::regclass`,
  );

  const cpus = os.cpus();
  const section = [
    sectionHeading,
    '',
    `Written by \`npm run bench:meter-events\` (bench/meter-events.ts) on ${new Date().toISOString().slice(0, 10)}. Machine: ${cpus.length} cores (${cpus[0]?.model.trim()}), ` +
      `Node ${process.version}, embedded PostgreSQL ${env.pgVersion} on the same machine; load average ${env.loadAtStart.toFixed(2)} at the start and ${os.loadavg()[0]!.toFixed(2)} at the end ` +
      '(above 2 means other work shared the machine: the absolute numbers are then noisy, the ratios of one run less so). The engine is the API process as production runs it ' +
      "(`node api/server.ts`, its own process and event loop); the bare route runs in this script's process, and the load generator on a worker thread of it " +
      `(node:http, keep-alive); ${settings.warmupSeconds} s warm-up per target, then ${settings.rounds} round(s) of ${settings.durationSeconds} s per target, alternating. 1% of identifiers are duplicates of earlier ones. ` +
      'The bare route authenticates the same API key and runs the same one-statement insert (services/usage/postgres-store.ts ingestSql), with no validation and no middleware.',
    '',
    '| ingestion | engine events/s | engine p99 ms | bare events/s | bare p99 ms | engine/bare |',
    '|---|---:|---:|---:|---:|---:|',
    ...lines,
    '',
    `Every accepted event was stored once: ${stored} events for ${identifiers} identifiers after the ingestion rounds.`,
    '',
    `**Event → visible in the summary** while ingesting at a paced 5,000 events/s (achieved ${Math.round(backgroundReport.events / backgroundReport.seconds)}/s): ` +
      `${visibility.length} probes (a batch of one, then GET event_summaries until it counts it), p50 ${round1(percentile(visibility, 50))} ms, p99 ${round1(percentile(visibility, 99))} ms. ` +
      'An event is visible as soon as its POST answered (one statement, committed).',
    '',
    `**Aggregation**: one customer's 30-day period (partitions pruned to two months) over a meter holding ${bigEvents.toLocaleString('en')} events of ${bigCustomers.toLocaleString('en')} customers ` +
      `(about ${Math.round(bigEvents / bigCustomers)} per customer; generated with generate_series in ${round1(generateSeconds)} s; the events table and its index: ${size}). 200 random customers each:`,
    '',
    '| aggregation | p50 ms | p99 ms |',
    '|---|---:|---:|',
    ...aggregateLines,
    '',
    `**Memory of the API process** (\`node api/server.ts\` on its own, NODE_ENV=production, logging silenced; VmRSS from /proc every 100 ms): ` +
      `${mb(idle?.rss)} before any load; peak ${memoryPhases.map(([name, v]) => `${mb(v)} during ${name}`).join(', ')}; ` +
      `the kernel's high-water mark (VmHWM) over the whole run ${mb(afterLoad?.hwm)}, ${mb(afterLoad?.rss)} once the load stopped ` +
      `(goal of issue #28: under 300 MB; ${peakRss < 300 ? 'met' : 'NOT met'}). This script's process (the bare route, the ORM, the load generator's thread) was at ${Math.round(benchRss / 1048576)} MB.`,
    '',
    `Goals of issue #28: API memory under 300 MB under this load (peak ${mb(peakRss)}); ≥ 10,000 events/s in batches (batches of 100: ${Math.round(b100.engine)}, of 1,000: ${Math.round(b1000.engine)}); ≥ 50% of bare (${(b100.ratio * 100).toFixed(0)}%, ${(b1000.ratio * 100).toFixed(0)}%); ` +
      `single events ≥ 2,000/s (${Math.round(singles.engine)}); visible p99 < 2 s; aggregation p99 < 100 ms at 10,000,000 events (measured at ${bigEvents.toLocaleString('en')}: see above).`,
  ].join('\n');
  writeSection(resultsFile, sectionHeading, section);
  say('results written to bench/RESULTS.md');
  return failed ? 1 : 0;
});
