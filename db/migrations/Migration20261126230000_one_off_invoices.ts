import { Migration } from '@mikro-orm/migrations';

/**
 * One-off charges and invoices (issue #26): invoice items, pending until an invoice takes them;
 * invoices without a subscription (draft until finalized: no number yet), their collection method,
 * days until due, due date and description.
 */
export class Migration20261126230000_one_off_invoices extends Migration {
  override name = 'Migration20261126230000_one_off_invoices';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "invoice_items" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "customer_id" varchar(255) not null, ` +
        `"invoice_id" varchar(255) null, "description" text not null, "currency" varchar(3) not null, "plan_id" varchar(255) null, "quantity" int not null, ` +
        `"unit_amount" bigint null, "amount" bigint not null, "breakdown" jsonb null, "period_start" timestamptz not null, "period_end" timestamptz not null, ` +
        `"created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "invoice_items_account_id_livemode_id_index" on "invoice_items" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create index "invoice_items_customer_pending_index" on "invoice_items" ("customer_id", "id") where "invoice_id" is null;`,
    );
    this.addSql(`create index "invoice_items_invoice_id_index" on "invoice_items" ("invoice_id");`);
    this.addSql(`alter table "invoices" alter column "subscription_id" drop not null;`);
    this.addSql(
      `alter table "invoices" add column "collection_method" varchar(32) null, add column "days_until_due" int null, add column "due_date" timestamptz null, add column "description" text null, add column "finalized_at" timestamptz null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "invoices" drop column "collection_method", drop column "days_until_due", drop column "due_date", drop column "description", drop column "finalized_at";`,
    );
    this.addSql(`drop table if exists "invoice_items" cascade;`);
  }
}
