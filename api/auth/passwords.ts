import argon2 from 'argon2';

import { ApiError } from '../../domain/errors.ts';

/** OWASP's argon2id recommendation: 19 MiB, 2 passes, 1 lane (about 20 ms here). */
const options = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options);
}

/** A hash of a password nobody has, verified against when the email is unknown so both paths cost the same. */
let decoy: Promise<string> | undefined;

/** Hashes the decoy ahead of the first login for an unknown email, so that one costs what the others cost. */
export function warmPasswordDecoy(): Promise<string> {
  decoy ??= hashPassword('decoy-password-for-unknown-emails');
  return decoy;
}

export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (hash === null) {
    await argon2.verify(await warmPasswordDecoy(), password).catch(() => false);
    return false;
  }
  return argon2.verify(hash, password).catch(() => false);
}

/**
 * Re-authentication for a change to one's own credentials (password, account email):
 * `current_password` must be sent and must match.
 */
export async function requireCurrentPassword(hash: string | null, currentPassword: string | undefined): Promise<void> {
  if (currentPassword === undefined)
    throw new ApiError('invalid_request', 'current_password: required to change your own password or email.');
  if (!(await verifyPassword(hash, currentPassword)))
    throw new ApiError('invalid_credentials', 'current_password is wrong.');
}
