import { Migration } from '@mikro-orm/migrations';

/**
 * Payouts on test clocks (docs/testing-your-integration.md): the clock a payout lives on (lists leave
 * it out unless asked for; deleting the clock cancels it), and a clock's own payout schedules, one per
 * currency, apart from the account's (`payout_settings`), run on the clock's time.
 */
export class Migration20261125100000_test_clock_payouts extends Migration {
  override name = 'Migration20261125100000_test_clock_payouts';

  override up(): void | Promise<void> {
    this.addSql(`alter table "payouts" add column "test_clock_id" varchar(255) null;`);
    this.addSql(`create index "payouts_test_clock_id_index" on "payouts" ("test_clock_id");`);
    this.addSql(
      `create table "test_clock_payout_settings" ("test_clock_id" varchar(255) not null, "currency" varchar(3) not null, "account_id" varchar(255) not null, "interval" varchar(255) not null, "weekly_anchor" varchar(255) null, "monthly_anchor" int null, "delay_days" int not null default 0, "minimum_amount" bigint not null default 0, "updated_at" timestamptz not null, primary key ("test_clock_id", "currency"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "test_clock_payout_settings";`);
    this.addSql(`drop index if exists "payouts_test_clock_id_index";`);
    this.addSql(`alter table "payouts" drop column if exists "test_clock_id";`);
  }
}
