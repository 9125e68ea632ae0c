/**
 * `npm run migration:create`: diffs the entities against the schema the existing
 * migrations build, on a throwaway embedded PostgreSQL, and writes the next
 * migration into db/migrations/ (then add it to db/migrations/index.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { migrations } from '../db/migrations/index.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { ensureDatabase, startEmbeddedPostgres } from './postgres.ts';
import { freePort } from './processes.ts';

const migrationsDir = fileURLToPath(new URL('../db/migrations', import.meta.url));
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-migration-'));
fs.chmodSync(dataDir, 0o755);
const postgres = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'pg'), port: await freePort() });
try {
  await ensureDatabase(postgres.url('postgres'), 'scratch');
  const url = postgres.url('scratch');
  const orm = await openOrm(url, {
    migrations: { migrationsList: migrations, path: migrationsDir, emit: 'ts', snapshot: false },
  });
  await migrate(orm, url);
  const result = await orm.migrator.create(migrationsDir, false, false, process.argv[2]);
  console.log(
    result.fileName
      ? `wrote ${result.fileName}:\n${result.diff.up.join('\n')}`
      : 'entities match the migrations; nothing to write',
  );
  await orm.close();
} finally {
  await postgres.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
