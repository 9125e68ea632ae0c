/**
 * The HTTP API process. Production runs it on its own (`npm run api`:
 * `node --max-semi-space-size=16 --max-old-space-size=256 api/server.ts`, the image's CMD too: 16 MB
 * semi-spaces and a 256 MB old generation keep it under 300 MB, docs/usage.md#measured) with
 * DATABASE_URL and TEMPORAL_ADDRESS; `npm start` runs it in-process beside the
 * worker for development.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { serve, type ServerType } from '@hono/node-server';
import { Client } from '@temporalio/client';

import { ConfigError, loadConfig } from '../config.ts';
import { openOrm, requestPathDatabaseOptions } from '../db/orm.ts';
import { createLogger } from '../logger.ts';
import { composeServiceContext } from '../services/compose.ts';
import { metricsListeners } from '../services/observability/metrics-ports.ts';
import { startMetricsServer } from '../services/observability/metrics-server.ts';
import { connectForRequests } from '../services/platform/temporal-connection.ts';
import { createApp } from './app.ts';
import { ensureAdmin } from './auth/bootstrap.ts';
import { type ApiDeps, apiDepsOf } from './deps.ts';

export interface RunningApi {
  port: number;
  /** Stops accepting connections and waits for in-flight requests. */
  close(): Promise<void>;
}

export async function startApiServer(
  deps: ApiDeps,
  port: number,
  hostname = '0.0.0.0',
  options: { shutdownGraceMs?: number } = {},
): Promise<RunningApi> {
  const app = createApp(deps);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port, hostname }, () => resolve(s));
  });
  const address = server.address();
  let closing: Promise<void> | undefined;
  // While closing, a connection whose response is done is closed at once instead of idling in keep-alive.
  server.on(
    'request',
    (
      _req,
      res: { once(event: 'finish', listener: () => void): void; setHeader?(name: string, value: string): void },
    ) => {
      if (closing) res.setHeader?.('connection', 'close');
      res.once('finish', () => {
        if (closing && 'closeIdleConnections' in server) server.closeIdleConnections();
      });
    },
  );
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        const grace = setTimeout(() => {
          // Requests still running after the grace period are cut off rather than holding the process.
          if ('closeAllConnections' in server) server.closeAllConnections();
        }, options.shutdownGraceMs ?? 25_000);
        grace.unref();
        server.close(() => {
          clearTimeout(grace);
          resolve();
        });
        // Idle keep-alive sockets would hold close() open.
        if ('closeIdleConnections' in server) server.closeIdleConnections();
      })),
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { process: 'api' });
  if (!config.databaseUrl || !config.temporalAddress) {
    logger.fatal(
      'DATABASE_URL and TEMPORAL_ADDRESS must be set for a standalone API (npm start runs everything locally).',
    );
    process.exit(1);
  }
  // Connect, pool and statement timeouts: a PostgreSQL that hangs answers requests 503, not never (db/orm.ts).
  const orm = await openOrm(config.databaseUrl, requestPathDatabaseOptions());
  await ensureAdmin(orm, config.auth);
  // OTEL_EXPORTER_OTLP_ENDPOINT: a span per request, carried into the workflows the request starts (docs/operations.md#traces).
  // The OpenTelemetry SDK is imported only then: off, the process does not hold it (about 40 MB of code).
  const tracing = config.otlpEndpoint
    ? (await import('../services/observability/tracing.ts')).startTracing({
        serviceName: 'billing-api',
        otlpEndpoint: config.otlpEndpoint,
      })
    : undefined;
  // A second of retries, deadlines on quick calls and a watch on waiting ones: a Temporal outage or hang answers 503 promptly (services/platform/temporal-connection.ts).
  const connection = await connectForRequests(config.temporalAddress);
  const temporal = new Client({
    connection,
    namespace: config.temporalNamespace,
    ...(tracing ? { interceptors: { workflow: tracing.clientInterceptors } } : {}),
  });
  // The process's services (services/compose.ts): the pool, the client, each mode's processor, links, mailer.
  const context = composeServiceContext(config, { orm, client: temporal, logger });
  const api = await startApiServer(apiDepsOf(context, config, tracing ? { tracer: tracing.tracer } : {}), config.port);
  logger.info({ port: api.port, tracing: Boolean(tracing) }, 'api listening');
  // API_METRICS_PORT, else METRICS_PORT: GET /metrics on a port of its own (docs/operations.md#metrics).
  const metricsPort = metricsListeners('api', config.metricsPortSettings).port;
  const metrics = metricsPort === undefined ? undefined : await startMetricsServer(metricsPort);
  if (metrics) logger.info({ port: metrics.port }, 'metrics on GET /metrics');
  // Graceful: stop accepting, let requests in flight finish (up to 25 s), then close Temporal and the database.
  // Every failure on the way is logged, never thrown: a signal must not end in an uncaught error.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api stopping: finishing requests in flight');
    let failed = false;
    for (const [what, close] of [
      ['http server', () => api.close()],
      ['metrics server', async () => metrics?.close()],
      ['tracing', async () => tracing?.shutdown()],
      ['temporal connection', () => connection.close()],
      ['mailer', async () => context.mailer.close()],
      ['database', () => orm.close()],
    ] as const) {
      try {
        await close();
      } catch (error) {
        failed = true;
        logger.error({ err: error }, `api stopping: closing the ${what} failed`);
      }
    }
    logger.info('api stopped');
    process.exit(failed ? 1 : 0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop(signal));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    // A configuration mistake gets its message, not a stack trace.
    console.error(error instanceof ConfigError ? `Configuration: ${error.message}` : error);
    process.exit(1);
  });
}
