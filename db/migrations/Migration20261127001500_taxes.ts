import { Migration } from '@mikro-orm/migrations';

/**
 * Taxes (issue #27, docs/discounts-and-taxes.md#taxes): tax rates, customers' tax details (address,
 * tax_exempt) and tax ids, the default tax rates of a mode, a subscription's and its items', and a
 * one-off invoice item's.
 */
export class Migration20261127001500_taxes extends Migration {
  override name = 'Migration20261127001500_taxes';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "tax_rates" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "display_name" varchar(255) not null, ` +
        `"description" text null, "percentage" varchar(255) not null, "inclusive" boolean not null, "country" varchar(2) null, "state" varchar(255) null, ` +
        `"jurisdiction" varchar(255) null, "tax_type" varchar(255) null, "active" boolean not null, "metadata" jsonb not null, ` +
        `"created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "tax_rates_account_id_livemode_id_index" on "tax_rates" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create table "customer_tax_ids" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "customer_id" varchar(255) not null, ` +
        `"type" varchar(255) not null, "value" varchar(255) not null, "country" varchar(2) null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "customer_tax_ids_account_id_livemode_customer_id_id_index" on "customer_tax_ids" ("account_id", "livemode", "customer_id", "id");`,
    );
    this.addSql(
      `create table "subscription_tax_rates" ("subscription_id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, ` +
        `"default_tax_rates" jsonb not null, "item_tax_rates" jsonb not null, "updated_at" timestamptz not null, primary key ("subscription_id"));`,
    );
    this.addSql(
      `alter table "customers" add column "address" jsonb null, add column "tax_exempt" varchar(255) not null default 'none';`,
    );
    this.addSql(`alter table "invoice_items" add column "tax_rates" jsonb null;`);
    this.addSql(`alter table "account_mode_settings" add column "default_tax_rates" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "account_mode_settings" drop column "default_tax_rates";`);
    this.addSql(`alter table "invoice_items" drop column "tax_rates";`);
    this.addSql(`alter table "customers" drop column "address", drop column "tax_exempt";`);
    this.addSql(`drop table if exists "subscription_tax_rates" cascade;`);
    this.addSql(`drop table if exists "customer_tax_ids" cascade;`);
    this.addSql(`drop table if exists "tax_rates" cascade;`);
  }
}
