import { Migration } from '@mikro-orm/migrations';

/**
 * A discount made for one open one-off invoice (a promotion code typed on its hosted pay page, or
 * POST /v1/invoices/{id}/discounts): `invoice_id` names it. Such a discount is used by its invoice
 * when it is applied (ended_at set at once), so the one-in-force unique indexes never see it.
 */
export class Migration20261127030000_invoice_discounts extends Migration {
  override name = 'Migration20261127030000_invoice_discounts';

  override up(): void | Promise<void> {
    this.addSql(`alter table "discounts" add column "invoice_id" varchar(255) null;`);
    this.addSql(
      `create index "discounts_invoice_id_index" on "discounts" ("invoice_id") where "invoice_id" is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "discounts_invoice_id_index";`);
    this.addSql(`alter table "discounts" drop column "invoice_id";`);
  }
}
