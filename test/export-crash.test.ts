import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Transaction } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import { pageSize } from '../services/exports/run.ts';
import { localExportStorage } from '../services/exports/storage.ts';
import { startCrashingWorker } from './helpers/crashing-worker.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * A worker process killed (SIGKILL) in the middle of writing an export's file: the
 * export still finishes, through another worker, with exactly one published file
 * holding every row once, and the dead writer's half file is never served.
 */
describe('a worker killed mid-export', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it('is replaced by a new worker and the export completes with one whole file', { timeout: 120_000 }, async () => {
    const total = pageSize * 4 + 11;
    const em = engine.db.orm.em.fork();
    const now = Date.now();
    const ids = Array.from({ length: total }, () => newId('transaction'));
    await em.insertMany(
      Transaction,
      ids.map((id, i) => ({
        id,
        accountId: engine.tenant.accountId,
        livemode: true,
        amount: i + 1,
        currency: 'USD',
        type: 'credit',
        status: 'succeeded',
        reference: `row ${i}`,
        metadata: {},
        riskLevel: 'low',
        riskScore: 0,
        amountRefunded: 0,
        createdAt: new Date(now - (total - i) * 1000),
        updatedAt: new Date(now),
      })) as never,
    );
    const exportsDir = path.join(engine.config.dataDir, 'exports');
    const worker = await startCrashingWorker(engine, 'export-crashing-worker.ts', {
      EXPORTS_DIR: exportsDir,
      // Past the first pages (about 80 bytes a row), well before the last.
      CRASH_AFTER_BYTES: String(80 * pageSize * 2),
    });

    const created = await engine.call('POST', '/v1/exports', { resource: 'transactions', format: 'csv' });
    expect(created.status).toBe(202);
    const id: string = created.body.id;
    const [, signal] = await worker.exited;
    expect(signal).toBe('SIGKILL');
    expect(worker.output()).toContain(`of ${id}.csv; crashing`);
    // Killed mid-file: some pages recorded, not all; only a temporary file on disk, nothing published.
    const midway = (await engine.call('GET', `/v1/exports/${id}`)).body;
    expect(midway.status).toBe('running');
    expect(midway.progress.rows_written).toBeGreaterThan(0);
    expect(midway.progress.rows_written).toBeLessThan(total);
    expect(readdirSync(exportsDir).filter((name) => name.startsWith(id))).toEqual([
      expect.stringMatching(new RegExp(`^${id}\\.csv\\.[0-9a-f]+\\.partial$`)),
    ]);
    expect((await engine.call('GET', `/v1/exports/${id}/file`)).status).toBe(409);

    // Another worker takes over once the dead one's heartbeat times out (20 s, in real time: the test server does
    // not skip time while an activity is in flight), and writes the file again from the first row.
    await engine.startWorker();
    const done = await eventually(
      async () => (await engine.call('GET', `/v1/exports/${id}`)).body,
      (body) => body.status !== 'running' && body.status !== 'pending',
      60_000,
    );
    expect(done).toMatchObject({
      status: 'succeeded',
      row_count: total,
      progress: { rows_written: total, rows_expected: total },
    });
    const published = readdirSync(exportsDir).filter((name) => name.startsWith(id) && !name.endsWith('.partial'));
    expect(published).toEqual([`${id}.csv`]);
    const file = readFileSync(path.join(exportsDir, `${id}.csv`));
    expect(done.file).toMatchObject({ size: file.length, sha256: createHash('sha256').update(file).digest('hex') });
    const lines = file.toString('utf8').trimEnd().split('\r\n');
    expect(lines).toHaveLength(total + 1);
    expect(lines.slice(1).map((line) => line.split(',')[0])).toEqual(ids);
    const served = await engine.app.request(`/v1/exports/${id}/file`, { headers: engine.tenant.headers });
    expect(Buffer.from(await served.arrayBuffer()).equals(file)).toBe(true);
    // The dead writer's temporary file is what the maintenance sweep drops (once it is an hour old).
    expect(await localExportStorage(exportsDir).sweepTemporary(new Date(Date.now() + 1000))).toBe(1);
    expect(readdirSync(exportsDir).filter((name) => name.startsWith(id))).toEqual([`${id}.csv`]);
  });
});
