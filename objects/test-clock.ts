import { z } from '@hono/zod-openapi';

import type { TestClock } from '../db/entities/index.ts';
import { isoOrNull, timestamp } from './common.ts';

/** A test clock (sandbox), as the API shows it. */
export const TestClockSchema = z
  .object({
    id: z.string(),
    object: z.literal('test_clock'),
    name: z.string().nullable(),
    frozen_time: timestamp.openapi({ description: "The clock's time: what every object on it takes as now" }),
    status: z.enum(['ready', 'advancing', 'internal_failure']).openapi({
      description:
        'advancing: work due up to `status_details.advancing.target_frozen_time` is running; ready: all of it has run',
    }),
    status_details: z.object({
      advancing: z.object({ target_frozen_time: timestamp }).optional(),
      internal_failure: z.object({ message: z.string() }).optional(),
    }),
    deletes_after: timestamp.openapi({
      description: 'The clock and every object on it are deleted after this (wall time)',
    }),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('TestClock');

export function serializeTestClock(clock: TestClock): z.infer<typeof TestClockSchema> {
  const details: z.infer<typeof TestClockSchema>['status_details'] = {};
  if (clock.status === 'advancing' && clock.advancingTo)
    details.advancing = { target_frozen_time: isoOrNull(clock.advancingTo)! };
  if (clock.status === 'internal_failure')
    details.internal_failure = { message: clock.failure ?? 'The clock failed to advance.' };
  return {
    id: clock.id,
    object: 'test_clock',
    name: clock.name ?? null,
    frozen_time: clock.frozenTime.toISOString(),
    status: clock.status,
    status_details: details,
    deletes_after: clock.deletesAfter.toISOString(),
    livemode: clock.livemode,
    created_at: clock.createdAt.toISOString(),
  };
}
