/**
 * The Temporal worker: runs workflows and activities. Production runs it as its
 * own process (`npm run worker`, or `node --max-old-space-size=384 worker.ts`), beside one or more API
 * processes; `npm start` runs it in-process for development. The flag caps each V8 heap of the process (the main
 * thread's and the SDK's workflow thread's): without it a wave of 10,000 renewals peaked at 1,358 MB of RSS, the
 * workflow thread's heap growing while it rebuilt evicted workflows; with it 866 MB (docs/scaling.md#memory-the-workflow-cache).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';

import { createActivities } from './activities/index.ts';
import { testClockContext } from './activities/test-clock-context.ts';
import { wakeDispatchAfterActivities } from './activities/wake-dispatch.ts';
import { clockWorkerCacheDefault, ConfigError, loadConfig } from './config.ts';
import { migrate, openOrm } from './db/orm.ts';
import { createSecretBox, type SecretBox } from './domain/secret-box.ts';
import type { WebhookUrlPolicy } from './domain/webhook-url.ts';
import { createExportsWorker, installTemporalRuntime } from './export-worker.ts';
import { createLogger } from './logger.ts';
import { composeServiceContext } from './services/compose.ts';
import type { ServiceContext } from './services/context.ts';
import { type ExportStorage, localExportStorage } from './services/exports/storage.ts';
import { useTaxCalculator } from './services/invoices/adjustments.ts';
import { ensureMaintenanceWorkflow } from './services/maintenance/sweeps.ts';
import { setOutboxProbe } from './services/observability/metrics.ts';
import { metricsListeners } from './services/observability/metrics-ports.ts';
import { startMetricsServer } from './services/observability/metrics-server.ts';
import { outboxProbe } from './services/observability/outbox-probe.ts';
import { startTracing, type Tracing } from './services/observability/tracing.ts';
import type { PayoutRail } from './services/payouts/rail.ts';
import { startWorkerHealthServer, type WorkerHealthTarget } from './services/platform/worker-health.ts';
import type { TaxCalculator } from './services/taxes/calculator.ts';
import { registerClockTaskQueue } from './services/test-clocks/binding.ts';

export { installTemporalRuntime };

export const workflowsPath = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));
/** Workflow interceptor modules, for the worker's bundle and prebuilt ones (bundleWorkflowCode's workflowInterceptorModules). */
export const workflowInterceptorModules = [
  fileURLToPath(new URL('./workflows/test-clock-interceptors.ts', import.meta.url)),
];
/**
 * With tracing on (OTEL_EXPORTER_OTLP_ENDPOINT), the bundle also holds the OpenTelemetry workflow interceptors. Only
 * then: the bundle without them is the one every recorded history replays against, and tracing off costs nothing.
 */
export const tracingWorkflowInterceptorModules = [
  ...workflowInterceptorModules,
  createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

export interface BillingWorkerDeps {
  connection: NativeConnection;
  namespace: string;
  /**
   * The process's services (services/compose.ts composeServiceContext): the database, the task queues (the live one,
   * and the test clocks' one served by createClockWorker: services/test-clocks/binding.ts taskQueueFor), each mode's
   * processor, the mailer and the customer links. Tests compose one with the processors they want.
   */
  context: ServiceContext;
  /** Where sandbox webhook endpoints may point (config.webhookUrlPolicy): the rule the API checked at creation. */
  urlPolicy?: WebhookUrlPolicy;
  /** Opens webhook signing secrets: createSecretBox(AUTH_SECRET), the same key the API seals them with. */
  secretBox?: SecretBox;
  /** A prebuilt workflow bundle (tests build it once per run; with workflowInterceptorModules); else the worker bundles `workflows/`. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  identity?: string;
  /** Where export files are written (services/exports/storage.ts): DATA_DIR/exports by default. */
  exportStorage?: ExportStorage;
  /** Where payouts go: the sandbox rail (services/payouts/rail.ts) when unset. */
  payoutRail?: PayoutRail;
  /** What invoices are taxed at (services/taxes/calculator.ts): the built-in rates when unset; a merchant's tax service plugs in here. */
  taxCalculator?: TaxCalculator;
  /** RENEWAL_SPREAD_MINUTES now (config.renewalSpreadMinutes): handed to each renewing subscription (activities/index.ts). */
  renewalSpreadMinutes?: () => number;
  /** USAGE_RETENTION_DAYS (config.usageRetentionDays): how long the maintenance keeps meter events (default 400). */
  usageRetentionDays?: number;
  /**
   * Tracing is on (services/observability/tracing.ts): activity spans and the workflow sandbox's span sink. The
   * workflow bundle must then be built with tracingWorkflowInterceptorModules (bundleBillingWorkflows({ tracing: true })).
   */
  tracing?: Pick<Tracing, 'activityInterceptors' | 'sinks'>;
  /** The test clock queue's Worker's cache (config.clockWorkerCachedWorkflows, TEST_CLOCK_WORKER_CACHE); unset: clockWorkerDefaults'. */
  clockCachedWorkflows?: number;
  /** Worker tuning beyond the defaults (tests use maxCachedWorkflows). */
  overrides?: Partial<
    Pick<
      WorkerOptions,
      'maxCachedWorkflows' | 'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions'
    >
  >;
}

/**
 * Worker settings that differ from the SDK's defaults.
 *
 * The workflow cache: at most 1,000 workflows. Every subscription is a workflow
 * that sleeps until its next billing date, and a sleeping workflow need not stay cached:
 * one evicted is rebuilt from its history (one run holds at most a year of billing dates,
 * workflows/subscription.ts renewalsPerRun) when its timer fires. A cached workflow costs
 * about 0.3 MB of the worker's RSS, so the SDK's default (it follows the machine's memory,
 * about 600 workflows per GB of heap) let 10,000 subscriptions take 3 GB or more.
 * The cap once stalled runs (3,000 subscriptions, a cap of 1,000: 17 retried workflow tasks
 * never picked up, while every renewal continued as new into a run needing a cache slot of
 * its own); since renew-in-place a renewal stays in its run, and the same wave of 3,000
 * under the cap of 1,000 renewed every subscription once (bench/RESULTS.md, docs/scaling.md).
 *
 * The sticky queue's schedule-to-start timeout: 5 s (the SDK's default is 10 s). A workflow task of a cached
 * workflow goes to this worker's own (sticky) queue; when the worker dies (SIGKILL, OOM, a lost machine) the tasks
 * already queued there, and those the server still sends there until it notices nobody polls (10 s), wait out this
 * timeout before they are scheduled again on the shared queue, where any worker takes them: so every subscription a
 * dead worker held takes its next task within about 15 s (test/worker-kill-recovery.test.ts). It was 5 minutes for a
 * while, to spare a wave of renewals its timeouts (on the 1st the sticky queue is a backlog of N / rate seconds, and a
 * task that waits past the timeout costs two more history events and is handed over with its whole history); a
 * worker killed during a wave then left requests waiting for minutes. Measured at 1,000 renewals, rounds alternating
 * in one run (bench/RESULTS.md, BENCH_VARIANTS; docs/scaling.md#the-sticky-queue-and-a-worker-that-dies): 5 s against
 * 5 minutes cost 1% and 11% more CPU per renewal in two runs on a shared, loaded machine (renewals per second within
 * its noise); the wave is bound by CPU, and a timed-out task's extra events and history are small beside a renewal.
 */
export const workerDefaults: Partial<Pick<WorkerOptions, 'maxCachedWorkflows' | 'stickyQueueScheduleToStartTimeout'>> =
  {
    maxCachedWorkflows: 1000,
    stickyQueueScheduleToStartTimeout: '5s',
  };

/**
 * The test clock worker's limits (createClockWorker): its own, so a clock advance never takes a slot of the live
 * queue's worker (createBillingWorker) and live work never queues behind a clock (docs/scaling.md#test-clocks).
 *
 * 40 workflow tasks at once (the SDK's default, as the live worker), as many local activities: a due renewal's
 * workflow task holds its slot while its renewal runs as a local activity, so the slots bound how many renewals of an
 * advance run at once. With 4 (before issue #29) a tick to 150 due workflows left most of their tasks waiting past the
 * sticky queue's 5 s (118 to 189 sticky timeouts per wave of 150, each task then replayed from the shared queue).
 *
 * 300 cached workflows (TEST_CLOCK_WORKER_CACHE sets it), fewer than the live worker's 1,000: sandbox work shares the
 * process with live work, and each cached workflow holds about 0.3 MB of its RSS. A cache of 1,000 makes a large
 * advance faster, each workflow beyond the cache being rebuilt from its history before it can renew: over the public
 * API at 1,000 trials on ten clocks, 34.3 to 36.3 renewals a second against 26.3 with 300 (25.9 with 500), at 10,000
 * on 100 clocks 22.8 against 19.2; and the worker's peak RSS 1,083 to 1,148 MB against 809 MB at 1,000 and 851 MB at
 * 10,000 with 300 (bench:renewals --black-box, idle machine, Nov 27; docs/scaling.md#test-clocks).
 */
export const clockWorkerDefaults: Partial<
  Pick<
    WorkerOptions,
    | 'maxCachedWorkflows'
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxConcurrentActivityTaskExecutions'
    | 'maxConcurrentLocalActivityExecutions'
    | 'stickyQueueScheduleToStartTimeout'
  >
> = {
  maxCachedWorkflows: clockWorkerCacheDefault,
  maxConcurrentWorkflowTaskExecutions: 40,
  maxConcurrentActivityTaskExecutions: 8,
  maxConcurrentLocalActivityExecutions: 40,
  // As workerDefaults: a clock advance whose worker died goes on within seconds.
  stickyQueueScheduleToStartTimeout: '5s',
};

/** The workflow code, bundled once for a process's workers (the live one and the test clock one). */
export async function bundleBillingWorkflows(
  options: { tracing?: boolean } = {},
): Promise<NonNullable<WorkerOptions['workflowBundle']>> {
  return bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: options.tracing ? tracingWorkflowInterceptorModules : workflowInterceptorModules,
  });
}

function billingWorkerOptions(deps: BillingWorkerDeps, taskQueue: string): WorkerOptions {
  // The tax calculator every invoice this worker issues asks (services/invoices/adjustments.ts).
  useTaxCalculator(deps.taxCalculator);
  const { context } = deps;
  registerClockTaskQueue(context.temporal.taskQueue, context.temporal.clockTaskQueue);
  return {
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue,
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath }),
    // The composed services as they are (ActivityDeps picks orm, processors, mailer and links; activities message
    // Temporal with their own client and queue), and the worker's own options.
    activities: createActivities({
      ...context,
      secretBox: deps.secretBox,
      exportStorage: deps.exportStorage,
      payoutRail: deps.payoutRail,
      urlPolicy: deps.urlPolicy,
      renewalSpreadMinutes: deps.renewalSpreadMinutes,
      usageRetentionDays: deps.usageRetentionDays,
    }),
    // After each activity: wake the webhook dispatcher (events recorded by workflow-driven changes).
    // Activities of workflows on a test clock run on its time (services/test-clocks/now.ts).
    // With tracing, its activity interceptor first: the span covers the others' work too.
    interceptors: {
      activity: [
        ...(deps.tracing?.activityInterceptors ?? []),
        testClockContext,
        wakeDispatchAfterActivities(context.orm),
      ],
      ...(deps.workflowBundle
        ? {}
        : { workflowModules: deps.tracing ? tracingWorkflowInterceptorModules : workflowInterceptorModules }),
    },
    ...(deps.tracing ? { sinks: deps.tracing.sinks } : {}),
    ...(deps.identity ? { identity: deps.identity } : {}),
  };
}

/** The live queue's worker: every workflow not on a test clock, and its activities. */
export async function createBillingWorker(deps: BillingWorkerDeps): Promise<Worker> {
  return Worker.create({
    ...billingWorkerOptions(deps, deps.context.temporal.taskQueue),
    ...workerDefaults,
    ...deps.overrides,
  });
}

/**
 * The test clock queue's worker (deps.context.temporal.clockTaskQueue): the clocks' workflows, every workflow bound to a
 * clock, and their activities, with clockWorkerDefaults' limits. The worker process, `npm start` and the
 * tests' engine run it beside createBillingWorker's.
 */
export async function createClockWorker(deps: BillingWorkerDeps): Promise<Worker> {
  return Worker.create({
    ...billingWorkerOptions(deps, deps.context.temporal.clockTaskQueue),
    ...clockWorkerDefaults,
    ...(deps.clockCachedWorkflows !== undefined ? { maxCachedWorkflows: deps.clockCachedWorkflows } : {}),
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { process: 'worker' });
  if (!config.databaseUrl || !config.temporalAddress) {
    logger.fatal(
      'DATABASE_URL and TEMPORAL_ADDRESS must be set for a standalone worker (npm start runs everything locally).',
    );
    process.exit(1);
  }
  // WORKER_METRICS_PORT (else METRICS_PORT + 1), the SDK's own worker metrics on the next port, appended to /metrics.
  const metricsPorts = metricsListeners('worker', config.metricsPortSettings);
  installTemporalRuntime(config.logLevel, { metricsAddress: metricsPorts.temporalMetricsAddress });
  // OTEL_EXPORTER_OTLP_ENDPOINT: workflow, activity and SQL spans (docs/operations.md#traces).
  const tracing = startTracing({ serviceName: 'billing-worker', otlpEndpoint: config.otlpEndpoint });
  const orm = await openOrm(config.databaseUrl);
  await migrate(orm, config.databaseUrl);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  // The process's services, composed once (services/compose.ts): the worker's and the test clock worker's.
  const client = new Client({ connection, namespace: config.temporalNamespace });
  const context = composeServiceContext(config, { orm, client, logger });
  // One bundle for both workers: the live queue's and the test clocks' (docs/scaling.md#test-clocks).
  const workerDeps: BillingWorkerDeps = {
    connection,
    namespace: config.temporalNamespace,
    context,
    secretBox: createSecretBox(config.auth.secret),
    urlPolicy: config.webhookUrlPolicy,
    exportStorage: localExportStorage(path.join(config.dataDir, 'exports')),
    workflowBundle: await bundleBillingWorkflows({ tracing: Boolean(tracing) }),
    renewalSpreadMinutes: () => config.renewalSpreadMinutes,
    usageRetentionDays: config.usageRetentionDays,
    clockCachedWorkflows: config.clockWorkerCachedWorkflows,
    ...(tracing ? { tracing } : {}),
  };
  const worker = await createBillingWorker(workerDeps);
  const clockWorker = await createClockWorker(workerDeps);
  // EXPORTS_TASK_QUEUE set: this worker writes exports too, on that queue, unless WORKER_EXPORTS=false leaves them to
  // dedicated exports workers (export-worker.ts).
  const exportsWorker =
    config.exportsTaskQueue && config.workerExports
      ? await createExportsWorker({
          connection,
          namespace: config.temporalNamespace,
          exportsTaskQueue: config.exportsTaskQueue,
          context,
          exportStorage: localExportStorage(path.join(config.dataDir, 'exports')),
        })
      : undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      worker.shutdown();
      clockWorker.shutdown();
      exportsWorker?.shutdown();
    });
  // One maintenance workflow per task queue (workflows/maintenance.ts): the first worker starts it, the others find it.
  const maintenance = await ensureMaintenanceWorkflow(context, {
    loginThrottleWindowSeconds: config.auth.loginThrottleWindowSeconds,
  });
  logger.info(
    {
      taskQueue: config.taskQueue,
      clockTaskQueue: config.clockTaskQueue,
      temporal: config.temporalAddress,
      maintenance: maintenance.workflowId,
    },
    'worker running',
  );
  // WORKER_HEALTH_PORT: GET /health answers 200 while every worker here polls and the database and Temporal answer
  // (services/platform/worker-health.ts; docker-compose.yml's health check). Up before run(): 503 until the workers run.
  const healthTargets: WorkerHealthTarget[] = [
    { name: 'billing', worker, polls: ['workflows', 'activities'] },
    { name: 'clocks', worker: clockWorker, polls: ['workflows', 'activities'] },
    ...(exportsWorker
      ? [{ name: 'exports', worker: exportsWorker, polls: ['activities'] } satisfies WorkerHealthTarget]
      : []),
  ];
  const health =
    config.workerHealthPort === undefined
      ? undefined
      : await startWorkerHealthServer({ workers: healthTargets, orm, connection }, config.workerHealthPort);
  if (health) logger.info({ port: health.port }, 'worker health on GET /health');
  // METRICS_PORT: GET /metrics with the outbox backlog (read when scraped) and the SDK's worker metrics (docs/operations.md#metrics).
  setOutboxProbe(outboxProbe(orm));
  const metrics =
    metricsPorts.port === undefined
      ? undefined
      : await startMetricsServer(metricsPorts.port, { temporalMetricsAddress: metricsPorts.temporalMetricsAddress });
  if (metrics) logger.info({ port: metrics.port }, 'metrics on GET /metrics');
  await Promise.all([worker.run(), clockWorker.run(), exportsWorker?.run()]);
  await health?.close();
  await metrics?.close();
  await tracing?.shutdown();
  await connection.close();
  context.mailer.close();
  await orm.close();
  logger.info('worker stopped');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    // A configuration mistake gets its message, not a stack trace.
    console.error(error instanceof ConfigError ? `Configuration: ${error.message}` : error);
    process.exit(1);
  });
}
