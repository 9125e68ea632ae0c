import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Closing an account and creating a subscription in it serialize on the account's
 * row: close holds it `for update` while it counts open subscriptions and marks the
 * account closed; a create holds it `for share` (creates do not wait for each other)
 * to check the account is open before starting the workflow, and again once the
 * subscription's first state is recorded. So either close counts the new
 * subscription (and refuses), or the create sees the account closed (and ends it).
 * Returns the account's status, read under the lock; must run in a transaction.
 */
export async function lockAccount(
  tx: EntityManager,
  accountId: string,
  mode: 'share' | 'update',
): Promise<string | undefined> {
  const [row] = await tx
    .getConnection()
    .execute<
      { status: string }[]
    >(`select status from accounts where id = ? for ${mode === 'share' ? 'share' : 'update'}`, [accountId], 'all', tx.getTransactionContext());
  return row?.status;
}
