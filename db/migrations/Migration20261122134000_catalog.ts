import { Migration } from '@mikro-orm/migrations';

export class Migration20261122134000_catalog extends Migration {
  override name = 'Migration20261122134000_catalog';

  override up(): void | Promise<void> {
    // Products; plans may belong to one.
    this.addSql(
      `create table "products" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "name" varchar(255) not null, "description" text null, "active" boolean not null default true, "metadata" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "products_account_id_livemode_id_index" on "products" ("account_id", "livemode", "id");`);
    this.addSql(`alter table "plans" add column "product_id" varchar(255) null;`);
    this.addSql(`create index "plans_product_id_index" on "plans" ("product_id");`);

    // Lists: newest first within an account and mode; customers by email.
    this.addSql(`create index "plans_account_id_livemode_id_index" on "plans" ("account_id", "livemode", "id");`);
    this.addSql(
      `create index "customers_account_id_livemode_id_index" on "customers" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create index "customers_account_id_livemode_email_index" on "customers" ("account_id", "livemode", "email");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "customers_account_id_livemode_email_index";`);
    this.addSql(`drop index if exists "customers_account_id_livemode_id_index";`);
    this.addSql(`drop index if exists "plans_account_id_livemode_id_index";`);
    this.addSql(`drop index if exists "plans_product_id_index";`);
    this.addSql(`alter table "plans" drop column "product_id";`);
    this.addSql(`drop table if exists "products" cascade;`);
  }
}
