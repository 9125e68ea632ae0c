import type { QBFilterQuery } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { keysetPage } from '../api/pagination.ts';
import { Customer, Transaction } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import { clockCondition } from '../services/test-clocks/clocks.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * keysetPage's plain rows come from one statement built from the entity's metadata
 * (api/pagination.ts): each page must equal what MikroORM's query builder returns
 * for the same filter, row for row and type for type (int8 amounts, JSON
 * metadata, dates, nulls), in both directions.
 */
describe('keysetPage plain rows', () => {
  let db: TestDatabase;
  const accountId = 'acct_01pagination0000000000000000';
  beforeAll(async () => {
    db = await createTestDatabase();
    const em = db.orm.em.fork();
    const base = Date.parse('2026-01-01T00:00:00Z');
    // Customers of the account: two on clock A, one on clock B, one on none; and one of another account on clock A.
    const customer = (id: string, testClockId: string | null, owner = accountId) =>
      em.create(Customer, {
        id,
        email: `${id}@example.com`,
        name: null,
        paymentMethod: null,
        processorCustomerId: null,
        accountId: owner,
        livemode: false,
        testClockId,
      });
    customer('cus_a1', 'clock_a');
    customer('cus_a2', 'clock_a');
    customer('cus_b1', 'clock_b');
    customer('cus_none', null);
    customer('cus_other', 'clock_a', 'acct_01other00000000000000000000');
    // (The other account's transactions, i % 7 === 0, are its customer's.)
    const customerOf = ['cus_other', 'cus_a1', 'cus_a2', 'cus_b1', 'cus_none', null, null];
    for (let i = 0; i < 30; i++) {
      em.create(Transaction, {
        id: newId('transaction'),
        accountId: i % 7 === 0 ? 'acct_01other00000000000000000000' : accountId,
        livemode: i % 5 === 0,
        amount: 9_007_199_254_740 + i,
        currency: 'USD',
        type: i % 3 === 0 ? 'payment' : 'credit',
        status: i % 4 === 0 ? 'pending' : 'succeeded',
        reference: i % 2 ? `order-${i}` : null,
        metadata: i % 2 ? { order: String(i), note: 'ünïcode "quoted"' } : {},
        riskLevel: 'low',
        riskScore: i,
        paymentMethod: null,
        failureCode: null,
        failureMessage: null,
        createdAt: new Date(base + i * 3_600_000),
        updatedAt: new Date(base + i * 3_600_000 + 1),
        canceledAt: i % 6 === 0 ? new Date(base) : null,
        amountRefunded: i,
        customerId: customerOf[i % customerOf.length]!,
      });
    }
    await em.flush();
  });
  afterAll(() => db?.close());

  const viaQueryBuilder = async (where: Record<string, unknown>, order: 'asc' | 'desc', limit: number) =>
    db.orm.em
      .fork()
      .createQueryBuilder(Transaction)
      .select('*')
      .where(where as QBFilterQuery<Transaction>)
      .orderBy({ id: order })
      .limit(limit)
      .execute<Transaction[]>('all');

  it('pages like the query builder, in both directions, with every filter lists use', async () => {
    const filters: Record<string, unknown>[] = [
      { accountId, livemode: false },
      { accountId, livemode: false, status: 'succeeded', type: 'credit' },
      {
        accountId,
        livemode: false,
        createdAt: { $gte: new Date('2026-01-01T05:00:00Z'), $lte: new Date('2026-01-01T20:00:00Z') },
      },
      { accountId, livemode: true },
      { accountId, livemode: false, reference: null },
      { accountId: 'acct_01nobody0000000000000000000', livemode: false },
    ];
    for (const where of filters) {
      const all = await viaQueryBuilder(where, 'desc', 100);
      const first = await keysetPage(db.orm.em.fork(), Transaction, where, { limit: 4 }, { rows: 'plain' });
      expect(first.page).toEqual(all.slice(0, 4));
      expect(first.hasMore).toBe(all.length > 4);
      if (all.length > 5) {
        const next = await keysetPage(
          db.orm.em.fork(),
          Transaction,
          where,
          { limit: 4, starting_after: all[3]!.id },
          { rows: 'plain' },
        );
        expect(next.page).toEqual(all.slice(4, 8));
        const back = await keysetPage(
          db.orm.em.fork(),
          Transaction,
          where,
          { limit: 4, ending_before: all[4]!.id },
          { rows: 'plain' },
        );
        expect(back.page).toEqual(all.slice(0, 4));
      }
    }
    const sample = (
      await keysetPage(
        db.orm.em.fork(),
        Transaction,
        { accountId, livemode: false, reference: 'order-29' },
        { limit: 1 },
        { rows: 'plain' },
      )
    ).page[0]!;
    // int8 beyond 2^53 / 1000 comes back exact (the serializer turns it into a number).
    expect(Number(sample.amount)).toBe(9_007_199_254_740 + 29);
    expect(sample.createdAt).toBeInstanceOf(Date);
    expect(sample.metadata).toEqual({ order: expect.any(String), note: 'ünïcode "quoted"' });
  });

  it("compiles a list's test clock condition (a subquery) into its one statement, and pages like the query builder", async () => {
    const scope = { accountId, livemode: false };
    const conditions = [
      clockCondition(scope, undefined),
      clockCondition(scope, 'clock_a'),
      clockCondition(scope, 'clock_b'),
      clockCondition(scope, 'clock_none'),
    ];
    const customersOf = async (condition: Record<symbol, unknown[]> | null) =>
      new Set((await viaQueryBuilder({ ...scope, ...condition }, 'desc', 100)).map((t) => t.customerId));
    // What each condition lets through: off clocks, objects of no customer stay; a clock lists its own customers' only.
    expect(await customersOf(conditions[0]!)).toEqual(new Set(['cus_none', null]));
    expect(await customersOf(conditions[1]!)).toEqual(new Set(['cus_a1', 'cus_a2']));
    expect(await customersOf(conditions[2]!)).toEqual(new Set(['cus_b1']));
    expect(await customersOf(conditions[3]!)).toEqual(new Set());
    for (const condition of conditions) {
      const where = { ...scope, ...condition };
      const all = await viaQueryBuilder(where, 'desc', 100);
      const em = db.orm.em.fork();
      const builder = vi.spyOn(em, 'createQueryBuilder');
      const first = await keysetPage(em, Transaction, where, { limit: 2 }, { rows: 'plain' });
      expect(first.page).toEqual(all.slice(0, 2));
      expect(first.hasMore).toBe(all.length > 2);
      if (all.length > 2)
        expect(
          (await keysetPage(em, Transaction, where, { limit: 2, starting_after: all[1]!.id }, { rows: 'plain' })).page,
        ).toEqual(all.slice(2, 4));
      expect(builder).not.toHaveBeenCalled();
    }
    // Live mode has no clocks: nothing is on one, and no condition applies without test_clock.
    expect(clockCondition({ accountId, livemode: true }, undefined)).toBeNull();
    const liveOnClock = { accountId, livemode: true, ...clockCondition({ accountId, livemode: true }, 'clock_a') };
    expect(await viaQueryBuilder({ accountId, livemode: true }, 'desc', 5)).not.toEqual([]);
    expect(await viaQueryBuilder(liveOnClock, 'desc', 5)).toEqual([]);
    expect(
      (await keysetPage(db.orm.em.fork(), Transaction, liveOnClock, { limit: 5 }, { rows: 'plain' })).page,
    ).toEqual([]);
  });

  it('a filter it does not compile ($in, $ne) goes through the query builder and answers the same', async () => {
    const where = { accountId, livemode: false, status: { $in: ['pending'] } };
    const page = await keysetPage(db.orm.em.fork(), Transaction, where, { limit: 50 }, { rows: 'plain' });
    expect(page.page).toEqual(await viaQueryBuilder(where, 'desc', 50));
    expect(page.page.length).toBeGreaterThan(0);
  });
});
