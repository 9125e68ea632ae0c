import { z } from '@hono/zod-openapi';

import { eventCatalog, eventTypes } from '../domain/events.ts';
import { timestamp } from './common.ts';

/** An event of the outbox: what GET /v1/events shows and what a webhook delivery carries. */

export const catalogTable = eventCatalog.map((entry) => `- \`${entry.type}\`: ${entry.description}`).join('\n');

/** The event as GET /v1/events shows it; a webhook delivery's body is the same (serializeEvent below). */
export const EventSchema = z
  .object({
    id: z.string().openapi({ example: 'evt_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    type: z.string().openapi({ enum: [...eventTypes], description: `One of the catalog:\n\n${catalogTable}` }),
    created_at: timestamp,
    livemode: z.boolean(),
    transaction_id: z
      .string()
      .nullable()
      .openapi({ description: 'The transaction the change involved; null where none (always present)' }),
    data: z.object({
      object: z
        .record(z.string(), z.unknown())
        .openapi({ description: 'The resource as the API returns it, at the time of the change' }),
      previous_attributes: z.record(z.string(), z.unknown()).optional().openapi({
        description:
          "On some `*.updated` events: the changed fields as they were before (a subscription's `items`, `plan` and `quantity` when its items change)",
      }),
    }),
  })
  .openapi('Event');

/** `type`: an exact name of the catalog, or a family such as `subscription.*`. */

/**
 * An event as GET /v1/events shows it and as a webhook's body carries it:
 * `transaction_id` is always present (null when no transaction is involved) and
 * `data.object` is the resource as the API returned it at the change.
 */
export function serializeEvent(event: {
  id: string;
  type: string;
  createdAt: Date | string;
  livemode: boolean;
  transactionId?: string | null;
  data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
}) {
  return {
    id: event.id,
    type: event.type,
    created_at: new Date(event.createdAt).toISOString(),
    livemode: event.livemode,
    transaction_id: event.transactionId ?? null,
    data: {
      object: event.data.object,
      ...(event.data.previous_attributes ? { previous_attributes: event.data.previous_attributes } : {}),
    },
  };
}
