import { Migration } from '@mikro-orm/migrations';

/** A customer's own id at its mode's processor (Stripe: cus_…), once the engine has made it there (docs/processors.md). */
export class Migration20261123181000_processor_customers extends Migration {
  override name = 'Migration20261123181000_processor_customers';

  override up(): void | Promise<void> {
    this.addSql(`alter table "customers" add column "processor_customer_id" varchar(255) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "customers" drop column if exists "processor_customer_id";`);
  }
}
