import { Migration } from '@mikro-orm/migrations';

export class Migration20261122125633_ledger extends Migration {
  override name = 'Migration20261122125633_ledger';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "account_balances" ("account_id" varchar(255) not null, "livemode" boolean not null, "currency" varchar(3) not null, "available" int not null, "updated_at" timestamptz not null, primary key ("account_id", "livemode", "currency"));`,
    );

    this.addSql(
      `create table "ledger_entries" ("id" bigserial primary key, "account_id" varchar(255) not null, "livemode" boolean not null, "transaction_id" varchar(255) not null, "ledger_account" varchar(255) not null, "amount" int not null, "currency" varchar(3) not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "ledger_entries_account_id_index" on "ledger_entries" ("account_id");`);
    this.addSql(`create index "ledger_entries_transaction_id_index" on "ledger_entries" ("transaction_id");`);

    this.addSql(
      `create table "transactions" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "amount" int not null, "currency" varchar(3) not null, "type" varchar(255) not null, "status" varchar(255) not null, "reference" varchar(500) null, "metadata" jsonb not null, "risk_level" varchar(255) not null, "risk_score" int not null, "payment_method" varchar(255) null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "canceled_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "transactions_account_id_index" on "transactions" ("account_id");`);
    this.addSql(`create index "transactions_created_at_index" on "transactions" ("created_at");`);
    // The balance can never go below zero, whatever the code above it does.
    this.addSql(
      `alter table "account_balances" add constraint "account_balances_available_non_negative" check ("available" >= 0);`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "account_balances" cascade;`);
    this.addSql(`drop table if exists "ledger_entries" cascade;`);
    this.addSql(`drop table if exists "transactions" cascade;`);
  }
}
