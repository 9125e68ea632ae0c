import { Migration } from '@mikro-orm/migrations';

/** The test clock an event was recorded on (work running on the clock): its webhook deliveries retry on the clock's time, and the clock waits for their dispatch. */
export class Migration20261124100000_event_test_clocks extends Migration {
  override name = 'Migration20261124100000_event_test_clocks';

  override up(): void | Promise<void> {
    this.addSql(`alter table "events" add column "test_clock_id" varchar(255) null;`);
    this.addSql(`create index "events_clock_undispatched_index" on "events" ("test_clock_id") where dispatched_at is null and test_clock_id is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "events_clock_undispatched_index";`);
    this.addSql(`alter table "events" drop column if exists "test_clock_id";`);
  }
}
