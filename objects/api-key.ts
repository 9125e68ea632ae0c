import { z } from '@hono/zod-openapi';

import type { ApiKey } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** An API key, masked (the secret only in the response that creates it). */

export const ApiKeySchema = z
  .object({
    id: z.string(),
    object: z.literal('api_key'),
    type: z
      .enum(['secret', 'cli'])
      .openapi({ description: '`secret` (sk_…, x-api-key or Bearer) or `cli` (ck_…, x-cli-key, see docs/cli.md)' }),
    name: z.string().nullable(),
    livemode: z.boolean(),
    redacted_secret: z.string(),
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
    user_id: z.string().optional().openapi({ description: 'CLI keys: the user who logged in' }),
    expires_at: timestamp.optional().openapi({ description: 'CLI keys: 90 days after minting' }),
    secret: z.string().optional().openapi({ description: 'Only in the response that creates the key' }),
  })
  .openapi('ApiKey');

export function serializeApiKey(key: ApiKey) {
  return {
    id: key.id,
    object: 'api_key' as const,
    type: 'secret' as const,
    name: key.name ?? null,
    livemode: key.livemode,
    redacted_secret: `${key.livemode ? 'sk_live_' : 'sk_test_'}…${key.last4}`,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
  };
}
