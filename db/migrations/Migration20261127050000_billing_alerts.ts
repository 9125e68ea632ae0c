import { Migration } from '@mikro-orm/migrations';

/**
 * Usage alerts (docs/usage.md#usage-alerts, Stripe's billing alerts): an alert watches one meter
 * (for every customer, or one), and fires `billing.alert.triggered` once per (alert, customer) when
 * the customer's usage reaches gte. The trigger row's primary key (alert_id, customer_id) is what
 * makes concurrent batches fire it once (insert … on conflict do nothing, with the event).
 */
export class Migration20261127050000_billing_alerts extends Migration {
  override name = 'Migration20261127050000_billing_alerts';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "billing_alerts" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "title" varchar(256) not null, ` +
        `"meter_id" varchar(255) not null, "gte" bigint not null, "customer_id" varchar(255) null, "status" varchar(16) not null, ` +
        `"created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "billing_alerts_pkey" primary key ("id"), ` +
        `constraint "billing_alerts_status_check" check ("status" in ('active', 'inactive', 'archived')), constraint "billing_alerts_gte_check" check ("gte" > 0));`,
    );
    this.addSql(
      `create index "billing_alerts_account_id_livemode_id_index" on "billing_alerts" ("account_id", "livemode", "id");`,
    );
    // What ingestion asks after each batch: the active alerts of the batch's meters.
    this.addSql(
      `create index "billing_alerts_active_meter_index" on "billing_alerts" ("account_id", "livemode", "meter_id") where "status" = 'active';`,
    );
    this.addSql(
      `create table "billing_alert_triggers" ("alert_id" varchar(255) not null, "customer_id" varchar(255) not null, "account_id" varchar(255) not null, ` +
        `"livemode" boolean not null, "value" numeric not null, "event_id" varchar(255) null, "triggered_at" timestamptz not null, ` +
        `constraint "billing_alert_triggers_pkey" primary key ("alert_id", "customer_id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "billing_alert_triggers";`);
    this.addSql(`drop table if exists "billing_alerts";`);
  }
}
