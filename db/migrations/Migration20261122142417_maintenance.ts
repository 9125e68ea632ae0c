import { Migration } from '@mikro-orm/migrations';

export class Migration20261122142417_maintenance extends Migration {
  override name = 'Migration20261122142417_maintenance';

  override up(): void | Promise<void> {
    this.addSql(`alter table "transactions" add column "workflow_confirmed_at" timestamptz null;`);
    this.addSql(
      `create index "transactions_unconfirmed_pending_index" on "transactions" ("created_at") where status = 'pending' and workflow_confirmed_at is null;`,
    );
    this.addSql(`alter table "payouts" add column "workflow_confirmed_at" timestamptz null;`);
    this.addSql(
      `create index "payouts_unconfirmed_pending_index" on "payouts" ("created_at") where status = 'pending' and workflow_confirmed_at is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "payouts_unconfirmed_pending_index";`);
    this.addSql(`alter table "payouts" drop column "workflow_confirmed_at";`);
    this.addSql(`drop index "transactions_unconfirmed_pending_index";`);
    this.addSql(`alter table "transactions" drop column "workflow_confirmed_at";`);
  }
}
