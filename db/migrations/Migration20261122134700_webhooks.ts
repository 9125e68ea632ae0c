import { Migration } from '@mikro-orm/migrations';

export class Migration20261122134700_webhooks extends Migration {
  override name = 'Migration20261122134700_webhooks';

  override up(): void | Promise<void> {
    // Webhook endpoints (secrets sealed), their deliveries (id = delivery workflow id) and every attempt.
    this.addSql(
      `create table "webhook_endpoints" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "url" text not null, "description" text null, "events" jsonb not null, "enabled" boolean not null default true, "disabled_reason" varchar(255) null, "disabled_at" timestamptz null, "secret" text not null, "previous_secret" text null, "previous_secret_expires_at" timestamptz null, "failing_since" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_endpoints_account_id_livemode_id_index" on "webhook_endpoints" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create table "webhook_deliveries" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "endpoint_id" varchar(255) not null, "event_id" varchar(255) not null, "event_type" varchar(255) not null, "redelivery" boolean not null default false, "status" varchar(255) not null, "attempt_count" int not null default 0, "last_attempt_at" timestamptz null, "next_attempt_at" timestamptz null, "completed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_deliveries_endpoint_id_id_index" on "webhook_deliveries" ("endpoint_id", "id");`,
    );
    this.addSql(`create index "webhook_deliveries_event_id_index" on "webhook_deliveries" ("event_id");`);
    this.addSql(
      `create table "webhook_delivery_attempts" ("id" varchar(255) not null, "delivery_id" varchar(255) not null, "endpoint_id" varchar(255) not null, "event_id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "attempt" int not null, "attempted_at" timestamptz not null, "url" text not null, "succeeded" boolean not null, "status_code" int null, "latency_ms" int null, "response_body" text null, "error" text null, primary key ("id"));`,
    );
    this.addSql(
      `create index "webhook_delivery_attempts_delivery_id_attempt_index" on "webhook_delivery_attempts" ("delivery_id", "attempt");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "webhook_delivery_attempts" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }
}
