/**
 * A pooled PostgreSQL connection that dies while checked out must not cost the pool its slot for good (issue #29: a
 * PostgreSQL restart must leave the API and the worker fully working). MikroORM's em.transactional releases its
 * connection only after COMMIT or ROLLBACK succeeded, which neither can on a dead connection; db/pool-guard.ts gives
 * such a connection back to the pool destroyed. Real PostgreSQL: the backends are killed with pg_terminate_backend,
 * as a restart or an administrator would, from a connection of another pool.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openOrm } from '../db/orm.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

const poolSize = 3;
let db: TestDatabase;
let adminPool: pg.Pool;
const opened: MikroORM[] = [];
let tags = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  adminPool = (await db.orm.em.getConnection().getNativeClient()) as pg.Pool;
});

afterAll(async () => {
  for (const orm of opened) await orm.close();
  await db?.close();
});

/** An ORM of its own for each case, on a pool of `poolSize` connections, as db/orm.ts builds it for every process. */
async function smallPool(): Promise<{ orm: MikroORM; pool: pg.Pool }> {
  const orm = await openOrm(db.url, { pool: { min: 0, max: poolSize } });
  opened.push(orm);
  return { orm, pool: (await orm.em.getConnection().getNativeClient()) as pg.Pool };
}

/**
 * Runs SQL on the test database's own pool, apart from the one under test, straight on pg: through an em, MikroORM
 * would run it in the transaction the caller is in (its transaction context is per async call chain, not per ORM).
 */
const admin = async <Row>(sql: string, params: unknown[] = []) => (await adminPool.query(sql, params)).rows as Row[];

/** Waits for `count` backends running a statement that carries `tag`, then terminates them. */
async function terminateWhenRunning(tag: string, count: number): Promise<void> {
  const running = `select pid from pg_stat_activity where query like '%' || $1 || '%' and state = 'active' and pid <> pg_backend_pid()`;
  await expect
    .poll(async () => (await admin<{ pid: number }>(running, [tag])).length, { timeout: 30_000, interval: 50 })
    .toBe(count);
  const killed = await admin<{ ok: boolean }>(`select pg_terminate_backend(pid) as ok from (${running}) b`, [tag]);
  expect(killed.map((row) => row.ok)).toEqual(Array(count).fill(true));
}

/** A statement that sleeps 5 s, findable in pg_stat_activity by its tag. */
function taggedSleep(): { tag: string; sql: string } {
  const tag = `pool_dead_${process.pid}_${++tags}`;
  return { tag, sql: `select pg_sleep(5) /* ${tag} */` };
}

/**
 * Proves the pool serves `poolSize` transactions at once: each holds its connection until all have one. A pool with a
 * slot lost waits forever for the last one, which the deadline turns into a failure (the timings here are not tight:
 * on an idle machine this takes a few milliseconds).
 */
async function holdEveryConnectionAtOnce(orm: MikroORM): Promise<void> {
  let arrived = 0;
  let allIn!: () => void;
  const everyoneIn = new Promise<void>((resolve) => (allIn = resolve));
  const transactions = Promise.all(
    Array.from({ length: poolSize }, () =>
      orm.em.fork().transactional(async (em) => {
        await em.execute('select 1');
        if (++arrived === poolSize) allIn();
        await everyoneIn;
      }),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the pool served ${arrived} of ${poolSize} transactions at once within 20 s`)),
      20_000,
    );
  });
  try {
    await Promise.race([transactions, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a connection that dies while checked out', () => {
  it('in a transaction, mid-statement: every slot comes back (the rollback cannot run on it)', async () => {
    const { orm, pool } = await smallPool();
    const { tag, sql } = taggedSleep();
    // Settled from the start: a rejection must not go unhandled while the kill is still being checked.
    const transactions = Promise.allSettled(
      Array.from({ length: poolSize }, () => orm.em.fork().transactional((em) => em.execute(sql))),
    );
    await terminateWhenRunning(tag, poolSize);
    for (const result of await transactions) {
      expect(result.status).toBe('rejected');
      // 57P01 admin_shutdown: the statement's own error, not one from the failed rollback.
      expect((result as PromiseRejectedResult).reason).toMatchObject({ code: '57P01' });
    }
    await expect.poll(() => pool.totalCount, { timeout: 10_000 }).toBe(0);
    await holdEveryConnectionAtOnce(orm);
  });

  it('in a transaction, before its commit: the failed commit gives its slot back too', async () => {
    const { orm, pool } = await smallPool();
    const transactions = Array.from({ length: poolSize }, () =>
      orm.em.fork().transactional(async (em) => {
        const [{ pid }] = await em.execute<{ pid: number }[]>('select pg_backend_pid() as pid');
        await admin('select pg_terminate_backend($1)', [pid]);
        await expect
          .poll(async () => (await admin('select 1 from pg_stat_activity where pid = $1', [pid])).length, {
            timeout: 10_000,
            interval: 50,
          })
          .toBe(0);
        // The backend is gone: what is left is the COMMIT em.transactional sends on returning.
      }),
    );
    for (const result of await Promise.allSettled(transactions)) expect(result.status).toBe('rejected');
    await expect.poll(() => pool.totalCount, { timeout: 10_000 }).toBe(0);
    await holdEveryConnectionAtOnce(orm);
  });

  it('outside a transaction: the statement fails with its own error, not a double release', async () => {
    const { orm, pool } = await smallPool();
    const { tag, sql } = taggedSleep();
    const statements = Promise.allSettled(Array.from({ length: poolSize }, () => orm.em.fork().execute(sql)));
    await terminateWhenRunning(tag, poolSize);
    for (const result of await statements) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toMatchObject({ code: '57P01' });
    }
    await expect.poll(() => pool.totalCount, { timeout: 10_000 }).toBe(0);
    await holdEveryConnectionAtOnce(orm);
  });
});
