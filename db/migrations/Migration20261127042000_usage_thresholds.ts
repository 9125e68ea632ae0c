import { Migration } from '@mikro-orm/migrations';

/**
 * Progressive billing (#28, docs/usage.md "Billing thresholds"): a subscription's billing_thresholds
 * (Stripe's shape), the threshold invoices of each period with what each billed per usage line (so the
 * period's later invoices bill only the difference), and the crossings ingestion signalled (one signal
 * to the subscription workflow per crossing: the primary key is the claim).
 */
export class Migration20261127042000_usage_thresholds extends Migration {
  override name = 'Migration20261127042000_usage_thresholds';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "subscription_billing_thresholds" ("subscription_id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, ` +
        `"customer_id" varchar(255) not null, "amount_gte" bigint not null, "reset_billing_cycle_anchor" boolean not null default false, "updated_at" timestamptz not null, ` +
        `constraint "subscription_billing_thresholds_pkey" primary key ("subscription_id"), constraint "subscription_billing_thresholds_amount_check" check ("amount_gte" > 0));`,
    );
    // What ingestion asks after each batch: the thresholds of the batch's customers.
    this.addSql(
      `create index "subscription_billing_thresholds_customer_index" on "subscription_billing_thresholds" ("account_id", "livemode", "customer_id");`,
    );
    this.addSql(
      `create table "usage_threshold_invoices" ("subscription_id" varchar(255) not null, "period_start" timestamptz not null, "sequence" int not null, ` +
        `"account_id" varchar(255) not null, "livemode" boolean not null, "as_of" timestamptz not null, "step_key" varchar(255) not null, "amounts" jsonb not null, "lines" jsonb not null, "amount" bigint not null, ` +
        `"billing_key" varchar(255) not null, "created_at" timestamptz not null, constraint "usage_threshold_invoices_pkey" primary key ("subscription_id", "period_start", "sequence"), ` +
        `constraint "usage_threshold_invoices_step_unique" unique ("subscription_id", "step_key"));`,
    );
    this.addSql(
      `create table "usage_threshold_crossings" ("subscription_id" varchar(255) not null, "period_start" timestamptz not null, "sequence" int not null, ` +
        `"signalled_at" timestamptz not null, constraint "usage_threshold_crossings_pkey" primary key ("subscription_id", "period_start", "sequence"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "usage_threshold_crossings";`);
    this.addSql(`drop table if exists "usage_threshold_invoices";`);
    this.addSql(`drop table if exists "subscription_billing_thresholds";`);
  }
}
