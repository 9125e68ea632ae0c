/**
 * The dashboard's session: the same `sessions` row a login starts, carried in an
 * httpOnly, SameSite=Strict cookie instead of an Authorization header, so no token
 * is ever readable by page scripts (nothing in localStorage).
 *
 * CSRF: every request that may change something (not GET/HEAD/OPTIONS) made with the
 * cookie must carry `x-csrf-token`, an HMAC of the session id under the server's
 * secret. The dashboard reads it from the `billing_csrf` cookie (readable, same
 * SameSite) and sends it as a header — a double submit that another site cannot do,
 * because it can neither read our cookies nor set our headers. A request whose
 * Sec-Fetch-Site says cross-site is refused as well.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { jwtVerify, SignJWT } from 'jose';

import type { AccessClaims } from './tokens.ts';

export const sessionCookieName = 'billing_session';
export const csrfCookieName = 'billing_csrf';
export const csrfHeaderName = 'x-csrf-token';
const issuer = 'billing-engine';

/** A cookie token: like an access token, but typed `browser` and living as long as the session. */
export async function signBrowserToken(secret: Uint8Array, claims: AccessClaims, ttlSeconds: number): Promise<string> {
  return new SignJWT({ sid: claims.sessionId, typ: 'browser' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.userId)
    .setIssuer(issuer)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(secret);
}

export async function verifyBrowserToken(secret: Uint8Array, token: string): Promise<AccessClaims | null> {
  try {
    const { payload } = await jwtVerify(token, secret, { issuer, algorithms: ['HS256'] });
    if (payload.typ !== 'browser' || typeof payload.sub !== 'string' || typeof payload.sid !== 'string') return null;
    return { userId: payload.sub, sessionId: payload.sid };
  } catch {
    return null;
  }
}

/** The CSRF token of a session: HMAC-SHA256 of its id, so it needs no storage and dies with the session. */
export function csrfTokenFor(secret: string, sessionId: string): string {
  return createHmac('sha256', secret).update(`csrf:${sessionId}`).digest('base64url');
}

export function csrfTokenMatches(secret: string, sessionId: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const expected = Buffer.from(csrfTokenFor(secret, sessionId));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

export function setBrowserCookies(
  c: Context,
  options: { token: string; csrf: string; maxAgeSeconds: number; secure: boolean },
): void {
  const common = { path: '/', sameSite: 'Strict' as const, secure: options.secure, maxAge: options.maxAgeSeconds };
  setCookie(c, sessionCookieName, options.token, { ...common, httpOnly: true });
  setCookie(c, csrfCookieName, options.csrf, { ...common, httpOnly: false });
}

export function clearBrowserCookies(c: Context): void {
  deleteCookie(c, sessionCookieName, { path: '/' });
  deleteCookie(c, csrfCookieName, { path: '/' });
}
