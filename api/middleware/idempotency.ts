import type { MikroORM } from '@mikro-orm/postgresql';
import type { Context, MiddlewareHandler } from 'hono';

import { IdempotencyKey } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { derivedId, type IdKind, newId } from '../../domain/ids.ts';
import { idempotencyConflicts } from '../../services/observability/metrics.ts';
import { sha256 } from '../auth/tokens.ts';
import { clientIp } from './client-ip.ts';

/** Keys are kept this long; a retry within it replays the first response. */
export const idempotencyKeyTtlMs = 24 * 3_600_000;
/** The default lease (IDEMPOTENCY_LEASE_MS) of a request in progress, refreshed while it runs: a key whose lease lapsed lost its process and is taken over by the next retry. */
export const idempotencyLeaseMs = 30_000;

/** The key a request runs under, for routes that bind what they create to it (derivedId). */
export interface IdempotencyContext {
  /** Who used the key (the principal, the account it acts on, the mode) and the key itself. */
  scope: string;
  key: string;
  /** When the key was first used: the time part of the ids derived from it. */
  createdAt: Date;
  /** This request took over a key whose earlier request died (or failed) before answering: what it did may already exist. */
  takeover: boolean;
}

declare module 'hono' {
  interface ContextVariableMap {
    idempotency: IdempotencyContext | undefined;
  }
}

/**
 * The id of the resource a request creates: with an Idempotency-Key, derived from
 * (scope, key, purpose), so a retry that takes over the key after a crash reaches
 * the resource the first request created; without one, a fresh id.
 */
export function resourceId(c: Context, kind: IdKind, purpose = kind): string {
  const idem = c.get('idempotency');
  return idem ? derivedId(kind, `${idem.scope}\n${idem.key}\n${purpose}`, idem.createdAt) : newId(kind);
}

/** A stable id for one operation under the request's Idempotency-Key (a workflow update id), or undefined without a key. */
export function operationId(c: Context, purpose: string): string | undefined {
  const idem = c.get('idempotency');
  return idem
    ? `idem-${sha256(`${idem.scope}\n${idem.key}\n${purpose}\n${idem.createdAt.toISOString()}`).slice(0, 40)}`
    : undefined;
}

/**
 * Whom a key belongs to. A replay goes only to the principal that made the first
 * request, in the role it had then, acting on the same account in the same mode:
 * so it never hands a response to a caller the route would refuse (a member replaying
 * an owner's key runs the route and gets its 403). Unauthenticated callers are kept
 * apart by client IP.
 */
function scopeOf(c: Context, trustProxy: boolean): string {
  const principal = c.get('principal');
  if (!principal) {
    const ip = clientIp(c, trustProxy);
    if (!ip)
      throw new ApiError('invalid_request', 'Idempotency-Key needs an authenticated caller or a known client address.');
    return `ip:${ip}`;
  }
  const account = principal.accountId ?? c.req.header('x-account-id') ?? '-';
  const mode = principal.livemode ? 'live' : 'test';
  if (principal.kind === 'cli_key') return `cli:${principal.cliKeyId}|${account}|${mode}`;
  return principal.kind === 'api_key'
    ? `key:${principal.apiKeyId}|${account}|${mode}`
    : `user:${principal.userId}:${principal.role}|${account}|${mode}`;
}

/**
 * `Idempotency-Key` on any POST but the session endpoints: the first request with a
 * key runs; a retry by the same caller with the same key and the same body gets the
 * first response again (with `Idempotent-Replayed: true`) and runs nothing, so a
 * lost response never moves money twice. The same key with another body is refused
 * (`idempotency_key_reused`), as is a retry while the first is still running
 * (`idempotency_in_progress`). A request holds its key on a short lease; if its
 * process dies (or it answers 5xx, having perhaps done part of its work), the next
 * retry takes the key over and runs the route again, which finds what the first run
 * created through ids derived from the key (resourceId, operationId).
 */
export function idempotencyKeys(
  orm: MikroORM,
  options: { trustProxy: boolean; leaseMs?: number } = { trustProxy: false },
): MiddlewareHandler {
  return async (c, next) => {
    c.set('idempotency', undefined);
    const key = c.req.header('idempotency-key');
    // Session endpoints hand out fresh secrets: a replay must never give them out again.
    if (c.req.method !== 'POST' || key === undefined || c.req.path.startsWith('/v1/auth/')) return next();
    if (key.length === 0 || key.length > 255)
      throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 characters.');
    const scope = scopeOf(c, options.trustProxy);
    const requestHash = sha256(`${c.req.method} ${c.req.path}\n${await c.req.text()}`);
    const connection = orm.em.getConnection();
    const now = new Date();
    const leaseMs = options.leaseMs ?? idempotencyLeaseMs;
    const leaseEnd = () => new Date(Date.now() + leaseMs);

    let claim = await connection.execute<{ id: string; created_at: Date | string; takeover: boolean }[]>(
      `insert into idempotency_keys (scope, key, request_hash, state, locked_until, created_at, expires_at) values (?, ?, ?, 'in_progress', ?, ?, ?)
       on conflict (scope, key) do nothing returning id, created_at, false as takeover`,
      [scope, key, requestHash, leaseEnd(), now, new Date(now.getTime() + idempotencyKeyTtlMs)],
    );
    if (claim.length === 0) {
      // An expired key starts over; an abandoned one (lease lapsed) with this very request is taken over, keeping its start time.
      claim = await orm.em.fork().transactional(async (tx) => {
        const run = <T extends object[]>(sql: string, params: unknown[]) =>
          tx.getConnection().execute<T>(sql, params, 'all', tx.getTransactionContext());
        const [row] = await run<
          {
            id: string;
            state: string;
            request_hash: string;
            locked_until: Date | null;
            created_at: Date;
            expires_at: Date;
          }[]
        >(
          `select id, state, request_hash, locked_until, created_at, expires_at from idempotency_keys where scope = ? and key = ? for update`,
          [scope, key],
        );
        if (!row) return [];
        const at = Date.now();
        if (new Date(row.expires_at).getTime() < at) {
          await run(
            `update idempotency_keys set request_hash = ?, state = 'in_progress', locked_until = ?, response_status = null, response_body = null, created_at = ?, expires_at = ? where id = ?`,
            [requestHash, leaseEnd(), now, new Date(now.getTime() + idempotencyKeyTtlMs), row.id],
          );
          return [{ id: row.id, created_at: now, takeover: false }];
        }
        const lapsed = new Date(row.locked_until ?? row.created_at).getTime() < at;
        if (row.state !== 'in_progress' || !lapsed || row.request_hash !== requestHash) return [];
        await run(`update idempotency_keys set locked_until = ? where id = ?`, [leaseEnd(), row.id]);
        return [{ id: row.id, created_at: row.created_at, takeover: true }];
      });
    }
    if (claim.length === 0) {
      const existing = await orm.em.fork().findOne(IdempotencyKey, { scope, key });
      if (!existing) {
        idempotencyConflicts.inc({ reason: 'in_progress' });
        throw new ApiError(
          'idempotency_in_progress',
          'A request with this Idempotency-Key is still running; retry later.',
        );
      }
      if (existing.requestHash !== requestHash) {
        idempotencyConflicts.inc({ reason: 'reused' });
        throw new ApiError(
          'idempotency_key_reused',
          'This Idempotency-Key was used with a different request; use a new key.',
        );
      }
      if (existing.state === 'in_progress') {
        idempotencyConflicts.inc({ reason: 'in_progress' });
        throw new ApiError(
          'idempotency_in_progress',
          'A request with this Idempotency-Key is still running; retry later.',
        );
      }
      return c.body(existing.responseBody ?? '', existing.responseStatus as 200, {
        'content-type': 'application/json',
        'idempotent-replayed': 'true',
      });
    }

    const { id, created_at, takeover } = claim[0]!;
    c.set('idempotency', { scope, key, createdAt: new Date(created_at), takeover });
    const em = orm.em.fork();
    // Renew the lease while the request runs, so a slow request is not taken over.
    const renew = setInterval(() => {
      em.fork()
        .nativeUpdate(IdempotencyKey, { id, state: 'in_progress' }, { lockedUntil: leaseEnd() })
        .catch(() => {});
    }, leaseMs / 3);
    renew.unref();
    try {
      await next();
    } finally {
      clearInterval(renew);
    }
    if (c.res.status >= 500) {
      // It may have done part of its work (a workflow started, a charge made): keep the key bound to it
      // and let the next retry take it over at once, reaching the same resources, instead of starting anew.
      await em.nativeUpdate(IdempotencyKey, { id }, { lockedUntil: new Date(0) });
      return;
    }
    await em.nativeUpdate(
      IdempotencyKey,
      { id },
      { state: 'completed', lockedUntil: null, responseStatus: c.res.status, responseBody: await c.res.clone().text() },
    );
  };
}
