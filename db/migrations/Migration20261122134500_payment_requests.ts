import { Migration } from '@mikro-orm/migrations';

export class Migration20261122134500_payment_requests extends Migration {
  override name = 'Migration20261122134500_payment_requests';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "payment_requests" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "amount" int not null, "currency" varchar(3) not null, "status" varchar(255) not null, "customer_email" varchar(320) not null, "reference" varchar(500) null, "metadata" jsonb not null, "token" varchar(64) not null, "expires_at" timestamptz not null, "transaction_id" varchar(255) null, "paid_at" timestamptz null, "failure_reason" varchar(255) null, "canceled_at" timestamptz null, "cancellation_reason" varchar(255) null, "last_payment_error" jsonb null, "attempts" int not null, "recurring_payment_request_id" varchar(255) null, "period" int null, "version" int not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "payment_requests_account_id_index" on "payment_requests" ("account_id");`);
    this.addSql(`create index "payment_requests_status_index" on "payment_requests" ("status");`);
    this.addSql(
      `create index "payment_requests_recurring_payment_request_id_index" on "payment_requests" ("recurring_payment_request_id");`,
    );
    this.addSql(`alter table "payment_requests" add constraint "payment_requests_token_unique" unique ("token");`);

    this.addSql(
      `create table "recurring_payment_requests" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "amount" int not null, "currency" varchar(3) not null, "status" varchar(255) not null, "customer_email" varchar(320) not null, "reference" varchar(500) null, "metadata" jsonb not null, "interval" varchar(255) not null, "interval_count" int not null, "expires_in_ms" bigint not null, "period" int not null, "issued_periods" int not null, "latest_payment_request_id" varchar(255) null, "next_payment_request_at" timestamptz null, "canceled_at" timestamptz null, "cancellation_reason" varchar(255) null, "version" int not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "recurring_payment_requests_account_id_index" on "recurring_payment_requests" ("account_id");`,
    );
    this.addSql(`create index "recurring_payment_requests_status_index" on "recurring_payment_requests" ("status");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "payment_requests" cascade;`);
    this.addSql(`drop table if exists "recurring_payment_requests" cascade;`);
  }
}
