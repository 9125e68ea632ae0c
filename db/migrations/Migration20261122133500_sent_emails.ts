import { Migration } from '@mikro-orm/migrations';

export class Migration20261122133500_sent_emails extends Migration {
  override name = 'Migration20261122133500_sent_emails';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "sent_emails" ("id" bigserial primary key, "dedupe_key" varchar(200) not null, "account_id" varchar(255) null, "to" varchar(320) not null, "subject" varchar(300) not null, "status" varchar(255) not null, "message_id" varchar(300) not null, "created_at" timestamptz not null, "claimed_at" timestamptz not null, "sent_at" timestamptz null);`,
    );
    this.addSql(`create index "sent_emails_account_id_index" on "sent_emails" ("account_id");`);
    this.addSql(`alter table "sent_emails" add constraint "sent_emails_dedupe_key_unique" unique ("dedupe_key");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "sent_emails" cascade;`);
  }
}
