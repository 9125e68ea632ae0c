import type { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';

import { databasePoolMax } from '../../db/orm.ts';
import { usageWindow } from '../../domain/usage-window.ts';
import type {
  AggregateQuery,
  CancelOutcome,
  ClosePeriodQuery,
  IngestOutcome,
  MeterEventInput,
  MeterRef,
  RefusalCode,
  StoredMeterEvent,
  SummariesQuery,
  UsageAggregate,
  UsageStore,
  UsageSummary,
} from './store.ts';

/** How far back and ahead of now (the customer's clock time on a test clock) an event may be stamped. */
export const eventWindow = { backSeconds: 35 * 86_400, aheadSeconds: 300 } as const;

/** A decimal the store accepts as a value: up to 12 integer digits (|v| < 1e12) and 6 decimals. */
export const valuePattern = '^-?[0-9]{1,12}(\\.[0-9]{1,6})?$';

/**
 * One batch in one statement (docs/usage.md#ingestion): the batch travels as arrays (unnest), the
 * meters, customers (with their test clock's time) and watermarks are read in the same statement,
 * the watermarks FOR SHARE (closePeriod's update of one waits for this statement's transaction; a
 * batch that reads it after the update sees the raised value and refuses `period_invoiced`).
 * The identifiers are inserted first, ON CONFLICT DO NOTHING: those returned are the accepted
 * events, whose rows follow; within the batch the first occurrence of an identifier wins.
 * Identifiers are inserted in sorted order: two batches carrying the same identifiers in other
 * orders would otherwise each wait on the other's uncommitted key (a deadlock); in one order, the
 * later one waits for the earlier's commit and finds them duplicates.
 */
export const ingestSql = `
with input as (
  select * from unnest($3::int[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[])
    as t(idx, event_name, customer_id, ts, identifier, payload_text)
),
m as (
  select id, event_name, aggregation, value_property from meters
  where account_id = $1 and livemode = $2 and status = 'active' and event_name in (select event_name from input)
),
c as (
  select cu.id, cu.external_id, coalesce(tc.frozen_time, now()) as now_at
  from customers cu left join test_clocks tc on tc.id = cu.test_clock_id
  where cu.account_id = $1 and cu.livemode = $2
    and (cu.id in (select customer_id from input) or cu.external_id in (select customer_id from input))
),
w as (
  select customer_id, closed_through from usage_watermarks where customer_id in (select id from c) for share
),
-- The mode's late_events setting (services/usage/late-events.ts): bill_next_invoice accepts events before the watermark.
s as (
  select usage_late_events = 'bill_next_invoice' as bill_late from account_mode_settings where account_id = $1 and livemode = $2
),
checked as (
  select i.idx, i.identifier, c.id as customer_id, m.id as meter_id, m.aggregation, i.payload_text::jsonb as payload,
    coalesce(i.ts, c.now_at) as ts, i.payload_text::jsonb ->> m.value_property as raw,
    case
      when m.id is null then 'unknown_meter'
      when c.id is null then 'unknown_customer'
      when m.aggregation <> 'count' and (i.payload_text::jsonb ->> m.value_property) is null then 'invalid_value'
      when m.aggregation not in ('count', 'unique_count') and (i.payload_text::jsonb ->> m.value_property) !~ '${valuePattern}' then 'invalid_value'
      when coalesce(i.ts, c.now_at) < c.now_at - interval '${eventWindow.backSeconds} seconds'
        or coalesce(i.ts, c.now_at) > c.now_at + interval '${eventWindow.aheadSeconds} seconds' then 'timestamp_out_of_window'
      when coalesce(i.ts, c.now_at) < w.closed_through and not coalesce((select bill_late from s), false) then 'period_invoiced'
    end as refusal,
    coalesce(coalesce(i.ts, c.now_at) < w.closed_through, false) as late
  from input i
  left join m on m.event_name = i.event_name
  -- The customer: its id, else the customer whose external_id it is (an id wins over another customer's external_id).
  left join lateral (
    select * from c where c.id = i.customer_id or c.external_id = i.customer_id order by c.id = i.customer_id desc limit 1
  ) c on true
  left join w on w.customer_id = c.id
),
first as (
  select distinct on (identifier) * from checked where refusal is null order by identifier, idx
),
ids as (
  insert into meter_event_identifiers (account_id, livemode, identifier, meter_id, customer_id, "timestamp")
  select $1, $2, identifier, meter_id, customer_id, ts from first order by identifier
  on conflict do nothing
  returning identifier
),
ev as (
  insert into meter_events (account_id, livemode, meter_id, customer_id, identifier, "timestamp", value, payload)
  select $1, $2, f.meter_id, f.customer_id, f.identifier, f.ts,
    case when f.aggregation in ('count', 'unique_count') then null else f.raw::numeric end, f.payload
  from first f join ids using (identifier) order by f.idx
),
late as (
  insert into usage_late_events (account_id, livemode, identifier, customer_id, meter_id, "timestamp")
  select $1, $2, f.identifier, f.customer_id, f.meter_id, f.ts from first f join ids using (identifier) where f.late
)
select ch.idx, ch.refusal, ch.meter_id, ch.customer_id, ch.ts, now() as received_at, (ids.identifier is not null and f.idx = ch.idx) as accepted, ch.late
from checked ch left join first f on f.identifier = ch.identifier left join ids on ids.identifier = ch.identifier`;

/** Batches of at most this many events run ingestSql as a named (prepared, planned once per connection) statement. */
export const preparedBatchMax = 64;

/**
 * Every customer of a batch has a watermark row before the batch's statement runs (so it can be
 * locked FOR SHARE: a row that does not exist cannot be). Its own statement, committed first;
 * a no-op (an index probe) for rows that exist, and skipped for customers this process already saw.
 */
const ensureWatermarksSql = `
with r as (
  select id, account_id, livemode from customers
  where account_id = $1 and livemode = $2 and (id = any($3::text[]) or external_id = any($3::text[]))
),
ins as (insert into usage_watermarks (customer_id, account_id, livemode) select id, account_id, livemode from r on conflict do nothing)
select id from r`;

const storedEventSql = `
select e.identifier, e.meter_id, m.event_name, e.customer_id, e."timestamp", e.payload, e.received_at, e.cancelled_at,
  l.identifier is not null as late, l.invoice_id as late_invoice_id
from meter_event_identifiers i
join meter_events e on e.customer_id = i.customer_id and e.meter_id = i.meter_id and e."timestamp" = i."timestamp"
  and e.account_id = i.account_id and e.livemode = i.livemode and e.identifier = i.identifier
join meters m on m.id = e.meter_id
left join usage_late_events l on l.account_id = i.account_id and l.livemode = i.livemode and l.identifier = i.identifier
where i.account_id = $1 and i.livemode = $2 and i.identifier = $3`;

interface Queryable {
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
}

/** PostgreSQL's decimal text without trailing zeros: "12.500" → "12.5", "0.000" → "0". */
export function decimalText(value: string | null): string {
  if (value === null) return '0';
  if (!value.includes('.')) return value === '-0' ? '0' : value;
  const trimmed = value.replace(/0+$/, '').replace(/\.$/, '');
  return trimmed === '-0' || trimmed === '' ? '0' : trimmed;
}

/**
 * The SQL of one aggregation; params: $1 account, $2 livemode, $3 customer, $4 meter, $5 start, $6 end, then the group-by
 * properties, then the value property. `where`: one more condition on the events (`meter_events.` names their columns),
 * made with `param` (which adds a parameter and answers its placeholder): late events' adjustments (services/usage/late-events.ts).
 */
export function aggregateQuery(
  meter: MeterRef,
  groupBy: string[],
  start: Date,
  end: Date,
  accountId: string,
  livemode: boolean,
  customerId: string,
  where?: (param: (value: unknown) => string) => string,
) {
  const params: unknown[] = [accountId, livemode, customerId, meter.id, start, end];
  const extra = where
    ? ` and ${where((value) => {
        params.push(value);
        return `$${params.length}`;
      })}`
    : '';
  const dims = groupBy.length
    ? `jsonb_build_object(${groupBy.map((property) => {
        params.push(property);
        return `$${params.length}::text, coalesce(payload ->> $${params.length}::text, '')`;
      })})`
    : `'{}'::jsonb`;
  const scope = `account_id = $1 and livemode = $2 and customer_id = $3 and meter_id = $4 and cancelled_at is null${extra}`;
  const inPeriod = `${scope} and "timestamp" >= $5 and "timestamp" < $6`;
  let sql: string;
  switch (meter.aggregation) {
    case 'count':
      sql = `select ${dims} as dimensions, count(*)::text as value, count(*)::int as events from meter_events where ${inPeriod} group by 1`;
      break;
    case 'sum':
      sql = `select ${dims} as dimensions, sum(value)::text as value, count(*)::int as events from meter_events where ${inPeriod} group by 1`;
      break;
    case 'max':
      sql = `select ${dims} as dimensions, max(value)::text as value, count(*)::int as events from meter_events where ${inPeriod} group by 1`;
      break;
    case 'unique_count':
      params.push(meter.valueProperty);
      sql = `select ${dims} as dimensions, count(distinct payload ->> $${params.length}::text)::text as value, count(*)::int as events from meter_events where ${inPeriod} group by 1`;
      break;
    case 'last':
      sql = `select ${dims} as dimensions, (array_agg(value order by "timestamp" desc, seq desc))[1]::text as value, count(*)::int as events from meter_events where ${inPeriod} group by 1`;
      break;
    case 'weighted_sum': {
      // The level at start: the last event before it (any time earlier), per group.
      const prior = groupBy.length
        ? `select distinct on (1) ${dims} as dims, value from meter_events where ${scope} and "timestamp" < $5 order by 1, "timestamp" desc, seq desc`
        : `select '{}'::jsonb as dims, value from meter_events where ${scope} and "timestamp" < $5 order by "timestamp" desc, seq desc limit 1`;
      sql = `
with prior as (${prior}),
points as (
  select dims, $5::timestamptz as ts, 0 as ord, 0::bigint as seq, value from prior
  union all
  select ${dims}, "timestamp", 1, seq, value from meter_events where ${inPeriod}
),
segments as (
  select dims, value, ord, extract(epoch from (coalesce(lead(ts) over (partition by dims order by ts, ord, seq), $6::timestamptz) - ts)) as seconds from points
)
select dims as dimensions, round(sum(value * seconds) / extract(epoch from ($6::timestamptz - $5::timestamptz)), 6)::text as value,
  (count(*) filter (where ord = 1))::int as events
from segments group by dims`;
      break;
    }
  }
  return { sql, params };
}

/** The usage store on the engine's PostgreSQL (tables: db/migrations/Migration20261127031000_usage.ts). */
export class PostgresUsageStore implements UsageStore {
  /** Customers whose watermark row exists (rows are never deleted): their batches skip ensureWatermarksSql. */
  private readonly watermarked = new Set<string>();

  /** Its own pool (also what partition maintenance runs on: services/usage/partitions.ts). */
  readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  /** Closes its pool (tests; processes exit with theirs). */
  async close(): Promise<void> {
    await this.pool.end();
  }

  async ingest(q: { accountId: string; livemode: boolean; events: MeterEventInput[] }): Promise<IngestOutcome[]> {
    const n = q.events.length;
    if (n === 0) return [];
    const idx = new Array<number>(n);
    const names = new Array<string>(n);
    const customers = new Array<string>(n);
    const timestamps = new Array<Date | null>(n);
    const identifiers = new Array<string>(n);
    const payloads = new Array<string>(n);
    const unseen = new Set<string>();
    for (let i = 0; i < n; i++) {
      const event = q.events[i]!;
      idx[i] = i;
      names[i] = event.eventName;
      customers[i] = event.customerId;
      timestamps[i] = event.timestamp;
      identifiers[i] = event.identifier;
      payloads[i] = JSON.stringify(event.payload);
      if (!this.watermarked.has(event.customerId)) unseen.add(event.customerId);
    }
    if (unseen.size > 0) {
      const { rows } = await this.pool.query(ensureWatermarksSql, [q.accountId, q.livemode, [...unseen]]);
      if (this.watermarked.size > 200_000) this.watermarked.clear();
      // Only customer ids are remembered: an external id may move to another customer, whose row must then be made.
      for (const row of rows as { id: string }[]) if (unseen.has(row.id)) this.watermarked.add(row.id);
    }
    const values = [q.accountId, q.livemode, idx, names, customers, timestamps, identifiers, payloads];
    // Planning this statement costs PostgreSQL ~1.4 ms, more than running it for a few events: a small batch (the
    // group-committed single events) runs it as a prepared statement of its connection, planned once. A large batch
    // is planned each time: the generic plan, made for a few rows, took twice the CPU per event at 1,000 (docs/usage.md#measured).
    const result = await this.pool.query(
      n <= preparedBatchMax ? { name: 'usage_ingest_small', text: ingestSql, values } : { text: ingestSql, values },
    );
    const outcomes = new Array<IngestOutcome>(n);
    for (const row of result.rows as {
      idx: number;
      refusal: RefusalCode | null;
      meter_id: string | null;
      customer_id: string | null;
      ts: Date | null;
      received_at: Date;
      accepted: boolean;
      late: boolean;
    }[]) {
      const identifier = identifiers[row.idx]!;
      outcomes[row.idx] = row.refusal
        ? { status: 'refused', identifier, code: row.refusal }
        : row.accepted
          ? {
              status: 'accepted',
              identifier,
              meterId: row.meter_id!,
              customerId: row.customer_id!,
              timestamp: row.ts!,
              receivedAt: row.received_at,
              // Before its period's watermark, accepted under late_events = bill_next_invoice: the next invoice bills it.
              ...(row.late ? { late: true as const } : {}),
            }
          : { status: 'duplicate', identifier };
    }
    return outcomes;
  }

  async find(q: { accountId: string; livemode: boolean; identifier: string }): Promise<StoredMeterEvent | null> {
    return this.findWith(this.pool, q);
  }

  private async findWith(
    db: Queryable,
    q: { accountId: string; livemode: boolean; identifier: string },
  ): Promise<StoredMeterEvent | null> {
    const { rows } = await db.query(storedEventSql, [q.accountId, q.livemode, q.identifier]);
    const row = rows[0] as
      | {
          identifier: string;
          meter_id: string;
          event_name: string;
          customer_id: string;
          timestamp: Date;
          payload: Record<string, unknown>;
          received_at: Date;
          cancelled_at: Date | null;
          late: boolean;
          late_invoice_id: string | null;
        }
      | undefined;
    if (!row) return null;
    return {
      identifier: row.identifier,
      meterId: row.meter_id,
      eventName: row.event_name,
      customerId: row.customer_id,
      timestamp: row.timestamp,
      payload: row.payload,
      createdAt: row.received_at,
      cancelledAt: row.cancelled_at,
      ...(row.late ? { late: { invoiceId: row.late_invoice_id } } : {}),
    };
  }

  async cancel(q: { accountId: string; livemode: boolean; identifier: string }): Promise<CancelOutcome> {
    return this.transaction(async (client) => {
      const event = await this.findWith(client, q);
      if (!event) return { status: 'not_found' as const };
      if (event.cancelledAt) return { status: 'already_cancelled' as const, event };
      // Under the watermark's share lock, as ingestion: a closing waits for this transaction, or this one sees its raised watermark.
      // Compared in SQL: timestamps have microseconds, a JS Date only milliseconds.
      const { rows } = await client.query(
        `select i."timestamp" < w.closed_through as invoiced from usage_watermarks w
         join meter_event_identifiers i on i.account_id = $1 and i.livemode = $2 and i.identifier = $3
         where w.customer_id = i.customer_id for share of w`,
        [q.accountId, q.livemode, q.identifier],
      );
      if ((rows[0] as { invoiced: boolean } | undefined)?.invoiced) {
        // A late event (late_events = bill_next_invoice) no invoice took yet is not billed: it may still be cancelled.
        // Its row locked, so the next invoice's claim (services/usage/late-events.ts) waits for this cancel, or this waits for it.
        const late = await client.query(
          `select invoice_id from usage_late_events where account_id = $1 and livemode = $2 and identifier = $3 for update`,
          [q.accountId, q.livemode, q.identifier],
        );
        const pending = late.rows[0] as { invoice_id: string | null } | undefined;
        if (!pending || pending.invoice_id !== null) return { status: 'period_invoiced' as const, event };
      }
      const updated = await client.query(
        `update meter_events e set cancelled_at = now() from meter_event_identifiers i
         where i.account_id = $1 and i.livemode = $2 and i.identifier = $3
           and e.customer_id = i.customer_id and e.meter_id = i.meter_id and e."timestamp" = i."timestamp"
           and e.account_id = $1 and e.livemode = $2 and e.identifier = $3 and e.cancelled_at is null
         returning e.cancelled_at`,
        [q.accountId, q.livemode, q.identifier],
      );
      const cancelledAt = (updated.rows[0] as { cancelled_at: Date } | undefined)?.cancelled_at;
      if (!cancelledAt) return { status: 'already_cancelled' as const, event: (await this.findWith(client, q))! };
      return { status: 'cancelled' as const, event: { ...event, cancelledAt } };
    });
  }

  async aggregate(q: AggregateQuery): Promise<UsageAggregate[]> {
    return this.aggregateWith(this.pool, q);
  }

  private async aggregateWith(db: Queryable, q: AggregateQuery): Promise<UsageAggregate[]> {
    if (q.end.getTime() < q.start.getTime()) throw new RangeError('aggregate: end must not be before start');
    const groupBy = q.groupBy ?? [];
    // An empty window (a usage window at its period's start, domain/usage-window.ts) counts no event.
    if (q.end.getTime() === q.start.getTime())
      return groupBy.length === 0 ? [{ dimensions: {}, value: '0', events: 0 }] : [];
    const { sql, params } = aggregateQuery(q.meter, groupBy, q.start, q.end, q.accountId, q.livemode, q.customerId);
    const { rows } = await db.query(sql, params);
    const aggregates = (rows as { dimensions: Record<string, string>; value: string | null; events: number }[])
      .map((row) => ({ dimensions: row.dimensions, value: decimalText(row.value), events: row.events }))
      .sort((a, b) => (JSON.stringify(a.dimensions) < JSON.stringify(b.dimensions) ? -1 : 1));
    if (groupBy.length === 0 && aggregates.length === 0) return [{ dimensions: {}, value: '0', events: 0 }];
    return aggregates;
  }

  async summaries(q: SummariesQuery): Promise<UsageSummary[]> {
    const windows = summaryWindows(q.start, q.end, q.window);
    const results: UsageSummary[] = [];
    // One aggregate per window, a few at a time (the route caps the number of windows).
    for (let at = 0; at < windows.length; at += 8) {
      const slice = windows.slice(at, at + 8);
      const answers = await Promise.all(slice.map((w) => this.aggregate({ ...q, start: w.start, end: w.end })));
      slice.forEach((w, i) => results.push({ ...w, aggregates: answers[i]! }));
    }
    return results;
  }

  async closePeriod(q: ClosePeriodQuery): Promise<{ meterId: string; aggregates: UsageAggregate[] }[]> {
    // The events the period bills, on whole seconds (domain/usage-window.ts): the watermark rises to the window's
    // end, not the period's, so an event of the next period's first second (before its millisecond) is still accepted.
    const window = usageWindow({ start: q.start, end: q.end });
    return this.transaction(async (client) => {
      // Raise the watermark first: the row lock waits for every ingesting transaction holding it FOR SHARE
      // (their events are then committed and counted below); later ones see the raised value and refuse.
      await client.query(
        `insert into usage_watermarks (customer_id, account_id, livemode, closed_through) values ($1, $2, $3, $4)
         on conflict (customer_id) do update set closed_through = greatest(usage_watermarks.closed_through, excluded.closed_through), updated_at = now()`,
        [q.customerId, q.accountId, q.livemode, window.end],
      );
      const stored = await client.query(
        `select result from usage_period_closings where subscription_id = $1 and period_start = $2`,
        [q.subscriptionId, q.start],
      );
      if (stored.rows[0])
        return (stored.rows[0] as { result: { meterId: string; aggregates: UsageAggregate[] }[] }).result;
      const result: { meterId: string; aggregates: UsageAggregate[] }[] = [];
      for (const { meter, groupBy } of q.meters) {
        result.push({
          meterId: meter.id,
          aggregates: await this.aggregateWith(client, {
            accountId: q.accountId,
            livemode: q.livemode,
            customerId: q.customerId,
            meter,
            ...window,
            groupBy,
          }),
        });
      }
      await client.query(
        `insert into usage_period_closings (subscription_id, period_start, period_end, account_id, livemode, customer_id, result) values ($1, $2, $3, $4, $5, $6, $7)`,
        [q.subscriptionId, q.start, q.end, q.accountId, q.livemode, q.customerId, JSON.stringify(result)],
      );
      return result;
    });
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const result = await work(client);
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

/** [start, end) cut at UTC hour or day boundaries; one window without `window`. */
export function summaryWindows(start: Date, end: Date, window?: 'hour' | 'day'): { start: Date; end: Date }[] {
  if (!window) return [{ start, end }];
  const step = window === 'hour' ? 3_600_000 : 86_400_000;
  const windows: { start: Date; end: Date }[] = [];
  let from = start.getTime();
  while (from < end.getTime()) {
    const to = Math.min(end.getTime(), Math.floor(from / step) * step + step);
    windows.push({ start: new Date(from), end: new Date(to) });
    from = to;
  }
  return windows;
}

/** A pool of its own for the usage store: plain pg, one statement per batch, no ORM unit of work. */
export function createUsagePool(databaseUrl: string, max = databasePoolMax()): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  // An idle connection that breaks (PostgreSQL restarted) is dropped by the pool, which then emits 'error':
  // unhandled, that would end the process. The next query opens a fresh connection.
  pool.on('error', () => {});
  return pool;
}

const stores = new WeakMap<object, PostgresUsageStore>();

/** The usage store of the process's ORM (its database), made once: the API and the worker reach it from what they already hold. */
export function usageStoreFor(orm: MikroORM): PostgresUsageStore {
  let store = stores.get(orm);
  if (!store) {
    store = new PostgresUsageStore(createUsagePool(orm.config.get('clientUrl')!));
    stores.set(orm, store);
  }
  return store;
}
