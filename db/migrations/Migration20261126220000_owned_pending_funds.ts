import { Migration } from '@mikro-orm/migrations';

/**
 * Pending money owned by a workflow (`workflow_confirmed_at` set: a subscription's renewal, dunning retry or
 * upgrade, or an availability workflow the reconciler started), by `available_on`: the maintenance reconciler
 * (services/maintenance/sweeps.ts reconcileOrphanedFunds) reads only the rows already past due, so a million such rows
 * waiting for their day cost it nothing.
 */
export class Migration20261126220000_owned_pending_funds extends Migration {
  override name = 'Migration20261126220000_owned_pending_funds';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "balance_transactions_owned_pending_index" on "balance_transactions" ("available_on") where status = 'pending' and workflow_confirmed_at is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "balance_transactions_owned_pending_index";`);
  }
}
