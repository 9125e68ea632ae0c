/**
 * domain/dependency-errors.ts: which errors mean a dependency cannot be reached (503
 * service_unavailable with Retry-After) and which are bugs (500). The errors are built with the
 * drivers' own classes where they export them (MikroORM's DriverException, Temporal's
 * ServiceError) in the shapes seen from a closed port, a terminated backend and a dead Temporal.
 */
import { ConnectionException, DriverException, UniqueConstraintViolationException } from '@mikro-orm/core';
import { ServiceError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';

import { unavailableDependency, unavailableMessage } from '../domain/dependency-errors.ts';

const socketError = (code: string, message: string) =>
  Object.assign(new Error(message), { code, errno: -111, syscall: 'connect' });
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'FATAL' });
const grpcError = (code: number, details: string) =>
  Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });

describe('unavailableDependency', () => {
  it('the database: refused, reset or lost connections, pool timeouts, shutdown SQLSTATEs', () => {
    expect(
      unavailableDependency(new DriverException(socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'))),
    ).toBe('database');
    expect(unavailableDependency(new DriverException(socketError('ECONNRESET', 'read ECONNRESET')))).toBe('database');
    expect(unavailableDependency(new DriverException(new Error('Connection terminated unexpectedly')))).toBe(
      'database',
    );
    expect(unavailableDependency(new Error('timeout exceeded when trying to connect'))).toBe('database');
    expect(
      unavailableDependency(
        Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), {
          name: 'KnexTimeoutError',
        }),
      ),
    ).toBe('database');
    expect(
      unavailableDependency(
        new DriverException(pgError('57P01', 'terminating connection due to administrator command')),
      ),
    ).toBe('database');
    expect(unavailableDependency(new DriverException(pgError('57P03', 'the database system is starting up')))).toBe(
      'database',
    );
    expect(unavailableDependency(new DriverException(pgError('08006', 'connection failure')))).toBe('database');
    expect(unavailableDependency(new DriverException(pgError('53300', 'sorry, too many clients already')))).toBe(
      'database',
    );
    expect(unavailableDependency(new ConnectionException(new Error('could not connect')))).toBe('database');
    // The API's own bounds on a database that hangs or a statement that waits too long (db/orm.ts requestPathDatabaseOptions).
    expect(
      unavailableDependency(new DriverException(pgError('57014', 'canceling statement due to statement timeout'))),
    ).toBe('database');
    expect(unavailableDependency(new DriverException(new Error('Query read timeout')))).toBe('database');
    expect(unavailableDependency(new Error('Query read timeout'))).toBe('database');
    // localhost: Node tries ::1 and 127.0.0.1 and fails with both, as an AggregateError under the driver's error.
    const both = new AggregateError(
      [
        socketError('ECONNREFUSED', 'connect ECONNREFUSED ::1:5432'),
        socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
      ],
      '',
    );
    expect(unavailableDependency(new DriverException(both))).toBe('database');
    // A raw query (em.getConnection().execute) gets pg-pool's socket error unwrapped; its stack names the driver.
    const raw = socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432');
    raw.stack =
      'Error: connect ECONNREFUSED 127.0.0.1:5432\n    at /app/node_modules/pg-pool/index.js:45:11\n    at async PostgresDriver.acquireConnection (file:///app/node_modules/kysely/dist/dialect/postgres/postgres-driver.js:21:24)';
    expect(unavailableDependency(raw)).toBe('database');
    // Wrapped by our own code as a cause.
    expect(
      unavailableDependency(
        new Error('could not read the invoice', { cause: new DriverException(socketError('ECONNREFUSED', 'refused')) }),
      ),
    ).toBe('database');
  });

  it("Temporal: UNAVAILABLE and DEADLINE_EXCEEDED under the client's ServiceError, and a connect past its deadline", () => {
    expect(
      unavailableDependency(
        new ServiceError('Failed to start Workflow', {
          cause: grpcError(14, 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:7233.'),
        }),
      ),
    ).toBe('temporal');
    expect(
      unavailableDependency(new ServiceError('Failed to query Workflow', { cause: grpcError(4, 'Deadline exceeded') })),
    ).toBe('temporal');
    expect(unavailableDependency(grpcError(14, 'Connection dropped'))).toBe('temporal');
    expect(unavailableDependency(new Error('Failed to connect before the deadline'))).toBe('temporal');
  });

  it('bugs and refusals stay what they are (null: a 500, or the code the caller gave)', () => {
    expect(unavailableDependency(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBeNull();
    expect(
      unavailableDependency(
        new UniqueConstraintViolationException(pgError('23505', 'duplicate key value violates unique constraint')),
      ),
    ).toBeNull();
    expect(unavailableDependency(new DriverException(pgError('42P01', 'relation "nope" does not exist')))).toBeNull();
    // A Temporal refusal (not found, already started, invalid argument) is not an outage.
    expect(
      unavailableDependency(new ServiceError('Failed to signal', { cause: grpcError(5, 'workflow not found') })),
    ).toBeNull();
    expect(
      unavailableDependency(new ServiceError('Failed to start', { cause: grpcError(3, 'invalid argument') })),
    ).toBeNull();
    expect(
      unavailableDependency(
        new WorkflowUpdateFailedError(
          'Workflow Update failed',
          ApplicationFailure.create({ type: 'invalid_state', message: 'no' }),
        ),
      ),
    ).toBeNull();
    // A socket error that is not the database's (a processor's HTTP call, say) is not called the database's.
    expect(unavailableDependency(socketError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:443'))).toBeNull();
    expect(unavailableDependency(null)).toBeNull();
    expect(unavailableDependency('ECONNREFUSED')).toBeNull();
    // A cause that points back at itself ends.
    const loop = new Error('loop') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(unavailableDependency(loop)).toBeNull();
  });

  it('the message names the dependency and when to retry', () => {
    expect(unavailableMessage('database')).toMatch(/database is unavailable.*Retry in 5 seconds/);
    expect(unavailableMessage('temporal')).toMatch(/Temporal.*unavailable.*Retry in 5 seconds/);
  });
});
