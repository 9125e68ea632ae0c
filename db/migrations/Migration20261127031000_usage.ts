import { Migration } from '@mikro-orm/migrations';

/**
 * Usage-based billing (issue #28): meters, their events (partitioned by month of the event's
 * timestamp), exactly-once identifiers, each customer's usage watermark and the closed periods.
 * The storage design is docs/usage.md#storage; services/usage/postgres-store.ts is the only writer
 * of the event tables.
 */
export class Migration20261127031000_usage extends Migration {
  override name = 'Migration20261127031000_usage';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "meters" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "display_name" varchar(250) not null, ` +
        `"event_name" varchar(100) not null, "aggregation" varchar(32) not null, "value_property" varchar(100) not null, "group_by" jsonb not null default '[]', ` +
        `"status" varchar(16) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"), ` +
        `constraint "meters_aggregation_check" check ("aggregation" in ('count', 'sum', 'max', 'unique_count', 'last', 'weighted_sum')), ` +
        `constraint "meters_status_check" check ("status" in ('active', 'inactive')));`,
    );
    this.addSql(`create index "meters_account_id_livemode_id_index" on "meters" ("account_id", "livemode", "id");`);
    // One active meter per event name in an account's mode: an event names its meter by event_name.
    this.addSql(
      `create unique index "meters_active_event_name_unique" on "meters" ("account_id", "livemode", "event_name") where "status" = 'active';`,
    );

    // The events: rows, one per accepted event, partitioned by month so retention drops whole partitions.
    // value: the meter's value property as an exact decimal (null for count and unique_count meters).
    // seq: the order received (the tie-break of `last` and `weighted_sum` between equal timestamps).
    this.addSql(
      `create table "meter_events" ("account_id" varchar(255) not null, "livemode" boolean not null, "meter_id" varchar(255) not null, ` +
        `"customer_id" varchar(255) not null, "identifier" varchar(100) not null, "timestamp" timestamptz not null, "value" numeric null, ` +
        `"payload" jsonb not null, "seq" bigint generated always as identity, "received_at" timestamptz not null default now(), ` +
        `"cancelled_at" timestamptz null) partition by range ("timestamp");`,
    );
    this.addSql(
      `create index "meter_events_customer_meter_timestamp_index" on "meter_events" ("customer_id", "meter_id", "timestamp");`,
    );
    // Events whose month has no partition (a test clock far ahead, say) land here; maintenance moves them out when it adds the month.
    this.addSql(`create table "meter_events_default" partition of "meter_events" default;`);
    // The months around now; services/usage/partitions.ts keeps two months ahead from then on (maintenance).
    this.addSql(
      `do $$ declare m date; begin
         for i in -2..2 loop
           m := (date_trunc('month', now() at time zone 'UTC') + make_interval(months => i))::date;
           execute format('create table if not exists %I partition of "meter_events" for values from (%L) to (%L)',
             'meter_events_' || to_char(m, 'YYYY_MM'), (m::timestamp at time zone 'UTC'), ((m + interval '1 month')::timestamp at time zone 'UTC'));
         end loop;
       end $$;`,
    );

    // Exactly-once: an identifier counts once per account and mode, across batches and retries.
    // Where its event is (customer, meter, timestamp) lets a cancel find it through the events' index.
    this.addSql(
      `create table "meter_event_identifiers" ("account_id" varchar(255) not null, "livemode" boolean not null, "identifier" varchar(100) not null, ` +
        `"meter_id" varchar(255) not null, "customer_id" varchar(255) not null, "timestamp" timestamptz not null, "created_at" timestamptz not null default now(), ` +
        `primary key ("account_id", "livemode", "identifier"));`,
    );
    // Pruning by age: BRIN (rows arrive in created_at order), nearly free on insert.
    this.addSql(
      `create index "meter_event_identifiers_created_at_brin" on "meter_event_identifiers" using brin ("created_at");`,
    );

    // Events before closed_through are refused (period_invoiced): their period was billed.
    this.addSql(
      `create table "usage_watermarks" ("customer_id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, ` +
        `"closed_through" timestamptz not null default '-infinity', "updated_at" timestamptz not null default now(), primary key ("customer_id"));`,
    );
    // A subscription period closed for usage, once: its aggregates as billed.
    this.addSql(
      `create table "usage_period_closings" ("subscription_id" varchar(255) not null, "period_start" timestamptz not null, "period_end" timestamptz not null, ` +
        `"account_id" varchar(255) not null, "livemode" boolean not null, "customer_id" varchar(255) not null, "result" jsonb not null, ` +
        `"created_at" timestamptz not null default now(), primary key ("subscription_id", "period_start"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "usage_period_closings" cascade;`);
    this.addSql(`drop table if exists "usage_watermarks" cascade;`);
    this.addSql(`drop table if exists "meter_event_identifiers" cascade;`);
    this.addSql(`drop table if exists "meter_events" cascade;`);
    this.addSql(`drop table if exists "meters" cascade;`);
  }
}
