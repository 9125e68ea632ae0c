import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * One `Idempotency-Key` as a caller used it: the request it came with (as a hash)
 * and, once the request finished, the response to replay for a retry.
 */
export const IdempotencyKey = defineEntity({
  name: 'IdempotencyKey',
  tableName: 'idempotency_keys',
  uniques: [{ properties: ['scope', 'key'] }],
  properties: {
    id: p.bigint().primary().autoincrement(),
    /** Who used it: the principal (user and role, or API key), the account it acted on and the mode; unauthenticated callers by client IP. Keys of different callers never meet. */
    scope: p.string(),
    key: p.string(),
    requestHash: p.string(),
    state: p.string().$type<'in_progress' | 'completed'>(),
    responseStatus: p.integer().nullable(),
    responseBody: p.text().nullable(),
    /** While in progress: the lease of the request running it, refreshed as it runs; once past, a retry takes the key over. */
    lockedUntil: p.datetime().nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime().index(),
  },
});
export type IdempotencyKey = InferEntity<typeof IdempotencyKey>;
