/**
 * `npm run migrate`: brings DATABASE_URL's schema up to date and exits. The
 * worker and the API also migrate on start (under an advisory lock); this is for
 * deploy pipelines that migrate as a separate step.
 */
import { loadConfig } from '../config.ts';
import { migrate, openOrm } from './orm.ts';

const { databaseUrl } = loadConfig();
if (!databaseUrl) {
  console.error('DATABASE_URL must be set (npm start migrates its embedded database by itself).');
  process.exit(1);
}
const orm = await openOrm(databaseUrl);
try {
  const pending = await orm.migrator.getPending();
  await migrate(orm, databaseUrl);
  console.log(
    pending.length
      ? `applied ${pending.length} migration(s): ${pending.map((m) => m.name).join(', ')}`
      : 'the schema is up to date',
  );
} finally {
  await orm.close();
}
