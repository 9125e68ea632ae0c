import { Migration } from '@mikro-orm/migrations';

/**
 * A test clock's registry in PostgreSQL (issue #29; services/test-clocks/registry.ts): the workflows bound to the clock,
 * when each wants to wake, whether the clock waits for it at an instant, and the latest clock time it has seen. Until
 * now these lived in the clock workflow's own state, fed by one signal per workflow per instant, so its history and
 * task time grew with what was on the clock. `test_clock_registries` has one row per clock whose workflow reads the
 * table (its presence is what tells a writer to write here rather than signal the clock), and the round of the
 * instant the clock waits for (the last report that leaves nothing busy clears it and signals the clock once).
 * Both go with their clock (on delete cascade).
 */
export class Migration20261127150000_test_clock_entries extends Migration {
  override name = 'Migration20261127150000_test_clock_entries';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "test_clock_registries" ("clock_id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null default false, "awaiting_round" integer null, "created_at" timestamptz not null default now(), constraint "test_clock_registries_pkey" primary key ("clock_id"), constraint "test_clock_registries_clock_id_foreign" foreign key ("clock_id") references "test_clocks" ("id") on delete cascade);`,
    );
    this.addSql(
      `create table "test_clock_entries" ("clock_id" varchar(255) not null, "workflow_id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null default false, "wake_at" timestamptz null, "busy_at" timestamptz null, "known" timestamptz null, "reported_at" timestamptz not null default now(), constraint "test_clock_entries_pkey" primary key ("clock_id", "workflow_id"), constraint "test_clock_entries_clock_id_foreign" foreign key ("clock_id") references "test_clock_registries" ("clock_id") on delete cascade);`,
    );
    // The clock's two questions: the earliest wake-up up to its target, and whether anything is still busy.
    this.addSql(
      `create index "test_clock_entries_wake_at_index" on "test_clock_entries" ("clock_id", "wake_at") where "wake_at" is not null;`,
    );
    this.addSql(
      `create index "test_clock_entries_busy_index" on "test_clock_entries" ("clock_id") where "busy_at" is not null;`,
    );
    this.addSql(
      `create index "test_clock_registries_account_id_livemode_index" on "test_clock_registries" ("account_id", "livemode");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "test_clock_entries";`);
    this.addSql(`drop table if exists "test_clock_registries";`);
  }
}
