import { z } from '@hono/zod-openapi';

/** A CLI key (ck_test_… / ck_live_…), masked: the secret only in the response that mints it (docs/cli.md). */
export const CliKeySchema = z
  .object({
    id: z.string(),
    object: z.literal('api_key'),
    type: z.literal('cli'),
    name: z.string(),
    livemode: z.boolean(),
    redacted_secret: z.string(),
    user_id: z.string(),
    created_at: z.string(),
    expires_at: z.string(),
    last_used_at: z.string().nullable(),
    secret: z.string().optional().openapi({ description: 'Only in the response that mints the key' }),
  })
  .openapi('CliKey');

export interface CliKeyRow {
  id: string;
  account_id: string;
  user_id: string;
  livemode: boolean;
  name: string;
  last4: string;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export function serializeCliKey(row: CliKeyRow) {
  return {
    id: row.id,
    object: 'api_key' as const,
    type: 'cli' as const,
    name: row.name,
    livemode: row.livemode,
    redacted_secret: `${row.livemode ? 'ck_live_' : 'ck_test_'}…${row.last4}`,
    user_id: row.user_id,
    created_at: new Date(row.created_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
    last_used_at: row.last_used_at ? new Date(row.last_used_at).toISOString() : null,
  };
}
