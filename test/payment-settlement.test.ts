import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LedgerEntry } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const hour = 3_600_000;

/** Pending payments settle by a durable timer in a workflow, in skipped time. */
describe('pending payments', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const pay = (paymentMethod: string, amount = 4200) =>
    engine.call('POST', '/v1/transactions', {
      account_id: engine.tenant.accountId,
      amount,
      currency: 'USD',
      type: 'payment',
      payment_method: paymentMethod,
    });
  const transaction = async (id: string) => (await engine.call('GET', `/v1/transactions/${id}`)).body;
  const entries = (id: string) => engine.db.orm.em.fork().count(LedgerEntry, { transactionId: id });

  it('stays pending through the settlement delay, then succeeds and moves the money once', async () => {
    const created = await pay('pm_bank_pendingSettles');
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('pending');
    await engine.env.sleep(23 * hour);
    expect((await transaction(created.body.id)).status).toBe('pending');
    expect(await entries(created.body.id)).toBe(0);
    await engine.env.sleep(2 * hour);
    await eventually(
      () => transaction(created.body.id),
      (t) => t.status === 'succeeded',
    );
    expect(await entries(created.body.id)).toBe(2);
    const result = await engine.env.client.workflow.getHandle(created.body.id).result();
    expect(result).toBe('succeeded');
  });

  it("can end failed, with the processor's reason and no money moved", async () => {
    const created = await pay('pm_bank_pendingFails');
    await engine.env.sleep(25 * hour);
    const settled = await eventually(
      () => transaction(created.body.id),
      (t) => t.status !== 'pending',
    );
    expect(settled).toMatchObject({ status: 'failed', failure_code: 'debit_failed' });
    expect(await entries(created.body.id)).toBe(0);
  });

  it('canceled while pending stays canceled when the settlement comes', async () => {
    const created = await pay('pm_bank_pendingSettles');
    const canceled = await engine.call('DELETE', `/v1/transactions/${created.body.id}`);
    expect(canceled.body.status).toBe('canceled');
    await engine.env.sleep(25 * hour);
    expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('canceled');
    expect((await transaction(created.body.id)).status).toBe('canceled');
    expect(await entries(created.body.id)).toBe(0);
  });
});
