import { Migration } from '@mikro-orm/migrations';

export class Migration20261122141000_subscription_lifecycle extends Migration {
  override name = 'Migration20261122141000_subscription_lifecycle';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "subscriptions" add column "trial_days" int not null default 0, add column "billing_cycle_mode" varchar(255) not null default 'anniversary', add column "billing_anchor" timestamptz null, add column "cancel_at_period_end" boolean not null default false, add column "ended_reason" varchar(255) null, add column "paused_at" timestamptz null, add column "pause_until" timestamptz null, add column "pause_reason" varchar(255) null, add column "pending_plan_id" varchar(255) null, add column "grace_period_days" int null, add column "dunning" jsonb null;`,
    );
    this.addSql(
      `create index "subscriptions_account_id_livemode_id_index" on "subscriptions" ("account_id", "livemode", "id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "subscriptions_account_id_livemode_id_index";`);
    this.addSql(
      `alter table "subscriptions" drop column "trial_days", drop column "billing_cycle_mode", drop column "billing_anchor", drop column "cancel_at_period_end", drop column "ended_reason", drop column "paused_at", drop column "pause_until", drop column "pause_reason", drop column "pending_plan_id", drop column "grace_period_days", drop column "dunning";`,
    );
  }
}
