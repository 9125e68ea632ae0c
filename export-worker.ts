/**
 * The exports worker: a Temporal worker for the heavy part of exports only (docs/exports-and-search.md,
 * "Where exports run"). It polls EXPORTS_TASK_QUEUE with one activity, `writeExport` (activities/export.ts),
 * and registers no workflows: no workflow bundle, no V8 isolates, none of the other activities (its services come from
 * the same composition as every process's, services/compose.ts, of which it uses the database, the queues and the
 * processors' test-mode rule). Run it as its own process beside the workers of TEMPORAL_TASK_QUEUE:
 *
 *   EXPORTS_TASK_QUEUE=billing-exports npm run worker:exports
 *
 * The API then starts each exportWorkflow with that queue for its activity. The workflow itself stays
 * on TEMPORAL_TASK_QUEUE; `npm run worker` and `npm start` also run createExportsWorker in-process
 * when EXPORTS_TASK_QUEUE is set, unless WORKER_EXPORTS=false (then only dedicated exports workers write
 * files).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';

import { createExportActivities } from './activities/export.ts';
import { wakeDispatchAfterActivities } from './activities/wake-dispatch.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openOrm } from './db/orm.ts';
import { createLogger } from './logger.ts';
import { composeServiceContext } from './services/compose.ts';
import type { ServiceContext } from './services/context.ts';
import { type ExportStorage, localExportStorage } from './services/exports/storage.ts';
import { metricsListeners } from './services/observability/metrics-ports.ts';
import { startMetricsServer } from './services/observability/metrics-server.ts';
import { startWorkerHealthServer } from './services/platform/worker-health.ts';

export interface ExportsWorkerDeps {
  connection: NativeConnection;
  namespace: string;
  /** EXPORTS_TASK_QUEUE: where exportWorkflow schedules writeExport. */
  exportsTaskQueue: string;
  /**
   * The process's services (services/compose.ts): the database, the workflows' queue (TEMPORAL_TASK_QUEUE, where the
   * webhook dispatcher is woken after an export is recorded) and the processors (live on the sandbox: PDFs say TEST).
   */
  context: Pick<ServiceContext, 'orm' | 'temporal' | 'processors'>;
  exportStorage: ExportStorage;
  identity?: string;
  /** Exports written at once by this worker (each streams one file; default 2). */
  maxConcurrentExports?: number;
}

/** An activity-only worker on the exports queue. */
export async function createExportsWorker(deps: ExportsWorkerDeps): Promise<Worker> {
  const { orm, temporal } = deps.context;
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.exportsTaskQueue,
    // Live mode on the sandbox processor moves no real money (Processors.isTestMode): invoice PDFs say TEST. The
    // processors are built at the first export that asks (services/compose.ts), not when the worker starts.
    activities: createExportActivities({
      orm,
      exportStorage: deps.exportStorage,
      isTestMode: (livemode) => deps.context.processors.isTestMode(livemode),
    }),
    interceptors: { activity: [wakeDispatchAfterActivities(orm, temporal.taskQueue)] },
    maxConcurrentActivityTaskExecutions: deps.maxConcurrentExports ?? 2,
    ...(deps.identity ? { identity: deps.identity } : {}),
  });
}

let runtimeInstalled = false;

/**
 * Quiets the SDK (its bundler output, its Rust core) to warnings, unless LOG_LEVEL asks for more. With
 * `metricsAddress` (config.temporalMetricsAddress), the core serves the SDK's worker metrics there in Prometheus
 * format (`temporal_` names as in Temporal's SDK metrics reference, durations in seconds), which the process's /metrics appends. Once per
 * process: a second call (a test after the engine installed it) changes nothing.
 */
export function installTemporalRuntime(logLevel: string, options: { metricsAddress?: string } = {}): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level =
    logLevel === 'debug' || logLevel === 'trace'
      ? 'INFO'
      : logLevel === 'error' || logLevel === 'silent'
        ? 'ERROR'
        : 'WARN';
  // shutdownSignals: [] because our entry points stop things themselves, in order.
  Runtime.install({
    shutdownSignals: [],
    logger: new DefaultLogger(level),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: level }) },
      ...(options.metricsAddress
        ? { metrics: { prometheus: { bindAddress: options.metricsAddress, useSecondsForDurations: true } } }
        : {}),
    },
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { process: 'exports-worker' });
  if (!config.databaseUrl || !config.temporalAddress || !config.exportsTaskQueue) {
    logger.fatal(
      'DATABASE_URL, TEMPORAL_ADDRESS and EXPORTS_TASK_QUEUE (not the same as TEMPORAL_TASK_QUEUE) must be set for an exports worker.',
    );
    process.exit(1);
  }
  // EXPORTS_WORKER_METRICS_PORT (else METRICS_PORT + 3), the SDK's own worker metrics on the next port.
  const metricsPorts = metricsListeners('exports-worker', config.metricsPortSettings);
  installTemporalRuntime(config.logLevel, { metricsAddress: metricsPorts.temporalMetricsAddress });
  // No migration here: the API and `npm run worker` migrate; this process only reads rows and updates exports.
  const orm = await openOrm(config.databaseUrl);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  // The process's services, composed as every entry point does (services/compose.ts).
  const client = new Client({ connection, namespace: config.temporalNamespace });
  const context = composeServiceContext(config, { orm, client, logger });
  const worker = await createExportsWorker({
    connection,
    namespace: config.temporalNamespace,
    exportsTaskQueue: config.exportsTaskQueue,
    context,
    exportStorage: localExportStorage(path.join(config.dataDir, 'exports')),
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => worker.shutdown());
  logger.info({ taskQueue: config.exportsTaskQueue, temporal: config.temporalAddress }, 'exports worker running');
  // WORKER_HEALTH_PORT: GET /health, 200 while the activity poller polls and the database and Temporal answer (services/platform/worker-health.ts).
  const health =
    config.workerHealthPort === undefined
      ? undefined
      : await startWorkerHealthServer(
          { workers: [{ name: 'exports', worker, polls: ['activities'] }], orm, connection },
          config.workerHealthPort,
        );
  if (health) logger.info({ port: health.port }, 'exports worker health on GET /health');
  // METRICS_PORT: GET /metrics, with the SDK's worker metrics (docs/operations.md#metrics).
  const metrics =
    metricsPorts.port === undefined
      ? undefined
      : await startMetricsServer(metricsPorts.port, { temporalMetricsAddress: metricsPorts.temporalMetricsAddress });
  await worker.run();
  await health?.close();
  await metrics?.close();
  await connection.close();
  await orm.close();
  logger.info('exports worker stopped');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error instanceof ConfigError ? `Configuration: ${error.message}` : error);
    process.exit(1);
  });
}
