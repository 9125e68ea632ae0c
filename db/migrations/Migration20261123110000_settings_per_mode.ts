import { Migration } from '@mikro-orm/migrations';

/**
 * Billing and notification settings per mode (issue #11). They were keys of
 * `accounts.settings`, shared by live and sandbox; they move to one
 * `account_mode_settings` row per (account, mode) — see the entity for why a
 * row rather than two json columns. Every account's existing values are copied
 * into BOTH modes, so nothing changes for anyone until one mode is changed, and
 * the keys leave `accounts.settings`, which keeps only currency, timezone and
 * language. Down puts the live values back (sandbox changes are lost).
 */
export class Migration20261123110000_settings_per_mode extends Migration {
  override name = 'Migration20261123110000_settings_per_mode';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "account_mode_settings" ("account_id" varchar(255) not null, "livemode" boolean not null, "grace_period_days" int null, "retry_policy" jsonb null, "dunning_final_action" varchar(255) null, "notifications" jsonb not null default '{}', "updated_at" timestamptz not null default now(), primary key ("account_id", "livemode"));`,
    );
    this.addSql(
      `alter table "account_mode_settings" add constraint "account_mode_settings_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );
    this
      .addSql(`insert into "account_mode_settings" ("account_id", "livemode", "grace_period_days", "retry_policy", "dunning_final_action", "notifications", "updated_at")
      select a."id", m.livemode, (a."settings"->>'grace_period_days')::int, a."settings"->'retry_policy', a."settings"->>'dunning_final_action',
             coalesce(a."settings"->'notifications', '{}'::jsonb), a."updated_at"
      from "accounts" a cross join (values (true), (false)) as m(livemode);`);
    this.addSql(
      `update "accounts" set "settings" = "settings" - 'grace_period_days' - 'retry_policy' - 'dunning_final_action' - 'notifications';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`update "accounts" a set "settings" = a."settings" || jsonb_strip_nulls(jsonb_build_object(
        'grace_period_days', s."grace_period_days", 'retry_policy', s."retry_policy", 'dunning_final_action', s."dunning_final_action",
        'notifications', case when s."notifications" = '{}'::jsonb then null else s."notifications" end))
      from "account_mode_settings" s where s."account_id" = a."id" and s."livemode";`);
    this.addSql(`drop table "account_mode_settings";`);
  }
}
