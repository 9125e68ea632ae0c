import { Migration } from '@mikro-orm/migrations';

export class Migration20261122000000_initial extends Migration {
  override name = 'Migration20261122000000_initial';

  override up(): void | Promise<void> {
    // Invoice numbers (INV-000001...), one sequence for the platform for now.
    this.addSql(`create sequence "invoice_number_seq";`);
    this.addSql(
      `create table "accounts" ("id" varchar(255) not null, "email" varchar(255) not null, "name" varchar(255) not null, "type" varchar(255) not null, "status" varchar(255) not null, "settings" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "closed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "accounts" add constraint "accounts_email_unique" unique ("email");`);
    this.addSql(`create index "accounts_status_index" on "accounts" ("status");`);
    this.addSql(`create index "accounts_created_at_index" on "accounts" ("created_at");`);

    this.addSql(
      `create table "api_keys" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "name" varchar(255) null, "secret_hash" varchar(255) not null, "last4" varchar(255) not null, "created_by_user_id" varchar(255) null, "created_at" timestamptz not null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "api_keys_account_id_index" on "api_keys" ("account_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);

    this.addSql(
      `create table "charges" ("id" varchar(255) not null, "idempotency_key" varchar(255) not null, "customer_id" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "payment_method" varchar(255) not null, "status" varchar(255) not null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "account_id" varchar(255) not null, "livemode" boolean not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "charges" add constraint "charges_idempotency_key_unique" unique ("idempotency_key");`);
    this.addSql(`create index "charges_customer_id_index" on "charges" ("customer_id");`);
    this.addSql(`create index "charges_account_id_index" on "charges" ("account_id");`);

    this.addSql(
      `create table "customers" ("id" varchar(255) not null, "email" varchar(255) not null, "name" varchar(255) null, "payment_method" varchar(255) null, "account_id" varchar(255) not null, "livemode" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "customers_account_id_index" on "customers" ("account_id");`);

    this.addSql(
      `create table "invoices" ("id" varchar(255) not null, "number" varchar(255) not null, "billing_key" varchar(255) not null, "subscription_id" varchar(255) not null, "customer_id" varchar(255) not null, "status" varchar(255) not null, "currency" varchar(3) not null, "amount_due" int not null, "amount_paid" int not null, "lines" jsonb not null, "period_start" timestamptz not null, "period_end" timestamptz not null, "charge_id" varchar(255) null, "account_id" varchar(255) not null, "livemode" boolean not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "invoices" add constraint "invoices_number_unique" unique ("number");`);
    this.addSql(`alter table "invoices" add constraint "invoices_billing_key_unique" unique ("billing_key");`);
    this.addSql(`create index "invoices_subscription_id_index" on "invoices" ("subscription_id");`);
    this.addSql(`create index "invoices_account_id_index" on "invoices" ("account_id");`);

    this.addSql(
      `create table "login_attempts" ("id" bigserial primary key, "email" varchar(255) not null, "ip" varchar(255) null, "succeeded" boolean not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "login_attempts_email_index" on "login_attempts" ("email");`);
    this.addSql(`create index "login_attempts_ip_index" on "login_attempts" ("ip");`);
    this.addSql(`create index "login_attempts_created_at_index" on "login_attempts" ("created_at");`);

    this.addSql(
      `create table "plans" ("id" varchar(255) not null, "name" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "interval" varchar(255) not null, "interval_count" int not null default 1, "trial_period_days" int not null default 0, "active" boolean not null default true, "account_id" varchar(255) not null, "livemode" boolean not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "plans_account_id_index" on "plans" ("account_id");`);

    this.addSql(
      `create table "refresh_tokens" ("id" varchar(255) not null, "session_id" varchar(255) not null, "token_hash" varchar(255) not null, "created_at" timestamptz not null, "used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "refresh_tokens_session_id_index" on "refresh_tokens" ("session_id");`);
    this.addSql(
      `alter table "refresh_tokens" add constraint "refresh_tokens_token_hash_unique" unique ("token_hash");`,
    );

    this.addSql(
      `create table "sandbox_processor_charges" ("id" varchar(255) not null, "idempotency_key" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "payment_method" varchar(255) not null, "status" varchar(255) not null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "sandbox_processor_charges" add constraint "sandbox_processor_charges_idempotency_key_unique" unique ("idempotency_key");`,
    );

    this.addSql(
      `create table "sessions" ("id" varchar(255) not null, "user_id" varchar(255) not null, "account_id" varchar(255) null, "device_fingerprint" varchar(255) null, "ip" varchar(255) null, "user_agent" varchar(255) null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "revoked_reason" varchar(255) null, primary key ("id"));`,
    );
    this.addSql(`create index "sessions_user_id_index" on "sessions" ("user_id");`);

    this.addSql(
      `create table "subscriptions" ("id" varchar(255) not null, "customer_id" varchar(255) not null, "plan_id" varchar(255) not null, "status" varchar(255) not null, "trial_start" timestamptz null, "trial_end" timestamptz null, "current_period_start" timestamptz null, "current_period_end" timestamptz null, "billing_cycle" int not null default 0, "latest_invoice_id" varchar(255) null, "canceled_at" timestamptz null, "account_id" varchar(255) not null, "livemode" boolean not null, "version" int not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "subscriptions_customer_id_index" on "subscriptions" ("customer_id");`);
    this.addSql(`create index "subscriptions_status_index" on "subscriptions" ("status");`);
    this.addSql(`create index "subscriptions_account_id_index" on "subscriptions" ("account_id");`);

    this.addSql(
      `create table "users" ("id" varchar(255) not null, "account_id" varchar(255) null, "email" varchar(255) not null, "name" varchar(255) null, "role" varchar(255) not null, "status" varchar(255) not null, "password_hash" varchar(255) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "users_account_id_index" on "users" ("account_id");`);
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop sequence if exists "invoice_number_seq";`);
    this.addSql(`drop table if exists "accounts" cascade;`);
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "charges" cascade;`);
    this.addSql(`drop table if exists "customers" cascade;`);
    this.addSql(`drop table if exists "invoices" cascade;`);
    this.addSql(`drop table if exists "login_attempts" cascade;`);
    this.addSql(`drop table if exists "plans" cascade;`);
    this.addSql(`drop table if exists "refresh_tokens" cascade;`);
    this.addSql(`drop table if exists "sandbox_processor_charges" cascade;`);
    this.addSql(`drop table if exists "sessions" cascade;`);
    this.addSql(`drop table if exists "subscriptions" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
  }
}
