import { Migration } from '@mikro-orm/migrations';

/**
 * GET /v1/subscriptions?plan= matches a plan on any item: `plan_id` (the main item) or `items` by containment
 * (subscriptions_items_gin); this index answers the first half, so the two combine as a bitmap OR.
 */
export class Migration20261127002000_subscriptions_plan_index extends Migration {
  override name = 'Migration20261127002000_subscriptions_plan_index';

  override up(): void | Promise<void> {
    this.addSql(`create index "subscriptions_plan_id_index" on "subscriptions" ("plan_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "subscriptions_plan_id_index";`);
  }
}
