import { Migration } from '@mikro-orm/migrations';

/** Branding: an account's uploaded logo (the name and colour live in accounts.settings.branding). */
export class Migration20261124120000_account_logos extends Migration {
  override name = 'Migration20261124120000_account_logos';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "account_logos" ("account_id" varchar(255) not null, "content_type" varchar(255) not null, "data" bytea not null, "sha256" varchar(64) not null, "size" int not null, "updated_at" timestamptz not null, constraint "account_logos_pkey" primary key ("account_id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "account_logos";`);
  }
}
