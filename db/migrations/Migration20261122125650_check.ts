import { Migration } from '@mikro-orm/migrations';

export class Migration20261122125650_check extends Migration {

  override name = 'Migration20261122125650_check';

  override up(): void | Promise<void> {
    this.addSql(`alter table "account_balances" drop constraint "account_balances_available_non_negative";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "account_balances" add constraint "account_balances_available_non_negative" check (available >= 0);`);
  }

}
