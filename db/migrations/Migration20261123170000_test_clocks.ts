import { Migration } from '@mikro-orm/migrations';

/** Test clocks (table `test_clocks`, services/test-clocks/clocks.ts) and the clock a customer lives on. */
export class Migration20261123170000_test_clocks extends Migration {
  override name = 'Migration20261123170000_test_clocks';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "test_clocks" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "name" varchar(255) null, "frozen_time" timestamptz not null, "status" varchar(255) not null, "advancing_to" timestamptz null, "failure" varchar(2000) null, "deletes_after" timestamptz not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "test_clocks_account_id_livemode_id_index" on "test_clocks" ("account_id", "livemode", "id");`,
    );
    this.addSql(`alter table "customers" add column "test_clock_id" varchar(255) null;`);
    this.addSql(`create index "customers_test_clock_id_index" on "customers" ("test_clock_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "customers_test_clock_id_index";`);
    this.addSql(`alter table "customers" drop column if exists "test_clock_id";`);
    this.addSql(`drop table if exists "test_clocks" cascade;`);
  }
}
