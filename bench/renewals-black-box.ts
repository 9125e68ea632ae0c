/**
 * bench:renewals' black-box mode (`npm run bench:renewals -- --black-box`): the renewal wave as a user of the
 * public API sees it, beside the internal mode (bench/renewals.ts) that starts workflows with carried-over state.
 *
 * It runs the engine as deployed: `npm run api` and `npm run worker`'s commands, processes of their own, on an embedded
 * PostgreSQL and the Temporal dev server (or, BENCH_TEMPORAL=postgres, the real server on PostgreSQL), and talks
 * to the API over HTTP only: a sandbox account and a test key; N customers (pm_card_visa), each with a
 * subscription to a plan with a 30-day trial, all on test clocks (BENCH_CLOCK_SIZE customers per clock, default
 * 100, TEST_CLOCK_CUSTOMERS raised to match); then every clock advanced at once past the trial end.
 * Measured: creating the customers and subscriptions (per second), and renewals per second from the first advance
 * call to the moment every trial's invoice is paid (the finish line is read from the database every 500 ms: N paid
 * invoices), and when the last clock said `ready`; the worker process's peak RSS (/proc, every 500 ms) while creating and while
 * advancing. Checked afterwards: N paid invoices, N succeeded charges.
 *
 * Settings: BENCH_N (default 1000), BENCH_CLOCK_SIZE, BENCH_CONCURRENCY (requests at once while creating, default
 * 16), BENCH_WRITE=0 (print the section instead of writing it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Charge, Invoice } from '../db/entities/index.ts';
import { freePort, waitForPort } from '../dev/processes.ts';
import { defaultHistoryShards } from '../dev/temporal-server.ts';
import { resultsFile, round1, RssSampler, runBenchmark, sleep, writeSection } from './harness.ts';
import { codeState, startRenewalsInfrastructure } from './renewals-setup.ts';

const positive = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
};

const n = positive('BENCH_N', 1000);
const clockSize = Math.min(n, positive('BENCH_CLOCK_SIZE', 100));
const concurrency = positive('BENCH_CONCURRENCY', 16);
const temporalKind = process.env.BENCH_TEMPORAL === 'postgres' ? 'postgres' : 'dev';
const root = fileURLToPath(new URL('..', import.meta.url));
const start = new Date('2027-01-01T00:00:00Z');
const pastTrial = new Date(start.getTime() + 31 * 86_400_000);

await runBenchmark('bench:renewals --black-box', async (stops, say) => {
  const loadAtStart = os.loadavg()[0]!;
  const cores = os.cpus().length;
  const { tmpDir, databaseUrl, orm, pgVersion, temporal } = await startRenewalsInfrastructure({
    prefix: 'billing-bench-black-box-',
    temporal: temporalKind,
    historyShards: defaultHistoryShards,
    sqlitePragmas: ['journal_mode=wal', 'synchronous=normal'],
    say,
    stops,
  });
  const port = await freePort();
  const env = {
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'bench-black-box',
    PORT: String(port),
    DATA_DIR: tmpDir,
    LOG_LEVEL: 'error',
    TEST_CLOCK_CUSTOMERS: String(clockSize),
    TEST_CLOCKS_PER_ACCOUNT: String(Math.ceil(n / clockSize) + 1),
  };
  // Each process with the node flags of its npm script (`npm run worker`, `npm run api`: their heap caps) and the image's
  // MALLOC_ARENA_MAX=2 (Dockerfile), as deployed.
  const scripts = (
    JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  const spawnEngine = (script: 'worker' | 'api', name: string): ChildProcess => {
    const [command, ...args] = scripts[script]!.split(/\s+/);
    if (command !== 'node') throw new Error(`npm run ${script} is not a node command: ${scripts[script]}`);
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    stops.add(name, async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    });
    return child;
  };
  // The worker migrates the schema first; the API then finds it ready.
  say(`starting the worker process (${scripts.worker}) and the API process (${scripts.api})`);
  const workerProcess = spawnEngine('worker', 'worker process');
  // The worker's RSS from /proc: the peak while the subscriptions are created, and during the advance.
  const workerRss = new RssSampler(workerProcess.pid!, 500);
  workerRss.phase('create');
  stops.add('worker RSS sampler', async () => workerRss.stop());
  await sleep(3000);
  spawnEngine('api', 'API process');
  await waitForPort(port, '127.0.0.1', 180_000);
  const base = `http://127.0.0.1:${port}`;

  let headers: Record<string, string> = { 'content-type': 'application/json' };
  const call = async (method: string, url: string, body?: unknown): Promise<any> => {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(base + url, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = await response.json();
      // The API is up before the worker has migrated and bundled: a 503 is retried, as a client would.
      if (response.status === 503 && attempt < 60) {
        await sleep(1000);
        continue;
      }
      if (response.status >= 400) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    }
  };
  await call('POST', '/v1/accounts', {
    email: 'bench@black-box.example',
    name: 'Bench',
    type: 'business',
    password: 'Bench!2345x',
  });
  const login = await call('POST', '/v1/auth/login', { email: 'bench@black-box.example', password: 'Bench!2345x' });
  headers = { ...headers, authorization: `Bearer ${login.access_token}` };
  const key = await call('POST', '/v1/api_keys', { mode: 'test' });
  headers = { 'content-type': 'application/json', authorization: `Bearer ${key.secret}` };

  const plan = await call('POST', '/v1/plans', {
    name: 'Pro',
    amount: 2000,
    currency: 'USD',
    interval: 'month',
    trial_period_days: 30,
  });
  const clocks: string[] = [];
  for (let i = 0; i < Math.ceil(n / clockSize); i++)
    clocks.push((await call('POST', '/v1/test_clocks', { frozen_time: start.toISOString(), name: `bench ${i}` })).id);
  say(`creating ${n} customers and subscriptions on ${clocks.length} clocks, ${concurrency} requests at once`);
  const createStarted = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const customer = await call('POST', '/v1/customers', {
          email: `c${i}@black-box.example`,
          payment_method: 'pm_card_visa',
          test_clock: clocks[Math.floor(i / clockSize)],
        });
        await call('POST', '/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
        if ((i + 1) % 100 === 0) say(`created ${i + 1}/${n}`);
      }
    }),
  );
  const createSeconds = (Date.now() - createStarted) / 1000;
  say(`created in ${round1(createSeconds)} s (${round1(n / createSeconds)} customers with a subscription per second)`);

  // Every clock advanced at once; renewals/s until every trial's invoice is paid.
  const paid = async () => orm.em.fork().count(Invoice, { status: 'paid' });
  workerRss.phase('advance');
  const advanced = Date.now();
  await Promise.all(
    clocks.map((id) => call('POST', `/v1/test_clocks/${id}/advance`, { frozen_time: pastTrial.toISOString() })),
  );
  let paidAt: number | undefined;
  let readyAt: number | undefined;
  for (;;) {
    const count = await paid();
    if (count >= n) paidAt ??= Date.now();
    if (paidAt !== undefined && readyAt === undefined) {
      const states = await Promise.all(clocks.map((id) => call('GET', `/v1/test_clocks/${id}`)));
      if (states.every((c) => c.status === 'ready')) readyAt = Date.now();
    }
    if (paidAt !== undefined && readyAt !== undefined) break;
    if (Date.now() - advanced > 1_800_000) throw new Error(`only ${count}/${n} paid 30 minutes after the advance`);
    say(`${count}/${n} paid, ${round1((Date.now() - advanced) / 1000)} s after the advance`);
    await sleep(500);
  }
  const wall = (paidAt - advanced) / 1000;
  const em = orm.em.fork();
  const charges = await em.count(Charge, { status: 'succeeded' });
  const ok = (await paid()) === n && charges === n;
  // The clock Worker's cache, when this run set it (TEST_CLOCK_WORKER_CACHE reaches the worker through the environment).
  const clockCache = process.env.TEST_CLOCK_WORKER_CACHE;
  const heading = `## Renewals over the public API: ${n.toLocaleString('en')} trials ending on test clocks (black box)${temporalKind === 'postgres' ? ', Temporal server on PostgreSQL' : ''}${clockCache ? ` (TEST_CLOCK_WORKER_CACHE=${clockCache})` : ''}`;
  const section = [
    heading,
    '',
    `Written by \`BENCH_N=${n} npm run bench:renewals -- --black-box\` (bench/renewals-black-box.ts) on ${new Date().toISOString()}, measuring ${codeState()}.`,
    '',
    `Machine: ${cores} cores, Node ${process.version}, load average ${loadAtStart.toFixed(2)} at the start (shared with other work); the engine as deployed, \`${scripts.api}\` and ` +
      `\`${scripts.worker}\` (their npm scripts, with MALLOC_ARENA_MAX=2 as the Dockerfile sets it${clockCache ? `, and TEST_CLOCK_WORKER_CACHE=${clockCache}` : ''}), on ${temporalKind === 'postgres' ? 'the real Temporal server on PostgreSQL' : 'the Temporal dev server (WAL)'} and embedded PostgreSQL ${pgVersion}. ` +
      `Over HTTP only: a test key, ${n} customers (pm_card_visa) with a subscription each to a plan with a 30-day trial, on ${clocks.length} test clocks of ${clockSize}, ` +
      `${concurrency} requests at once; then every clock advanced at once past the trial end.`,
    '',
    '| N | create customers + subscriptions s | created per s | advance → every invoice paid s | **renewals/s** | advance → every clock `ready` s | worker peak RSS MB, creating / advancing | paid invoices | succeeded charges |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${n} | ${round1(createSeconds)} | ${round1(n / createSeconds)} | ${round1(wall)} | **${round1(n / wall)}** | ${round1((readyAt - advanced) / 1000)} | ${Math.round(workerRss.peaks.get('create') ?? 0)} / ${Math.round(workerRss.peaks.get('advance') ?? 0)} | ${await paid()} | ${charges} |`,
    '',
    ok
      ? `Every trial was invoiced, charged and paid once (${n} paid invoices, ${n} succeeded charges).`
      : `**Money check failed**: ${await paid()} paid invoices and ${charges} succeeded charges for ${n} trials.`,
    '',
  ].join('\n');
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, section);
  say(section);
  return ok ? 0 : 1;
});
