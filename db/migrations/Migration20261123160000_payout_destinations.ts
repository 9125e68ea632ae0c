import { Migration } from '@mikro-orm/migrations';

/**
 * Payouts as SPEC.md describes them (docs/payouts.md): destinations (`bank_accounts`,
 * the full number sealed), payouts that name one and move pending → in_transit →
 * paid | failed | canceled, per-currency schedules (`payout_settings`) and holds
 * (`payout_holds`).
 */
export class Migration20261123160000_payout_destinations extends Migration {
  override name = 'Migration20261123160000_payout_destinations';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "bank_accounts" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "type" varchar(255) not null, "account_holder_name" varchar(255) not null, "account_holder_type" varchar(255) not null, "country" varchar(2) not null, "currency" varchar(3) not null, "secret" text not null, "last4" varchar(255) not null, "fingerprint" varchar(255) not null, "routing_number" varchar(255) null, "sort_code" varchar(255) null, "bic" varchar(255) null, "email_masked" varchar(255) null, "default_for_currency" boolean not null, "status" varchar(255) not null, "metadata" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "deleted_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "bank_accounts_account_id_livemode_id_index" on "bank_accounts" ("account_id", "livemode", "id");`,
    );
    this.addSql(`create index "bank_accounts_fingerprint_index" on "bank_accounts" ("fingerprint");`);
    // At most one default per account, mode and currency among the destinations not deleted.
    this.addSql(
      `create unique index "bank_accounts_one_default" on "bank_accounts" ("account_id", "livemode", "currency") where "default_for_currency" and "deleted_at" is null;`,
    );
    this.addSql(
      `alter table "payouts" add column "destination_id" varchar(255) null, add column "arrival_date" timestamptz null, add column "canceled_at" timestamptz null, add column "failure_balance_transaction_id" varchar(255) null, add column "automatic" boolean not null default false, add column "hold_id" varchar(255) null, add column "hold_reason" varchar(500) null;`,
    );
    this.addSql(
      `create table "payout_settings" ("account_id" varchar(255) not null, "livemode" boolean not null, "currency" varchar(3) not null, "interval" varchar(255) not null, "weekly_anchor" varchar(255) null, "monthly_anchor" int null, "delay_days" int not null default 0, "minimum_amount" bigint not null default 0, "updated_at" timestamptz not null, primary key ("account_id", "livemode", "currency"));`,
    );
    this.addSql(
      `create table "payout_holds" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "payout_id" varchar(255) null, "reason" varchar(500) not null, "until" timestamptz null, "created_by" varchar(255) not null, "created_at" timestamptz not null, "released_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "payout_holds_account_id_livemode_id_index" on "payout_holds" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create table "sandbox_payout_transfers" ("idempotency_key" varchar(255) not null, "amount" bigint not null, "currency" varchar(3) not null, "destination" varchar(255) null, "created_at" timestamptz not null, primary key ("idempotency_key"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "sandbox_payout_transfers";`);
    this.addSql(`drop table if exists "payout_holds";`);
    this.addSql(`drop table if exists "payout_settings";`);
    this.addSql(
      `alter table "payouts" drop column "destination_id", drop column "arrival_date", drop column "canceled_at", drop column "failure_balance_transaction_id", drop column "automatic", drop column "hold_id", drop column "hold_reason";`,
    );
    this.addSql(`drop table if exists "bank_accounts";`);
  }
}
