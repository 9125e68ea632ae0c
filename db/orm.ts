import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import pg from 'pg';

import { entities } from './entities/index.ts';
import { migrations } from './migrations/index.ts';
import { withDeadConnectionRelease } from './pool-guard.ts';

/** ORM options for a database URL. Migrations are listed explicitly (no folder scan), so they run the same from source and tests. */
export function ormOptions(databaseUrl: string, overrides: Partial<Options> = {}): Options {
  return defineConfig({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true },
    debug: false,
    // The migrator narrates every step on stdout; our entry points report what matters.
    logger: () => {},
    // DATABASE_POOL_MAX: size it with the worker's activity slots (docs/scaling.md).
    pool: { min: 0, max: databasePoolMax() },
    ...overrides,
    // A connection that dies while checked out goes back to the pool destroyed, whoever holds it (db/pool-guard.ts).
    driverOptions: withDeadConnectionRelease(overrides.driverOptions),
  });
}

/** Connections per process: DATABASE_POOL_MAX, default 10. */
export function databasePoolMax(): number {
  const raw = process.env.DATABASE_POOL_MAX;
  if (raw === undefined || raw === '') return 10;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 1000)
    throw new Error(`DATABASE_POOL_MAX must be an integer from 1 to 1000, not ${raw}`);
  return value;
}

/**
 * The API's database timeouts: a PostgreSQL that hangs (stopped, a network path that drops packets, a lock held
 * for minutes) must not hang requests. Each bound ends in an error api/errors.ts answers with 503
 * `service_unavailable` and `Retry-After` (domain/dependency-errors.ts):
 * - connecting a new connection, or waiting for a pooled one, at most DATABASE_CONNECT_TIMEOUT_MS (default 5 s:
 *   pg-pool's `timeout exceeded when trying to connect`);
 * - a statement at most DATABASE_STATEMENT_TIMEOUT_MS (default 10 s), on the server (`statement_timeout`, SQLSTATE
 *   57014), which cancels it cleanly;
 * - and, for a server that does not answer at all, the client gives up 5 s later (pg's `query_timeout`: `Query read
 *   timeout`) and closes that connection, so the pool does not hand it out again with the stuck statement ahead of
 *   the next one.
 * Only the API's pool (api/server.ts): a worker's activities retry on their own, and migrations and exports may
 * rightly run longer. A statement the client gave up on may still complete once the server resumes; the 503 says to
 * retry with the same Idempotency-Key, which answers with what was done.
 */
export function requestPathDatabaseOptions(
  timeouts: { connectMs?: number; statementMs?: number; readMarginMs?: number } = {},
): Partial<Options> {
  const connectMs = timeouts.connectMs ?? timeoutFromEnv('DATABASE_CONNECT_TIMEOUT_MS', 5_000);
  const statementMs = timeouts.statementMs ?? timeoutFromEnv('DATABASE_STATEMENT_TIMEOUT_MS', 10_000);
  return {
    driverOptions: {
      connectionTimeoutMillis: connectMs,
      statement_timeout: statementMs,
      query_timeout: statementMs + (timeouts.readMarginMs ?? 5_000),
      onPoolCreated(pool: pg.Pool) {
        pool.on('connect', closeOnReadTimeout);
      },
    },
  };
}

/** A connection whose statement timed out on the client side is closed: the pool then drops it instead of reusing it. */
function closeOnReadTimeout(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const result = query(...args);
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (error instanceof Error && error.message === 'Query read timeout')
          (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      });
    }
    return result;
  }) as typeof client.query;
}

function timeoutFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 100 || value > 3_600_000)
    throw new Error(`${name} must be a number of milliseconds from 100 to 3600000, not ${raw}`);
  return value;
}

export async function openOrm(databaseUrl: string, overrides: Partial<Options> = {}): Promise<MikroORM> {
  return MikroORM.init(ormOptions(databaseUrl, overrides));
}

const migrationLockId = 7_233_001;

/**
 * Brings the schema up to date. Safe when several processes start at once (two
 * workers, say): they queue on a PostgreSQL advisory lock held on a connection
 * of its own, and the later ones find nothing pending.
 */
export async function migrate(orm: MikroORM, databaseUrl: string): Promise<void> {
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [migrationLockId]);
    await orm.migrator.up();
  } finally {
    await lock.end();
  }
}
