/**
 * The API, the worker and the exports worker on one host with one environment (METRICS_PORT set once):
 * each process's /metrics and its Temporal SDK exporter get ports of their own
 * (services/observability/metrics-ports.ts), so none fails to listen. The servers are started as the
 * processes start them (startMetricsServer); the SDK exporters, which only a Temporal runtime can start
 * (one per process), are stood in for by plain listeners on their addresses.
 */
import net from 'node:net';

import { describe, expect, it } from 'vitest';

import { ConfigError } from '../config.ts';
import { metricsListenersOf, type MetricsProcess } from '../services/observability/metrics-ports.ts';
import { type RunningMetricsServer, startMetricsServer } from '../services/observability/metrics-server.ts';

const separate: MetricsProcess[] = ['api', 'worker', 'exports-worker'];

/** Every port the three processes would listen on with this environment. */
const portsOf = (env: NodeJS.ProcessEnv) =>
  separate.flatMap((process) => {
    const { port, temporalMetricsAddress } = metricsListenersOf(process, env);
    return [port, temporalMetricsAddress ? Number(temporalMetricsAddress.split(':')[1]) : undefined].filter(
      (p): p is number => p !== undefined,
    );
  });

const listen = (port: number) =>
  new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer((socket) => socket.end());
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });

/** A base port with the five after it free (tried, then released). */
async function freeBase(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const held: net.Server[] = [];
    try {
      for (let p = base; p < base + 5; p++) held.push(await listen(p));
      return base;
    } catch {
      // taken: another base
    } finally {
      await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
    }
  }
  throw new Error('no free range of 5 ports');
}

describe('metrics ports of the processes on one host', () => {
  it('each process has its own default from METRICS_PORT, and its own setting', () => {
    const env = { METRICS_PORT: '9464' };
    expect(metricsListenersOf('api', env)).toEqual({ port: 9464, temporalMetricsAddress: undefined });
    expect(metricsListenersOf('worker', env)).toEqual({ port: 9465, temporalMetricsAddress: '127.0.0.1:9466' });
    expect(metricsListenersOf('exports-worker', env)).toEqual({
      port: 9467,
      temporalMetricsAddress: '127.0.0.1:9468',
    });
    // npm start runs all of them in one process: one /metrics, one SDK runtime.
    expect(metricsListenersOf('start', env)).toEqual({ port: 9464, temporalMetricsAddress: '127.0.0.1:9465' });
    expect(new Set(portsOf(env)).size).toBe(5);
    // A process's own setting wins; its SDK exporter follows it.
    expect(metricsListenersOf('worker', { ...env, WORKER_METRICS_PORT: '9600' })).toEqual({
      port: 9600,
      temporalMetricsAddress: '127.0.0.1:9601',
    });
    expect(metricsListenersOf('api', { API_METRICS_PORT: '9700' }).port).toBe(9700);
    expect(metricsListenersOf('exports-worker', { API_METRICS_PORT: '9700' })).toEqual({
      port: undefined,
      temporalMetricsAddress: undefined,
    });
    // TEMPORAL_METRICS_ADDRESS places the SDK's exporter; the API has none.
    const placed = { METRICS_PORT: '9464', TEMPORAL_METRICS_ADDRESS: '0.0.0.0:9999' };
    expect(metricsListenersOf('worker', placed).temporalMetricsAddress).toBe('0.0.0.0:9999');
    expect(metricsListenersOf('api', placed).temporalMetricsAddress).toBeUndefined();
    // Nothing set: nothing listens.
    for (const process of [...separate, 'start'] as const)
      expect(metricsListenersOf(process, {})).toEqual({ port: undefined, temporalMetricsAddress: undefined });
    expect(() => metricsListenersOf('worker', { WORKER_METRICS_PORT: 'nine' })).toThrow(ConfigError);
    expect(() => metricsListenersOf('exports-worker', { METRICS_PORT: '65534' })).toThrow(ConfigError);
  });

  it('the three processes listen at once with one METRICS_PORT, each GET /metrics answering', async () => {
    const env = { METRICS_PORT: String(await freeBase()) };
    const servers: RunningMetricsServer[] = [];
    const exporters: net.Server[] = [];
    try {
      for (const process of separate) {
        const { port, temporalMetricsAddress } = metricsListenersOf(process, env);
        // The SDK's exporter starts first (installTemporalRuntime), then /metrics.
        if (temporalMetricsAddress) exporters.push(await listen(Number(temporalMetricsAddress.split(':')[1])));
        servers.push(await startMetricsServer(port!, { hostname: '127.0.0.1' }));
      }
      expect(exporters).toHaveLength(2);
      for (const server of servers) {
        const answer = await fetch(`http://127.0.0.1:${server.port}/metrics`);
        expect(answer.status).toBe(200);
        expect(await answer.text()).toContain('process_cpu');
      }
    } finally {
      await Promise.all(servers.map((s) => s.close()));
      await Promise.all(exporters.map((s) => new Promise((r) => s.close(r))));
    }
  });
});
