/**
 * Which dependency an error says is unreachable: the database (PostgreSQL), Temporal, or none.
 *
 * The API answers an outage of either with 503 `service_unavailable` and `Retry-After`
 * (api/errors.ts handleError), never 500: the request may be retried as it is once the
 * dependency is back. Anything not recognised here stays a 500 (a bug, not an outage).
 *
 * Pure and duck-typed (no driver imports), from the shapes the drivers really throw:
 * - PostgreSQL through MikroORM: a `DriverException` (or `ConnectionException`) carrying the
 *   socket's code (`ECONNREFUSED`, `ECONNRESET`, ...) or the server's SQLSTATE; a raw query's
 *   socket error, unwrapped, whose stack passes through pg-pool or kysely; pg's own
 *   messages (`Connection terminated unexpectedly`, the pool's `timeout exceeded when trying
 *   to connect`, knex's `Timeout acquiring a connection`); SQLSTATE class 08 (connection
 *   exception), 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 53300
 *   too many connections, 57014 a statement cancelled by the API's `statement_timeout`; pg's `Query read
 *   timeout` when a server that hangs did not answer at all (db/orm.ts requestPathDatabaseOptions).
 * - Temporal through @temporalio/client: a `ServiceError` whose cause is a gRPC error with code
 *   14 UNAVAILABLE or 4 DEADLINE_EXCEEDED (the API's client retries it for about a second first,
 *   services/platform/temporal-connection.ts);
 *   `Failed to connect before the deadline` from `Connection.connect`.
 * The chain is followed through `cause` and an AggregateError's `errors` (Node's connect to
 * `localhost` tries both addresses and fails with both).
 */
export type Dependency = 'database' | 'temporal';

/** Seconds a client should wait before retrying a request refused for an outage (the Retry-After header). */
export const dependencyRetryAfterSeconds = 5;

/** Socket errors of a connection to the database (only trusted on a database driver's error). */
const socketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'EADDRNOTAVAIL',
]);

/** SQLSTATEs that mean the server cannot serve this connection now (not a problem of the statement). */
function outageSqlState(code: unknown): boolean {
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return false;
  // 57014: a statement cancelled, here by the API's statement_timeout (db/orm.ts requestPathDatabaseOptions).
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '53300' ||
    code === '57014'
  );
}

/** Messages only the PostgreSQL client stack (pg, pg-pool, knex/kysely pools) says of a lost or unobtainable connection. */
const databaseMessages =
  /^Connection terminated\b|^Query read timeout$|timeout exceeded when trying to connect|Timeout acquiring a connection|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|terminating connection due to administrator command|the database system is (shutting down|starting up|in recovery mode|not yet accepting connections)/i;

/** Stack frames of the database client stack (pg, pg-pool, kysely, MikroORM's SQL drivers). */
const databaseDriverFrames = /node_modules[\\/](pg|pg-pool|kysely|knex|@mikro-orm)[\\/]/;

/** gRPC status codes that mean Temporal could not be reached (or did not answer) at all. */
const grpcUnavailable = 14;
const grpcDeadlineExceeded = 4;

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  stack?: unknown;
  code?: unknown;
  sqlState?: unknown;
  cause?: unknown;
  errors?: unknown;
  metadata?: unknown;
  details?: unknown;
}

function isGrpcError(node: ErrorLike): boolean {
  return typeof node.code === 'number' && ('metadata' in node || typeof node.details === 'string');
}

/** A MikroORM driver exception (DriverException, ConnectionException, ...): its class name ends in Exception. */
function isDriverException(node: ErrorLike): boolean {
  return typeof node.name === 'string' && /Exception$/.test(node.name);
}

function classifyOne(node: ErrorLike): Dependency | null {
  const message = typeof node.message === 'string' ? node.message : '';
  if (isGrpcError(node)) return node.code === grpcUnavailable || node.code === grpcDeadlineExceeded ? 'temporal' : null;
  if (/^Failed to connect before the deadline/.test(message)) return 'temporal';
  if (outageSqlState(node.sqlState) || (isDriverException(node) && outageSqlState(node.code))) return 'database';
  if (node.name === 'ConnectionException') return 'database';
  if (isDriverException(node) && typeof node.code === 'string' && socketCodes.has(node.code)) return 'database';
  // A raw query (em.getConnection().execute) gets the pool's socket error unwrapped: its stack names the driver.
  if (
    typeof node.code === 'string' &&
    socketCodes.has(node.code) &&
    typeof node.stack === 'string' &&
    databaseDriverFrames.test(node.stack)
  )
    return 'database';
  if (databaseMessages.test(message)) return 'database';
  if (node.name === 'KnexTimeoutError') return 'database';
  return null;
}

/** The dependency `error` says is unreachable, or null when it is anything else (a bug: 500). */
export function unavailableDependency(error: unknown): Dependency | null {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  // A driver exception wraps the socket error: a bare socket error under it counts as the database's.
  const underDriver = new Set<unknown>();
  while (queue.length > 0 && seen.size < 20) {
    const node = queue.shift();
    if (node === null || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    const e = node as ErrorLike;
    const found = classifyOne(e);
    if (found) return found;
    if (underDriver.has(node) && typeof e.code === 'string' && socketCodes.has(e.code)) return 'database';
    const children = [e.cause, ...(Array.isArray(e.errors) ? e.errors : [])];
    for (const child of children) {
      if (isDriverException(e) || underDriver.has(node)) underDriver.add(child);
      queue.push(child);
    }
  }
  return null;
}

/** What the 503 says: which dependency, and when to retry. */
export function unavailableMessage(dependency: Dependency): string {
  const what = dependency === 'database' ? 'The database' : 'Temporal (the workflow service)';
  return `${what} is unavailable right now. Retry in ${dependencyRetryAfterSeconds} seconds (with the same Idempotency-Key, if the request had one).`;
}
