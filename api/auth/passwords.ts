import argon2 from 'argon2';

/** OWASP's argon2id recommendation: 19 MiB, 2 passes, 1 lane (about 20 ms here). */
const options = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options);
}

/** A hash of a password nobody has, verified against when the email is unknown so both paths cost the same. */
let decoy: Promise<string> | undefined;

export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (hash === null) {
    decoy ??= hashPassword('decoy-password-for-unknown-emails');
    await argon2.verify(await decoy, password).catch(() => false);
    return false;
  }
  return argon2.verify(hash, password).catch(() => false);
}
