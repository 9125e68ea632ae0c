import { Migration } from '@mikro-orm/migrations';

export class Migration20261122133600_invoice_numbers extends Migration {
  override name = 'Migration20261122133600_invoice_numbers';

  override up(): void | Promise<void> {
    // Invoice numbers per account and mode (ACME-0001) instead of one platform-wide sequence.
    this.addSql(
      `create table "invoice_number_counters" ("account_id" varchar(255) not null, "livemode" boolean not null, "prefix" varchar(255) not null, "last_number" int not null, primary key ("account_id", "livemode"));`,
    );
    this.addSql(`alter table "invoices" drop constraint "invoices_number_unique";`);
    this.addSql(
      `alter table "invoices" add constraint "invoices_account_id_livemode_number_unique" unique ("account_id", "livemode", "number");`,
    );
    this.addSql(`drop sequence if exists "invoice_number_seq";`);

    // Fields of the invoice as the API shows it. Existing invoices: totals from what was due, paid_at from issue.
    this.addSql(
      `alter table "invoices" add column "customer_email" varchar(255) null, add column "customer_name" varchar(255) null, add column "subtotal" int not null default 0, add column "total" int not null default 0, add column "attempt_count" int not null default 0, add column "paid_at" timestamptz null, add column "voided_at" timestamptz null, add column "marked_uncollectible_at" timestamptz null;`,
    );
    this.addSql(
      `update "invoices" set "subtotal" = "amount_due", "total" = "amount_due", "attempt_count" = 1, "paid_at" = case when "status" = 'paid' then "created_at" end;`,
    );
    this.addSql(`alter table "invoices" alter column "subtotal" drop default, alter column "total" drop default;`);

    // Lists: newest first within an account and mode; filter by customer.
    this.addSql(`create index "invoices_account_id_livemode_id_index" on "invoices" ("account_id", "livemode", "id");`);
    this.addSql(`create index "invoices_customer_id_index" on "invoices" ("customer_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "invoices_customer_id_index";`);
    this.addSql(`drop index if exists "invoices_account_id_livemode_id_index";`);
    this.addSql(
      `alter table "invoices" drop column "customer_email", drop column "customer_name", drop column "subtotal", drop column "total", drop column "attempt_count", drop column "paid_at", drop column "voided_at", drop column "marked_uncollectible_at";`,
    );
    this.addSql(`create sequence if not exists "invoice_number_seq";`);
    this.addSql(`alter table "invoices" drop constraint "invoices_account_id_livemode_number_unique";`);
    this.addSql(`alter table "invoices" add constraint "invoices_number_unique" unique ("number");`);
    this.addSql(`drop table if exists "invoice_number_counters" cascade;`);
  }
}
