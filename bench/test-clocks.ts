/**
 * Benchmark: one advance of a test clock over N subscriptions (default 1,000) on
 * the Temporal dev server, as a user runs it with `npm start`: no time skipping.
 *
 *   npm run bench:test-clocks        (or: node bench/test-clocks.ts)
 *
 * It starts an embedded PostgreSQL (migrated) and `temporal server start-dev` in a
 * temporary folder, a worker and the Hono app in this process (emails go to .eml
 * files), and works over the app's HTTP interface only: a sandbox account, a clock
 * on 2027-01-01, N customers on it (pm_card_visa) subscribed to a plan with a
 * 30-day trial (created 20 at a time). Then:
 *  1. advance to the trial end (2027-01-31): N trials convert (invoice, charge,
 *     receipt email, projection); each subscription's run then waits on the clock
 *     for its money's availability (patch funds-in-subscription: no workflow per payment);
 *  2. advance to 2027-02-28: the money of the first charges becomes available
 *     (2 days later, on the way), then N renewals;
 *  3. a weekly payout schedule (Mondays) on the clock, then advance to 2027-03-03:
 *     the Monday 03-01 run pays out the first charges' money (one payout, pending →
 *     in_transit → paid on 03-02 00:01), and the renewals' money becomes available
 *     on 03-02, in time order with it.
 * Measured: seconds from the advance call to `ready` (polled every 100 ms), and the
 * work checked afterwards (paid invoices, active subscriptions).
 *
 * Settings: BENCH_N (default 1000); BENCH_SECOND_ADVANCE=0 stops after the first
 * advance, BENCH_PAYOUT_ADVANCE=0 after the second. BENCH_WRITE=0 prints the section instead of
 * writing it to bench/RESULTS.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client, Connection } from '@temporalio/client';
import protos from '@temporalio/proto';

import { createApp } from '../api/app.ts';
import { ensureAdmin } from '../api/auth/bootstrap.ts';
import { loadConfig } from '../config.ts';
import { Invoice, Subscription } from '../db/entities/index.ts';
import { startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort } from '../dev/processes.ts';
import { startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import { createLogger } from '../logger.ts';
import { composeServiceContext } from '../services/compose.ts';
import { createFileMailer } from '../services/email/mailer.ts';
import { bundleBillingWorkflows, createBillingWorker, createClockWorker, installTemporalRuntime } from '../worker.ts';
import { openBenchDatabase, resultsFile, round1, runBenchmark, sleep, writeSection } from './harness.ts';

/** @temporalio/proto is CommonJS: its namespaces through the default export. */
const proto = protos.temporal;
const n = Number(process.env.BENCH_N ?? 1000);
const namespace = 'default';
const heading = `## Test clocks: one advance over ${n.toLocaleString('en-US')} subscriptions`;

await runBenchmark('bench:test-clocks', async (stops, say) => {
  const loadAtStart = os.loadavg()[0]!;
  const cores = os.cpus().length;
  if (loadAtStart > cores / 2)
    say(
      `note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${cores} cores); the numbers will be noisy`,
    );
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-clocks-'));
  fs.chmodSync(tmpDir, 0o755);
  const removeTmpDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });
  stops.add('temp folder', async () => removeTmpDir());
  process.once('exit', removeTmpDir);

  say('starting PostgreSQL and the Temporal dev server');
  const [postgres, temporal] = await Promise.all([
    freePort().then((port) => startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port })),
    Promise.all([freePort(), freePort()]).then(([port, uiPort]) =>
      startTemporalDevServer({ dataDir: path.join(tmpDir, 'temporal'), port, uiPort, namespace, log: say }),
    ),
  ]);
  stops.add('PostgreSQL', () => postgres.stop());
  stops.add('Temporal dev server', () => temporal.stop());
  const { orm, pgVersion } = await openBenchDatabase(postgres, stops);

  installTemporalRuntime(process.env.BENCH_LOG_LEVEL ?? 'error');
  // N customers on one clock: over the sandbox's limit of 3 (config.testClocks), raised here as TEST_CLOCK_CUSTOMERS would.
  const base = loadConfig({ NODE_ENV: 'test' });
  const config = {
    ...base,
    taskQueue: 'bench-clocks',
    clockTaskQueue: 'bench-clocks-clocks',
    dataDir: tmpDir,
    testClocks: { ...base.testClocks, customersPerClock: Math.max(n, base.testClocks.customersPerClock) },
  };
  await ensureAdmin(orm, config.auth);
  const connection = await Connection.connect({ address: temporal.address });
  stops.add('client connection', () => connection.close());
  const client = new Client({ connection, namespace });
  const { NativeConnection } = await import('@temporalio/worker');
  const workerConnection = await NativeConnection.connect({ address: temporal.address });
  stops.add('worker connection', () => workerConnection.close());
  say('bundling the workflows, starting the worker');
  // Both workers of a worker process: the live queue's and the test clock queue's (worker.ts createClockWorker, its own limits).
  const workerDeps = {
    connection: workerConnection,
    namespace,
    context: composeServiceContext(config, {
      orm,
      client,
      logger: createLogger('silent'),
      mailer: createFileMailer(path.join(tmpDir, 'mail'), config.mailFrom),
    }),
    workflowBundle: await bundleBillingWorkflows(),
  };
  const worker = await createBillingWorker(workerDeps);
  const clockWorker = await createClockWorker(workerDeps);
  const running = Promise.all([worker.run(), clockWorker.run()]);
  stops.add('worker', async () => {
    worker.shutdown();
    clockWorker.shutdown();
    await running;
  });
  const app = createApp({
    orm,
    temporal: client,
    config,
    logger: createLogger(process.env.BENCH_API_LOG_LEVEL ?? 'error'),
  });

  let headers: Record<string, string> = { 'content-type': 'application/json' };
  const call = async (method: string, url: string, body?: unknown) => {
    const response = await app.request(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await response.json()) as Record<string, any>;
    if (response.status >= 400) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  await call('POST', '/v1/accounts', {
    email: 'bench@clocks.example',
    name: 'Bench',
    type: 'business',
    password: 'Bench!2345x',
  });
  const login = await call('POST', '/v1/auth/login', { email: 'bench@clocks.example', password: 'Bench!2345x' });
  headers = { ...headers, authorization: `Bearer ${login.access_token}` };
  // A test key, as a user's test suite would use (an access token expires within the run).
  const key = await call('POST', '/v1/api_keys', { mode: 'test' });
  headers = { 'content-type': 'application/json', authorization: `Bearer ${key.secret}` };

  const clock = await call('POST', '/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z', name: 'bench' });
  const plan = await call('POST', '/v1/plans', {
    name: 'Pro',
    amount: 2000,
    currency: 'USD',
    interval: 'month',
    trial_period_days: 30,
  });
  say(`creating ${n} customers and subscriptions on ${clock.id}`);
  const setupStarted = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < n) {
        const i = next++;
        const customer = await call('POST', '/v1/customers', {
          email: `c${i}@clocks.example`,
          payment_method: 'pm_card_visa',
          test_clock: clock.id,
        });
        await call('POST', '/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
      }
    }),
  );
  const setupSeconds = (Date.now() - setupStarted) / 1000;
  say(`created in ${round1(setupSeconds)} s`);

  /** Wall seconds from the last invoice paid to `ready`, per advance that pays invoices (issue #29: ready within a second of the last work). */
  const readyLags: number[] = [];
  async function advance(to: string, paidTarget?: number): Promise<number> {
    const started = Date.now();
    let lastPaidAt: number | null = null;
    let firstPaidAt: number | null = null;
    const paidBefore = paidTarget === undefined ? 0 : await orm.em.fork().count(Invoice, { status: 'paid' });
    await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: to });
    for (;;) {
      const c = await call('GET', `/v1/test_clocks/${clock.id}`);
      if (c.status === 'ready') {
        if (c.frozen_time !== new Date(to).toISOString()) throw new Error(`ready at ${c.frozen_time}, not at ${to}`);
        if (paidTarget !== undefined) {
          if (lastPaidAt === null) lastPaidAt = Date.now();
          readyLags.push((Date.now() - lastPaidAt) / 1000);
          say(
            `ready ${round1(readyLags.at(-1)!)} s after the last invoice was paid; the first was paid ${round1(((firstPaidAt ?? lastPaidAt) - started) / 1000)} s after the advance, the last ${round1((lastPaidAt - started) / 1000)} s`,
          );
        }
        return (Date.now() - started) / 1000;
      }
      // Polled with the status (every 100 ms): when the first and the last invoice due were paid, in wall time.
      if (paidTarget !== undefined && lastPaidAt === null) {
        const paid = await orm.em.fork().count(Invoice, { status: 'paid' });
        if (firstPaidAt === null && paid > paidBefore) firstPaidAt = Date.now();
        if (paid >= paidTarget) lastPaidAt = Date.now();
      }
      if (c.status === 'internal_failure')
        throw new Error(`internal_failure: ${c.status_details.internal_failure.message}`);
      if (Date.now() - started > 1_800_000) throw new Error('not ready after 30 minutes');
      await sleep(100);
    }
  }
  const em = () => orm.em.fork();
  say('advance 1: to the trial end, 2027-01-31');
  const first = await advance('2027-01-31T00:00:00Z', n);
  const active1 = await em().count(Subscription, { status: 'active', billingCycle: 0 });
  const paid1 = await em().count(Invoice, { status: 'paid' });
  say(`ready in ${round1(first)} s: ${active1} active, ${paid1} paid invoices`);
  let second: number | null = null;
  let active2 = 0;
  let paid2 = 0;
  let available = 0;
  if (process.env.BENCH_SECOND_ADVANCE !== '0') {
    say('advance 2: to 2027-02-28 (money available on the 2nd, renewals on the 28th)');
    second = await advance('2027-02-28T00:00:00Z', 2 * n);
    active2 = await em().count(Subscription, { status: 'active', billingCycle: 1 });
    paid2 = await em().count(Invoice, { status: 'paid' });
    const balance = await call('GET', '/v1/balance');
    available =
      (balance.available as { amount: number; currency: string }[]).find((m) => m.currency === 'USD')?.amount ?? 0;
    say(`ready in ${round1(second)} s: ${active2} renewed, ${paid2} paid invoices, ${available} available`);
  }
  let third: number | null = null;
  let payoutsOk = true;
  let payoutLine = '';
  if (second !== null && process.env.BENCH_PAYOUT_ADVANCE !== '0') {
    say('advance 3: a weekly payout schedule on the clock (Mondays), to 2027-03-03');
    await call('POST', '/v1/bank_accounts', {
      type: 'us_ach',
      account_holder_name: 'Bench',
      currency: 'USD',
      routing_number: '110000000',
      account_number: '000123456789',
    });
    const settings = await call('PATCH', '/v1/payout_settings', {
      currency: 'USD',
      interval: 'weekly',
      weekly_anchor: 'monday',
      test_clock: clock.id,
    });
    const usd = (settings.schedules as { currency: string; next_payout_at: string | null }[]).find(
      (s) => s.currency === 'USD',
    );
    if (usd?.next_payout_at !== '2027-03-01T00:00:00.000Z')
      throw new Error(`the clock's schedule runs next at ${usd?.next_payout_at}, not 2027-03-01`);
    third = await advance('2027-03-03T00:00:00Z');
    const payouts = (await call('GET', `/v1/payouts?test_clock=${clock.id}`)).data as {
      amount: number;
      status: string;
      created_at: string;
      paid_at: string | null;
    }[];
    const balance = await call('GET', '/v1/balance');
    const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
    const after = { available: of(balance.available), pending: of(balance.pending) };
    payoutsOk =
      payouts.length === 1 &&
      payouts[0]!.amount === 2000 * n &&
      payouts[0]!.status === 'paid' &&
      payouts[0]!.created_at === '2027-03-01T00:00:00.000Z' &&
      payouts[0]!.paid_at === '2027-03-02T00:01:00.000Z' &&
      after.available === 2000 * n &&
      after.pending === 0;
    payoutLine = `${payouts.length} payout on the clock (${payouts.map((p) => `${p.amount} ${p.status}, created ${p.created_at}, paid ${p.paid_at}`).join('; ')}), then ${after.available} available and ${after.pending} pending`;
    say(`ready in ${round1(third)} s: ${payoutLine}`);
  }
  const clockStats = await clockHistoryStats(client, clock.id);
  say(
    `the clock's workflow: ${clockStats.runs} run(s), ${clockStats.events} events, ${round1(clockStats.kb)} KB of history (largest run ${round1(clockStats.largestRunKb)} KB), longest workflow task ${round1(clockStats.longestTaskMs / 1000)} s`,
  );
  const ok =
    payoutsOk &&
    active1 === n &&
    paid1 === n &&
    (second === null || (active2 === n && paid2 === 2 * n && available === 2000 * n));
  const section = [
    heading,
    '',
    `\`node bench/test-clocks.ts\` (BENCH_N=${n}), ${new Date().toISOString().slice(0, 10)}: the Temporal dev server (no time skipping), PostgreSQL ${pgVersion}, the worker and the API in one process, on ${cores} cores (load average ${loadAtStart.toFixed(2)} at the start, shared with other work).`,
    '',
    '| Advance | Work due | Seconds until `ready` | Per subscription |',
    '|---|---|---|---|',
    `| 2027-01-01 → 01-31 | ${n} trial ends: invoice, charge, receipt email, projection; each run then waits for its money's availability (02-02, in the subscription's own run since funds-in-subscription) | ${round1(first)} | ${round1((first * 1000) / n)} ms |`,
    ...(second === null
      ? []
      : [
          `| 01-31 → 02-28 | ${n} payments become available (02-02), then ${n} renewals | ${round1(second)} | ${round1((second * 1000) / n)} ms |`,
        ]),
    ...(third === null
      ? []
      : [
          `| 02-28 → 03-03 | the clock's weekly payout run (03-01) pays out ${2000 * n}: pending → in_transit → paid (03-02 00:01); ${n} renewals' money becomes available (03-02) | ${round1(third)} | ${round1((third * 1000) / n)} ms |`,
        ]),
    '',
    second === null
      ? `Checked afterwards: ${active1} of ${n} subscriptions active, ${paid1} paid invoices${ok ? '' : ' (NOT what was expected)'} (the second advance was skipped: BENCH_SECOND_ADVANCE=0). Setting up (${n} customers and subscriptions through the API, 20 at a time) took ${round1(setupSeconds)} s.`
      : `Checked afterwards: ${active2} of ${n} subscriptions renewed, ${paid2} paid invoices, ${available} available on the sandbox balance${third === null ? '' : `; after the payout advance: ${payoutLine}`}${ok ? '' : ' (NOT what was expected)'}. Setting up (${n} customers and subscriptions through the API, 20 at a time) took ${round1(setupSeconds)} s.`,
    '',
    `Seconds from the last invoice paid to \`ready\` (wall time, polled every 100 ms): ${readyLags.map(round1).join(', ')}.`,
    '',
    `The clock's own workflow over the whole run (every advance, every continue-as-new run): ${clockStats.runs} run(s), ${clockStats.events} history events, ${round1(clockStats.kb)} KB (largest run ${round1(clockStats.largestRunKb)} KB); its longest workflow task (started → completed) ${round1(clockStats.longestTaskMs / 1000)} s.`,
    '',
    'What bounds it: every due workflow is woken by a signal from the clock workflow and reports back with a signal, and each advance step waits for the slowest; the subscriptions on a clock run their activities as local activities, so the server sees one workflow task per wake-up rather than one per activity.',
  ].join('\n');
  if (process.env.BENCH_WRITE !== '0') writeSection(resultsFile, heading, section);
  say(section);
  return ok ? 0 : 1;
});

/**
 * The clock's own workflow, every run of it (continue-as-new): history events, encoded size, and its longest
 * workflow task (WorkflowTaskStarted → WorkflowTaskCompleted or failed/timed out), issue #29's measures of
 * whether one workflow's history and task time grow with what is on the clock.
 */
async function clockHistoryStats(
  client: Client,
  clockId: string,
): Promise<{ runs: number; events: number; kb: number; largestRunKb: number; longestTaskMs: number }> {
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;
  const stats = { runs: 0, events: 0, kb: 0, largestRunKb: 0, longestTaskMs: 0 };
  for await (const run of client.workflow.list({ query: `WorkflowId = '${clockId}'` })) {
    const history = await client.workflow.getHandle(clockId, run.runId).fetchHistory();
    const kb = proto.api.history.v1.History.encode(history).finish().length / 1024;
    stats.runs++;
    stats.kb += kb;
    stats.largestRunKb = Math.max(stats.largestRunKb, kb);
    let startedAt: number | null = null;
    for (const event of history.events ?? []) {
      stats.events++;
      const type = event.eventType;
      if (type === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) startedAt = ms(event.eventTime);
      else if (
        startedAt !== null &&
        (type === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ||
          type === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED ||
          type === proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT)
      ) {
        stats.longestTaskMs = Math.max(stats.longestTaskMs, ms(event.eventTime) - startedAt);
        startedAt = null;
      }
    }
  }
  return stats;
}
