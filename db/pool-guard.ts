import type pg from 'pg';

/**
 * Gives back to the pool, destroyed, a checked-out connection whose socket ended (backend terminated, PostgreSQL
 * restarted, the API's read timeout closing it), so that a holder who never releases it does not cost the pool that
 * slot for good.
 *
 * Why: MikroORM's em.transactional runs on a Kysely ControlledTransaction, whose commit and rollback release the
 * connection only after COMMIT or ROLLBACK succeeded (MikroORM 7.2.1, Kysely 0.29.6). On a dead connection both fail,
 * the pg PoolClient is never released, and pg-pool goes on counting it: after a PostgreSQL restart with as many
 * transactions in flight as the pool holds (DATABASE_POOL_MAX), every later query would wait forever.
 *
 * How, on pg-pool's documented events (pg-pool 3.14.0): 'acquire' is emitted for every checkout, 'release' when the
 * holder releases (before pg-pool looks at the client), 'connect' once per new client. When the socket of a client
 * still checked out ends, it is released with an error, which makes pg-pool remove it and hand its slot to the next
 * waiter. Its `release` then becomes a no-op: the holder's own release, when it comes, would otherwise throw
 * "Release called on client which has already been released to the pool" over the error that explains the failure.
 * pg-pool sets a fresh `release` on every checkout, but a client it removed is never checked out again.
 */
export function releaseDeadConnections(pool: pg.Pool): void {
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error: Error | undefined, client: pg.PoolClient) => checkedOut.delete(client));
  pool.on('connect', (client) => {
    // pg emits 'end' once, after it has failed every query queued on the connection.
    client.once('end', () => {
      if (!checkedOut.has(client)) return;
      const release = client.release;
      client.release = () => {};
      release(new Error('PostgreSQL connection ended while checked out'));
    });
  });
}

/**
 * MikroORM driverOptions with releaseDeadConnections installed on the pool it creates (its documented
 * `onPoolCreated` hook), keeping any `onPoolCreated` the given options had (requestPathDatabaseOptions' one).
 */
export function withDeadConnectionRelease(driverOptions: Record<string, unknown> = {}): Record<string, unknown> {
  const onPoolCreated = driverOptions.onPoolCreated as ((pool: pg.Pool) => unknown) | undefined;
  return {
    ...driverOptions,
    onPoolCreated(pool: pg.Pool) {
      releaseDeadConnections(pool);
      return onPoolCreated?.(pool);
    },
  };
}
