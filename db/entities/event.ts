import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * One state change of a resource, written in the same database transaction as the
 * change itself (an outbox): no change commits without its event and no event
 * survives a change that rolled back. `data.object` is the resource as the API
 * returns it at that moment. `dispatchedAt` is set once webhook deliveries for the
 * event have been scheduled; the partial index finds the ones still to dispatch.
 */
export const Event = defineEntity({
  name: 'Event',
  tableName: 'events',
  indexes: [
    { properties: ['accountId', 'livemode', 'id'] },
    { name: 'events_undispatched_index', properties: ['id'], where: 'dispatched_at is null' },
    {
      name: 'events_clock_undispatched_index',
      properties: ['testClockId'],
      where: 'dispatched_at is null and test_clock_id is not null',
    },
  ],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    type: p.string(),
    transactionId: p.string().nullable(),
    data: p.json<{ object: Record<string, unknown>; previous_attributes?: Record<string, unknown> }>(),
    createdAt: p.datetime(),
    /** The test clock whose work recorded it (services/test-clocks/now.ts), or null. */
    testClockId: p.string().nullable(),
    dispatchedAt: p.datetime().nullable(),
  },
});
export type Event = InferEntity<typeof Event>;
