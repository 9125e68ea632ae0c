import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../activities/events.ts';
import { Event } from '../db/entities/index.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

describe('the events outbox', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.close();
  });

  it('commits an event with the change and drops it when the change rolls back', async () => {
    const em = db.orm.em.fork();
    const kept = await em.transactional((tx) =>
      recordEvent(tx, { accountId: 'acct_a', livemode: false, type: 'customer.created', object: { id: 'cus_1', object: 'customer' }, transactionId: null }),
    );
    await expect(
      em.transactional(async (tx) => {
        await recordEvent(tx, { accountId: 'acct_a', livemode: false, type: 'customer.updated', object: { id: 'cus_1' } });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    const rows = await db.orm.em.fork().find(Event, {});
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toBe(kept.id);
    expect(rows[0]!.id).toMatch(/^evt_[0-9a-z]{26}$/);
    expect(rows[0]!.data).toEqual({ object: { id: 'cus_1', object: 'customer' } });
    expect(rows[0]!.transactionId).toBeNull();
    expect(rows[0]!.dispatchedAt).toBeNull();
    const [undispatched] = await db.orm.em.getConnection().execute(`select indexdef from pg_indexes where indexname = 'events_undispatched_index'`);
    expect(undispatched.indexdef).toContain('WHERE (dispatched_at IS NULL)');
  });
});
