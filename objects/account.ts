import { z } from '@hono/zod-openapi';

import type { Account, AccountSettings, AccountStatus, AccountType } from '../db/entities/index.ts';
import { isBcp47Tag, isIanaTimezone } from '../domain/locale.ts';
import { currency, timestamp } from './common.ts';

/** An account (a merchant), from its entity or from the raw row the authentication query reads. */

/** The account's columns as a raw query reads them (the driver may hand timestamps over as strings). */
export interface AccountRow {
  id: string;
  email: string;
  name: string;
  type: AccountType;
  status: AccountStatus;
  settings: AccountSettings;
  created_at: Date | string;
  updated_at: Date | string;
  closed_at: Date | string | null;
}

export const AccountSettingsSchema = z
  .object({ currency: z.string(), timezone: z.string(), language: z.string() })
  .openapi('AccountSettings');

export const AccountSchema = z
  .object({
    id: z.string(),
    object: z.literal('account'),
    email: z.string(),
    name: z.string(),
    type: z.enum(['individual', 'business']),
    status: z.enum(['active', 'suspended', 'pending', 'closed']),
    created_at: timestamp,
    updated_at: timestamp,
    closed_at: timestamp.optional(),
    settings: AccountSettingsSchema.optional(),
  })
  .openapi('Account');

export function serializeAccount(account: Account, { withSettings = true } = {}) {
  return {
    id: account.id,
    object: 'account' as const,
    email: account.email,
    name: account.name,
    type: account.type,
    status: account.status,
    created_at: account.createdAt.toISOString(),
    updated_at: account.updatedAt.toISOString(),
    ...(account.closedAt ? { closed_at: account.closedAt.toISOString() } : {}),
    ...(withSettings ? { settings: account.settings } : {}),
  };
}

/** The same shape from the raw row the authentication query reads. */
export function serializeAccountRow(row: AccountRow) {
  return {
    id: row.id,
    object: 'account' as const,
    email: row.email,
    name: row.name,
    type: row.type,
    status: row.status,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    ...(row.closed_at ? { closed_at: new Date(row.closed_at).toISOString() } : {}),
    settings: row.settings,
  };
}

/** Settings as sent: each key optional, merged key by key into what the account has. */
export const SettingsPatch = z
  .object({
    currency,
    timezone: z.string().refine(isIanaTimezone, { message: 'must be an IANA time zone such as Europe/Paris' }),
    language: z.string().refine(isBcp47Tag, { message: 'must be a BCP 47 language tag such as en or pt-BR' }),
  })
  .partial()
  .strict();
