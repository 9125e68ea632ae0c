import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const testClockStatuses = ['ready', 'advancing', 'internal_failure'] as const;
export type TestClockStatus = (typeof testClockStatuses)[number];

/**
 * A test clock (sandbox only): its time, moved by advancing it (workflows/test-clock.ts
 * walks the work due on it). Customers created with `test_clock` live on it.
 */
export const TestClock = defineEntity({
  name: 'TestClock',
  tableName: 'test_clocks',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    name: p.string().nullable(),
    frozenTime: p.datetime(),
    status: p.string().$type<TestClockStatus>(),
    /** While advancing: the time it moves to. */
    advancingTo: p.datetime().nullable(),
    /** internal_failure: what went wrong. */
    failure: p.string().length(2000).nullable(),
    deletesAfter: p.datetime(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type TestClock = InferEntity<typeof TestClock>;
