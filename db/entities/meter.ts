import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const meterAggregations = ['count', 'sum', 'max', 'unique_count', 'last', 'weighted_sum'] as const;
export type MeterAggregation = (typeof meterAggregations)[number];
export const meterStatuses = ['active', 'inactive'] as const;
export type MeterStatus = (typeof meterStatuses)[number];

/**
 * A billing meter (POST /v1/meters, Stripe's Billing Meters): how the events named `eventName`
 * aggregate over a period (docs/usage.md). The events themselves are rows of meter_events,
 * written and read only by services/usage/ (no entity: they are never loaded one by one).
 */
export const Meter = defineEntity({
  name: 'Meter',
  tableName: 'meters',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    displayName: p.string().length(250),
    /** Unique among the account's active meters of a mode (a partial unique index). */
    eventName: p.string().length(100),
    aggregation: p.string().length(32).$type<MeterAggregation>(),
    /** The payload property holding the value (sum, max, last, weighted_sum) or counted distinct (unique_count); ignored by count. */
    valueProperty: p.string().length(100),
    /** Payload properties an aggregate may be grouped by (at most 3). */
    groupBy: p.json<string[]>(),
    status: p.string().length(16).$type<MeterStatus>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Meter = InferEntity<typeof Meter>;
