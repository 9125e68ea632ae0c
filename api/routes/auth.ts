import { createRoute, z } from '@hono/zod-openapi';
import { clientIp } from '../middleware/client-ip.ts';
import { LoginAttempt, RefreshToken, Session, User } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { verifyPassword } from '../auth/passwords.ts';
import { findLiveSession, principalOf } from '../auth/principal.ts';
import { newRefreshToken, secretKey, sha256, signAccessToken } from '../auth/tokens.ts';
import type { ApiDeps } from '../deps.ts';
import { newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { errorResponses } from '../schemas.ts';

const TokenResponse = z
  .object({
    access_token: z.string(),
    refresh_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int(),
    session_id: z.string(),
    user: z.object({ id: z.string(), email: z.string(), name: z.string().nullable() }).optional(),
  })
  .openapi('Tokens');

const login = createRoute({
  method: 'post',
  path: '/login',
  tags: ['Authentication'],
  summary: 'Log in with email and password',
  description:
    'Starts a session. Too many failed logins for one email or from one IP within the throttle window answer 429 `rate_limited` with Retry-After.',
  request: {
    body: {
      content: {
        'application/json': {
          schema: z.object({
            // Lower-cased before the length check: some letters grow when lower-cased.
            email: z.string().trim().toLowerCase().pipe(z.string().min(1).max(254)),
            password: z.string().min(1).max(256),
            device_fingerprint: z.string().max(255).optional(),
          }),
        },
      },
      required: true,
    },
  },
  responses: { 200: { description: 'Logged in', content: { 'application/json': { schema: TokenResponse } } }, ...errorResponses(400, 401, 429) },
});

const refresh = createRoute({
  method: 'post',
  path: '/refresh',
  tags: ['Authentication'],
  summary: 'Exchange a refresh token for new tokens',
  description:
    'The refresh token goes in `Authorization: Bearer` and in the body, and must match. Each refresh token works once: a new one comes back. ' +
    'Presenting one that was already used revokes the whole session (it was copied) and answers `invalid_grant`.',
  request: { body: { content: { 'application/json': { schema: z.object({ refresh_token: z.string().min(1).max(512) }) } }, required: true } },
  responses: { 200: { description: 'New tokens', content: { 'application/json': { schema: TokenResponse } } }, ...errorResponses(400, 401) },
});

const EndSessionBody = z.object({ session_id: z.string().max(64).optional() }).strict();

const endSession = createRoute({
  method: 'delete',
  path: '/session',
  tags: ['Authentication'],
  summary: 'Invalidate a session',
  description: 'Without a body, the current session; with `session_id`, that session of the same user (an admin may end any).',
  request: { body: { content: { 'application/json': { schema: EndSessionBody } }, required: false } },
  responses: {
    200: { description: 'Ended', content: { 'application/json': { schema: z.object({ message: z.string(), session_id: z.string() }) } } },
    ...errorResponses(401, 404),
  },
});

export function authApp({ orm, config }: ApiDeps) {
  const key = secretKey(config.auth.secret);
  const { auth } = config;

  async function issueTokens(sessionId: string, userId: string) {
    const refreshToken = newRefreshToken();
    const em = orm.em.fork();
    em.create(RefreshToken, { id: newId('refreshToken'), sessionId, tokenHash: sha256(refreshToken) });
    await em.flush();
    return {
      access_token: await signAccessToken(key, { userId, sessionId }, auth.accessTokenTtlSeconds),
      refresh_token: refreshToken,
      token_type: 'Bearer' as const,
      expires_in: auth.accessTokenTtlSeconds,
      session_id: sessionId,
    };
  }

  /** Seconds until the caller may try again, or 0 when under both limits. */
  async function throttledFor(email: string, ip: string | null): Promise<number> {
    const since = new Date(Date.now() - auth.loginThrottleWindowSeconds * 1000);
    const em = orm.em.fork();
    const windows = await Promise.all([
      em.find(LoginAttempt, { email, succeeded: false, createdAt: { $gt: since } }, { orderBy: { createdAt: 'desc' }, limit: auth.maxFailedLoginsPerEmail }),
      ip ? em.find(LoginAttempt, { ip, succeeded: false, createdAt: { $gt: since } }, { orderBy: { createdAt: 'desc' }, limit: auth.maxFailedLoginsPerIp }) : [],
    ]);
    const limits = [auth.maxFailedLoginsPerEmail, auth.maxFailedLoginsPerIp];
    let wait = 0;
    windows.forEach((failures, i) => {
      if (failures.length >= limits[i]!) {
        const oldest = failures[failures.length - 1]!.createdAt.getTime();
        wait = Math.max(wait, Math.ceil((oldest + auth.loginThrottleWindowSeconds * 1000 - Date.now()) / 1000));
      }
    });
    return wait;
  }

  return newOpenApiApp()
    .openapi(login, async (c) => {
      const body = c.req.valid('json');
      const email = body.email;
      const ip = clientIp(c, auth.trustProxy);
      const wait = await throttledFor(email, ip);
      if (wait > 0) {
        c.header('Retry-After', String(wait));
        throw new ApiError('rate_limited', `Too many failed logins. Try again in ${wait} seconds.`);
      }
      const em = orm.em.fork();
      const user = await em.findOne(User, { email });
      const ok = await verifyPassword(user?.passwordHash ?? null, body.password);
      em.create(LoginAttempt, { email, ip, succeeded: ok });
      await em.flush();
      if (!user || !ok) throw new ApiError('invalid_credentials', 'Wrong email or password.');
      if (user.status !== 'active') throw new ApiError('unauthorized', `This user is ${user.status}.`);
      if (user.accountId) {
        const [account] = await em.getConnection().execute<{ status: string }[]>('select status from accounts where id = ?', [user.accountId]);
        if (account?.status === 'closed') throw new ApiError('unauthorized', 'This account is closed.');
      }
      const session = em.create(Session, {
        id: newId('session'),
        userId: user.id,
        accountId: user.accountId ?? null,
        deviceFingerprint: body.device_fingerprint ?? c.req.header('x-device-fingerprint')?.slice(0, 255) ?? null,
        ip,
        userAgent: c.req.header('user-agent')?.slice(0, 512) ?? null,
        expiresAt: new Date(Date.now() + auth.refreshTokenTtlSeconds * 1000),
        revokedAt: null,
        revokedReason: null,
      });
      await em.flush();
      const tokens = await issueTokens(session.id, user.id);
      return c.json({ ...tokens, user: { id: user.id, email: user.email, name: user.name ?? null } }, 200);
    })
    .openapi(refresh, async (c) => {
      const header = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
      if (!header) throw new ApiError('unauthorized', 'The refresh token goes in Authorization: Bearer <refresh_token>.');
      const { refresh_token: presented } = c.req.valid('json');
      if (header !== presented) throw new ApiError('invalid_request', 'The refresh token in the header and in the body differ.');
      const em = orm.em.fork();
      const stored = await em.findOne(RefreshToken, { tokenHash: sha256(presented) });
      if (!stored) throw new ApiError('invalid_grant', 'Unknown refresh token.');
      // Use it up atomically: of two concurrent refreshes with one token, one wins.
      const claimed = await em.nativeUpdate(RefreshToken, { id: stored.id, usedAt: null }, { usedAt: new Date() });
      if (claimed === 0) {
        await em.nativeUpdate(Session, { id: stored.sessionId, revokedAt: null }, { revokedAt: new Date(), revokedReason: 'refresh_token_reuse' });
        throw new ApiError('invalid_grant', 'This refresh token was already used; the session has been revoked.');
      }
      const row = await findLiveSession(orm, stored.sessionId);
      if (!row) throw new ApiError('invalid_grant', 'The session has ended.');
      return c.json(await issueTokens(stored.sessionId, row.user_id), 200);
    })
    .openapi(endSession, async (c) => {
      const principal = principalOf(c);
      if (principal.kind !== 'user') throw new ApiError('invalid_request', 'API keys have no session; delete the key instead.');
      const sessionId = (await optionalJsonBody(c, EndSessionBody)).session_id ?? principal.sessionId;
      const em = orm.em.fork();
      const session = await em.findOne(Session, { id: sessionId });
      const visible = session && (session.userId === principal.userId || principal.role === 'admin');
      if (!session || !visible || session.revokedAt) throw new ApiError('invalid_session', 'No such active session.');
      session.revokedAt = new Date();
      session.revokedReason = 'logout';
      await em.flush();
      return c.json({ message: 'Session invalidated.', session_id: session.id }, 200);
    });
}
