import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

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
    /** Who used it: account + mode, or the user, or "anonymous"; keys of different callers never meet. */
    scope: p.string(),
    key: p.string(),
    requestHash: p.string(),
    state: p.string().$type<'in_progress' | 'completed'>(),
    responseStatus: p.integer().nullable(),
    responseBody: p.text().nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime().index(),
  },
});
export type IdempotencyKey = InferEntity<typeof IdempotencyKey>;
