import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * A secret API key (`sk_test_…` for sandbox, `sk_live_…` for live). Only its
 * SHA-256 is stored (keys are 32 random bytes, so a fast hash is safe); the
 * secret is shown once, at creation. `last4` lets a list show which key is which.
 */
export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.string().primary(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    name: p.string().nullable(),
    secretHash: p.string().unique(),
    last4: p.string(),
    createdByUserId: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;
