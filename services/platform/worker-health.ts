/**
 * The health endpoint of a worker process (worker.ts, export-worker.ts): with WORKER_HEALTH_PORT set, the process
 * answers `GET /health` on that port, as the API answers its own /health (docs/operations.md#health-and-logs).
 *
 * 200 `{"status":"ok"}` only when every Temporal Worker of the process is RUNNING with the pollers it needs still
 * POLLING (the SDK's Worker.getStatus(): a poller whose loop ended or failed says SHUTDOWN or FAILED), and the
 * database and Temporal answer (3 s each). Anything else is 503 `{"status":"degraded"}` with what failed. Before
 * the workers run (a worker bundling its workflows, migrating) nothing listens, so a probe fails as it should.
 * docker-compose.yml's health checks of `worker` and `exports-worker` call it.
 */
import http from 'node:http';

import type { MikroORM } from '@mikro-orm/postgresql';
import type { NativeConnection, Worker } from '@temporalio/worker';

import { type HealthCheck, healthCheck } from './health-check.ts';
import { listenHttp, type RunningListener } from './http-listener.ts';

export interface WorkerHealthTarget {
  /** The name the answer reports it under (e.g. its task queue's role: `billing`, `clocks`, `exports`). */
  name: string;
  worker: Worker;
  /** Which pollers must be live: a workflow worker polls both, an activity-only worker (exports) polls activities. */
  polls: ('workflows' | 'activities')[];
}

export interface WorkerHealthDeps {
  workers: WorkerHealthTarget[];
  orm: MikroORM;
  connection: NativeConnection;
}

export interface WorkerHealth {
  status: 'ok' | 'degraded';
  workers: Record<string, { ok: boolean; state: string; workflow_poller?: string; activity_poller?: string }>;
  database: HealthCheck;
  temporal: HealthCheck;
}

/** The process's health now: its workers' states and pollers, the database and Temporal. */
export async function workerHealth(deps: WorkerHealthDeps): Promise<WorkerHealth> {
  const workers: WorkerHealth['workers'] = {};
  for (const { name, worker, polls } of deps.workers) {
    const status = worker.getStatus();
    const entry: WorkerHealth['workers'][string] = { ok: status.runState === 'RUNNING', state: status.runState };
    if (polls.includes('workflows')) {
      entry.workflow_poller = status.workflowPollerState;
      entry.ok &&= status.workflowPollerState === 'POLLING';
    }
    if (polls.includes('activities')) {
      entry.activity_poller = status.activityPollerState;
      entry.ok &&= status.activityPollerState === 'POLLING';
    }
    workers[name] = entry;
  }
  const [database, temporal] = await Promise.all([
    healthCheck(() => deps.orm.em.fork().execute('select 1')),
    healthCheck(() => deps.connection.workflowService.getSystemInfo({})),
  ]);
  const ok = Object.values(workers).every((w) => w.ok) && database.ok && temporal.ok;
  return { status: ok ? 'ok' : 'degraded', workers, database, temporal };
}

export type RunningWorkerHealthServer = RunningListener;

/** Serves `GET /health` (and nothing else) on `port`. */
export async function startWorkerHealthServer(
  deps: WorkerHealthDeps,
  port: number,
  hostname = '0.0.0.0',
): Promise<RunningWorkerHealthServer> {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/health')
      return send(404, { error: 'not_found', message: 'Only GET /health is served here.' });
    workerHealth(deps).then(
      (health) => send(health.status === 'ok' ? 200 : 503, health),
      (error: Error) => send(503, { status: 'degraded', error: error.message }),
    );
  });
  // Probes come and go: no keep-alive socket may hold close() open.
  server.keepAliveTimeout = 1_000;
  return listenHttp(server, port, hostname);
}
