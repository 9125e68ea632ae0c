/**
 * CLI keys and the device login that mints them (docs/cli.md).
 *
 * A CLI key (`ck_test_…` / `ck_live_…`, sent as `x-cli-key`) belongs to one user of
 * one account in one mode, is named after the user and the device, expires 90 days
 * after it is minted and is stored as SHA-256 only, like API keys.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';

import type { MikroORM } from '@mikro-orm/postgresql';

import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { CliKeyRow } from '../../objects/cli-key.ts';

export { type CliKeyRow, serializeCliKey } from '../../objects/cli-key.ts';

export const cliKeyLifetimeDays = 90;
export const deviceCodeTtlSeconds = 600;
export const devicePollIntervalSeconds = 2;

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

export function isCliKeySecret(value: string): boolean {
  return /^ck_(test|live)_[A-Za-z0-9_-]{20,}$/.test(value);
}

export function hashCliKey(secret: string): string {
  return sha256(secret);
}

/** Mints a key; the secret is returned here only. */
export async function mintCliKey(
  orm: MikroORM,
  input: { accountId: string; userId: string; livemode: boolean; name: string },
): Promise<{ row: CliKeyRow; secret: string }> {
  const secret = `${input.livemode ? 'ck_live_' : 'ck_test_'}${randomBytes(32).toString('base64url')}`;
  const [row] = await orm.em.getConnection().execute<CliKeyRow[]>(
    `insert into cli_keys (id, account_id, user_id, livemode, name, secret_hash, last4, created_at, expires_at)
     values (?, ?, ?, ?, ?, ?, ?, now(), now() + interval '${cliKeyLifetimeDays} days')
     returning id, account_id, user_id, livemode, name, last4, created_at, expires_at, last_used_at, revoked_at`,
    [
      newId('cliKey'),
      input.accountId,
      input.userId,
      input.livemode,
      input.name.slice(0, 255),
      sha256(secret),
      secret.slice(-4),
    ],
  );
  return { row: row!, secret };
}

export async function listCliKeys(orm: MikroORM, accountId: string): Promise<CliKeyRow[]> {
  return orm.em.getConnection().execute<CliKeyRow[]>(
    `select id, account_id, user_id, livemode, name, last4, created_at, expires_at, last_used_at, revoked_at
       from cli_keys where account_id = ? and revoked_at is null and expires_at > now() order by created_at, id`,
    [accountId],
  );
}

/** Revokes one key of the account; false when there is no such live key. */
export async function revokeCliKey(orm: MikroORM, accountId: string, id: string): Promise<boolean> {
  const rows = await orm.em
    .getConnection()
    .execute<
      { id: string }[]
    >(`update cli_keys set revoked_at = now() where id = ? and account_id = ? and revoked_at is null returning id`, [id, accountId]);
  return rows.length > 0;
}

// ---- device login -------------------------------------------------------

/** No vowels (no words), no 0/O/1/I look-alikes. */
const userCodeAlphabet = 'BCDFGHJKLMNPQRSTVWXZ';

export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += userCodeAlphabet[randomInt(userCodeAlphabet.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** `abcdefgh`, `ABCD EFGH` and `abcd-efgh` are the same code. */
export function normalizeUserCode(input: string): string | null {
  const letters = input.toUpperCase().replace(/[^A-Z]/g, '');
  if (letters.length !== 8 || [...letters].some((ch) => !userCodeAlphabet.includes(ch))) return null;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}

export async function startDeviceLogin(
  orm: MikroORM,
  deviceName: string,
): Promise<{ deviceCode: string; userCode: string }> {
  const deviceCode = `dc_${randomBytes(32).toString('base64url')}`;
  const userCode = newUserCode();
  // Codes a day past their expiry are of no use to anyone: each new login sweeps them.
  await orm.em.getConnection().execute(`delete from cli_device_codes where expires_at < now() - interval '1 day'`);
  await orm.em.getConnection().execute(
    `insert into cli_device_codes (id, device_code_hash, user_code, device_name, created_at, expires_at)
     values (?, ?, ?, ?, now(), now() + interval '${deviceCodeTtlSeconds} seconds')`,
    [newId('cliDevice'), sha256(deviceCode), userCode, deviceName.slice(0, 200)],
  );
  return { deviceCode, userCode };
}

/** The device name of a login still waiting for approval under `userCode`, or null (unknown, expired, approved or used). */
export async function pendingDeviceLogin(orm: MikroORM, userCode: string): Promise<{ deviceName: string } | null> {
  const code = normalizeUserCode(userCode);
  if (!code) return null;
  const [row] = await orm.em
    .getConnection()
    .execute<
      { device_name: string }[]
    >(`select device_name from cli_device_codes where user_code = ? and approved_at is null and consumed_at is null and expires_at > now()`, [code]);
  return row ? { deviceName: row.device_name } : null;
}

/** The owner's approval: binds the pending code to the owner's account, user and the chosen mode. */
export async function approveDeviceLogin(
  orm: MikroORM,
  input: { userCode: string; accountId: string; userId: string; livemode: boolean },
): Promise<{ deviceName: string }> {
  const code = normalizeUserCode(input.userCode);
  if (!code) throw new ApiError('not_found', 'No pending login with this code.');
  const rows = await orm.em.getConnection().execute<{ device_name: string }[]>(
    `update cli_device_codes set approved_at = now(), account_id = ?, user_id = ?, livemode = ?
      where user_code = ? and approved_at is null and consumed_at is null and expires_at > now() returning device_name`,
    [input.accountId, input.userId, input.livemode, code],
  );
  if (rows.length === 0)
    throw new ApiError('not_found', 'No pending login with this code (it may have expired or been approved already).');
  return { deviceName: rows[0]!.device_name };
}

/**
 * The CLI's poll: `authorization_pending` until approved, then the key, once
 * (the code is consumed in the same statement that finds it approved).
 */
export async function collectDeviceLogin(
  orm: MikroORM,
  deviceCode: string,
): Promise<{ row: CliKeyRow; secret: string; email: string }> {
  const connection = orm.em.getConnection();
  const [found] = await connection.execute<
    { id: string; approved_at: Date | null; consumed_at: Date | null; expired: boolean }[]
  >(
    `select id, approved_at, consumed_at, expires_at <= now() as expired from cli_device_codes where device_code_hash = ?`,
    [sha256(deviceCode)],
  );
  if (!found || found.consumed_at || found.expired)
    throw new ApiError('expired_token', 'This device code expired or was used; run `billing login` again.');
  if (!found.approved_at) throw new ApiError('authorization_pending', 'Waiting for the owner to approve this login.');
  const [claimed] = await connection.execute<
    { account_id: string; user_id: string; livemode: boolean; device_name: string; email: string }[]
  >(
    `update cli_device_codes d set consumed_at = now() from users u
      where d.id = ? and d.consumed_at is null and u.id = d.user_id and u.status = 'active'
      returning d.account_id, d.user_id, d.livemode, d.device_name, u.email`,
    [found.id],
  );
  if (!claimed) throw new ApiError('expired_token', 'This device code was used already.');
  const minted = await mintCliKey(orm, {
    accountId: claimed.account_id,
    userId: claimed.user_id,
    livemode: claimed.livemode,
    name: `${claimed.email} on ${claimed.device_name}`,
  });
  return { ...minted, email: claimed.email };
}
