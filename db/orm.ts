import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { entities } from './entities/index.ts';
import { migrations } from './migrations/index.ts';

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
  });
}

/** Connections per process: DATABASE_POOL_MAX, default 10. */
export function databasePoolMax(): number {
  const raw = process.env.DATABASE_POOL_MAX;
  if (raw === undefined || raw === '') return 10;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 1000) throw new Error(`DATABASE_POOL_MAX must be an integer from 1 to 1000, not ${raw}`);
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
