import { Migration } from '@mikro-orm/migrations';

/** A quantity change that waits for the renewal, as a downgrade does (docs/pricing.md): the quantity it bills from then. */
export class Migration20261126224000_pending_quantity extends Migration {
  override name = 'Migration20261126224000_pending_quantity';

  override up(): void | Promise<void> {
    this.addSql(`alter table "subscriptions" add column "pending_quantity" int null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "subscriptions" drop column "pending_quantity";`);
  }
}
