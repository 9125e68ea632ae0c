/**
 * The shapes of usage data (issue #28, docs/usage.md): a meter's aggregation, one aggregate of a
 * customer's events, an event as stored. Plain data, shared by the usage store
 * (services/usage/store.ts) and the objects that serialize them (objects/meter.ts).
 */

export type Aggregation = 'count' | 'sum' | 'max' | 'unique_count' | 'last' | 'weighted_sum';

/** One aggregate: value is an exact decimal string ("12.5", "0"); events = how many events counted. */
export interface UsageAggregate {
  dimensions: Record<string, string>;
  value: string;
  events: number;
}

/** An event as stored. */
export interface StoredMeterEvent {
  identifier: string;
  meterId: string;
  eventName: string;
  customerId: string;
  timestamp: Date;
  payload: Record<string, unknown>;
  createdAt: Date;
  cancelledAt: Date | null;
  /** Accepted after its period was invoiced (late_events = bill_next_invoice); invoiceId: the invoice that billed it, null until one did. */
  late?: { invoiceId: string | null };
}
