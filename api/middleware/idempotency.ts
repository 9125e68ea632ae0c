import type { MiddlewareHandler } from 'hono';
import type { MikroORM } from '@mikro-orm/postgresql';
import { IdempotencyKey } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { sha256 } from '../auth/tokens.ts';

/** Keys are kept this long; a retry within it replays the first response. */
export const idempotencyKeyTtlMs = 24 * 3_600_000;
/** A request still "in progress" after this long died with its process; its key may be used again. */
export const abandonedAfterMs = 5 * 60_000;

/**
 * `Idempotency-Key` on any POST but login and refresh: the first request with a key runs; a retry with
 * the same key and the same body gets the first response again (with
 * `Idempotent-Replayed: true`) and runs nothing, so a lost response never moves
 * money twice. The same key with another body is refused
 * (`idempotency_key_reused`), as is a retry while the first is still running
 * (`idempotency_in_progress`). A 5xx is not kept, so the request can be retried.
 */
export function idempotencyKeys(orm: MikroORM): MiddlewareHandler {
  return async (c, next) => {
    const key = c.req.header('idempotency-key');
    // Session endpoints hand out fresh secrets: a replay must never give them out again.
    if (c.req.method !== 'POST' || key === undefined || c.req.path.startsWith('/v1/auth/')) return next();
    if (key.length === 0 || key.length > 255) throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 characters.');
    const principal = c.get('principal');
    const scope = !principal ? 'anonymous' : principal.kind === 'api_key' || principal.accountId ? `${principal.accountId}:${principal.livemode}` : principal.userId;
    const requestHash = sha256(`${c.req.method} ${c.req.path}\n${await c.req.text()}`);
    const em = orm.em.fork();
    const now = new Date();

    const claimed = await em.getConnection().execute<{ id: string }[]>(
      `insert into idempotency_keys (scope, key, request_hash, state, created_at, expires_at) values (?, ?, ?, 'in_progress', ?, ?)
       on conflict (scope, key) do update set request_hash = excluded.request_hash, state = 'in_progress', response_status = null,
         response_body = null, created_at = excluded.created_at, expires_at = excluded.expires_at
       where idempotency_keys.expires_at < ? or (idempotency_keys.state = 'in_progress' and idempotency_keys.created_at < ?)
       returning id`,
      [scope, key, requestHash, now, new Date(now.getTime() + idempotencyKeyTtlMs), now, new Date(now.getTime() - abandonedAfterMs)],
    );
    if (claimed.length === 0) {
      const existing = await em.findOneOrFail(IdempotencyKey, { scope, key });
      if (existing.requestHash !== requestHash) {
        throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key.');
      }
      if (existing.state === 'in_progress') throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is still running; retry later.');
      return c.body(existing.responseBody ?? '', existing.responseStatus as 200, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
    }

    const id = claimed[0]!.id;
    await next();
    if (c.res.status >= 500) {
      await em.nativeDelete(IdempotencyKey, { id });
      return;
    }
    await em.nativeUpdate(IdempotencyKey, { id }, { state: 'completed', responseStatus: c.res.status, responseBody: await c.res.clone().text() });
  };
}
