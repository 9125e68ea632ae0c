import { Migration } from '@mikro-orm/migrations';

export class Migration20261122130024_idempotency extends Migration {
  override name = 'Migration20261122130024_idempotency';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "idempotency_keys" ("id" bigserial primary key, "scope" varchar(255) not null, "key" varchar(255) not null, "request_hash" varchar(255) not null, "state" varchar(255) not null, "response_status" int null, "response_body" text null, "created_at" timestamptz not null, "expires_at" timestamptz not null);`,
    );
    this.addSql(`create index "idempotency_keys_expires_at_index" on "idempotency_keys" ("expires_at");`);
    this.addSql(
      `alter table "idempotency_keys" add constraint "idempotency_keys_scope_key_unique" unique ("scope", "key");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "idempotency_keys" cascade;`);
  }
}
