import { Migration } from '@mikro-orm/migrations';

/** Several recurring items per subscription (phase 2 of #26, docs/pricing.md): the projection's items; null for a one-item subscription. */
export class Migration20261126231000_subscription_items extends Migration {
  override name = 'Migration20261126231000_subscription_items';

  override up(): void | Promise<void> {
    this.addSql(`alter table "subscriptions" add column "items" jsonb null;`);
    // GET /v1/subscription_items/{id} finds an added item's subscription by containment.
    this.addSql(
      `create index "subscriptions_items_gin" on "subscriptions" using gin ("items" jsonb_path_ops) where "items" is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "subscriptions_items_gin";`);
    this.addSql(`alter table "subscriptions" drop column "items";`);
  }
}
