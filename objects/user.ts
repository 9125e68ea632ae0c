import { z } from '@hono/zod-openapi';

import type { User } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A login of the platform. */

export const UserSchema = z
  .object({
    id: z.string(),
    object: z.literal('user'),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(['admin', 'owner', 'member']),
    status: z.enum(['active', 'suspended', 'pending']),
    account_id: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('User');

export function serializeUser(user: User) {
  return {
    id: user.id,
    object: 'user' as const,
    email: user.email,
    name: user.name ?? null,
    role: user.role,
    status: user.status,
    account_id: user.accountId ?? null,
    created_at: user.createdAt.toISOString(),
    updated_at: user.updatedAt.toISOString(),
  };
}
