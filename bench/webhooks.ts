/**
 * Benchmark: events delivered per second to a local receiver with 10 webhook
 * endpoints, through the engine's real pipeline, against a bare loop that POSTs
 * the same signed payloads to the same receiver, measured in the same run.
 *
 *   npm run bench:webhooks        (or: node bench/webhooks.ts)
 *
 * It starts an embedded PostgreSQL (the engine's schema) and a Temporal dev
 * server (`temporal server start-dev`, SQLite in memory; BENCH_TEMPORAL_DB=file for a file) in a temporary folder, the
 * engine's worker in this process, the API in this process (to register the
 * endpoints through POST /v1/webhooks, sandbox mode, http://127.0.0.1) and an
 * HTTP receiver in this process that answers 200 and counts what it gets.
 *
 * A round of N events:
 *  - engine: N events are written to the outbox (recordEvent, one database
 *    transaction each, as a state change would), then the dispatcher is woken
 *    (the signal the API sends after a change); eventDispatchWorkflow's pass
 *    inserts the 10 N delivery rows and makes each delivery's first attempt
 *    itself (url check, sign, POST, record the attempt), 20 in flight and at
 *    most 4 per endpoint; the receiver answers 200, so no delivery workflow is
 *    started (the retry path is the tests' business, not measured here). Done
 *    when the receiver has all 10 N requests. The clock starts before the first
 *    event is written.
 *  - bare: the same N event bodies, signed with the same secrets and the same
 *    headers, POSTed to the same 10 urls by a loop with 100 requests in flight
 *    (the worker's default number of concurrent activities), with the engine's
 *    own HTTP client (a fresh connection per request, as each attempt has).
 * Every request of both is checked on arrival with the `standardwebhooks`
 * package; a round fails on a bad signature, a missing or a duplicate delivery.
 *
 * Settings (environment): BENCH_EVENTS (default 100 per round), BENCH_ROUNDS
 * (default 2: bare, engine, bare, engine).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { Webhook } from 'standardwebhooks';

import { createApp } from '../api/app.ts';
import { ensureAdmin } from '../api/auth/bootstrap.ts';
import { type Config, loadConfig } from '../config.ts';
import { Event, WebhookAttempt, WebhookDelivery } from '../db/entities/index.ts';
import { startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort, stopPid } from '../dev/processes.ts';
import { searchAttributeArgs, startTemporalDevServer, waitUntilServing } from '../dev/temporal-dev-server.ts';
import { resolveTemporalCli } from '../dev/tools.ts';
import { createSecretBox } from '../domain/secret-box.ts';
import type { CheckedUrl } from '../domain/webhook-url.ts';
import { riskScoreHeader, signWebhook } from '../domain/webhooks.ts';
import { createLogger } from '../logger.ts';
import { serializeEvent } from '../objects/event.ts';
import { composeServiceContext } from '../services/compose.ts';
import { createFileMailer } from '../services/email/mailer.ts';
import { recordEvent } from '../services/events/record.ts';
import { eventDispatchWorkflowId, inlineAttempts, wakeEventDispatch } from '../services/webhooks/dispatch.ts';
import { postWebhook } from '../services/webhooks/http-post.ts';
import { checkWebhookUrl } from '../services/webhooks/url-check.ts';
import { createBillingWorker, installTemporalRuntime } from '../worker.ts';
import {
  mean,
  openBenchDatabase,
  resultsFile,
  round1,
  runBenchmark,
  type Say,
  sleep,
  writeSection,
} from './harness.ts';

const sectionHeading = '## Webhooks: events delivered per second to 10 endpoints';
const endpointCount = 10;
const bareInFlight = 100;
const settings = {
  events: Number(process.env.BENCH_EVENTS ?? 100),
  rounds: Number(process.env.BENCH_ROUNDS ?? 2),
  /** memory: the dev server's in-memory SQLite; file: a SQLite file, as `npm start` runs it (every write synced). */
  temporalDb: process.env.BENCH_TEMPORAL_DB === 'file' ? 'file' : 'memory',
};

/** `temporal server start-dev` with its SQLite in memory (dev/temporal-dev-server.ts always gives it a file). */
async function startInMemoryDevServer(say: Say): Promise<{ address: string; pid: number; stop(): Promise<void> }> {
  const cli = await resolveTemporalCli({ log: say, allowBuild: false });
  if (!('path' in cli)) throw new Error('no Temporal CLI found (npm run tools)');
  const [port, uiPort] = await Promise.all([freePort(), freePort()]);
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--ui-port',
    String(uiPort),
    '--namespace',
    'default',
    '--log-level',
    'error',
    ...searchAttributeArgs(),
  ];
  const child = spawn(cli.path, args, { detached: true, stdio: 'ignore' });
  const address = `127.0.0.1:${port}`;
  await waitUntilServing(address, 60_000);
  return { address, pid: child.pid!, stop: () => stopPid(child.pid!, 'SIGTERM', 15_000) };
}

interface Receipt {
  at: number;
  id: string;
}

/** The receiver: 200 to everything, each request checked with the reference library and counted per endpoint path. */
async function startReceiver(secrets: Map<string, string>) {
  const byPath = new Map<string, Receipt[]>();
  let badSignatures = 0;
  const verifiers = new Map<string, Webhook>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const secret = secrets.get(path);
      let verifier = secret ? verifiers.get(secret) : undefined;
      if (secret && !verifier) verifiers.set(secret, (verifier = new Webhook(secret)));
      try {
        verifier!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
      } catch {
        badSignatures++;
      }
      const list = byPath.get(path) ?? [];
      list.push({ at: performance.now(), id: String(req.headers['webhook-id']) });
      byPath.set(path, list);
      res.writeHead(200);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    byPath,
    get badSignatures() {
      return badSignatures;
    },
    reset() {
      byPath.clear();
      badSignatures = 0;
    },
    total: () => [...byPath.values()].reduce((n, l) => n + l.length, 0),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

interface RoundResult {
  target: 'engine' | 'bare';
  seconds: number;
  eventsPerSecond: number;
  deliveriesPerSecond: number;
  /** Engine only: from writing the first event to the last event's dispatch. */
  dispatchSeconds?: number;
  /** Engine only: writing the N events to the outbox (before the wake-up). */
  writeSeconds?: number;
  /** Engine only: delivery workflows started during the round (0 when every first attempt succeeds). */
  workflows?: number;
  /** CPU seconds during the round: this process (worker, receiver, loop), the Temporal server, PostgreSQL. */
  cpu: { node: number; temporal: number; postgres: number };
  /** The 1-minute load average when the round started. */
  load: number;
  /** Per delivery, from the round's start to its arrival: p50 and p99 (ms). */
  p50: number;
  p99: number;
}

function check(receiver: Receiver, ids: string[], paths: string[], say: Say, target: string): void {
  const problems: string[] = [];
  for (const p of paths) {
    const got = receiver.byPath.get(p) ?? [];
    const distinct = new Set(got.map((r) => r.id));
    const missing = ids.filter((id) => !distinct.has(id)).length;
    if (missing || got.length !== ids.length)
      problems.push(`${p}: ${got.length} requests, ${distinct.size} distinct events, ${missing} missing`);
  }
  if (receiver.badSignatures) problems.push(`${receiver.badSignatures} bad signatures`);
  if (problems.length) throw new Error(`${target} round failed: ${problems.join('; ')}`);
  say(`${target}: every endpoint got each of the ${ids.length} events exactly once, every signature verified`);
}

/** CPU seconds a process has used (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds of every PostgreSQL process of the data folder's server (postmaster and its backends). */
function postgresCpuSeconds(dataDir: string): number {
  try {
    const main = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    let total = cpuSeconds(main);
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
        if (Number(stat.split(') ')[1]!.split(' ')[1]) === main) total += cpuSeconds(Number(entry));
      } catch {
        // gone meanwhile
      }
    }
    return total;
  } catch {
    return Number.NaN;
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

await runBenchmark('bench:webhooks', async (stops, say) => {
  const began = Date.now();
  const loadAtStart = os.loadavg()[0]!;
  const cores = os.cpus().length;
  if (loadAtStart > cores / 2)
    say(
      `note: the machine is busy (load average ${loadAtStart.toFixed(2)} on ${cores} cores); the numbers will be noisy`,
    );
  installTemporalRuntime('error');

  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-webhooks-'));
  fs.chmodSync(tmpDir, 0o755); // as root, PostgreSQL runs as the postgres user, which must reach its folder
  const removeTmpDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });
  stops.add('temp folder', async () => removeTmpDir());
  process.once('exit', removeTmpDir);

  say(
    `starting PostgreSQL and the Temporal dev server (SQLite ${settings.temporalDb === 'file' ? 'file' : 'in memory'})`,
  );
  const namespace = 'default';
  const [postgres, temporal] = await Promise.all([
    freePort().then((port) => startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port })),
    settings.temporalDb === 'file'
      ? Promise.all([freePort(), freePort()]).then(([port, uiPort]) =>
          startTemporalDevServer({ dataDir: path.join(tmpDir, 'temporal'), port, uiPort, namespace, log: say }),
        )
      : startInMemoryDevServer(say),
  ]);
  stops.add('PostgreSQL', () => postgres.stop());
  stops.add('Temporal dev server', () => temporal.stop());
  const temporalPid =
    'pid' in temporal
      ? temporal.pid
      : Number(fs.readFileSync(path.join(tmpDir, 'temporal', 'temporal.pid'), 'utf8').trim());
  const pgDataDir = path.join(tmpDir, 'postgres');
  const cpuNow = () => ({
    node: process.cpuUsage(),
    temporal: cpuSeconds(temporalPid),
    postgres: postgresCpuSeconds(pgDataDir),
  });
  const cpuSince = (before: ReturnType<typeof cpuNow>) => {
    const node = process.cpuUsage(before.node);
    return {
      node: (node.user + node.system) / 1e6,
      temporal: cpuSeconds(temporalPid) - before.temporal,
      postgres: postgresCpuSeconds(pgDataDir) - before.postgres,
    };
  };
  const { orm, pgVersion } = await openBenchDatabase(postgres, stops);

  const connection = await Connection.connect({ address: temporal.address });
  stops.add('client connection', () => connection.close());
  const client = new Client({ connection, namespace });
  const taskQueue = 'bench-webhooks';
  const config: Config = { ...loadConfig({ NODE_ENV: 'test' }), taskQueue };
  await ensureAdmin(orm, config.auth);
  const secretBox = createSecretBox(config.auth.secret);

  say('starting the worker (bundling the workflows)');
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  stops.add('worker connection', () => nativeConnection.close());
  const mailer = createFileMailer(path.join(tmpDir, 'mail'), config.mailFrom);
  const worker = await createBillingWorker({
    connection: nativeConnection,
    namespace,
    context: composeServiceContext(config, { orm, client, logger: createLogger('silent'), mailer }),
    secretBox,
  });
  const workerRun = worker.run();
  stops.add('worker', async () => {
    await client.workflow
      .getHandle(eventDispatchWorkflowId(taskQueue))
      .terminate('benchmark finished')
      .catch(() => undefined);
    worker.shutdown();
    await workerRun;
  });

  const app = createApp({ orm, temporal: client, config, logger: createLogger('silent') });
  const call = async (method: string, url: string, body: unknown, headers: Record<string, string>) => {
    const response = await app.request(url, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const email = `bench-${Date.now()}@example.com`;
  const signup = await call(
    'POST',
    '/v1/accounts',
    { email, name: 'Bench', type: 'business', password: 'Bench!2345' },
    {},
  );
  const login = await call('POST', '/v1/auth/login', { email, password: 'Bench!2345' }, {});
  if (signup.status !== 201 || login.status !== 200) throw new Error('sign-up failed');
  const accountId = String(signup.body.id);
  const auth = { authorization: `Bearer ${String(login.body.access_token)}`, 'x-sandbox-mode': 'true' };

  const secrets = new Map<string, string>();
  const receiver = await startReceiver(secrets);
  stops.add('receiver', () => receiver.close());
  const paths = Array.from({ length: endpointCount }, (_, i) => `/endpoint-${i + 1}`);
  const targets: CheckedUrl[] = [];
  for (const p of paths) {
    const url = `http://127.0.0.1:${receiver.port}${p}`;
    const created = await call('POST', '/v1/webhooks', { url, events: ['*'] }, auth);
    if (created.status !== 201) throw new Error(`endpoint registration failed: ${JSON.stringify(created.body)}`);
    secrets.set(p, String(created.body.secret));
    targets.push(await checkWebhookUrl(url, false));
  }
  say(
    `ready in ${((Date.now() - began) / 1000).toFixed(1)} s: ${endpointCount} endpoints registered; ${settings.events} events per round, ${settings.rounds} rounds per target`,
  );

  const makeObject = (i: number) => ({
    id: `cus_bench_${i}`,
    object: 'customer',
    email: `c${i}@example.com`,
    name: `Customer ${i}`,
    livemode: false,
  });

  const waitForAll = async (expected: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (receiver.total() < expected) {
      if (Date.now() > deadline) throw new Error(`timed out: ${receiver.total()} of ${expected} deliveries arrived`);
      await sleep(5);
    }
  };

  /** webhookDeliveryWorkflow executions the server knows (visibility may lag a little; NaN if it cannot count). */
  const deliveryWorkflows = async () => {
    try {
      return (await client.workflow.count(`WorkflowType = 'webhookDeliveryWorkflow'`)).count;
    } catch {
      return Number.NaN;
    }
  };

  const engineRound = async (): Promise<RoundResult> => {
    receiver.reset();
    const load = os.loadavg()[0]!;
    const cpuBefore = cpuNow();
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < settings.events; i++) {
      const event = await orm.em.fork().transactional((tx) =>
        recordEvent(tx, {
          accountId,
          livemode: false,
          type: 'customer.created',
          object: makeObject(i),
          transactionId: null,
        }),
      );
      ids.push(event.id);
    }
    const writeSeconds = (performance.now() - started) / 1000;
    const workflowsBefore = await deliveryWorkflows();
    await wakeEventDispatch({ client, taskQueue });
    let dispatchSeconds: number | undefined;
    const expected = settings.events * endpointCount;
    const deadline = Date.now() + 600_000;
    while (receiver.total() < expected) {
      if (Date.now() > deadline) throw new Error(`timed out: ${receiver.total()} of ${expected} deliveries arrived`);
      if (
        dispatchSeconds === undefined &&
        (await orm.em.fork().count(Event, { id: { $in: ids }, dispatchedAt: null })) === 0
      ) {
        dispatchSeconds = (performance.now() - started) / 1000;
      }
      await sleep(20);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSince(cpuBefore);
    dispatchSeconds ??= seconds;
    check(receiver, ids, paths, say, 'engine');
    // Let the last attempts record themselves before the next round starts; every one is recorded, once.
    while ((await orm.em.fork().count(WebhookDelivery, { eventId: { $in: ids }, status: 'pending' })) > 0)
      await sleep(50);
    const recorded = await orm.em.fork().count(WebhookAttempt, { eventId: { $in: ids }, succeeded: true });
    if (recorded !== expected)
      throw new Error(`engine round failed: ${recorded} attempts recorded for ${expected} deliveries`);
    const workflows = (await deliveryWorkflows()) - workflowsBefore;
    const arrivals = [...receiver.byPath.values()]
      .flat()
      .map((r) => r.at - started)
      .sort((a, b) => a - b);
    return {
      target: 'engine',
      load,
      seconds,
      cpu,
      eventsPerSecond: settings.events / seconds,
      deliveriesPerSecond: expected / seconds,
      dispatchSeconds,
      writeSeconds,
      workflows,
      p50: percentile(arrivals, 50),
      p99: percentile(arrivals, 99),
    };
  };

  const bareRound = async (): Promise<RoundResult> => {
    receiver.reset();
    const load = os.loadavg()[0]!;
    const cpuBefore = cpuNow();
    const started = performance.now();
    // The same payloads as the engine's: events as serializeEvent shows them, signed as the worker signs them.
    const jobs: { target: CheckedUrl; secret: string; id: string; body: string }[] = [];
    const ids: string[] = [];
    for (let i = 0; i < settings.events; i++) {
      const id = `evt_bare${String(i).padStart(22, '0')}${Date.now().toString(36).slice(-4)}`;
      ids.push(id);
      const body = JSON.stringify(
        serializeEvent({
          id,
          type: 'customer.created',
          createdAt: new Date(),
          livemode: false,
          transactionId: null,
          data: { object: makeObject(i) },
        }),
      );
      paths.forEach((p, k) => jobs.push({ target: targets[k]!, secret: secrets.get(p)!, id, body }));
    }
    let next = 0;
    const lanes = Array.from({ length: bareInFlight }, async () => {
      while (next < jobs.length) {
        const job = jobs[next++]!;
        const timestamp = Math.floor(Date.now() / 1000);
        const response = await postWebhook(
          job.target,
          {
            'content-type': 'application/json',
            'user-agent': 'billing-engine-webhooks/1',
            'webhook-id': job.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signWebhook([job.secret], job.id, timestamp, job.body),
            'x-risk-score': riskScoreHeader(null),
          },
          job.body,
        );
        if (response.statusCode !== 200) throw new Error(`bare POST failed: ${JSON.stringify(response)}`);
      }
    });
    await Promise.all(lanes);
    await waitForAll(jobs.length, 60_000);
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSince(cpuBefore);
    check(receiver, ids, paths, say, 'bare');
    const arrivals = [...receiver.byPath.values()]
      .flat()
      .map((r) => r.at - started)
      .sort((a, b) => a - b);
    return {
      target: 'bare',
      load,
      seconds,
      cpu,
      eventsPerSecond: settings.events / seconds,
      deliveriesPerSecond: jobs.length / seconds,
      p50: percentile(arrivals, 50),
      p99: percentile(arrivals, 99),
    };
  };

  const describe = (r: RoundResult) =>
    `${r.target}: ${round1(r.eventsPerSecond)} events/s (${Math.round(r.deliveriesPerSecond)} deliveries/s) in ${r.seconds.toFixed(2)} s` +
    (r.writeSeconds !== undefined ? `; events written in ${r.writeSeconds.toFixed(2)} s` : '') +
    (r.dispatchSeconds !== undefined ? `; all dispatched after ${r.dispatchSeconds.toFixed(2)} s` : '') +
    (r.workflows !== undefined ? `; ${r.workflows} delivery workflows` : '') +
    `; arrival p50 ${Math.round(r.p50)} ms, p99 ${Math.round(r.p99)} ms` +
    `; CPU s: node ${r.cpu.node.toFixed(1)}, temporal ${r.cpu.temporal.toFixed(1)}, postgres ${r.cpu.postgres.toFixed(1)}`;

  say('warm-up: one small round of each');
  const saved = settings.events;
  settings.events = Math.min(30, saved);
  say(`warm-up ${describe(await bareRound())}`);
  say(`warm-up ${describe(await engineRound())}`);
  settings.events = saved;

  const results: RoundResult[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    for (const run of [bareRound, engineRound]) {
      const result = await run();
      say(`round ${round}/${settings.rounds} ${describe(result)}`);
      results.push(result);
    }
  }
  const summary = (target: 'engine' | 'bare') => {
    const runs = results.filter((r) => r.target === target);
    return {
      eventsPerSecond: mean(runs.map((r) => r.eventsPerSecond)),
      deliveriesPerSecond: mean(runs.map((r) => r.deliveriesPerSecond)),
      perRound: runs.map((r) => round1(r.eventsPerSecond)),
      p50: mean(runs.map((r) => r.p50)),
      p99: mean(runs.map((r) => r.p99)),
      dispatch: runs.every((r) => r.dispatchSeconds !== undefined)
        ? mean(runs.map((r) => r.dispatchSeconds!))
        : undefined,
      write: runs.every((r) => r.writeSeconds !== undefined) ? mean(runs.map((r) => r.writeSeconds!)) : undefined,
      workflows: runs.reduce((n, r) => n + (r.workflows ?? 0), 0),
      seconds: mean(runs.map((r) => r.seconds)),
      /** CPU ms per delivery, by process. */
      cpuMs: {
        node: mean(runs.map((r) => (r.cpu.node * 1000) / (settings.events * endpointCount))),
        temporal: mean(runs.map((r) => (r.cpu.temporal * 1000) / (settings.events * endpointCount))),
        postgres: mean(runs.map((r) => (r.cpu.postgres * 1000) / (settings.events * endpointCount))),
      },
    };
  };
  const engine = summary('engine');
  const bare = summary('bare');
  const ratio = engine.eventsPerSecond / bare.eventsPerSecond;
  say(
    `engine ${round1(engine.eventsPerSecond)} events/s, bare ${round1(bare.eventsPerSecond)} events/s: ratio ${(ratio * 100).toFixed(1)}%`,
  );

  const cpus = os.cpus();
  const section = [
    sectionHeading,
    '',
    `Written by \`npm run bench:webhooks\` (bench/webhooks.ts) on ${new Date().toISOString().slice(0, 10)}.`,
    '',
    `Machine: ${cores} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${os.type()} ${os.release()}, Node ${process.version}, embedded PostgreSQL ${pgVersion}, ` +
      `Temporal dev server (\`temporal server start-dev\`, SQLite ${settings.temporalDb === 'file' ? 'in a file, as `npm start` runs it' : 'in memory'}), all on the same machine; the worker, the receiver and the bare loop in one Node process; load average ${loadAtStart.toFixed(2)} at the start.`,
    '',
    `Method: ${endpointCount} sandbox endpoints subscribed to \`*\` on one local HTTP receiver that answers 200 and checks every signature with the \`standardwebhooks\` package. ` +
      `A round is ${settings.events} events, so ${settings.events * endpointCount} deliveries; one small warm-up round of each target, then ${settings.rounds} rounds per target, alternating bare and engine. ` +
      '**engine**: the events are written to the outbox one database transaction each (recordEvent), the dispatcher is woken as the API wakes it, and its pass (one activity of eventDispatchWorkflow, up to 100 events) inserts the delivery rows and makes the first attempt of each delivery itself — check the url, sign, POST, record the attempt — ' +
      `${inlineAttempts.width} in flight and at most ${inlineAttempts.perEndpoint} per endpoint; a delivery workflow would be started only for a failed first attempt (none here: the receiver answers 200, and the round checks that every delivery has exactly one recorded attempt). The clock runs from the first write to the last arrival. ` +
      `**bare**: the same payloads and headers, signed the same way, POSTed by a loop keeping ${bareInFlight} requests in flight with the engine's own HTTP client (a fresh connection per request, as each attempt opens one). ` +
      'Both: every endpoint must get each event exactly once.',
    '',
    '| target | events/s | deliveries/s | seconds per round | arrival p50 ms | arrival p99 ms |',
    '|---|---:|---:|---:|---:|---:|',
    `| engine (outbox → dispatcher pass with inline first attempts) | ${round1(engine.eventsPerSecond)} | ${Math.round(engine.deliveriesPerSecond)} | ${engine.seconds.toFixed(2)} | ${Math.round(engine.p50)} | ${Math.round(engine.p99)} |`,
    `| bare loop (sign + POST) | ${round1(bare.eventsPerSecond)} | ${Math.round(bare.deliveriesPerSecond)} | ${bare.seconds.toFixed(2)} | ${Math.round(bare.p50)} | ${Math.round(bare.p99)} |`,
    '',
    `Per round, events/s: engine ${engine.perRound.join(', ')}; bare ${bare.perRound.join(', ')}. Load average (1 min) at each round's start: ${results.map((r) => `${r.target} ${r.load.toFixed(2)}`).join(', ')}; ${os.loadavg()[0]!.toFixed(2)} at the end. ` +
      `Of an engine round, writing the ${settings.events} events took ${engine.write?.toFixed(2)} s; every event was dispatched (all its deliveries settled) ${engine.dispatch?.toFixed(2)} s in; delivery workflows started: ${engine.workflows}.`,
    '',
    `**Ratio engine/bare: ${(ratio * 100).toFixed(1)}%.** (Before the inline first attempt, with one delivery workflow per delivery, the same benchmark measured 2.7 events/s against 141, 1.9%.)`,
    '',
    `CPU per delivery (ms, from /proc during the rounds): engine — this Node process (worker, receiver) ${round1(engine.cpuMs.node)}, Temporal server ${round1(engine.cpuMs.temporal)}, PostgreSQL ${round1(Math.max(0, engine.cpuMs.postgres))}; ` +
      `bare — this Node process ${round1(bare.cpuMs.node)}. (PostgreSQL counts only backends alive at both ends of a round, so it is a lower bound.) ` +
      `The one-workflow-per-delivery design cost about 25 ms of Temporal server CPU and 16 ms of worker CPU per delivery.`,
    '',
    'What bounds it now: Temporal is out of the common path — one activity per pass of up to 100 events, nothing per delivery — so the Temporal server is nearly idle. ' +
      'The engine is CPU-bound in the one Node process (worker and receiver together), on work the bare loop does not do: the outbox writes (one transaction per event, part of the round), ' +
      "the pass's bulk reads and the insert of the delivery rows, and per delivery a fresh url check and the attempt recorded before going on (one SQL statement for a success: insert the attempt, mark the delivery succeeded, clear the endpoint's failing run); " +
      `plus it keeps ${inlineAttempts.width} requests in flight where the bare loop keeps ${bareInFlight}. ` +
      'A failed first attempt costs what every delivery used to: a delivery workflow with durable timers for the retries (the tests cover that path; this benchmark does not measure it). ' +
      'On this shared 2-core machine the numbers move with the load (above); the ratio is from the same run.',
  ].join('\n');
  writeSection(resultsFile, sectionHeading, `${section}\n`);
  say(`wrote ${path.relative(process.cwd(), resultsFile)}`);
  return 0;
});
