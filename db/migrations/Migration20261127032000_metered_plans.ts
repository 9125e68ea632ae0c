import { Migration } from '@mikro-orm/migrations';

/**
 * Metered plans (#28, docs/pricing.md "Usage prices"): a plan's usage_type (licensed, the default: every
 * existing plan) and, when metered, its meter, the percentage scheme's fields, free units and prices per
 * dimension value; and the mode's usage grace window (null: the default, 3600 s).
 */
export class Migration20261127032000_metered_plans extends Migration {
  override name = 'Migration20261127032000_metered_plans';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "plans" add column "usage_type" varchar(16) not null default 'licensed', add column "meter_id" varchar(255) null, add column "percentage" varchar(32) null, add column "fixed_amount_decimal" varchar(32) null, add column "free_quantity" varchar(32) null, add column "group_by" varchar(100) null, add column "dimension_prices" jsonb null;`,
    );
    this.addSql(`alter table "account_mode_settings" add column "usage_grace_period_seconds" int null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "account_mode_settings" drop column "usage_grace_period_seconds";`);
    this.addSql(
      `alter table "plans" drop column "usage_type", drop column "meter_id", drop column "percentage", drop column "fixed_amount_decimal", drop column "free_quantity", drop column "group_by", drop column "dimension_prices";`,
    );
  }
}
