import { Migration } from '@mikro-orm/migrations';

export class Migration20261122000000_initial extends Migration {

  override name = 'Migration20261122000000_initial';

  override up(): void | Promise<void> {
    // Invoice numbers (INV-000001...); per-account numbering arrives with accounts.
    this.addSql(`create sequence "invoice_number_seq";`);
    this.addSql(`create table "charges" ("id" varchar(255) not null, "idempotency_key" varchar(255) not null, "customer_id" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "payment_method" varchar(255) not null, "status" varchar(255) not null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "livemode" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "charges" add constraint "charges_idempotency_key_unique" unique ("idempotency_key");`);
    this.addSql(`create index "charges_customer_id_index" on "charges" ("customer_id");`);

    this.addSql(`create table "customers" ("id" varchar(255) not null, "email" varchar(255) not null, "name" varchar(255) null, "payment_method" varchar(255) null, "livemode" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);

    this.addSql(`create table "invoices" ("id" varchar(255) not null, "number" varchar(255) not null, "billing_key" varchar(255) not null, "subscription_id" varchar(255) not null, "customer_id" varchar(255) not null, "status" varchar(255) not null, "currency" varchar(3) not null, "amount_due" int not null, "amount_paid" int not null, "lines" jsonb not null, "period_start" timestamptz not null, "period_end" timestamptz not null, "charge_id" varchar(255) null, "livemode" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "invoices" add constraint "invoices_number_unique" unique ("number");`);
    this.addSql(`alter table "invoices" add constraint "invoices_billing_key_unique" unique ("billing_key");`);
    this.addSql(`create index "invoices_subscription_id_index" on "invoices" ("subscription_id");`);

    this.addSql(`create table "plans" ("id" varchar(255) not null, "name" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "interval" varchar(255) not null, "interval_count" int not null default 1, "trial_period_days" int not null default 0, "active" boolean not null default true, "livemode" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`);

    this.addSql(`create table "sandbox_processor_charges" ("id" varchar(255) not null, "idempotency_key" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "payment_method" varchar(255) not null, "status" varchar(255) not null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "sandbox_processor_charges" add constraint "sandbox_processor_charges_idempotency_key_unique" unique ("idempotency_key");`);

    this.addSql(`create table "subscriptions" ("id" varchar(255) not null, "customer_id" varchar(255) not null, "plan_id" varchar(255) not null, "status" varchar(255) not null, "trial_start" timestamptz null, "trial_end" timestamptz null, "current_period_start" timestamptz null, "current_period_end" timestamptz null, "billing_cycle" int not null default 0, "latest_invoice_id" varchar(255) null, "canceled_at" timestamptz null, "livemode" boolean not null default false, "version" int not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "subscriptions_customer_id_index" on "subscriptions" ("customer_id");`);
    this.addSql(`create index "subscriptions_status_index" on "subscriptions" ("status");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "charges" cascade;`);
    this.addSql(`drop table if exists "customers" cascade;`);
    this.addSql(`drop table if exists "invoices" cascade;`);
    this.addSql(`drop table if exists "plans" cascade;`);
    this.addSql(`drop table if exists "sandbox_processor_charges" cascade;`);
    this.addSql(`drop table if exists "subscriptions" cascade;`);
    this.addSql(`drop sequence if exists "invoice_number_seq";`);
  }

}
