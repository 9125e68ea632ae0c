import { Migration } from '@mikro-orm/migrations';

/**
 * Pricing schemes (docs/pricing.md): a plan's scheme (per_unit, package, tiered), type (recurring or one_time:
 * no interval) and prices in other currencies; a subscription's quantity and currency. Existing plans are
 * per_unit recurring plans, existing subscriptions one unit in their plan's currency.
 */
export class Migration20261126223000_pricing_schemes extends Migration {
  override name = 'Migration20261126223000_pricing_schemes';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "plans" add column "type" varchar(255) not null default 'recurring', add column "pricing_scheme" varchar(255) not null default 'per_unit', add column "tiers_mode" varchar(255) null, add column "tiers" jsonb null, add column "package_size" int null, add column "package_round" varchar(255) null, add column "currency_options" jsonb null;`,
    );
    this.addSql(`alter table "plans" alter column "interval" drop not null;`);
    this.addSql(
      `alter table "subscriptions" add column "quantity" int not null default 1, add column "currency" varchar(255) null;`,
    );
    this.addSql(
      `update "subscriptions" set "currency" = "plans"."currency" from "plans" where "plans"."id" = "subscriptions"."plan_id";`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "subscriptions" drop column "quantity", drop column "currency";`);
    this.addSql(`update "plans" set "interval" = 'month' where "interval" is null;`);
    this.addSql(`alter table "plans" alter column "interval" set not null;`);
    this.addSql(
      `alter table "plans" drop column "type", drop column "pricing_scheme", drop column "tiers_mode", drop column "tiers", drop column "package_size", drop column "package_round", drop column "currency_options";`,
    );
  }
}
