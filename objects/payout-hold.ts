import { z } from '@hono/zod-openapi';

import type { PayoutHold } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A payout hold (`ph_…`): on the account in one mode, or on one payout. */
export const PayoutHoldSchema = z
  .object({
    id: z.string().openapi({ example: 'ph_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('payout_hold'),
    account_id: z.string(),
    payout: z.string().nullable().openapi({ description: 'The one payout held; null: the whole account in this mode' }),
    reason: z.string(),
    until: timestamp.nullable().openapi({ description: 'When it lapses by itself; null: until released' }),
    created_by: z
      .string()
      .openapi({ description: 'admin, owner or api_key; an admin hold is released by an admin only' }),
    active: z.boolean(),
    livemode: z.boolean(),
    created_at: timestamp,
    released_at: timestamp.nullable(),
  })
  .openapi('PayoutHold');

export function serializePayoutHold(h: PayoutHold, now = new Date()): z.infer<typeof PayoutHoldSchema> {
  return {
    id: h.id,
    object: 'payout_hold',
    account_id: h.accountId,
    payout: h.payoutId ?? null,
    reason: h.reason,
    until: h.until?.toISOString() ?? null,
    created_by: h.createdBy,
    active: !h.releasedAt && (!h.until || h.until > now),
    livemode: h.livemode,
    created_at: h.createdAt.toISOString(),
    released_at: h.releasedAt?.toISOString() ?? null,
  };
}
