import { Migration } from '@mikro-orm/migrations';

/**
 * Customers' external_id (issue #28): the merchant's own id for a customer, unique per account and
 * mode when set. Meter events name a customer by it (docs/usage.md#events): the unique index is also
 * what the ingestion statement reads it through.
 */
export class Migration20261127043000_customer_external_id extends Migration {
  override name = 'Migration20261127043000_customer_external_id';

  override up(): void | Promise<void> {
    this.addSql(`alter table "customers" add column "external_id" varchar(255) null;`);
    this.addSql(
      `create unique index "customers_external_id_unique" on "customers" ("account_id", "livemode", "external_id") where "external_id" is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "customers_external_id_unique";`);
    this.addSql(`alter table "customers" drop column "external_id";`);
  }
}
