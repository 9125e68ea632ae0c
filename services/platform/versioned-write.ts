import type { EntityManager, EntityName } from '@mikro-orm/postgresql';

/**
 * Writes a workflow-owned projection row, ordered by its version: inserted when
 * new, else updated only if `row.version` is newer than the stored one, so a
 * retried or late write (an activity retry, a replay) never overwrites a newer
 * state. Runs inside the caller's database transaction and first locks the row
 * as it was, whose `previousColumns` it returns to name the change's events.
 * `written` is false when nothing changed (the caller then records no event).
 * `insertOnly` fields are set on insert and never updated (ids, secrets, creation time).
 */
export async function writeVersioned<Row extends { id: string; version: number }, Previous>(
  tx: EntityManager,
  // The row is the entity's data; MikroORM's entity types are too deep to relate them here.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
  entity: EntityName<any>,
  table: string,
  row: Row,
  options: { insertOnly: (keyof Row)[]; previousColumns: string[] },
): Promise<{ written: boolean; previous: Previous | null }> {
  const changes = Object.fromEntries(
    Object.entries(row).filter(([key]) => key !== 'id' && !options.insertOnly.includes(key as keyof Row)),
  );
  const upsert = tx
    .createQueryBuilder(entity)
    .insert(row)
    .onConflict('id')
    .merge(changes)
    .where({ version: { $lt: row.version } })
    .toQuery();
  // ONE statement (one round trip): the row as it was, locked (read first: the main query joins it before it counts
  // the upsert's rows), then the upsert, whose rows say whether it wrote.
  const returning = /\sreturning\s/i.test(upsert.sql) ? '' : ' returning 1';
  const [result] = await tx.execute<Record<string, unknown>[]>(
    `with previous as (select true as found, ${options.previousColumns.join(', ')} from ${table} where id = ? for update),
       upserted as (${upsert.sql}${returning})
     select previous.*, (select count(*) from upserted)::int as written
       from (select 1) as one left join previous on true`,
    [row.id, ...upsert.params],
  );
  const { written, found, ...previous } = result as unknown as { written: number; found: boolean | null } & Previous;
  return { written: written > 0, previous: found ? (previous as Previous) : null };
}
