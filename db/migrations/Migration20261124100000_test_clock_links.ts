import { Migration } from '@mikro-orm/migrations';

/**
 * The test clock an event was recorded on (work running on the clock): its webhook deliveries retry on the
 * clock's time, and the clock waits for their dispatch. The clock of a payment request or recurring request
 * (lists leave clock objects out unless asked for).
 */
export class Migration20261124100000_test_clock_links extends Migration {
  override name = 'Migration20261124100000_test_clock_links';

  override up(): void | Promise<void> {
    this.addSql(`alter table "events" add column "test_clock_id" varchar(255) null;`);
    this.addSql(
      `create index "events_clock_undispatched_index" on "events" ("test_clock_id") where dispatched_at is null and test_clock_id is not null;`,
    );
    this.addSql(`alter table "payment_requests" add column "test_clock_id" varchar(255) null;`);
    this.addSql(`alter table "recurring_payment_requests" add column "test_clock_id" varchar(255) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "recurring_payment_requests" drop column if exists "test_clock_id";`);
    this.addSql(`alter table "payment_requests" drop column if exists "test_clock_id";`);
    this.addSql(`drop index if exists "events_clock_undispatched_index";`);
    this.addSql(`alter table "events" drop column if exists "test_clock_id";`);
  }
}
