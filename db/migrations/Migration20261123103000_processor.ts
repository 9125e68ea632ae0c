import { Migration } from '@mikro-orm/migrations';

/** The sandbox processor's refunds, and the processor webhooks the engine has acted on (one row per processor event id). */
export class Migration20261123103000_processor extends Migration {
  override name = 'Migration20261123103000_processor';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "sandbox_processor_refunds" ("id" varchar(255) not null, "idempotency_key" varchar(255) not null, "charge_id" varchar(255) not null, "amount" int8 not null, "currency" varchar(3) not null, "status" varchar(255) not null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "sandbox_processor_refunds" add constraint "sandbox_processor_refunds_idempotency_key_unique" unique ("idempotency_key");`,
    );
    this.addSql(
      `create index "sandbox_processor_refunds_charge_id_index" on "sandbox_processor_refunds" ("charge_id");`,
    );
    this.addSql(
      `create table "processor_events" ("id" varchar(255) not null, "processor" varchar(255) not null, "processor_event_id" varchar(255) not null, "type" varchar(255) not null, "livemode" boolean not null, "processor_charge_id" varchar(255) null, "transaction_id" varchar(255) null, "payload" jsonb not null, "processed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "processor_events" add constraint "processor_events_processor_event_unique" unique ("processor", "processor_event_id");`,
    );
    this.addSql(
      `create index "processor_events_processor_charge_id_index" on "processor_events" ("processor_charge_id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "processor_events";`);
    this.addSql(`drop table if exists "sandbox_processor_refunds";`);
  }
}
