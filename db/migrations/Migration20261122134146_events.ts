import { Migration } from '@mikro-orm/migrations';

export class Migration20261122134146_events extends Migration {
  override name = 'Migration20261122134146_events';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "events" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "type" varchar(255) not null, "transaction_id" varchar(255) null, "data" jsonb not null, "created_at" timestamptz not null, "dispatched_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "events_account_id_livemode_id_index" on "events" ("account_id", "livemode", "id");`);
    this.addSql(`create index "events_undispatched_index" on "events" ("id") where dispatched_at is null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "events" cascade;`);
  }
}
