import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountBalance, LedgerEntry } from '../db/entities/index.ts';
import { ApiError } from '../domain/errors.ts';

export interface Posting {
  accountId: string;
  livemode: boolean;
  currency: string;
  transactionId: string;
  /** Signed change of the available balance: + for a credit or payment, - for a refund. */
  availableDelta: number;
}

/**
 * Posts one movement: two entries that sum to zero (available and external), and
 * the cached balance, all inside the caller's database transaction. The balance
 * row is locked first, so concurrent postings on one account run one after the
 * other; a posting that would take the balance below zero is refused with
 * insufficient_funds and writes nothing (the CHECK constraint backs this up).
 */
export async function post(tx: EntityManager, posting: Posting): Promise<{ available: number }> {
  const connection = tx.getConnection();
  const ctx = tx.getTransactionContext();
  await connection.execute(
    `insert into account_balances (account_id, livemode, currency, available, updated_at) values (?, ?, ?, 0, now())
     on conflict (account_id, livemode, currency) do nothing`,
    [posting.accountId, posting.livemode, posting.currency],
    'run',
    ctx,
  );
  const [balance] = await connection.execute<{ available: number }[]>(
    `select available from account_balances where account_id = ? and livemode = ? and currency = ? for update`,
    [posting.accountId, posting.livemode, posting.currency],
    'all',
    ctx,
  );
  const available = Number(balance!.available) + posting.availableDelta;
  if (available < 0) throw new ApiError('insufficient_funds', `The available balance (${balance!.available}) does not cover ${-posting.availableDelta}.`);
  await tx.nativeUpdate(AccountBalance, { accountId: posting.accountId, livemode: posting.livemode, currency: posting.currency }, { available, updatedAt: new Date() });
  const entry = { accountId: posting.accountId, livemode: posting.livemode, transactionId: posting.transactionId, currency: posting.currency };
  tx.create(LedgerEntry, { ...entry, ledgerAccount: 'available', amount: posting.availableDelta });
  tx.create(LedgerEntry, { ...entry, ledgerAccount: 'external', amount: -posting.availableDelta });
  await tx.flush();
  return { available };
}
