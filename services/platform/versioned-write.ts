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
  const [previous] = await tx.execute<Previous[]>(
    `select ${options.previousColumns.join(', ')} from ${table} where id = ? for update`,
    [row.id],
  );
  const changes = Object.fromEntries(
    Object.entries(row).filter(([key]) => key !== 'id' && !options.insertOnly.includes(key as keyof Row)),
  );
  const result = await tx
    .createQueryBuilder(entity)
    .insert(row)
    .onConflict('id')
    .merge(changes)
    .where({ version: { $lt: row.version } })
    .execute('run');
  return { written: result.affectedRows > 0, previous: previous ?? null };
}
