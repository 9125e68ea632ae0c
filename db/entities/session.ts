import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** One login: what its access and refresh tokens hang on. Revoking it ends them all at once. */
export const Session = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  properties: {
    id: p.string().primary(),
    userId: p.string().index(),
    accountId: p.string().nullable(),
    deviceFingerprint: p.string().nullable(),
    ip: p.string().nullable(),
    userAgent: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
    revokedReason: p.string().nullable(),
  },
});
export type Session = InferEntity<typeof Session>;

/**
 * Every refresh token a session has been given, stored as a SHA-256 hash. A
 * token is good once: refreshing marks it used and issues the next; presenting a
 * used one again means it was stolen, and the whole session is revoked.
 */
export const RefreshToken = defineEntity({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    id: p.string().primary(),
    sessionId: p.string().index(),
    tokenHash: p.string().unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
    usedAt: p.datetime().nullable(),
  },
});
export type RefreshToken = InferEntity<typeof RefreshToken>;

/** Failed (and successful) logins, for throttling by email and by IP across API processes. */
export const LoginAttempt = defineEntity({
  name: 'LoginAttempt',
  tableName: 'login_attempts',
  properties: {
    id: p.bigint().primary().autoincrement(),
    email: p.string().index(),
    ip: p.string().nullable().index(),
    succeeded: p.boolean(),
    createdAt: p
      .datetime()
      .onCreate(() => new Date())
      .index(),
  },
});
export type LoginAttempt = InferEntity<typeof LoginAttempt>;
