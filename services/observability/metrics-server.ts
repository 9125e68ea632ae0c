/**
 * A process's Prometheus endpoint: with METRICS_PORT set, the API, the worker and the exports worker each answer
 * `GET /metrics` on that port (a port of its own, not the API's: it is for the scraper on the private network, and
 * the public API's port never shows it). The text is this process's registry (services/observability/metrics.ts)
 * followed, in a worker, by the Temporal SDK's own worker metrics, which its Rust core serves on
 * TEMPORAL_METRICS_ADDRESS (loopback by default; export-worker.ts installTemporalRuntime): one scrape target
 * per process (docs/operations.md#metrics).
 */
import http from 'node:http';

import { listenHttp, type RunningListener } from '../platform/http-listener.ts';
import { collectProcessMetrics, metricsRegistry, renderMetrics } from './metrics.ts';

export interface MetricsServerOptions {
  /** host:port of the SDK's Prometheus exporter whose text is appended (a worker), if any. */
  temporalMetricsAddress?: string;
  hostname?: string;
}

export type RunningMetricsServer = RunningListener;

/** The SDK's metrics text, or a comment saying why there is none (a scrape never fails over it). */
async function temporalMetrics(address: string): Promise<string> {
  const url = `http://${address.replace(/^0\.0\.0\.0:/, '127.0.0.1:')}/metrics`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return response.ok ? await response.text() : `# temporal sdk metrics: HTTP ${response.status} from ${url}\n`;
  } catch (error) {
    return `# temporal sdk metrics unavailable from ${url}: ${(error as Error).message}\n`;
  }
}

export async function startMetricsServer(
  port: number,
  options: MetricsServerOptions = {},
): Promise<RunningMetricsServer> {
  collectProcessMetrics();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(req.method === 'GET' ? 404 : 405, { 'content-type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    void Promise.all([
      renderMetrics(),
      options.temporalMetricsAddress ? temporalMetrics(options.temporalMetricsAddress) : '',
    ])
      .then(([own, sdk]) =>
        res
          .writeHead(200, { 'content-type': metricsRegistry.contentType })
          .end(own + (own.endsWith('\n') ? '' : '\n') + sdk),
      )
      .catch((error: Error) =>
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${error.message}\n`),
      );
  });
  return listenHttp(server, port, options.hostname ?? '0.0.0.0');
}
