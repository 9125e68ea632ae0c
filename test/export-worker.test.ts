import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { loadConfig } from '../config.ts';
import { Transaction } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import { createExportsWorker } from '../export-worker.ts';
import { localExportStorage } from '../services/exports/storage.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

/**
 * Dedicated exports workers (export-worker.ts, EXPORTS_TASK_QUEUE): the API starts each
 * exportWorkflow with the exports queue for its file-writing activity; the engine's worker
 * (workflows and every other activity) does not write the file, an activity-only worker on
 * that queue does. Real Temporal (time-skipping server), real PostgreSQL, the real API.
 */
describe('exports on a task queue of their own', () => {
  let engine: TestEngine;
  let exportsQueue: string;
  let exportsWorker: Worker | undefined;
  let exportsRun: Promise<void> | undefined;

  beforeAll(async () => {
    engine = await startTestEngine();
    // As EXPORTS_TASK_QUEUE=… would configure it (config.ts): the API reads it when it starts an export.
    exportsQueue = `${engine.taskQueue}-exports`;
    engine.config.exportsTaskQueue = exportsQueue;
    const em = engine.db.orm.em.fork();
    for (let i = 0; i < 1203; i++) {
      em.create(Transaction, {
        id: newId('transaction'),
        accountId: engine.tenant.accountId,
        livemode: true,
        amount: 100 + i,
        currency: 'USD',
        type: 'credit',
        status: 'succeeded',
        reference: `order-${i}`,
        metadata: {},
        riskLevel: 'low',
        riskScore: 0,
        createdAt: new Date(Date.UTC(2026, 10, 1) + i * 1000),
        updatedAt: new Date(),
      });
    }
    await em.flush();
  });
  afterAll(async () => {
    if (exportsWorker?.getState() === 'RUNNING') exportsWorker.shutdown();
    await exportsRun;
    await engine?.close();
  });

  it('the engine worker leaves the file to the exports queue; an exports worker writes it', async () => {
    const created = await engine.call('POST', '/v1/exports', {
      resource: 'transactions',
      format: 'csv',
      columns: ['id', 'amount'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;
    // The workflow ran on the engine's queue and scheduled its activity on the exports queue, where nobody polls yet.
    const handle = engine.env.client.workflow.getHandle(id);
    let scheduled: string | null | undefined;
    for (let i = 0; i < 100 && !scheduled; i++) {
      const history = await handle.fetchHistory();
      scheduled = history.events?.find((e) => e.activityTaskScheduledEventAttributes)
        ?.activityTaskScheduledEventAttributes?.taskQueue?.name;
      if (!scheduled) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(scheduled).toBe(exportsQueue);
    expect((await handle.describe()).taskQueue).toBe(engine.taskQueue);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const waiting = await engine.call('GET', `/v1/exports/${id}`);
    expect(waiting.body).toMatchObject({ status: 'pending', progress: { rows_written: 0 } });

    exportsWorker = await createExportsWorker({
      connection: engine.env.nativeConnection,
      namespace: 'default',
      exportsTaskQueue: exportsQueue,
      context: engine.context,
      exportStorage: localExportStorage(path.join(engine.config.dataDir, 'exports')),
    });
    exportsRun = exportsWorker.run();
    expect(await handle.result()).toBe('succeeded');
    const done = await engine.call('GET', `/v1/exports/${id}`);
    expect(done.body).toMatchObject({
      status: 'succeeded',
      row_count: 1203,
      progress: { rows_written: 1203, rows_expected: 1203 },
    });
    const file = await engine.app.request(`/v1/exports/${id}/file`, { headers: engine.tenant.headers });
    const lines = (await file.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe('id,amount');
    expect(lines).toHaveLength(1204);
    // The export.succeeded event was recorded by the exports worker's activity.
    const events = await engine.call('GET', '/v1/events?type=export.succeeded');
    expect(events.body.data.map((e: { data: { object: { id: string } } }) => e.data.object.id)).toContain(id);
  });

  it('EXPORTS_TASK_QUEUE and WORKER_EXPORTS in the configuration', () => {
    expect(loadConfig({ NODE_ENV: 'test' })).toMatchObject({ exportsTaskQueue: undefined, workerExports: true });
    expect(
      loadConfig({ NODE_ENV: 'test', EXPORTS_TASK_QUEUE: 'billing-exports', WORKER_EXPORTS: 'false' }),
    ).toMatchObject({ exportsTaskQueue: 'billing-exports', workerExports: false });
    // The workflows' own queue is no separate exports queue.
    expect(
      loadConfig({ NODE_ENV: 'test', TEMPORAL_TASK_QUEUE: 'q', EXPORTS_TASK_QUEUE: 'q' }).exportsTaskQueue,
    ).toBeUndefined();
  });

  it('`npm run worker:exports` refuses to start without EXPORTS_TASK_QUEUE, saying what is missing', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const result = spawnSync(process.execPath, [path.join(root, 'export-worker.ts')], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        LOG_LEVEL: 'info',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stdout + result.stderr).toContain('EXPORTS_TASK_QUEUE');
  });
});
