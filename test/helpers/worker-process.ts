/**
 * What the worker-kill tests share (test/worker-kill-recovery.test.ts, test/wave-crash.test.ts): a real Temporal dev
 * server (`temporal server start-dev`, in a data directory of its own), PostgreSQL, an SMTP capture, the API in
 * process, an account signed up and logged in (sandbox headers), and worker processes
 * (test/fixtures/production-worker.ts, worker.ts's options as `npm run worker` has them) that the test SIGKILLs.
 *
 * A worker's stdout is kept (`output(child)`), and written to the console when `WORKER_LOG` is set.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Client, Connection } from '@temporalio/client';
import { expect, inject } from 'vitest';

import { type App, createApp } from '../../api/app.ts';
import { ensureAdmin } from '../../api/auth/bootstrap.ts';
import { type Config, loadConfig } from '../../config.ts';
import { freePort } from '../../dev/processes.ts';
import { type RunningTemporal, startTemporalDevServer } from '../../dev/temporal-dev-server.ts';
import { createLogger } from '../../logger.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { type SmtpCapture, startSmtpCapture } from './smtp.ts';
import { eventually } from './temporal.ts';

export interface WorkerProcessStack {
  db: TestDatabase;
  temporal: RunningTemporal;
  connection: Connection;
  client: Client;
  mail: SmtpCapture;
  app: App;
  config: Config;
  /** The account's sandbox headers (a logged-in owner). */
  headers: Record<string, string>;
  /** An API call with the account's headers; the body parsed. */
  call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** A POST that must answer 201; returns the new object's id. */
  created(url: string, body: unknown): Promise<string>;
  /** A worker process on the stack's queues (the live one and the clock one); resolves once it says ready. */
  startWorker(): Promise<ChildProcess>;
  /** What a worker process wrote on stdout so far. */
  output(child: ChildProcess): string;
  /** Kills the workers still running, stops everything and removes the server's data directory. */
  stop(): Promise<void>;
}

export async function startWorkerProcessStack(options: {
  /** Names the data directory and the task queue. */
  name: string;
  /** Changes to the config (e.g. test clock limits). */
  configure?: (config: Config) => Config;
}): Promise<WorkerProcessStack> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `${options.name}-`));
  const [db, mail, temporal] = await Promise.all([
    createTestDatabase(),
    startSmtpCapture(),
    (async () =>
      startTemporalDevServer({
        dataDir,
        port: await freePort(),
        uiPort: await freePort(),
        namespace: 'default',
        log: () => {},
      }))(),
  ]);
  const shutdown = async (connection?: Connection) => {
    await connection?.close();
    await temporal.stop();
    await mail.close();
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    return await onStack({ db, mail, temporal, shutdown }, options);
  } catch (error) {
    await shutdown();
    throw error;
  }
}

/** The rest of the stack on running servers (a failure stops them: the caller's afterAll has no stack to stop). */
async function onStack(
  {
    db,
    mail,
    temporal,
    shutdown,
  }: {
    db: TestDatabase;
    mail: SmtpCapture;
    temporal: RunningTemporal;
    shutdown: (connection?: Connection) => Promise<void>;
  },
  options: { name: string; configure?: (config: Config) => Config },
): Promise<WorkerProcessStack> {
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: 'default' });
  const taskQueue = `${options.name}-${randomBytes(4).toString('hex')}`;
  const base: Config = {
    ...loadConfig({ NODE_ENV: 'test' }),
    taskQueue,
    clockTaskQueue: `${taskQueue}-clocks`,
    smtpUrl: mail.url,
  };
  const config = options.configure ? options.configure(base) : base;
  await ensureAdmin(db.orm, config.auth);
  const app = createApp({ orm: db.orm, temporal: client, config, logger: createLogger('silent') });

  const email = `owner-${randomBytes(3).toString('hex')}@example.com`;
  const signedUp = await app.request('/v1/accounts', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, name: 'Acme', type: 'business', password: 'Test!pass1' }),
  });
  expect(signedUp.status).toBe(201);
  const login = await app.request('/v1/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'Test!pass1' }),
  });
  // All in the sandbox: test clocks live there.
  const headers = {
    authorization: `Bearer ${((await login.json()) as { access_token: string }).access_token}`,
    'x-sandbox-mode': 'true',
  };

  const call = async (method: string, url: string, body?: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const created = async (url: string, body: unknown) => {
    const response = await call('POST', url, body);
    expect(response.status, `${url}: ${JSON.stringify(response.body)}`).toBe(201);
    return response.body.id as string;
  };

  const workers: ChildProcess[] = [];
  const outputs = new Map<ChildProcess, string>();
  const startWorker = async () => {
    const child = spawn(process.execPath, ['test/fixtures/production-worker.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: temporal.address,
        TASK_QUEUE: config.taskQueue,
        WORKFLOW_BUNDLE: inject('workflowBundlePath'),
        SMTP_URL: mail.url,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    workers.push(child);
    outputs.set(child, '');
    child.stdout!.on('data', (chunk) => {
      outputs.set(child, outputs.get(child) + String(chunk));
      if (process.env.WORKER_LOG) process.stdout.write(`[worker ${child.pid}] ${chunk}`);
    });
    await eventually(
      async () => outputs.get(child)!,
      (o) => o.includes('ready'),
      60_000,
    );
    return child;
  };

  return {
    db,
    temporal,
    connection,
    client,
    mail,
    app,
    config,
    headers,
    call,
    created,
    startWorker,
    output: (child) => outputs.get(child) ?? '',
    async stop() {
      for (const worker of workers) if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
      await shutdown(connection);
    },
  };
}
