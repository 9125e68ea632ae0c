import { Migration } from '@mikro-orm/migrations';

/**
 * Exports (table `exports`, services/exports/run.ts). Transactions search (services/search/query.ts): every search is scoped to an account and
 * mode and walks newest first by id (keyset pages), or filters on the creation time;
 * these two indexes serve both. Substring search (`~`, ILIKE '%text%') gets trigram
 * indexes when the pg_trgm extension can be created (it ships with PostgreSQL's contrib,
 * the embedded test server included, and is a trusted extension since PostgreSQL 13);
 * where it cannot, the migration still succeeds and `~` scans the account's rows.
 */
export class Migration20261123150000_exports extends Migration {
  override name = 'Migration20261123150000_exports';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "exports" ("id" varchar(255) not null, "account_id" varchar(255) not null, "livemode" boolean not null, "resource" varchar(255) not null, "format" varchar(255) not null, "query" varchar(2000) null, "created_gte" timestamptz null, "created_lte" timestamptz null, "columns" jsonb null, "time_zone" varchar(255) not null, "status" varchar(255) not null, "rows_written" int not null default 0, "rows_expected" int null, "row_count" int null, "file_size" bigint null, "file_content_type" varchar(255) null, "file_sha256" varchar(255) null, "expires_at" timestamptz null, "error" varchar(1000) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "exports_account_id_livemode_id_index" on "exports" ("account_id", "livemode", "id");`);
    this.addSql(
      `create index if not exists "transactions_account_id_livemode_id_index" on "transactions" ("account_id", "livemode", "id");`,
    );
    this.addSql(
      `create index if not exists "transactions_account_id_livemode_created_at_index" on "transactions" ("account_id", "livemode", "created_at");`,
    );
    this.addSql(`do $$
begin
  begin
    create extension if not exists pg_trgm;
  exception when others then
    raise notice 'pg_trgm is not available: substring search scans the rows of the account';
  end;
  if exists (select 1 from pg_extension where extname = 'pg_trgm') then
    create index if not exists "transactions_reference_trgm_index" on "transactions" using gin ("reference" gin_trgm_ops);
    create index if not exists "customers_email_trgm_index" on "customers" using gin ("email" gin_trgm_ops);
  end if;
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "exports";`);
    this.addSql(`drop index if exists "customers_email_trgm_index";`);
    this.addSql(`drop index if exists "transactions_reference_trgm_index";`);
    this.addSql(`drop index if exists "transactions_account_id_livemode_created_at_index";`);
    this.addSql(`drop index if exists "transactions_account_id_livemode_id_index";`);
  }
}
