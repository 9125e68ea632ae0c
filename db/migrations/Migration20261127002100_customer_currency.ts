import { Migration } from '@mikro-orm/migrations';

/** A customer's currency (ISO code, optional): it chooses among a plan's currency_options when a subscription or an invoice item names none (docs/pricing.md). */
export class Migration20261127002100_customer_currency extends Migration {
  override name = 'Migration20261127002100_customer_currency';

  override up(): void | Promise<void> {
    this.addSql(`alter table "customers" add column "currency" varchar(3) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "customers" drop column "currency";`);
  }
}
