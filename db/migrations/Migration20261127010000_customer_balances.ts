import { Migration } from '@mikro-orm/migrations';

/**
 * Customer balances (issue #27): the cached balance per customer and currency, its
 * transactions, and an invoice's discount, tax and balance totals.
 */
export class Migration20261127010000_customer_balances extends Migration {
  override name = 'Migration20261127010000_customer_balances';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "customer_balances" ("customer_id" varchar(255) not null, "currency" varchar(3) not null, "account_id" varchar(255) not null, "livemode" boolean not null, ` +
        `"balance" bigint not null, "updated_at" timestamptz not null, primary key ("customer_id", "currency"));`,
    );
    this.addSql(
      `create table "customer_balance_transactions" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "customer_id" varchar(255) not null, ` +
        `"currency" varchar(3) not null, "type" varchar(255) not null, "amount" bigint not null, "ending_balance" bigint not null, "invoice_id" varchar(255) null, ` +
        `"credit_note_id" varchar(255) null, "description" text null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "customer_balance_transactions_account_id_livemode_id_index" on "customer_balance_transactions" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create index "customer_balance_transactions_customer_id_id_index" on "customer_balance_transactions" ("customer_id", "id");`,
    );
    this.addSql(
      `create unique index "customer_balance_transactions_invoice_once" on "customer_balance_transactions" ("invoice_id", "type") where "type" in ('applied_to_invoice', 'unapplied_from_invoice', 'invoice_too_small');`,
    );
    this.addSql(
      `alter table "invoices" add column "discount" bigint not null default 0, add column "total_discount_amounts" jsonb null, add column "total_excluding_tax" bigint null, ` +
        `add column "tax" bigint not null default 0, add column "total_tax_amounts" jsonb null, add column "starting_balance" bigint not null default 0, ` +
        `add column "ending_balance" bigint not null default 0, add column "reverse_charge" boolean not null default false, add column "customer_tax_exempt" varchar(16) not null default 'none', add column "customer_tax_ids" jsonb null, ` +
        `add column "customer_address" jsonb null, add column "discount_id" varchar(255) null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "invoices" drop column "discount", drop column "total_discount_amounts", drop column "total_excluding_tax", drop column "tax", drop column "total_tax_amounts", ` +
        `drop column "starting_balance", drop column "ending_balance", drop column "reverse_charge", drop column "customer_tax_exempt", drop column "customer_tax_ids", drop column "customer_address", drop column "discount_id";`,
    );
    this.addSql(`drop table if exists "customer_balance_transactions" cascade;`);
    this.addSql(`drop table if exists "customer_balances" cascade;`);
  }
}
