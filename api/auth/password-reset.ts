import { createHash } from 'node:crypto';

import { jwtVerify, SignJWT } from 'jose';

/**
 * Password-reset links: a signed token naming the user and a fingerprint of the password hash it
 * was issued against. Setting a new password changes the hash, so a link works once (and every
 * older link dies with it) without a table of tokens. Signed with a key derived from AUTH_SECRET for
 * this purpose only: it never passes as an access token or a customer link, nor they as it.
 */
export const passwordResetTtlMinutes = 60;
const issuer = 'billing-engine';
const audience = 'password-reset';

const fingerprint = (passwordHash: string) =>
  createHash('sha256').update(passwordHash).digest('base64url').slice(0, 22);

export function createPasswordResetTokens(secret: string) {
  const key = createHash('sha256').update(`password-reset:${secret}`).digest();
  return {
    sign(user: { id: string; passwordHash: string }): Promise<string> {
      return new SignJWT({ ph: fingerprint(user.passwordHash) })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(user.id)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime(`${passwordResetTtlMinutes}m`)
        .sign(key);
    },
    /** The user id the token names and the fingerprint it carries, or null when it is forged, expired or not a reset token. */
    async verify(token: string): Promise<{ userId: string; matches: (passwordHash: string) => boolean } | null> {
      try {
        const { payload } = await jwtVerify(token, key, { issuer, audience, algorithms: ['HS256'] });
        if (typeof payload.sub !== 'string' || typeof payload.ph !== 'string') return null;
        const ph = payload.ph;
        return { userId: payload.sub, matches: (passwordHash) => fingerprint(passwordHash) === ph };
      } catch {
        return null;
      }
    },
  };
}
