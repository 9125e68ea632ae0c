import { Migration } from '@mikro-orm/migrations';

/** Coupons, promotion codes and discounts (issue #27, docs/discounts-and-taxes.md#discounts). */
export class Migration20261127012000_discounts extends Migration {
  override name = 'Migration20261127012000_discounts';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "coupons" ("key" varchar(255) not null, "id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, ` +
        `"name" varchar(255) null, "percent_off" varchar(16) null, "amount_off" bigint null, "currency" varchar(3) null, "duration" varchar(16) not null, ` +
        `"duration_in_months" int null, "max_redemptions" int null, "redeem_by" timestamptz null, "applies_to_plans" jsonb null, "applies_to_products" jsonb null, ` +
        `"times_redeemed" int not null default 0, "metadata" jsonb not null, "deleted_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, ` +
        `primary key ("key"));`,
    );
    this.addSql(`create index "coupons_account_id_livemode_key_index" on "coupons" ("account_id", "livemode", "key");`);
    // A merchant's coupon id is unique in its account and mode among coupons not deleted (a deleted one's id may be used again, as Stripe).
    this.addSql(
      `create unique index "coupons_id_unique" on "coupons" ("account_id", "livemode", "id") where "deleted_at" is null;`,
    );
    this.addSql(
      `create table "promotion_codes" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "code" varchar(255) not null, ` +
        `"coupon_key" varchar(255) not null, "active" boolean not null default true, "max_redemptions" int null, "expires_at" timestamptz null, ` +
        `"first_time_transaction" boolean not null default false, "minimum_amount" bigint null, "minimum_amount_currency" varchar(3) null, "customer_id" varchar(255) null, ` +
        `"times_redeemed" int not null default 0, "metadata" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "promotion_codes_account_id_livemode_id_index" on "promotion_codes" ("account_id", "livemode", "id");`,
    );
    this.addSql(`create index "promotion_codes_coupon_key_index" on "promotion_codes" ("coupon_key");`);
    this.addSql(
      `create unique index "promotion_codes_code_unique" on "promotion_codes" ("account_id", "livemode", lower("code"));`,
    );
    this.addSql(
      `create table "discounts" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "coupon_key" varchar(255) not null, ` +
        `"promotion_code_id" varchar(255) null, "customer_id" varchar(255) not null, "subscription_id" varchar(255) null, "start" timestamptz not null, ` +
        `"end" timestamptz null, "ended_at" timestamptz null, "first_invoice_id" varchar(255) null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "discounts_account_id_livemode_id_index" on "discounts" ("account_id", "livemode", "id");`,
    );
    this.addSql(`create index "discounts_customer_id_index" on "discounts" ("customer_id");`);
    this.addSql(`create index "discounts_subscription_id_index" on "discounts" ("subscription_id");`);
    // One discount in force per customer (its own) and per subscription.
    this.addSql(
      `create unique index "discounts_customer_active_unique" on "discounts" ("customer_id") where "subscription_id" is null and "ended_at" is null;`,
    );
    this.addSql(
      `create unique index "discounts_subscription_active_unique" on "discounts" ("subscription_id") where "subscription_id" is not null and "ended_at" is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "discounts" cascade;`);
    this.addSql(`drop table if exists "promotion_codes" cascade;`);
    this.addSql(`drop table if exists "coupons" cascade;`);
  }
}
