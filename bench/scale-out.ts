/**
 * Benchmark: the scale-out proof. The engine's workers and API processes are
 * stateless, so more of them against one Temporal and one PostgreSQL must stay
 * correct, and should go faster where there is CPU to take. In one run:
 *
 *   npm run bench:scale-out        (or: node bench/scale-out.ts)
 *
 *  - renewals: a wave of N active subscriptions (30-day plan) whose billing cycle 0 ends
 *    at the same instant T, each renewing into cycle 1 (bench:renewals' default scenario)
 *    (the rows and workflows of bench/renewals.ts, bench/renewals-setup.ts), on one
 *    task queue served by 1, then by 2 worker processes (bench/renewals-worker.ts,
 *    the engine's worker). Afterwards: N paid invoices, one per subscription, numbered
 *    1..N without gaps; N succeeded charges, one per invoice, of the plan's amount.
 *  - API: R `POST /v1/transactions` credits with an Idempotency-Key each, through 1,
 *    then 2 API processes (`node api/server.ts`, the production entry, each on its own
 *    port), the client sending round-robin, 16 at a time. Every 10th key is sent twice
 *    at once, to both processes when there are two (a client retrying through another
 *    instance behind a load balancer); an answer `409 idempotency_in_progress` is retried
 *    after 20 ms, as a client would. Afterwards: one transaction per key (each key's
 *    answers name the same transaction), the balance equals the sum of the credits,
 *    the ledger's entries sum to zero.
 *
 * Everything (PostgreSQL, Temporal, the worker and API processes, this client) shares
 * the machine: on 2 cores a second process cannot add CPU, so the proof is the checks
 * and the ratio, not a speed-up. Exits 1 when a check fails.
 *
 * Settings (environment): BENCH_N (renewals, default 500), BENCH_REQUESTS (credits per
 * configuration, default 2000), BENCH_CONNECTIONS (client concurrency, default 16),
 * BENCH_ROUNDS (default 1; each round runs both sizes, the second round's in the
 * other order: 2 then 1),
 * BENCH_TEMPORAL=postgres (the real Temporal server on PostgreSQL instead of the dev
 * server, as bench/renewals.ts; BENCH_HISTORY_SHARDS), BENCH_SQLITE_PRAGMAS (dev server;
 * default npm start's WAL), BENCH_WRITE=0 prints the section instead of writing it to
 * bench/RESULTS.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { MikroORM } from '@mikro-orm/postgresql';

import { freePort } from '../dev/processes.ts';
import { devServerSqlitePragmas } from '../dev/temporal-dev-server.ts';
import { defaultHistoryShards } from '../dev/temporal-server.ts';
import { temporalServerVersion } from '../dev/tools.ts';
import {
  AccountIdKey,
  CustomerIdKey,
  LivemodeKey,
  PlanIdKey,
  SubscriptionStatusKey,
} from '../workflows/search-attributes.ts';
import { call, resultsFile, runBenchmark, type Say, signUp, sleep, type Stops, writeSection } from './harness.ts';
import {
  checkEngineMoney,
  codeState,
  engineDoneQuery,
  inParallel,
  insertProjections,
  namespace,
  planAmount,
  renewalInterval,
  type RenewalsInfrastructure,
  renewingSnapshot,
  seedEngine,
  startRenewalsInfrastructure,
  WorkerProcess,
} from './renewals-setup.ts';
import { subscriptionWorkflow } from './workflows/index.ts';

const positive = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
};

const settings = {
  n: positive('BENCH_N', 500),
  requests: positive('BENCH_REQUESTS', 2000),
  connections: positive('BENCH_CONNECTIONS', 16),
  rounds: positive('BENCH_ROUNDS', 1),
  temporal: ((): 'dev' | 'postgres' => {
    const kind = process.env.BENCH_TEMPORAL ?? 'dev';
    if (kind !== 'dev' && kind !== 'postgres') throw new Error(`BENCH_TEMPORAL must be dev or postgres, not ${kind}`);
    return kind;
  })(),
  historyShards: positive('BENCH_HISTORY_SHARDS', defaultHistoryShards),
  sqlitePragmas:
    process.env.BENCH_SQLITE_PRAGMAS === undefined
      ? devServerSqlitePragmas
      : process.env.BENCH_SQLITE_PRAGMAS.split(',')
          .map((p) => p.trim())
          .filter(Boolean),
};
const creditAmount = 100;
/** Every `duplicateEvery`-th key is sent twice at once. */
const duplicateEvery = 10;
const rate = (perSecond: number) => (perSecond < 100 ? perSecond.toFixed(1) : String(Math.round(perSecond)));

// ---- Renewals: one task queue, 1 or 2 worker processes --------------------------------

interface WaveResult {
  round: number;
  workers: number;
  n: number;
  wallSeconds: number;
  perSecond: number;
  /** renewCycle runs per worker process: both took a share. */
  perWorker: number[];
  checks: string;
}

async function renewalWave(
  infra: RenewalsInfrastructure,
  workers: number,
  round: number,
  say: Say,
  stops: Stops,
): Promise<WaveResult> {
  const { orm, client } = infra;
  const n = settings.n;
  const label = `renewals, ${workers} worker${workers === 1 ? '' : 's'}, round ${round}`;
  const taskQueue = `bench-scale-out-${workers}-${randomBytes(3).toString('hex')}`;
  const seed = await seedEngine(orm, n, round * 10 + workers, renewalInterval);
  const processes = Array.from(
    { length: workers },
    () =>
      new WorkerProcess({
        databaseUrl: infra.databaseUrl,
        temporalAddress: infra.temporal.address,
        namespace,
        taskQueue,
        bundlePath: infra.bundlePath,
        mailDir: path.join(infra.tmpDir, 'mail'),
        overrides: {},
        dbPool: undefined,
      }),
  );
  processes.forEach((p, i) => stops.add(`worker process ${i + 1} (${label})`, () => p.kill()));
  await Promise.all(processes.map((p) => p.ready()));

  const lead = 15 + n * 0.04;
  const startedAt = Date.now();
  const at = new Date(startedAt + lead * 1000);
  say(
    `${label}: starting ${n} active subscriptions on ${taskQueue}, billing cycle 0 ending at T = ${at.toISOString()} (in ${lead.toFixed(0)} s)`,
  );
  const snapshots = seed.customers.map((customerId) => renewingSnapshot(seed, customerId, at));
  await insertProjections(orm, snapshots);
  await inParallel(snapshots, 32, async (snapshot) => {
    await client.workflow.start(subscriptionWorkflow, {
      workflowId: snapshot.id,
      taskQueue,
      args: [{ snapshot, plan: seed.plan }],
      workflowIdConflictPolicy: 'FAIL',
      typedSearchAttributes: [
        { key: SubscriptionStatusKey, value: 'active' },
        { key: AccountIdKey, value: snapshot.accountId },
        { key: CustomerIdKey, value: snapshot.customerId },
        { key: PlanIdKey, value: snapshot.planId },
        { key: LivemodeKey, value: false },
      ],
    });
  });
  // Every workflow's first task has set its timer when all the processes have been idle for a second.
  let idleSince: number | undefined;
  while (Date.now() < at.getTime()) {
    const statuses = await Promise.all(processes.map((p) => p.status()));
    if (statuses.every((s) => s.inFlightWorkflowActivations === 0 && s.inFlightActivities === 0)) {
      idleSince ??= Date.now();
      if (Date.now() - idleSince >= 1000) break;
    } else {
      idleSince = undefined;
    }
    await sleep(100);
  }
  const slack = (at.getTime() - Date.now()) / 1000;
  if (slack < 0.5)
    throw new Error(
      `${label}: the subscriptions were not all started and settled before T (${slack.toFixed(1)} s left)`,
    );
  say(`${label}: all started and settled, ${slack.toFixed(1)} s to T`);
  await sleep(at.getTime() - Date.now());
  const before = await Promise.all(processes.map((p) => p.status()));

  const deadline = at.getTime() + 900_000;
  let done = 0;
  let lastSaid = Date.now();
  for (;;) {
    done = (await orm.em.fork().getConnection().execute<{ n: number }[]>(engineDoneQuery, [seed.accountId, 1]))[0]!.n;
    if (done >= n) break;
    for (const p of processes) if (p.failure) throw new Error(`${label}: ${p.failure}`);
    if (Date.now() > deadline) throw new Error(`${label}: only ${done}/${n} renewed 900 s after T`);
    if (Date.now() - lastSaid >= 2000) {
      lastSaid = Date.now();
      say(`${label}: ${done}/${n} renewed (${((Date.now() - at.getTime()) / 1000).toFixed(1)} s after T)`);
    }
    await sleep(200);
  }
  const wallSeconds = (Date.now() - at.getTime()) / 1000;
  await sleep(2000);
  const after = await Promise.all(processes.map((p) => p.status()));
  const perWorker = after.map((s, i) => (s.activityCalls.renewCycle ?? 0) - (before[i]!.activityCalls.renewCycle ?? 0));
  await Promise.all(processes.map((p) => p.stop()));

  await checkEngineMoney(orm, seed.accountId, n);
  const checks = await checkOnePerSubscription(orm, seed.accountId, n);
  const result = { round, workers, n, wallSeconds, perSecond: n / wallSeconds, perWorker, checks };
  say(
    `${label}: ${n} in ${wallSeconds.toFixed(1)} s (${rate(result.perSecond)}/s), renewCycle runs per process ${perWorker.join(' / ')}; ${checks}`,
  );
  return result;
}

/** Beyond the totals: one invoice per subscription, paid once; one succeeded charge per invoice; numbers 1..N. */
async function checkOnePerSubscription(orm: MikroORM, accountId: string, n: number): Promise<string> {
  const [row] = await orm.em
    .fork()
    .getConnection()
    .execute<
      {
        subscriptions: number;
        invoices: number;
        paid_once: number;
        charged_invoices: number;
        charge_keys: number;
        charges: number;
        min_number: string;
        max_number: string;
      }[]
    >(
      `select (select count(distinct subscription_id)::int from invoices where account_id = ?) as subscriptions,
            (select count(*)::int from invoices where account_id = ?) as invoices,
            (select count(*)::int from invoices where account_id = ? and status = 'paid' and amount_paid = amount_due) as paid_once,
            (select count(distinct i.charge_id)::int from invoices i join charges c on c.id = i.charge_id where i.account_id = ? and c.status = 'succeeded') as charged_invoices,
            (select count(distinct idempotency_key)::int from charges where account_id = ? and status = 'succeeded') as charge_keys,
            (select count(*)::int from charges where account_id = ?) as charges,
            (select min(number) from invoices where account_id = ?) as min_number,
            (select max(number) from invoices where account_id = ?) as max_number`,
      [accountId, accountId, accountId, accountId, accountId, accountId, accountId, accountId],
    );
  const r = row!;
  const problems = [
    r.subscriptions !== n && `${r.subscriptions} subscriptions with an invoice`,
    r.invoices !== n && `${r.invoices} invoices`,
    r.paid_once !== n && `${r.paid_once} invoices paid in full`,
    r.charged_invoices !== n && `${r.charged_invoices} invoices paid by distinct succeeded charges`,
    r.charge_keys !== n && `${r.charge_keys} distinct idempotency keys of succeeded charges`,
    r.charges !== n && `${r.charges} charges in all`,
  ].filter(Boolean);
  if (problems.length > 0)
    throw new Error(`the renewals billed wrong: expected ${n} of each, found ${problems.join(', ')}`);
  return `${n} invoices (one per subscription, numbers ${r.min_number}…${r.max_number}, gapless), ${n} paid, ${n} charges of ${planAmount} (one per invoice)`;
}

// ---- API: 1 or 2 API processes ------------------------------------------------

interface ApiProcess {
  base: string;
  child: ChildProcess;
}

async function startApiProcess(
  infra: RenewalsInfrastructure,
  index: number,
  say: Say,
  stops: Stops,
): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [fileURLToPath(new URL('../api/server.ts', import.meta.url))], {
    env: {
      ...process.env,
      NODE_ENV: 'development',
      PORT: String(port),
      DATABASE_URL: infra.databaseUrl,
      TEMPORAL_ADDRESS: infra.temporal.address,
      TEMPORAL_NAMESPACE: namespace,
      DATA_DIR: path.join(infra.tmpDir, `api-${index}`),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  stops.add(`API process ${index}`, async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const deadline = Date.now() + 30_000;
    while (!exited && Date.now() < deadline) await sleep(50);
    if (!exited) child.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`API process ${index} exited before it answered /health`);
    const health = await fetch(`${base}/health`).catch(() => undefined);
    if (health?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`API process ${index} did not answer /health within 60 s`);
    await sleep(200);
  }
  say(`API process ${index} (pid ${child.pid}) on ${base}`);
  return { base, child };
}

interface CreditsResult {
  round: number;
  processes: number;
  requests: number;
  keys: number;
  wallSeconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers `409 idempotency_in_progress`, retried. */
  inProgress: number;
  replayed: number;
  checks: string;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function credits(
  orm: MikroORM,
  apis: ApiProcess[],
  processes: number,
  round: number,
  say: Say,
): Promise<CreditsResult> {
  const label = `credits, ${processes} API process${processes === 1 ? '' : 'es'}, round ${round}`;
  const bases = apis.slice(0, processes).map((a) => a.base);
  const tenant = await signUp(bases[0]!, `Bench Scale-out ${processes} (${round})`);
  const key = await call(
    'POST',
    `${bases[0]}/v1/api_keys`,
    { name: 'bench', mode: 'test' },
    { authorization: `Bearer ${tenant.accessToken}` },
  );
  if (key.status !== 201) throw new Error(`API key failed (${key.status}): ${JSON.stringify(key.body)}`);
  const headers = { authorization: `Bearer ${String(key.body!.secret)}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ account_id: tenant.accountId, amount: creditAmount, currency: 'USD', type: 'credit' });

  // The requests in the order they are sent: round-robin over the processes; a duplicated key's second send follows its first at once, to the other process.
  const prefix = randomBytes(4).toString('hex');
  const plan: { key: string; base: string }[] = [];
  for (let k = 0; plan.length < settings.requests; k++) {
    const idempotencyKey = `scale-out-${prefix}-${k}`;
    plan.push({ key: idempotencyKey, base: bases[plan.length % bases.length]! });
    if (k % duplicateEvery === 0 && plan.length < settings.requests)
      plan.push({ key: idempotencyKey, base: bases[plan.length % bases.length]! });
  }
  const keys = new Set(plan.map((p) => p.key)).size;

  const latencies: number[] = [];
  const answers = new Map<string, Set<string>>();
  let inProgress = 0;
  let replayed = 0;
  const failures: string[] = [];
  const started = performance.now();
  await inParallel(plan, settings.connections, async ({ key: idempotencyKey, base }) => {
    for (let attempt = 1; ; attempt++) {
      const t0 = performance.now();
      const response = await fetch(`${base}/v1/transactions`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': idempotencyKey },
        body,
      });
      const text = await response.text();
      latencies.push(performance.now() - t0);
      if (response.status === 409 && text.includes('idempotency_in_progress') && attempt < 500) {
        inProgress++;
        await sleep(20);
        continue;
      }
      if (response.status !== 201) {
        failures.push(`${response.status} ${text.slice(0, 200)}`);
        return;
      }
      if (response.headers.get('idempotent-replayed') === 'true') replayed++;
      const id = (JSON.parse(text) as { id: string }).id;
      answers.set(idempotencyKey, (answers.get(idempotencyKey) ?? new Set()).add(id));
      return;
    }
  });
  const wallSeconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);

  // The books afterwards.
  const [b] = await orm.em
    .fork()
    .getConnection()
    .execute<{ transactions: number; cached: number; available: number; imbalance: number }[]>(
      `select (select count(*)::int from transactions where account_id = ?) as transactions,
            (select coalesce(sum(available), 0)::int from account_balances where account_id = ?) as cached,
            (select coalesce(sum(amount), 0)::int from ledger_entries where account_id = ? and ledger_account = 'available') as available,
            (select coalesce(sum(amount), 0)::int from ledger_entries where account_id = ?) as imbalance`,
      [tenant.accountId, tenant.accountId, tenant.accountId, tenant.accountId],
    );
  const apiBalance = await call('GET', `${bases[bases.length - 1]}/v1/balance`, undefined, headers);
  const ids = new Set([...answers.values()].flatMap((s) => [...s]));
  const problems = [
    failures.length > 0 && `${failures.length} requests failed (first: ${failures[0]})`,
    answers.size !== keys && `${answers.size} of ${keys} keys answered`,
    [...answers.values()].some((s) => s.size !== 1) && 'a key answered with two transactions',
    ids.size !== keys && `${ids.size} transactions answered for ${keys} keys`,
    b!.transactions !== keys && `${b!.transactions} transactions recorded for ${keys} keys`,
    b!.cached !== keys * creditAmount && `a balance of ${b!.cached} for ${keys} credits of ${creditAmount}`,
    b!.available !== keys * creditAmount && `available entries summing to ${b!.available}`,
    b!.imbalance !== 0 && `all entries summing to ${b!.imbalance}`,
    apiBalance.status !== 200 && `GET /v1/balance answered ${apiBalance.status}`,
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`${label}: ${problems.join('; ')}`);
  const checks = `${keys} keys → ${keys} transactions (each key's answers one transaction; ${replayed} replayed, ${inProgress} in-progress retries), balance ${b!.cached} = ${keys} × ${creditAmount}, entries sum to 0`;
  const result: CreditsResult = {
    round,
    processes,
    requests: plan.length,
    keys,
    wallSeconds,
    perSecond: plan.length / wallSeconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    inProgress,
    replayed,
    checks,
  };
  say(
    `${label}: ${plan.length} in ${wallSeconds.toFixed(1)} s (${rate(result.perSecond)}/s, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms); ${checks}`,
  );
  return result;
}

// ---- Main ----------------------------------------------------------------------

await runBenchmark('bench:scale-out', async (stops, say) => {
  const began = Date.now();
  const loadAtStart = os.loadavg()[0]!;
  const cores = os.cpus().length;
  if (loadAtStart > cores / 2)
    say(
      `note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${cores} cores); the numbers will be noisy`,
    );
  say(`N = ${settings.n} renewals, ${settings.requests} credits per configuration, ${settings.connections} at once`);
  const infra = await startRenewalsInfrastructure({
    prefix: 'billing-bench-scale-out-',
    temporal: settings.temporal,
    historyShards: settings.historyShards,
    sqlitePragmas: settings.sqlitePragmas,
    say,
    stops,
  });
  const code = codeState();
  say(`ready in ${((Date.now() - began) / 1000).toFixed(1)} s (PostgreSQL ${infra.pgVersion}); measuring ${code}`);

  /** Round 1: one process, then two; round 2: two, then one; and so on, so neither size always goes first. */
  const sizes = (round: number) => (round % 2 === 1 ? [1, 2] : [2, 1]);
  const waves: WaveResult[] = [];
  for (let round = 1; round <= settings.rounds; round++)
    for (const workers of sizes(round)) waves.push(await renewalWave(infra, workers, round, say, stops));
  // Both API processes run through both configurations; with one, the second is idle.
  const apis = [await startApiProcess(infra, 1, say, stops), await startApiProcess(infra, 2, say, stops)];
  const calls: CreditsResult[] = [];
  for (let round = 1; round <= settings.rounds; round++)
    for (const processes of sizes(round)) calls.push(await credits(infra.orm, apis, processes, round, say));
  /** Over the rounds: all the work of one size over all its wall time. */
  const pooled = <T extends { wallSeconds: number }>(
    results: T[],
    size: (r: T) => number,
    amount: (r: T) => number,
    wanted: number,
  ) => {
    const mine = results.filter((r) => size(r) === wanted);
    return mine.reduce((sum, r) => sum + amount(r), 0) / mine.reduce((sum, r) => sum + r.wallSeconds, 0);
  };
  const renewalRate = (workers: number) =>
    pooled(
      waves,
      (w) => w.workers,
      (w) => w.n,
      workers,
    );
  const creditRate = (processes: number) =>
    pooled(
      calls,
      (c) => c.processes,
      (c) => c.requests,
      processes,
    );
  const two = { wave: waves.filter((w) => w.workers === 2), calls: calls.filter((c) => c.processes === 2) };

  const onPostgres = infra.onPostgres;
  const heading = `## Scale-out: 1 vs 2 workers and 1 vs 2 API processes on one Temporal and one PostgreSQL${onPostgres ? ', Temporal server on PostgreSQL' : ''}`;
  const server = onPostgres
    ? `the real Temporal server (temporal-server ${temporalServerVersion}, ${settings.historyShards} history shards, persistence in the same embedded PostgreSQL ${infra.pgVersion} as the engine)`
    : `the Temporal CLI's dev server (SQLite${settings.sqlitePragmas.length > 0 ? `, --sqlite-pragma ${settings.sqlitePragmas.join(' --sqlite-pragma ')}` : ''}), embedded PostgreSQL ${infra.pgVersion}`;
  const renewalRatio = renewalRate(2) / renewalRate(1);
  const creditRatio = creditRate(2) / creditRate(1);
  const section = [
    heading,
    '',
    `Written by \`${onPostgres ? 'BENCH_TEMPORAL=postgres ' : ''}npm run bench:scale-out\` (bench/scale-out.ts) on ${new Date().toISOString()}, measuring ${code}.`,
    '',
    `Machine: ${cores} cores, Node ${process.version}, load average ${loadAtStart.toFixed(2)} at the start; ${server}. Everything runs on this machine: ` +
      'PostgreSQL, Temporal, the worker or API processes and this client. Renewals: N active subscriptions on one task queue, their billing cycle 0 ending at the same ' +
      "instant T, served by 1 then 2 worker processes (bench/renewals-worker.ts, the engine's worker with its production options, a fresh process each, " +
      'a MikroORM pool of 10 each); "wall s" is T to the last renewal recorded (projection `active` with its invoice paid, polled every 200 ms). ' +
      `Credits: \`POST /v1/transactions\` (a ${creditAmount} credit with an Idempotency-Key) through 1 then 2 \`node api/server.ts\` processes, ` +
      `round-robin from one client, ${settings.connections} at once, every ${duplicateEvery}th key sent twice at once (to both processes when there are two); ` +
      '"requests/s" counts the sends (a duplicate counts twice; a `409 idempotency_in_progress` retried after 20 ms counts once), p50/p99 are per HTTP exchange.',
    '',
    '| what | round | processes | N | wall s | renewals/s | requests/s | p50 / p99 ms | checks |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
    ...waves.map(
      (w) =>
        `| renewals | ${w.round} | ${w.workers} worker${w.workers === 1 ? '' : 's'} | ${w.n.toLocaleString('en')} | ${w.wallSeconds.toFixed(1)} | ${rate(w.perSecond)} | | | ` +
        `${w.checks}; renewCycle runs per process ${w.perWorker.join(' / ')} |`,
    ),
    ...calls.map(
      (c) =>
        `| credits | ${c.round} | ${c.processes} API | ${c.requests.toLocaleString('en')} | ${c.wallSeconds.toFixed(1)} | | ${rate(c.perSecond)} | ${c.p50Ms.toFixed(1)} / ${c.p99Ms.toFixed(1)} | ${c.checks} |`,
    ),
    '',
    `**Reading.** Two worker processes renewed at ${(renewalRatio * 100).toFixed(0)}% of one process's rate (${rate(renewalRate(2))}/s against ${rate(renewalRate(1))}/s), ` +
      `and two API processes answered at ${(creditRatio * 100).toFixed(0)}% of one's (${rate(creditRate(2))}/s against ${rate(creditRate(1))}/s)` +
      `${settings.rounds > 1 ? `, pooled over ${settings.rounds} rounds` : ', one round each, one process first'}. ` +
      `On ${cores} cores${cores <= 2 ? ', shared by PostgreSQL, Temporal and the client,' : ''} a second process ` +
      `${cores <= 2 ? 'cannot add CPU: what this run proves is correctness, not a speed-up. ' : 'adds CPU where there is some to take. '}` +
      (two.wave.every((w) => w.perWorker.every((count) => count > 0))
        ? 'Both worker processes took renewals from the one task queue (renewCycle runs per process in the table), '
        : 'One of the two worker processes took no renewal this time (renewCycle runs per process in the table), so the two-worker wave did not show sharing; ') +
      'and with two, every invoice was still ' +
      'paid once, every charge made once and the numbers stayed gapless: the invoice counter and the idempotency keys are in PostgreSQL, not in a process. ' +
      `The credits sent under one key through both API processes at once became one transaction (${two.calls.reduce((sum, c) => sum + c.inProgress, 0)} sends waited on \`409 idempotency_in_progress\`, ` +
      `${two.calls.reduce((sum, c) => sum + c.replayed, 0)} got the first answer replayed), and the balance equals the sum of the credits: the idempotency keys and the balance row lock are shared ` +
      'through PostgreSQL. Credits of one account queue on its balance row, so even with spare cores two API processes would not double one ' +
      "account's credits per second; more accounts would. Where the cores are there, the per-renewal costs of docs/scaling.md say how far more " +
      'workers go before Temporal or PostgreSQL is the limit.',
    '',
  ];
  const text = section.join('\n');
  if (process.env.BENCH_WRITE === '0') say(`not written (BENCH_WRITE=0):\n${text}`);
  else {
    writeSection(resultsFile, heading, text);
    say(`written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`);
  }
  return 0;
});
