import { Migration } from '@mikro-orm/migrations';

/** Exports keep the list filters they were asked for (docs/exports-and-search.md): `{ "status": "paid", "customer": "cus_…" }`. */
export class Migration20261123180000_export_filters extends Migration {
  override name = 'Migration20261123180000_export_filters';

  override up(): void | Promise<void> {
    this.addSql(`alter table "exports" add column "filters" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "exports" drop column if exists "filters";`);
  }
}
