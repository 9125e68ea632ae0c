import { Migration } from '@mikro-orm/migrations';

/**
 * CLI keys (`ck_test_…` / `ck_live_…`, sent as x-cli-key): a credential of its own
 * kind minted by `billing login` for one user on one device, stored as SHA-256 like
 * API keys, expiring after 90 days. `cli_device_codes` holds the device-login
 * requests (POST /v1/cli/device) until the CLI collects its key.
 */
export class Migration20261123140000_cli_keys extends Migration {
  override name = 'Migration20261123140000_cli_keys';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "cli_keys" ("id" varchar(255) not null, "account_id" varchar(255) not null, "user_id" varchar(255) not null, "livemode" boolean not null, "name" varchar(255) not null, "secret_hash" varchar(255) not null, "last4" varchar(255) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "cli_keys_account_id_index" on "cli_keys" ("account_id");`);
    this.addSql(`alter table "cli_keys" add constraint "cli_keys_secret_hash_unique" unique ("secret_hash");`);
    this.addSql(
      `create table "cli_device_codes" ("id" varchar(255) not null, "device_code_hash" varchar(255) not null, "user_code" varchar(9) not null, "device_name" varchar(255) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "approved_at" timestamptz null, "account_id" varchar(255) null, "user_id" varchar(255) null, "livemode" boolean null, "consumed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "cli_device_codes" add constraint "cli_device_codes_device_code_hash_unique" unique ("device_code_hash");`,
    );
    this.addSql(`create index "cli_device_codes_user_code_index" on "cli_device_codes" ("user_code");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "cli_device_codes" cascade;`);
    this.addSql(`drop table if exists "cli_keys" cascade;`);
  }
}
