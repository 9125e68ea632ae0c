/**
 * Which ports a process's metrics listen on (docs/operations.md#metrics). The API, the worker and the
 * exports worker may run on one host (a VM, systemd units, `node worker.ts &` beside `node api/server.ts`)
 * with one environment: if each took METRICS_PORT, and a worker's Temporal SDK exporter METRICS_PORT + 1,
 * the second process to start would fail to listen. So each process has its own setting and its own
 * default, apart from the others':
 *
 * | process | GET /metrics | its Temporal SDK exporter (loopback) |
 * |---|---|---|
 * | `npm start` (everything in one) | METRICS_PORT | METRICS_PORT + 1 |
 * | API (`node api/server.ts`) | API_METRICS_PORT, else METRICS_PORT | none (no SDK worker) |
 * | worker (`node worker.ts`) | WORKER_METRICS_PORT, else METRICS_PORT + 1 | its port + 1 |
 * | exports worker (`node export-worker.ts`) | EXPORTS_WORKER_METRICS_PORT, else METRICS_PORT + 3 | its port + 1 |
 *
 * TEMPORAL_METRICS_ADDRESS (host:port) still places a worker's SDK exporter anywhere (one per process).
 * With none of these set, nothing listens.
 */
import { ConfigError, type MetricsPortSettings, readMetricsPortSettings } from '../../config.ts';

export type MetricsProcess = 'start' | 'api' | 'worker' | 'exports-worker';

/** Where each process's default sits from METRICS_PORT: the worker's SDK takes +2, the exports worker's +4. */
const offsets: Record<MetricsProcess, number> = { start: 0, api: 0, worker: 1, 'exports-worker': 3 };
/** The processes that run a Temporal SDK worker, whose runtime exports its own metrics. */
const runsSdkWorker = new Set<MetricsProcess>(['start', 'worker', 'exports-worker']);

export interface MetricsListeners {
  /** GET /metrics's port; undefined: none is served. */
  port: number | undefined;
  /** host:port of the Temporal SDK's exporter, appended to /metrics; undefined: none. */
  temporalMetricsAddress: string | undefined;
}

/** The metrics ports of `process` from the settings (config.metricsPortSettings; see the table above). */
export function metricsListeners(process: MetricsProcess, settings: MetricsPortSettings): MetricsListeners {
  const base = settings.metricsPort;
  const own = process === 'start' ? undefined : settings[process];
  // Port 0 (any free port, in tests) stays 0: an offset from it would name a fixed port.
  const port = own ?? (base === undefined ? undefined : base === 0 ? 0 : base + offsets[process]);
  if (port !== undefined && port > 65_535)
    throw new ConfigError(`METRICS_PORT ${base} leaves no room for the ${process}'s metrics port (${port}).`);
  const explicit = settings.temporalMetricsAddress;
  const sdk =
    !runsSdkWorker.has(process) || (port === undefined && !explicit)
      ? undefined
      : (explicit ?? (port ? `127.0.0.1:${port + 1}` : undefined));
  return { port, temporalMetricsAddress: sdk };
}

/** The metrics ports of `process` in this environment (the settings read as config.ts reads them). */
export function metricsListenersOf(process: MetricsProcess, env: NodeJS.ProcessEnv): MetricsListeners {
  return metricsListeners(process, readMetricsPortSettings(env));
}
