import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { inject } from 'vitest';

import { type App, createApp } from '../../api/app.ts';
import { ensureAdmin } from '../../api/auth/bootstrap.ts';
import { apiDepsOf } from '../../api/deps.ts';
import { type Config, loadConfig, type ProcessorsConfig } from '../../config.ts';
import { Charge, Invoice, Subscription } from '../../db/entities/index.ts';
import { createSecretBox } from '../../domain/secret-box.ts';
import type { ServiceContext } from '../../services/context.ts';
import { createSmtpMailer } from '../../services/email/mailer.ts';
import { localExportStorage } from '../../services/exports/storage.ts';
import { ensureMaintenanceWorkflow } from '../../services/maintenance/sweeps.ts';
import type { PaymentProcessor } from '../../services/processors/types.ts';
import {
  type BillingWorkerDeps,
  createBillingWorker,
  createClockWorker,
  installTemporalRuntime,
} from '../../worker.ts';
import type { MaintenanceSettings } from '../../workflows/maintenance.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { testServiceContext } from './service-context.ts';
import { type SmtpCapture, startSmtpCapture } from './smtp.ts';
import { createTimeSkippingEnv } from './temporal.ts';

let runtimeInstalled = false;

export interface Tenant {
  accountId: string;
  email: string;
  password: string;
  accessToken: string;
  refreshToken: string;
  sessionId: string;
  /** Authorization header for the owner's session (live mode). */
  headers: Record<string, string>;
}

let tenantCounter = 0;
export const testPassword = 'Test!pass1';

export interface TestEngine {
  db: TestDatabase;
  env: TestWorkflowEnvironment;
  app: App;
  config: Config;
  /** The engine's services (services/context.ts), shared by its API and worker: for a test's own workers. */
  context: ServiceContext;
  taskQueue: string;
  /** A real SMTP server in this process: every email the worker sends arrives here, parsed. */
  mail: SmtpCapture;
  /** The account every call acts in unless it sends its own Authorization header. */
  tenant: Tenant;
  /** Signs up an account and logs its owner in. */
  signUp(options?: {
    email?: string;
    name?: string;
    password?: string;
    type?: 'individual' | 'business';
  }): Promise<Tenant>;
  login(
    email: string,
    password: string,
    headers?: Record<string, string>,
  ): Promise<{ accessToken: string; refreshToken: string; sessionId: string; headers: Record<string, string> }>;
  /** Logs the platform admin in. */
  admin(): Promise<{ accessToken: string; headers: Record<string, string> }>;
  /** Calls the API in-process (Hono's app.request), JSON in and out, as `tenant` unless headers say otherwise. */
  call(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Starts the live queue's worker and (unless `clocks: false`) the test clock queue's (worker.ts createClockWorker). */
  startWorker(options?: { processor?: PaymentProcessor; clocks?: boolean }): Promise<Worker>;
  /** Starts the test clock queue's worker alone (after startWorker({ clocks: false })). */
  startClockWorker(): Promise<Worker>;
  stopWorker(): Promise<void>;
  charges(subscriptionId?: string): Promise<Charge[]>;
  invoices(subscriptionId: string): Promise<Invoice[]>;
  subscription(id: string): Promise<Subscription | null>;
  close(): Promise<void>;
}

/**
 * The engine as a test uses it: a fresh database, a time-skipping Temporal, a
 * worker on a task queue of its own, and the real Hono app on top.
 */
export async function startTestEngine(
  options: {
    /** One processor for both modes, for the API and the worker. */
    processor?: PaymentProcessor;
    /** Which processor each mode uses (config.processors); the sandbox for both when unset. */
    processorsConfig?: ProcessorsConfig;
    startWorker?: boolean;
    /**
     * Also start the maintenance workflow, as a worker process does at boot (off by default: in
     * skipped time its timer would wake it every 5 minutes of every day another test skips).
     */
    maintenance?: boolean | Partial<MaintenanceSettings>;
    /** More of the deployment's environment, read by loadConfig (e.g. RENEWAL_SPREAD_MINUTES). */
    env?: Record<string, string>;
  } = {},
): Promise<TestEngine> {
  if (!runtimeInstalled) {
    // ERROR: the Java test server lacks a capability the SDK warns about on every worker start.
    installTemporalRuntime('error');
    runtimeInstalled = true;
  }
  const db = await createTestDatabase();
  const env = await createTimeSkippingEnv();
  const taskQueue = `test-${randomBytes(4).toString('hex')}`;
  const mail = await startSmtpCapture();
  const base = loadConfig({ ...options.env, NODE_ENV: 'test' });
  const config: Config = {
    ...base,
    taskQueue,
    clockTaskQueue: `${taskQueue}-clocks`,
    smtpUrl: mail.url,
    mailFrom: 'Billing <billing@test.example>',
    processors: options.processorsConfig ?? base.processors,
    dataDir: mkdtempSync(path.join(tmpdir(), 'billing-data-')),
  };
  // Built once, like an entry point does, and shared by the API and the worker.
  const mailer = createSmtpMailer(mail.url, config.mailFrom);
  await ensureAdmin(db.orm, config.auth);
  // The engine's services, composed as an entry point does (services/compose.ts), with the test's processor.
  const context = testServiceContext({
    orm: db.orm,
    client: env.client,
    taskQueue,
    mailer,
    config,
    ...(options.processor ? { processor: options.processor } : {}),
  });
  const app = createApp(apiDepsOf(context, config));
  let worker: Worker | undefined;
  let workerRun: Promise<void> | undefined;
  // The test clock queue's worker (worker.ts createClockWorker), started and stopped with the live one.
  let clockWorker: Worker | undefined;
  let clockWorkerRun: Promise<void> | undefined;
  let workerDeps: BillingWorkerDeps | undefined;

  const engine: TestEngine = {
    db,
    env,
    app,
    config,
    context,
    taskQueue,
    mail,
    tenant: undefined as unknown as Tenant,
    async signUp(options = {}) {
      const n = ++tenantCounter;
      const email = options.email ?? `owner${n}-${randomBytes(3).toString('hex')}@example.com`;
      const password = options.password ?? testPassword;
      const created = await engine.call(
        'POST',
        '/v1/accounts',
        { email, name: options.name ?? `Tenant ${n}`, type: options.type ?? 'business', password },
        { authorization: '' },
      );
      if (created.status !== 201) throw new Error(`sign-up failed: ${JSON.stringify(created.body)}`);
      const session = await engine.login(email, password);
      return { accountId: created.body.id, email, password, ...session };
    },
    async login(email, password, headers = {}) {
      const response = await engine.call(
        'POST',
        '/v1/auth/login',
        { email, password },
        { authorization: '', ...headers },
      );
      if (response.status !== 200) throw new Error(`login failed: ${JSON.stringify(response.body)}`);
      const { access_token: accessToken, refresh_token: refreshToken, session_id: sessionId } = response.body;
      return { accessToken, refreshToken, sessionId, headers: { authorization: `Bearer ${accessToken}` } };
    },
    async admin() {
      const session = await engine.login(config.auth.adminEmail, config.auth.adminPassword);
      return { accessToken: session.accessToken, headers: session.headers };
    },
    async call(method, path, body, headers = {}) {
      const merged: Record<string, string> = { ...(engine.tenant ? engine.tenant.headers : {}), ...headers };
      // An empty authorization header means "no credentials at all".
      if (merged.authorization === '') delete merged.authorization;
      const init: RequestInit = { method, headers: merged };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      }
      const response = await app.request(path, init);
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON */
      }
      return { status: response.status, body: parsed, headers: response.headers };
    },
    async startWorker(workerOptions = {}) {
      const deps: BillingWorkerDeps = {
        connection: env.nativeConnection,
        namespace: 'default',
        // A processor of the worker's own (a gated or crashing one) over the engine's.
        context: workerOptions.processor
          ? testServiceContext({
              orm: db.orm,
              client: env.client,
              taskQueue,
              mailer,
              config,
              processor: workerOptions.processor,
            })
          : context,
        urlPolicy: config.webhookUrlPolicy,
        secretBox: createSecretBox(config.auth.secret),
        exportStorage: localExportStorage(path.join(config.dataDir, 'exports')),
        // Read at each renewal, as a worker has its configuration: a test may change engine.config meanwhile.
        renewalSpreadMinutes: () => config.renewalSpreadMinutes,
        workflowBundle: { codePath: inject('workflowBundlePath') },
      };
      workerDeps = deps;
      worker = await createBillingWorker(deps);
      workerRun = worker.run();
      if (workerOptions.clocks !== false) await engine.startClockWorker();
      return worker;
    },
    async startClockWorker() {
      if (!workerDeps) throw new Error('startWorker first');
      clockWorker = await createClockWorker(workerDeps);
      clockWorkerRun = clockWorker.run();
      return clockWorker;
    },
    async stopWorker() {
      if (worker && worker.getState() === 'RUNNING') worker.shutdown();
      if (clockWorker && clockWorker.getState() === 'RUNNING') clockWorker.shutdown();
      await Promise.all([workerRun, clockWorkerRun]);
      worker = undefined;
      clockWorker = undefined;
    },
    charges: (subscriptionId) =>
      db.orm.em.fork().find(Charge, subscriptionId ? { idempotencyKey: { $like: `${subscriptionId}:%` } } : {}, {
        orderBy: { createdAt: 'asc', id: 'asc' },
      }),
    invoices: (subscriptionId) =>
      db.orm.em.fork().find(Invoice, { subscriptionId }, { orderBy: { periodStart: 'asc' } }),
    subscription: (id) => db.orm.em.fork().findOne(Subscription, { id }),
    async close() {
      // Workflows still running need no ending here: the file's test server stops with
      // the environment (test/helpers/temporal.ts), and nothing of this file outlives it.
      await engine.stopWorker();
      await env.teardown();
      mailer.close();
      await mail.close();
      await db.close();
      rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
  engine.tenant = await engine.signUp({ name: 'Acme' });
  if (options.startWorker !== false) await engine.startWorker();
  if (options.maintenance) {
    const settings = options.maintenance === true ? {} : options.maintenance;
    await ensureMaintenanceWorkflow(
      { temporal: { client: env.client, taskQueue } },
      {
        loginThrottleWindowSeconds: config.auth.loginThrottleWindowSeconds,
        ...settings,
      },
    );
  }
  return engine;
}

/** A customer with a payment method and a monthly plan, through the API. */
export async function seedCustomerAndPlan(
  engine: TestEngine,
  plan: { amount?: number; interval?: string; trial_period_days?: number } = {},
  paymentMethod: string | null = 'pm_card_visa',
): Promise<{ customerId: string; planId: string }> {
  const customer = await engine.call('POST', '/v1/customers', {
    email: 'ada@example.com',
    name: 'Ada',
    ...(paymentMethod ? { payment_method: paymentMethod } : {}),
  });
  const created = await engine.call('POST', '/v1/plans', {
    name: 'Pro',
    amount: 2000,
    currency: 'USD',
    interval: 'month',
    trial_period_days: 30,
    ...plan,
  });
  if (customer.status !== 201 || created.status !== 201)
    throw new Error(`seeding failed: ${JSON.stringify([customer.body, created.body])}`);
  return { customerId: customer.body.id, planId: created.body.id };
}
