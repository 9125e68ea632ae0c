import { z } from '@hono/zod-openapi';

import type { Meter } from '../db/entities/index.ts';
import { meterAggregations, meterStatuses } from '../db/entities/meter.ts';
import type { StoredMeterEvent, UsageAggregate } from '../domain/usage-events.ts';
import { timestamp } from './common.ts';

/** A billing meter, as the API shows it (Stripe's Billing Meter; docs/usage.md#meters). */
export const MeterSchema = z
  .object({
    id: z.string().openapi({ example: 'mtr_01jd5a2b3c4d5e6f7g8h9j0k1m' }),
    object: z.literal('billing.meter'),
    display_name: z.string().openapi({ example: 'API tokens' }),
    event_name: z.string().openapi({
      description: "The events it counts: meter events with this event_name (unique among the mode's active meters)",
      example: 'api_tokens',
    }),
    aggregation: z.enum(meterAggregations).openapi({
      description:
        "count: the number of events; sum: Σ value; max: the largest value; unique_count: distinct values of value_property; last: the value of the latest event; weighted_sum: a gauge's time-weighted average level over the period (each event sets the level, which holds until the next)",
      example: 'sum',
    }),
    value_property: z.string().openapi({
      description:
        'The payload property holding the value (ignored by count; for unique_count: the property whose distinct values are counted)',
      example: 'tokens',
    }),
    group_by: z.array(z.string()).openapi({
      description: 'Payload properties usage can be grouped by (at most 3), e.g. model or region',
      example: ['model'],
    }),
    status: z.enum(meterStatuses).openapi({
      description: 'inactive: new events naming it are refused (unknown_meter); its events and aggregates stay',
      example: 'active',
    }),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Meter');
export type MeterBody = z.infer<typeof MeterSchema>;

export function serializeMeter(meter: Meter): MeterBody {
  return {
    id: meter.id,
    object: 'billing.meter',
    display_name: meter.displayName,
    event_name: meter.eventName,
    aggregation: meter.aggregation,
    value_property: meter.valueProperty,
    group_by: meter.groupBy,
    status: meter.status,
    livemode: meter.livemode,
    created_at: meter.createdAt.toISOString(),
    updated_at: meter.updatedAt.toISOString(),
  };
}

/** A meter event as stored (POST /v1/meter_events answers it). */
export const MeterEventSchema = z
  .object({
    object: z.literal('billing.meter_event'),
    identifier: z.string().openapi({
      description: 'Unique within the account and mode: the same identifier counts once',
      example: 'req_7f3a9c2e',
    }),
    event_name: z.string().openapi({ example: 'api_tokens' }),
    meter: z.string().openapi({ description: 'The meter that counts it', example: 'mtr_01jd5a2b3c4d5e6f7g8h9j0k1m' }),
    customer: z.string().openapi({ example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    timestamp: z.number().int().openapi({
      description:
        "When the usage happened, unix seconds (the customer's test clock time when it lives on one and none was given)",
      example: 1795392000,
    }),
    payload: z.record(z.string(), z.unknown()).openapi({ example: { tokens: '1250', model: 'gpt-small' } }),
    created_at: timestamp,
    cancelled_at: timestamp
      .nullable()
      .openapi({ description: 'Set once cancelled: it no longer counts', example: null }),
    billed_in: z.literal('next_invoice').optional().openapi({
      description:
        "Only on a late event: stamped before a period already invoiced and accepted under the mode's late_events = bill_next_invoice; the subscription's next invoice bills it as a usage adjustment",
      example: 'next_invoice',
    }),
    adjustment_invoice: z.string().nullable().optional().openapi({
      description: 'Only on a late event: the invoice whose usage adjustment billed it; null until one did',
      example: null,
    }),
    livemode: z.boolean(),
  })
  .openapi('MeterEvent');
export type MeterEventBody = z.infer<typeof MeterEventSchema>;

export function serializeMeterEvent(event: StoredMeterEvent, livemode: boolean): MeterEventBody {
  return {
    object: 'billing.meter_event',
    identifier: event.identifier,
    event_name: event.eventName,
    meter: event.meterId,
    customer: event.customerId,
    timestamp: Math.floor(event.timestamp.getTime() / 1000),
    payload: event.payload,
    created_at: event.createdAt.toISOString(),
    cancelled_at: event.cancelledAt ? event.cancelledAt.toISOString() : null,
    ...(event.late ? { billed_in: 'next_invoice' as const, adjustment_invoice: event.late.invoiceId } : {}),
    livemode,
  };
}

/** One usage summary (GET /v1/meters/{id}/event_summaries; Stripe's billing.meter_event_summary). */
export const MeterEventSummarySchema = z
  .object({
    object: z.literal('billing.meter_event_summary'),
    meter: z.string().openapi({ example: 'mtr_01jd5a2b3c4d5e6f7g8h9j0k1m' }),
    customer: z.string().openapi({ example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    start_time: z.number().int().openapi({ description: 'Unix seconds, inclusive', example: 1795392000 }),
    end_time: z.number().int().openapi({ description: 'Unix seconds, exclusive', example: 1795478400 }),
    aggregated_value: z.string().openapi({
      description: "The meter's aggregation over [start_time, end_time), an exact decimal string",
      example: '48250',
    }),
    events: z.number().int().openapi({ description: 'How many events it counts', example: 37 }),
    dimensions: z
      .record(z.string(), z.string())
      .optional()
      .openapi({
        description: 'With group_by: the values of this group (a missing property is "")',
        example: { model: 'gpt-small' },
      }),
    livemode: z.boolean(),
  })
  .openapi('MeterEventSummary');
export type MeterEventSummaryBody = z.infer<typeof MeterEventSummarySchema>;

export function serializeSummary(
  meterId: string,
  customerId: string,
  livemode: boolean,
  window: { start: Date; end: Date },
  aggregate: UsageAggregate,
  grouped: boolean,
): MeterEventSummaryBody {
  return {
    object: 'billing.meter_event_summary',
    meter: meterId,
    customer: customerId,
    start_time: Math.floor(window.start.getTime() / 1000),
    end_time: Math.floor(window.end.getTime() / 1000),
    aggregated_value: aggregate.value,
    events: aggregate.events,
    ...(grouped ? { dimensions: aggregate.dimensions } : {}),
    livemode,
  };
}
