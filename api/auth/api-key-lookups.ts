/**
 * API key lookups, coalesced (api/auth/principal.ts authenticate; docs/usage.md#single-events).
 *
 * Every request with an API key reads its key (not revoked, its account not closed) and account: one query per
 * request, which at a few thousand single meter events a second was a database round trip per event beside the
 * group-committed insert. Here the lookups that begin in the same turn of the event loop (the requests whose bytes
 * arrived in one poll of the sockets) travel in one query, `secret_hash = any(...)`, sent on the next turn
 * (setImmediate); requests with the same key share its row.
 *
 * Nothing is cached: each request's lookup is a query sent after that request arrived, so a key revoked or an account
 * closed before a request arrived refuses it exactly as a query of its own did.
 */
import type { MikroORM } from '@mikro-orm/postgresql';

interface Waiter<Row> {
  resolve: (row: Row | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * `lookup(secretHash)` answers the row of `select <columns> ... where k.secret_hash = any(hashes)` for that hash
 * (undefined when there is none). `sql` must select `k.secret_hash` and end with `k.secret_hash = any(?::text[])`.
 */
export function coalescedApiKeyLookups<Row extends { secret_hash: string }>(
  orm: MikroORM,
  sql: string,
): (secretHash: string) => Promise<Row | undefined> {
  let pending: Map<string, Waiter<Row>[]> | undefined;

  const flush = async (batch: Map<string, Waiter<Row>[]>) => {
    let rows: Row[];
    try {
      // The hashes are hex digests (sha256): an array literal of them needs no quoting.
      rows = await orm.em.getConnection().execute<Row[]>(sql, [`{${[...batch.keys()].join(',')}}`]);
    } catch (error) {
      for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(error);
      return;
    }
    const byHash = new Map<string, Row>();
    for (const row of rows) byHash.set(row.secret_hash, row);
    for (const [hash, waiters] of batch) {
      const row = byHash.get(hash);
      // Each request its own copy (a route may change the account's settings object it was given).
      for (let i = 0; i < waiters.length; i++) waiters[i]!.resolve(i === 0 || !row ? row : structuredClone(row));
    }
  };

  return (secretHash) =>
    new Promise<Row | undefined>((resolve, reject) => {
      if (!pending) {
        const batch = new Map<string, Waiter<Row>[]>();
        pending = batch;
        setImmediate(() => {
          pending = undefined;
          void flush(batch);
        });
      }
      let waiters = pending.get(secretHash);
      if (!waiters) pending.set(secretHash, (waiters = []));
      waiters.push({ resolve, reject });
    });
}
