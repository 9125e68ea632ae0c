import path from 'node:path';

import type { Worker } from '@temporalio/worker';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { createExportsWorker } from '../export-worker.ts';
import { localExportStorage } from '../services/exports/storage.ts';
import { type RunningWorkerHealthServer, startWorkerHealthServer } from '../services/platform/worker-health.ts';
import { createTestDatabase } from './helpers/db.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * The worker processes' GET /health (services/platform/worker-health.ts, WORKER_HEALTH_PORT; docker-compose.yml's
 * health checks of worker and exports-worker): a real signal, not "the process exists". It says 200 only
 * while each worker RUNs with its pollers POLLING and the database and Temporal answer; 503 before the
 * workers run, after they stop, and when the database does not answer. Real Temporal (time-skipping
 * server), real PostgreSQL, real HTTP.
 */
describe('worker health endpoint', () => {
  let engine: TestEngine;
  const servers: RunningWorkerHealthServer[] = [];
  const get = async (server: RunningWorkerHealthServer, p = '/health') => {
    const response = await fetch(`http://127.0.0.1:${server.port}${p}`);
    return { status: response.status, body: (await response.json()) as any };
  };

  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await engine?.close();
  });

  it('an exports worker: 503 before it runs, 200 while its activity poller polls, 503 once it has stopped', async () => {
    const worker: Worker = await createExportsWorker({
      connection: engine.env.nativeConnection,
      namespace: 'default',
      exportsTaskQueue: `${engine.taskQueue}-exports`,
      context: engine.context,
      exportStorage: localExportStorage(path.join(engine.config.dataDir, 'exports')),
    });
    const server = await startWorkerHealthServer(
      {
        workers: [{ name: 'exports', worker, polls: ['activities'] }],
        orm: engine.db.orm,
        connection: engine.env.nativeConnection,
      },
      0,
      '127.0.0.1',
    );
    servers.push(server);

    const before = await get(server);
    expect(before.status).toBe(503);
    expect(before.body).toMatchObject({
      status: 'degraded',
      workers: { exports: { ok: false, state: 'INITIALIZED' } },
      database: { ok: true },
      temporal: { ok: true },
    });

    const run = worker.run();
    const running = await eventually(
      () => get(server),
      (r) => r.status === 200,
    );
    expect(running.body).toMatchObject({
      status: 'ok',
      workers: { exports: { ok: true, state: 'RUNNING', activity_poller: 'POLLING' } },
    });
    // An activity-only worker has no workflow poller to report.
    expect(running.body.workers.exports.workflow_poller).toBeUndefined();
    expect((await get(server, '/metrics')).status).toBe(404);

    worker.shutdown();
    await run;
    const after = await get(server);
    expect(after.status).toBe(503);
    expect(after.body.workers.exports).toMatchObject({ ok: false, state: 'STOPPED' });
  });

  it('the billing worker: both pollers; 503 when the database does not answer, though the worker runs', async () => {
    const worker = await engine.startWorker({ clocks: false });
    const server = await startWorkerHealthServer(
      {
        workers: [{ name: 'billing', worker, polls: ['workflows', 'activities'] }],
        orm: engine.db.orm,
        connection: engine.env.nativeConnection,
      },
      0,
      '127.0.0.1',
    );
    servers.push(server);
    const ok = await eventually(
      () => get(server),
      (r) => r.status === 200,
    );
    expect(ok.body.workers.billing).toEqual({
      ok: true,
      state: 'RUNNING',
      workflow_poller: 'POLLING',
      activity_poller: 'POLLING',
    });

    // The same worker, judged against a database that goes away (dropped, its connections ended): degraded, and it says why.
    const doomed = await createTestDatabase();
    const noDatabase = await startWorkerHealthServer(
      {
        workers: [{ name: 'billing', worker, polls: ['workflows', 'activities'] }],
        orm: doomed.orm,
        connection: engine.env.nativeConnection,
      },
      0,
      '127.0.0.1',
    );
    servers.push(noDatabase);
    expect((await get(noDatabase)).status).toBe(200);
    const admin = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await admin.connect();
    await admin.query(`drop database ${new URL(doomed.url).pathname.slice(1)} with (force)`);
    await admin.end();
    const degraded = await get(noDatabase);
    await doomed.close().catch(() => undefined);
    expect(degraded.status).toBe(503);
    expect(degraded.body).toMatchObject({
      status: 'degraded',
      workers: { billing: { ok: true } },
      database: { ok: false, error: expect.any(String) },
      temporal: { ok: true },
    });
    await engine.stopWorker();
  });
});
