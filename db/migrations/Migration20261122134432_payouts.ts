import { Migration } from '@mikro-orm/migrations';

export class Migration20261122134432_payouts extends Migration {
  override name = 'Migration20261122134432_payouts';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "payouts" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "amount" int not null, "currency" varchar(3) not null, "method" varchar(255) not null, "status" varchar(255) not null, "description" varchar(500) null, "failure_code" varchar(255) null, "failure_message" varchar(255) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "paid_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "payouts_account_id_livemode_id_index" on "payouts" ("account_id", "livemode", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "payouts" cascade;`);
  }
}
