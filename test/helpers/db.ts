import { randomBytes } from 'node:crypto';

import type { MikroORM } from '@mikro-orm/postgresql';
import { inject } from 'vitest';

import { openOrm } from '../../db/orm.ts';
import { ensureDatabase } from '../../dev/postgres.ts';

export interface TestDatabase {
  url: string;
  orm: MikroORM;
  close(): Promise<void>;
}

/** A fresh, migrated database for one test file: a copy of the template the global setup migrated. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('postgresAdminUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await ensureDatabase(adminUrl, name, inject('templateDatabase'));
  const url = adminUrl.replace(/\/postgres$/, `/${name}`);
  const orm = await openOrm(url);
  return { url, orm, close: () => orm.close() };
}
