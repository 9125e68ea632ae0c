import { Migration } from '@mikro-orm/migrations';

/**
 * Late meter events billed on the next invoice (issue #28, docs/usage.md#late-events): a mode's setting
 * `late_events` ('refuse' when null, or 'bill_next_invoice'), and one row per event accepted after its period was
 * invoiced. `invoice_id` is set, in the transaction that inserts the invoice, by the subscription's next invoice
 * that bills it as a usage adjustment (services/usage/late-events.ts): a late event is billed once, never again.
 */
export class Migration20261127101000_usage_late_events extends Migration {
  override name = 'Migration20261127101000_usage_late_events';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "account_mode_settings" add column "usage_late_events" text null check ("usage_late_events" in ('refuse', 'bill_next_invoice'));`,
    );
    this.addSql(`create table "usage_late_events" (
      "account_id" text not null,
      "livemode" boolean not null,
      "identifier" text not null,
      "customer_id" text not null,
      "meter_id" text not null,
      "timestamp" timestamptz not null,
      "invoice_id" text null,
      "created_at" timestamptz not null default now(),
      primary key ("account_id", "livemode", "identifier")
    );`);
    // The next invoice's claim: the customer's late events not billed yet.
    this.addSql(
      `create index "usage_late_events_pending" on "usage_late_events" ("customer_id", "timestamp") where "invoice_id" is null;`,
    );
    this.addSql(
      `create index "usage_late_events_invoice" on "usage_late_events" ("invoice_id") where "invoice_id" is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "usage_late_events";`);
    this.addSql(`alter table "account_mode_settings" drop column "usage_late_events";`);
  }
}
