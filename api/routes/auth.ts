import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { RefreshToken, Session, User } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { clearBrowserCookies, csrfTokenFor, setBrowserCookies, signBrowserToken } from '../auth/browser-session.ts';
import { verifyPassword, warmPasswordDecoy } from '../auth/passwords.ts';
import { findLiveSession, principalOf } from '../auth/principal.ts';
import { newRefreshToken, secretKey, sha256, signAccessToken } from '../auth/tokens.ts';
import type { AppDeps } from '../deps.ts';
import { clientIp } from '../middleware/client-ip.ts';
import { newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { isCrossSitePost } from '../pages/layout.ts';
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

const LoginBody = z
  .object({
    // Lower-cased before the length check: some letters grow when lower-cased.
    email: z.string().trim().toLowerCase().pipe(z.string().min(1).max(254)),
    password: z.string().min(1).max(256),
    device_fingerprint: z.string().max(255).optional(),
  })
  .openapi({ example: { email: 'ada@example.com', password: 'Correct-Horse-42!' } });

const BrowserSession = z
  .object({
    user: z.object({
      id: z.string(),
      email: z.string(),
      name: z.string().nullable(),
      role: z.enum(['admin', 'owner', 'member']),
    }),
    account: z.object({ id: z.string(), name: z.string() }).nullable(),
    csrf_token: z.string(),
    session_id: z.string(),
  })
  .openapi('BrowserSession');

const startBrowserSession = createRoute({
  method: 'post',
  path: '/browser_session',
  tags: ['Authentication'],
  summary: 'Sign in to the dashboard (cookie session)',
  description:
    'Like login, but the session comes back as an httpOnly, SameSite=Strict cookie (`billing_session`) and a readable `billing_csrf` cookie. ' +
    'Requests with the cookie send `x-csrf-token` (the `csrf_token` here) on anything but GET/HEAD/OPTIONS; Bearer credentials keep working as before. ' +
    'A cross-site request (`Sec-Fetch-Site` other than same-origin or none, or a foreign `Origin`) answers 403 `forbidden` and sets no cookie (login CSRF).',
  request: { body: { content: { 'application/json': { schema: LoginBody } }, required: true } },
  security: [],
  responses: {
    200: { description: 'Signed in', content: { 'application/json': { schema: BrowserSession } } },
    ...errorResponses(400, 401, 403, 429),
  },
});

const readBrowserSession = createRoute({
  method: 'get',
  path: '/browser_session',
  tags: ['Authentication'],
  summary: 'The signed-in user, role, account and CSRF token',
  responses: {
    200: { description: 'The session', content: { 'application/json': { schema: BrowserSession } } },
    ...errorResponses(401),
  },
});

const endBrowserSession = createRoute({
  method: 'delete',
  path: '/browser_session',
  tags: ['Authentication'],
  summary: 'Sign out of the dashboard',
  description: 'Revokes the session and clears its cookies.',
  responses: {
    200: { description: 'Signed out', content: { 'application/json': { schema: z.object({ message: z.string() }) } } },
    ...errorResponses(401),
  },
});

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
          schema: LoginBody,
        },
      },
      required: true,
    },
  },
  // Public: no credential (no lock icon in the docs).
  security: [],
  responses: {
    200: { description: 'Logged in', content: { 'application/json': { schema: TokenResponse } } },
    ...errorResponses(400, 401, 429),
  },
});

const refresh = createRoute({
  method: 'post',
  path: '/refresh',
  tags: ['Authentication'],
  summary: 'Exchange a refresh token for new tokens',
  description:
    'The refresh token goes in `Authorization: Bearer` and in the body, and must match. Each refresh token works once: a new one comes back. ' +
    'Presenting one that was already used revokes the whole session (it was copied) and answers `invalid_grant`.',
  request: {
    body: {
      content: {
        'application/json': {
          schema: z
            .object({ refresh_token: z.string().min(1).max(512) })
            .openapi({ example: { refresh_token: 'rt_Yq3kV9xP2mT7wL5nB8cR1dF4gH6jK0sA3eU9iO2pZ7' } }),
        },
      },
      required: true,
    },
  },
  responses: {
    200: { description: 'New tokens', content: { 'application/json': { schema: TokenResponse } } },
    ...errorResponses(400, 401),
  },
});

const EndSessionBody = z
  .object({ session_id: z.string().max(64).optional() })
  .strict()
  .openapi({ example: { session_id: 'ses_01jd3x5k8q0m2v7c9r4t6y1w3e' } });

const endSession = createRoute({
  method: 'delete',
  path: '/session',
  tags: ['Authentication'],
  summary: 'Invalidate a session',
  description:
    'Without a body, the current session; with `session_id`, that session of the same user (an admin may end any).',
  request: { body: { content: { 'application/json': { schema: EndSessionBody } }, required: false } },
  responses: {
    200: {
      description: 'Ended',
      content: { 'application/json': { schema: z.object({ message: z.string(), session_id: z.string() }) } },
    },
    ...errorResponses(401, 404),
  },
});

export function authApp({ config, context: { orm } }: AppDeps) {
  const key = secretKey(config.auth.secret);
  const { auth } = config;
  void warmPasswordDecoy();

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

  /**
   * Reserves one login attempt before the password is verified: under a per-email and a
   * per-IP advisory lock, counts the recent failures (reservations in flight count as
   * failures) and, when under both limits, inserts the attempt as failed. Concurrent
   * guesses therefore queue on the lock and at most the limit of them reach the
   * password check. Returns the reserved row's id, or the seconds to wait.
   */
  async function reserveAttempt(email: string, ip: string | null): Promise<{ attemptId: string } | { wait: number }> {
    const windowMs = auth.loginThrottleWindowSeconds * 1000;
    return orm.em.fork().transactional(async (tx) => {
      const ctx = tx.getTransactionContext();
      const run = <T extends object[]>(sql: string, params: unknown[]) =>
        tx.getConnection().execute<T>(sql, params as never[], 'all', ctx);
      // Always the email first, then the IP: one order, so no two logins deadlock.
      await run(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`login:email:${email}`]);
      if (ip) await run(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`login:ip:${ip}`]);
      const since = new Date(Date.now() - windowMs);
      const limits: [string, string | null, number][] = [
        ['email', email, auth.maxFailedLoginsPerEmail],
        ['ip', ip, auth.maxFailedLoginsPerIp],
      ];
      let wait = 0;
      for (const [column, value, limit] of limits) {
        if (value === null) continue;
        const failures = await run<{ created_at: Date | string }[]>(
          `select created_at from login_attempts where ${column} = ? and succeeded = false and created_at > ? order by created_at desc limit ?`,
          [value, since, limit],
        );
        if (failures.length >= limit) {
          const oldest = new Date(failures[failures.length - 1]!.created_at).getTime();
          wait = Math.max(wait, Math.max(1, Math.ceil((oldest + windowMs - Date.now()) / 1000)));
        }
      }
      if (wait > 0) return { wait };
      const [row] = await run<{ id: string }[]>(
        `insert into login_attempts (email, ip, succeeded, created_at) values (?, ?, false, now()) returning id`,
        [email, ip],
      );
      return { attemptId: String(row!.id) };
    });
  }

  /** Checks the password (throttled) and starts a session: shared by login and the dashboard's sign-in. */
  async function startSession(c: Context, body: z.infer<typeof LoginBody>) {
    const email = body.email;
    const ip = clientIp(c, auth.trustProxy);
    // The attempt is reserved (counted as a failure) before the password is checked.
    const reserved = await reserveAttempt(email, ip);
    if ('wait' in reserved) {
      c.header('Retry-After', String(reserved.wait));
      throw new ApiError('rate_limited', `Too many failed logins. Try again in ${reserved.wait} seconds.`);
    }
    const em = orm.em.fork();
    const user = await em.findOne(User, { email });
    const ok = await verifyPassword(user?.passwordHash ?? null, body.password);
    if (ok)
      await em
        .getConnection()
        .execute(`update login_attempts set succeeded = true where id = ?`, [reserved.attemptId], 'run');
    if (!user || !ok) throw new ApiError('invalid_credentials', 'Wrong email or password.');
    if (user.status !== 'active') throw new ApiError('unauthorized', `This user is ${user.status}.`);
    if (user.accountId) {
      const [account] = await em
        .getConnection()
        .execute<{ status: string }[]>('select status from accounts where id = ?', [user.accountId]);
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
    return { session, user };
  }

  async function browserSessionOf(sessionId: string, userId: string) {
    const row = await findLiveSession(orm, sessionId);
    if (!row || row.user_id !== userId)
      throw new ApiError('unauthorized', 'This session is no longer valid; sign in again.');
    const [user] = await orm.em
      .getConnection()
      .execute<
        { id: string; email: string; name: string | null }[]
      >(`select id, email, name from users where id = ?`, [userId]);
    return {
      user: { id: user!.id, email: user!.email, name: user!.name ?? null, role: row.role },
      account: row.a_id ? { id: row.a_id, name: row.a_name! } : null,
      csrf_token: csrfTokenFor(auth.secret, sessionId),
      session_id: sessionId,
    };
  }

  return newOpenApiApp()
    .openapi(login, async (c) => {
      const { session, user } = await startSession(c, c.req.valid('json'));
      const tokens = await issueTokens(session.id, user.id);
      return c.json({ ...tokens, user: { id: user.id, email: user.email, name: user.name ?? null } }, 200);
    })
    .openapi(refresh, async (c) => {
      const header = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
      if (!header)
        throw new ApiError('unauthorized', 'The refresh token goes in Authorization: Bearer <refresh_token>.');
      const { refresh_token: presented } = c.req.valid('json');
      if (header !== presented)
        throw new ApiError('invalid_request', 'The refresh token in the header and in the body differ.');
      const em = orm.em.fork();
      const stored = await em.findOne(RefreshToken, { tokenHash: sha256(presented) });
      if (!stored) throw new ApiError('invalid_grant', 'Unknown refresh token.');
      // Use it up atomically: of two concurrent refreshes with one token, one wins.
      const claimed = await em.nativeUpdate(RefreshToken, { id: stored.id, usedAt: null }, { usedAt: new Date() });
      if (claimed === 0) {
        await em.nativeUpdate(
          Session,
          { id: stored.sessionId, revokedAt: null },
          { revokedAt: new Date(), revokedReason: 'refresh_token_reuse' },
        );
        throw new ApiError('invalid_grant', 'This refresh token was already used; the session has been revoked.');
      }
      const row = await findLiveSession(orm, stored.sessionId);
      if (!row) throw new ApiError('invalid_grant', 'The session has ended.');
      return c.json(await issueTokens(stored.sessionId, row.user_id), 200);
    })
    .openapi(endSession, async (c) => {
      const principal = principalOf(c);
      if (principal.kind !== 'user')
        throw new ApiError('invalid_request', 'API keys have no session; delete the key instead.');
      const sessionId = (await optionalJsonBody(c, EndSessionBody)).session_id ?? principal.sessionId;
      const em = orm.em.fork();
      const session = await em.findOne(Session, { id: sessionId });
      const visible = session && (session.userId === principal.userId || principal.role === 'admin');
      if (!session || !visible || session.revokedAt) throw new ApiError('invalid_session', 'No such active session.');
      session.revokedAt = new Date();
      session.revokedReason = 'logout';
      await em.flush();
      return c.json({ message: 'Session invalidated.', session_id: session.id }, 200);
    })
    .openapi(startBrowserSession, async (c) => {
      // Login CSRF: another site must not sign a browser into an account (its own, to watch what is typed there).
      // Refused as cookie-authenticated writes are, before the password is checked or an attempt is counted.
      if (isCrossSitePost(c, config.publicUrl))
        throw new ApiError(
          'forbidden',
          'Cross-site requests cannot start a dashboard session; sign in from the dashboard itself.',
        );
      const { session, user } = await startSession(c, c.req.valid('json'));
      const maxAgeSeconds = Math.max(1, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000));
      const token = await signBrowserToken(key, { userId: user.id, sessionId: session.id }, maxAgeSeconds);
      setBrowserCookies(c, {
        token,
        csrf: csrfTokenFor(auth.secret, session.id),
        maxAgeSeconds,
        secure: config.publicUrl.startsWith('https:'),
      });
      c.header('Cache-Control', 'no-store');
      return c.json(await browserSessionOf(session.id, user.id), 200);
    })
    .openapi(readBrowserSession, async (c) => {
      const principal = principalOf(c);
      if (principal.kind !== 'user')
        throw new ApiError('invalid_request', 'Only a signed-in user has a dashboard session.');
      c.header('Cache-Control', 'no-store');
      return c.json(await browserSessionOf(principal.sessionId, principal.userId), 200);
    })
    .openapi(endBrowserSession, async (c) => {
      const principal = principalOf(c);
      if (principal.kind !== 'user')
        throw new ApiError('invalid_request', 'API keys have no session; delete the key instead.');
      await orm.em
        .fork()
        .nativeUpdate(
          Session,
          { id: principal.sessionId, revokedAt: null },
          { revokedAt: new Date(), revokedReason: 'logout' },
        );
      clearBrowserCookies(c);
      return c.json({ message: 'Signed out.' }, 200);
    });
}
