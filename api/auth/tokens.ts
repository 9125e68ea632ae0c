import { createHash, randomBytes } from 'node:crypto';

import { jwtVerify, SignJWT } from 'jose';

/**
 * Access tokens are short-lived HS256 JWTs naming the user and the session; every
 * request still checks the session in the database, so revocation is immediate.
 * Refresh tokens and API keys are opaque random strings, stored only as SHA-256.
 */
export interface AccessClaims {
  userId: string;
  sessionId: string;
}

const issuer = 'billing-engine';

export async function signAccessToken(secret: Uint8Array, claims: AccessClaims, ttlSeconds: number): Promise<string> {
  return new SignJWT({ sid: claims.sessionId, typ: 'access' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.userId)
    .setIssuer(issuer)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(secret);
}

/** The claims of a valid, unexpired access token, or null. */
export async function verifyAccessToken(secret: Uint8Array, token: string): Promise<AccessClaims | null> {
  const result = await checkAccessToken(secret, token);
  return result === 'expired' ? null : result;
}

/**
 * Like verifyAccessToken, but tells an expired token (signature good, `exp` past: refresh it)
 * from an invalid one. jose checks the signature before the claims, so 'expired' is never a forgery.
 */
export async function checkAccessToken(secret: Uint8Array, token: string): Promise<AccessClaims | 'expired' | null> {
  try {
    const { payload } = await jwtVerify(token, secret, { issuer, algorithms: ['HS256'] });
    if (payload.typ !== 'access' || typeof payload.sub !== 'string' || typeof payload.sid !== 'string') return null;
    return { userId: payload.sub, sessionId: payload.sid };
  } catch (error) {
    return (error as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'expired' : null;
  }
}

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function newRefreshToken(): string {
  return `rt_${randomBytes(32).toString('base64url')}`;
}

export function newApiKeySecret(livemode: boolean): string {
  return `${livemode ? 'sk_live_' : 'sk_test_'}${randomBytes(32).toString('base64url')}`;
}

export function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}
