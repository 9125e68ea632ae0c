/**
 * The meter events' monthly partitions (docs/usage.md#retention), kept by the maintenance workflow:
 * the months from last month to two ahead exist (events of a month without one land in the DEFAULT
 * partition, which is moved out when its month is added); whole months older than the retention
 * (USAGE_RETENTION_DAYS, default 400, at least 35) are dropped, a DROP TABLE instead of deleting
 * rows; identifiers older than the retention stop guarding against duplicates (an event that old is
 * refused by its timestamp window anyway, 35 days at most).
 */
import type pg from 'pg';

import { defaultUsageRetentionDays, minUsageRetentionDays, usageRetentionDays } from '../../config.ts';

/** USAGE_RETENTION_DAYS is read in config.ts (config.usageRetentionDays). */
export { usageRetentionDays };

const monthStart = (year: number, month: number) => new Date(Date.UTC(year, month, 1));
const partitionName = (start: Date) =>
  `meter_events_${start.getUTCFullYear()}_${String(start.getUTCMonth() + 1).padStart(2, '0')}`;

export interface PartitionMaintenance {
  created: string[];
  dropped: string[];
  /** Rows of the default partition deleted for being older than the retention. */
  defaultRowsDeleted: number;
  identifiersPruned: number;
}

/** Adds one month's partition, moving its rows out of the DEFAULT partition first when it holds any (one transaction). */
async function addMonth(pool: pg.Pool, start: Date, end: Date): Promise<void> {
  const name = partitionName(start);
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query(
      `select 1 from meter_events_default where "timestamp" >= $1 and "timestamp" < $2 limit 1`,
      [start, end],
    );
    if (rows.length === 0) {
      await client.query(
        `create table if not exists "${name}" partition of meter_events for values from ('${start.toISOString()}') to ('${end.toISOString()}')`,
      );
    } else {
      // A month whose rows sit in DEFAULT: PostgreSQL refuses the new partition while they are there.
      await client.query(`alter table meter_events detach partition meter_events_default`);
      await client.query(
        `create table "${name}" partition of meter_events for values from ('${start.toISOString()}') to ('${end.toISOString()}')`,
      );
      await client.query(
        `with moved as (delete from meter_events_default where "timestamp" >= $1 and "timestamp" < $2 returning *) insert into "${name}" overriding system value select * from moved`,
        [start, end],
      );
      await client.query(`alter table meter_events attach partition meter_events_default default`);
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

export async function maintainUsagePartitions(
  pool: pg.Pool,
  now: Date = new Date(),
  /** config.usageRetentionDays (USAGE_RETENTION_DAYS). */
  retentionDays: number = defaultUsageRetentionDays,
): Promise<PartitionMaintenance> {
  const result: PartitionMaintenance = { created: [], dropped: [], defaultRowsDeleted: 0, identifiersPruned: 0 };
  const { rows } = await pool.query(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'meter_events'::regclass`,
  );
  const existing = new Set((rows as { name: string }[]).map((r) => r.name));
  for (let offset = -1; offset <= 2; offset++) {
    const start = monthStart(now.getUTCFullYear(), now.getUTCMonth() + offset);
    const end = monthStart(start.getUTCFullYear(), start.getUTCMonth() + 1);
    if (existing.has(partitionName(start))) continue;
    await addMonth(pool, start, end);
    result.created.push(partitionName(start));
  }
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  for (const name of existing) {
    const match = /^meter_events_(\d{4})_(\d{2})$/.exec(name);
    if (!match) continue;
    const end = monthStart(Number(match[1]), Number(match[2]));
    // The month ends before the cutoff: every event in it is older than the retention.
    if (end.getTime() <= cutoff.getTime()) {
      await pool.query(`drop table if exists "${name}"`);
      result.dropped.push(name);
    }
  }
  result.defaultRowsDeleted =
    (await pool.query(`delete from meter_events_default where "timestamp" < $1`, [cutoff])).rowCount ?? 0;
  // Identifiers: in slices, so no run holds a long transaction; what is left goes on the next run.
  const identifierCutoff = new Date(now.getTime() - Math.max(retentionDays, minUsageRetentionDays) * 86_400_000);
  for (let slice = 0; slice < 20; slice++) {
    const pruned = await pool.query(
      `delete from meter_event_identifiers where ctid in (select ctid from meter_event_identifiers where created_at < $1 limit 10000)`,
      [identifierCutoff],
    );
    result.identifiersPruned += pruned.rowCount ?? 0;
    if ((pruned.rowCount ?? 0) < 10000) break;
  }
  // Late events' claims (services/usage/late-events.ts) go with their identifiers: rare rows, one statement.
  await pool.query(`delete from usage_late_events where created_at < $1`, [identifierCutoff]);
  return result;
}
