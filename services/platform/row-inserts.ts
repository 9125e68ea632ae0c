import type { EntityManager, EntityName } from '@mikro-orm/postgresql';

/** One INSERT, to run alone or as a part of a statement that writes several tables (insertTogether). */
export interface InsertPart {
  sql: string;
  params: unknown[];
}

/**
 * The INSERT of `rows` of `entity` (property names and their values, every row the same properties), reading them
 * from ONE JSON parameter (jsonb_populate_recordset), so that several tables' rows go in one statement and one round
 * trip, with no unit of work for rows that are only inserted (the hot path of a renewal: docs/scaling.md). Values go
 * as JSON: a Date becomes its ISO instant (timestamptz columns), an object or array jsonb. Columns left out take
 * their defaults; a property set to undefined is null.
 */
export function insertRowsPart(
  tx: EntityManager,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any entity: MikroORM's entity types are too deep to relate here
  entity: EntityName<any>,
  rows: Record<string, unknown>[],
  /**
   * Columns whose value is an SQL expression instead (`r` is the row as given), over `from` joined to the rows: e.g.
   * an invoice's number taken from its counter in the same statement (services/invoices/cycle-invoices.ts).
   */
  computed?: { from: string; set: Record<string, string> },
): InsertPart {
  const meta = tx.getMetadata(entity);
  const props = Object.keys(rows[0] ?? {});
  if (rows.length === 0 || props.length === 0) throw new Error(`insertRowsPart: no rows of ${meta.className}`);
  const columns = props.map((prop) => {
    const column = meta.properties[prop]?.fieldNames?.[0];
    if (!column) throw new Error(`insertRowsPart: ${meta.className} has no column for ${prop}`);
    return `"${column}"`;
  });
  const values = rows.map((row) => Object.fromEntries(props.map((prop, i) => [columns[i]!.slice(1, -1), row[prop]])));
  const selected = props.map((prop, i) => computed?.set[prop] ?? `r.${columns[i]}`);
  return {
    sql: `insert into "${meta.tableName}" (${columns.join(', ')}) select ${selected.join(', ')} from jsonb_populate_recordset(null::"${meta.tableName}", ?::jsonb) r${computed ? `, ${computed.from}` : ''}`,
    params: [JSON.stringify(values)],
  };
}

/**
 * Runs the INSERTs in ONE statement on `tx`'s database transaction (`with p1 as (insert ...), ... insert ...`).
 * Foreign keys are checked at the statement's end, so the parts may reference each other's rows in any order.
 */
export async function insertTogether(tx: EntityManager, parts: InsertPart[]): Promise<void> {
  if (parts.length === 0) return;
  const last = parts[parts.length - 1]!;
  const ctes = parts.slice(0, -1).map((part, i) => `p${i} as (${part.sql})`);
  const sql = ctes.length > 0 ? `with ${ctes.join(', ')} ${last.sql}` : last.sql;
  await tx.getConnection().execute(
    sql,
    parts.flatMap((part) => part.params),
    'run',
    tx.getTransactionContext(),
  );
}
