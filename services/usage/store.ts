/**
 * The usage store: where meter events are ingested, cancelled and aggregated (issue #28, docs/usage.md).
 * One interface; services/usage/postgres-store.ts implements it on the engine's PostgreSQL. The path
 * past one machine (a stream such as Kafka in front of a column store) is another implementation of
 * this interface, not a rewrite of its callers: the API's ingestion routes, the summaries, and the
 * subscription workflow's closing activity only ever talk to a UsageStore.
 */

// The shapes of what the store holds and answers are plain data (domain/usage-events.ts), so serializers read them too.
import type { Aggregation, StoredMeterEvent, UsageAggregate } from '../../domain/usage-events.ts';
export type { Aggregation, StoredMeterEvent, UsageAggregate };

/** What an aggregate is of: one customer's events on a meter in [start, end), grouped by `groupBy`'s properties. */
export interface AggregateQuery {
  accountId: string;
  livemode: boolean;
  customerId: string;
  meter: MeterRef;
  start: Date;
  end: Date;
  groupBy?: string[];
}

/** What GET /v1/meters/{id}/event_summaries asks the store: an aggregate cut in windows. */
export interface SummariesQuery extends AggregateQuery {
  window?: 'hour' | 'day';
}

/** What closing a subscription's period for usage names: the period [start, end) and the meters it bills. */
export interface ClosePeriodQuery {
  accountId: string;
  livemode: boolean;
  subscriptionId: string;
  customerId: string;
  start: Date;
  end: Date;
  meters: { meter: MeterRef; groupBy?: string[] }[];
}

/** One window's aggregates. */
export interface UsageSummary {
  start: Date;
  end: Date;
  aggregates: UsageAggregate[];
}

export interface MeterRef {
  id: string;
  eventName: string;
  aggregation: Aggregation;
  valueProperty: string;
  groupBy?: string[];
}

/** One event to ingest, already checked for shape (api/routes/meter-events.ts); the store checks the rest. */
export interface MeterEventInput {
  eventName: string;
  /** The customer's id, or its external_id (the accepted outcome names the customer's id). */
  customerId: string;
  /** null: now (the customer's test clock time when it is on a clock). */
  timestamp: Date | null;
  identifier: string;
  /** The payload: the meter's value property (number or decimal string) and dimension properties. */
  payload: Record<string, unknown>;
}

export type RefusalCode =
  | 'unknown_meter'
  | 'unknown_customer'
  | 'invalid_value'
  | 'timestamp_out_of_window'
  | 'period_invoiced';

/** What became of one event of a batch, in the batch's order. */
export type IngestOutcome =
  | {
      status: 'accepted';
      identifier: string;
      meterId: string;
      customerId: string;
      timestamp: Date;
      receivedAt: Date;
      /** Stamped before a period already invoiced, accepted under late_events = bill_next_invoice: the next invoice bills it. */
      late?: true;
    }
  | { status: 'duplicate'; identifier: string }
  | { status: 'refused'; identifier: string; code: RefusalCode };

export type CancelOutcome =
  | { status: 'cancelled' | 'already_cancelled'; event: StoredMeterEvent }
  | { status: 'not_found' }
  | { status: 'period_invoiced'; event: StoredMeterEvent };

export interface UsageStore {
  /**
   * Ingests a batch: answers one outcome per event, in order. Durable when it resolves: every
   * accepted event is committed. An identifier already stored in the account's mode (or earlier in
   * the same batch) is a duplicate and not stored again.
   */
  ingest(q: { accountId: string; livemode: boolean; events: MeterEventInput[] }): Promise<IngestOutcome[]>;
  /** The stored event of an identifier, or null. */
  find(q: { accountId: string; livemode: boolean; identifier: string }): Promise<StoredMeterEvent | null>;
  /** Stops an event counting; refused once its period was closed (the customer's watermark passed it). Idempotent. */
  cancel(q: { accountId: string; livemode: boolean; identifier: string }): Promise<CancelOutcome>;
  /**
   * The aggregate of one customer's events on a meter in [start, end). groupBy: one row per distinct
   * combination of those properties (missing property = ''), none when no event; else one row
   * (dimensions {}). Never throws for no events: every aggregation → "0". An empty span (end = start)
   * counts no event; end before start is a RangeError.
   */
  aggregate(q: AggregateQuery): Promise<UsageAggregate[]>;
  /**
   * Aggregates in windows: [start, end) cut at every `window` boundary (UTC hour or day), one
   * list of aggregates per window (GET /v1/meters/{id}/event_summaries).
   */
  summaries(q: SummariesQuery): Promise<UsageSummary[]>;
  /**
   * Close a subscription's period [start, end) for usage, ONCE: its events are those of its usage window
   * (usageWindow, domain/usage-window.ts: both bounds cut to the whole second). In one transaction, raise
   * the customer's watermark (closed_through = greatest(current, the window's end)) — which makes ingestion
   * refuse events before it with `period_invoiced` — then aggregate every meter over the window and store
   * the result keyed by (subscriptionId, periodStart). A second call for the same key returns the stored
   * result unchanged (idempotent activity). Events committed before the watermark moved are all counted; none after.
   */
  closePeriod(q: ClosePeriodQuery): Promise<{ meterId: string; aggregates: UsageAggregate[] }[]>;
}
