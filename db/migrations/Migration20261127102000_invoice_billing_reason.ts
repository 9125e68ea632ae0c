import { Migration } from '@mikro-orm/migrations';

/**
 * Invoices' billing_reason (Stripe's; domain/invoice-billing-reason.ts): set on insert from the invoice's billing
 * key, and backfilled here from the same keys with the same rules, so every invoice has one. The index serves
 * GET /v1/invoices?billing_reason=.
 */
export class Migration20261127102000_invoice_billing_reason extends Migration {
  override name = 'Migration20261127102000_invoice_billing_reason';

  override up(): void | Promise<void> {
    this.addSql(`alter table "invoices" add column "billing_reason" varchar(32) null;`);
    this.addSql(
      `update "invoices" set "billing_reason" = case
         when "subscription_id" is null or "billing_key" like 'invoice:%' then 'manual'
         when "billing_key" like '%:threshold:%' then 'subscription_threshold'
         when "billing_key" ~ ':(plan_change|item_change):[0-9]+$' or "billing_key" like '%:final_usage' then 'subscription_update'
         when "billing_key" like '%:cycle:0' then 'subscription_create'
         else 'subscription_cycle' end;`,
    );
    this.addSql(
      `create index "invoices_account_id_livemode_billing_reason_index" on "invoices" ("account_id", "livemode", "billing_reason");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "invoices_account_id_livemode_billing_reason_index";`);
    this.addSql(`alter table "invoices" drop column if exists "billing_reason";`);
  }
}
