import type { MikroORM } from '@mikro-orm/postgresql';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';

import type { AuthConfig } from '../../config.ts';
import type { UserRole } from '../../db/entities/index.ts';
import { ApiError, type ErrorCode } from '../../domain/errors.ts';
import type { AccountRow } from '../../objects/account.ts';
import { hashCliKey } from '../../services/accounts/cli-keys.ts';
import { coalescedApiKeyLookups } from './api-key-lookups.ts';
import {
  csrfHeaderName,
  csrfTokenMatches,
  safeMethods,
  sessionCookieName,
  verifyBrowserToken,
} from './browser-session.ts';
import { checkAccessToken, secretKey, sha256 } from './tokens.ts';

/** Who is calling. Set by `authenticate` on every request that carries credentials. */
export type Principal =
  | { kind: 'user'; userId: string; role: UserRole; accountId: string | null; sessionId: string; livemode: boolean }
  | { kind: 'api_key'; apiKeyId: string; accountId: string; livemode: boolean }
  /** A CLI key (x-cli-key): acts like an API key of its mode, restricted by api/auth/cli-scope.ts. */
  | { kind: 'cli_key'; cliKeyId: string; userId: string; accountId: string; livemode: boolean };

/** The caller's account as the authentication query read it (null for an admin). */
export type CallerAccountRow = AccountRow;

declare module 'hono' {
  interface ContextVariableMap {
    principal: Principal | undefined;
    /** Read with the principal, so a request about the caller's own account needs no second query. */
    callerAccount: CallerAccountRow | undefined;
  }
}

/** Account columns selected beside the credential check. */
const accountColumns = `a.id as a_id, a.email as a_email, a.name as a_name, a.type as a_type, a.status as a_status,
  a.settings as a_settings, a.created_at as a_created_at, a.updated_at as a_updated_at, a.closed_at as a_closed_at`;

type AccountColumns = { [K in keyof CallerAccountRow as `a_${K & string}`]: CallerAccountRow[K] | null };

function callerAccount(row: AccountColumns): CallerAccountRow | undefined {
  if (row.a_id === null) return undefined;
  return {
    id: row.a_id,
    email: row.a_email!,
    name: row.a_name!,
    type: row.a_type!,
    status: row.a_status!,
    settings: typeof row.a_settings === 'string' ? JSON.parse(row.a_settings) : row.a_settings!,
    created_at: row.a_created_at!,
    updated_at: row.a_updated_at!,
    closed_at: row.a_closed_at,
  };
}

export interface SessionRow extends AccountColumns {
  user_id: string;
  role: UserRole;
  user_status: string;
  account_id: string | null;
}

/**
 * Resolves `Authorization: Bearer ...` into a principal, or leaves it unset when
 * there is no header. A key or token that is present but not valid now (expired,
 * revoked session, deleted or suspended user, closed account) is `unauthorized`
 * at once: one SQL query per request checks all of it.
 */
/**
 * The one definition of a session that still works: not revoked, not expired,
 * its user active and its account (if any) not closed. Also reads the account,
 * so requests about the caller's own account need no second query.
 */
export async function findLiveSession(orm: MikroORM, sessionId: string): Promise<SessionRow | undefined> {
  const [row] = await orm.em.getConnection().execute<SessionRow[]>(
    `select u.id as user_id, u.role, u.status as user_status, u.account_id, ${accountColumns}
       from sessions s join users u on u.id = s.user_id left join accounts a on a.id = u.account_id
      where s.id = ? and s.revoked_at is null and s.expires_at > now()`,
    [sessionId],
  );
  return row && row.user_status === 'active' && row.a_status !== 'closed' ? row : undefined;
}

/** Endpoints whose Authorization header is not an access credential: login needs none, refresh carries a refresh token. */
/** A password reset (api/routes/password-reset.ts) is asked for and confirmed signed out: a cookie sent along is ignored. */
const credentialFreePaths = new Set([
  '/v1/auth/login',
  '/v1/auth/refresh',
  '/v1/auth/password_reset',
  '/v1/auth/password_reset/confirm',
]);
/** Signing in to the dashboard (POST) needs no credential either; ending that session (DELETE) does. */
/** The customer portal's calls carry the portal link's token (api/routes/customer-portal.ts), never the owner's credentials. */
const isCredentialFree = (c: Context) =>
  credentialFreePaths.has(c.req.path) ||
  (c.req.path === '/v1/auth/browser_session' && c.req.method === 'POST') ||
  /^\/v1\/portal(\/|$)/.test(c.req.path);

/**
 * The credential in an Authorization header: `Bearer <token>`, or, as Stripe takes it,
 * HTTP Basic with an API key as the user name and an empty password (`curl -u sk_test_...:`).
 */
function credentialOf(header: string): string {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  if (bearer) return bearer[1]!;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon === -1 ? decoded : decoded.slice(0, colon);
    const password = colon === -1 ? '' : decoded.slice(colon + 1);
    if ((user.startsWith('sk_test_') || user.startsWith('sk_live_')) && password === '') return user;
    throw new ApiError(
      'unauthorized',
      'HTTP Basic takes an API key as the user name and an empty password (curl -u sk_test_...:).',
    );
  }
  throw new ApiError(
    'unauthorized',
    'Authorization must be "Bearer <token>" (or Basic with an API key as the user name).',
  );
}

export function authenticate(orm: MikroORM, auth: AuthConfig): MiddlewareHandler {
  const key = secretKey(auth.secret);
  const lookupApiKey = coalescedApiKeyLookups<
    { id: string; account_id: string; livemode: boolean; secret_hash: string } & AccountColumns
  >(
    orm,
    `select k.id, k.account_id, k.livemode, k.secret_hash, ${accountColumns} from api_keys k join accounts a on a.id = k.account_id
      where k.revoked_at is null and a.status <> 'closed' and k.secret_hash = any(?::text[])`,
  );
  return async (c, next) => {
    const cliKey = c.req.header('x-cli-key');
    if (cliKey !== undefined && !isCredentialFree(c)) {
      if (c.req.header('authorization'))
        throw new ApiError('invalid_request', 'Send either x-cli-key or Authorization, not both.');
      if (!/^ck_(test|live)_/.test(cliKey))
        throw new ApiError('unauthorized', 'x-cli-key must be a CLI key (ck_test_… or ck_live_…).');
      const sandboxHeader = c.req.header('x-sandbox-mode');
      // One statement checks the key (not revoked, not expired, its user active, its account open) and notes its use.
      const [row] = await orm.em
        .getConnection()
        .execute<({ id: string; account_id: string; user_id: string; livemode: boolean } & AccountColumns)[]>(
          `update cli_keys k set last_used_at = now() from users u, accounts a
          where k.secret_hash = ? and k.revoked_at is null and k.expires_at > now()
            and u.id = k.user_id and u.status = 'active' and a.id = k.account_id and a.status <> 'closed'
        returning k.id, k.account_id, k.user_id, k.livemode, ${accountColumns}`,
          [hashCliKey(cliKey)],
        );
      if (!row) throw new ApiError('unauthorized', 'Invalid, expired or revoked CLI key; run `billing login`.');
      if (sandboxHeader !== undefined && (sandboxHeader === 'true') === row.livemode) {
        throw new ApiError(
          'invalid_request',
          `A ${row.livemode ? 'live' : 'test'} key cannot ${row.livemode ? 'use' : 'leave'} sandbox mode.`,
        );
      }
      c.set('principal', {
        kind: 'cli_key',
        cliKeyId: row.id,
        userId: row.user_id,
        accountId: row.account_id,
        livemode: row.livemode,
      });
      c.set('callerAccount', callerAccount(row));
      return next();
    }
    const header = c.req.header('authorization');
    const cookie = header ? undefined : getCookie(c, sessionCookieName);
    if ((!header && !cookie) || isCredentialFree(c)) {
      c.set('principal', undefined);
      return next();
    }
    const sandboxHeader = c.req.header('x-sandbox-mode');
    if (sandboxHeader !== undefined && sandboxHeader !== 'true' && sandboxHeader !== 'false') {
      throw new ApiError('invalid_request', 'x-sandbox-mode must be "true" or "false".');
    }
    if (!header) {
      // The dashboard's cookie session (api/auth/browser-session.ts): anything but a read needs the CSRF header.
      const claims = await verifyBrowserToken(key, cookie!);
      if (!claims) throw new ApiError('unauthorized', 'The dashboard session has expired; sign in again.');
      if (!safeMethods.has(c.req.method)) {
        if (c.req.header('sec-fetch-site') === 'cross-site')
          throw new ApiError('forbidden', 'Cross-site requests cannot use the dashboard session.');
        if (!csrfTokenMatches(auth.secret, claims.sessionId, c.req.header(csrfHeaderName))) {
          throw new ApiError(
            'forbidden',
            `A request with the dashboard's session cookie needs its ${csrfHeaderName} header.`,
          );
        }
      }
      const row = await findLiveSession(orm, claims.sessionId);
      if (!row || row.user_id !== claims.userId)
        throw new ApiError('unauthorized', 'This session is no longer valid; sign in again.');
      c.set('principal', {
        kind: 'user',
        userId: row.user_id,
        role: row.role,
        accountId: row.account_id,
        sessionId: claims.sessionId,
        livemode: sandboxHeader !== 'true',
      });
      c.set('callerAccount', callerAccount(row));
      return next();
    }
    const token = credentialOf(header);

    if (token.startsWith('sk_test_') || token.startsWith('sk_live_')) {
      // One query for the API key requests of the moment (api/auth/api-key-lookups.ts), sent after this one arrived.
      const row = await lookupApiKey(sha256(token));
      if (!row) throw new ApiError('unauthorized', 'Invalid or revoked API key.');
      if (sandboxHeader !== undefined && (sandboxHeader === 'true') === row.livemode) {
        throw new ApiError(
          'invalid_request',
          `A ${row.livemode ? 'live' : 'test'} key cannot ${row.livemode ? 'use' : 'leave'} sandbox mode.`,
        );
      }
      c.set('principal', { kind: 'api_key', apiKeyId: row.id, accountId: row.account_id, livemode: row.livemode });
      c.set('callerAccount', callerAccount(row));
      return next();
    }

    const claims = await checkAccessToken(key, token);
    if (claims === 'expired') {
      throw new ApiError(
        'unauthorized',
        'The access token has expired: get a new one with POST /v1/auth/refresh (your refresh token in Authorization: Bearer and in the body).',
      );
    }
    if (!claims) throw new ApiError('unauthorized', 'Invalid access token.');
    const row = await findLiveSession(orm, claims.sessionId);
    if (!row || row.user_id !== claims.userId) throw new ApiError('unauthorized', 'This session is no longer valid.');
    c.set('principal', {
      kind: 'user',
      userId: row.user_id,
      role: row.role,
      accountId: row.account_id,
      sessionId: claims.sessionId,
      livemode: sandboxHeader !== 'true',
    });
    c.set('callerAccount', callerAccount(row));
    return next();
  };
}

/** The caller, or `unauthorized` when the request carried no credentials. */
export function principalOf(c: Context): Principal {
  const principal = c.get('principal');
  if (!principal) throw new ApiError('unauthorized', 'This endpoint needs Authorization: Bearer <token>.');
  return principal;
}

export type Actor = 'admin' | 'owner' | 'member' | 'api_key';

export function actorOf(principal: Principal): Actor {
  // A CLI key acts as an API key of its account and mode (and is further restricted by cli-scope.ts).
  return principal.kind === 'user' ? principal.role : 'api_key';
}

/** Refuses callers outside `allowed` with the code the endpoint's spec names (forbidden or unauthorized). */
export function requireActor(c: Context, allowed: Actor[], code: ErrorCode = 'forbidden'): Principal {
  const principal = principalOf(c);
  if (!allowed.includes(actorOf(principal))) {
    throw new ApiError(
      code,
      principal.kind !== 'user'
        ? 'API keys cannot call this endpoint.'
        : `The ${actorOf(principal)} role may not do this.`,
    );
  }
  return principal;
}

/**
 * The tenant a request works in: the caller's own account, or for a platform
 * admin the account named by the `x-account-id` header.
 */
export async function accountScope(
  c: Context,
  orm: MikroORM,
): Promise<{ accountId: string; livemode: boolean; principal: Principal }> {
  const principal = principalOf(c);
  if (principal.accountId) return { accountId: principal.accountId, livemode: principal.livemode, principal };
  const named = c.req.header('x-account-id');
  if (!named)
    throw new ApiError('invalid_request', 'Admin tokens name the account to act on with the x-account-id header.');
  const [account] = await orm.em
    .getConnection()
    .execute<{ id: string }[]>(`select id from accounts where id = ?`, [named]);
  if (!account) throw new ApiError('not_found', 'No such account.');
  return { accountId: named, livemode: principal.livemode, principal };
}
