import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, Transaction, type TransactionType } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import { scoreRisk, velocityCountCap } from '../domain/risk.ts';
import { post } from './ledger.ts';
import { recordTransactionEvents } from './transaction-events.ts';

export interface NewTransaction {
  accountId: string;
  livemode: boolean;
  amount: number;
  currency: string;
  type: TransactionType;
  reference: string | null;
  metadata: Record<string, string>;
  paymentMethod: string | null;
}

export type TransactionFields = ReturnType<typeof fieldsOf>;

function fieldsOf(input: NewTransaction, risk: { score: number; level: 'low' | 'medium' | 'high' }, now: Date) {
  return {
    id: newId('transaction'),
    accountId: input.accountId,
    livemode: input.livemode,
    amount: input.amount,
    currency: input.currency,
    type: input.type,
    reference: input.reference,
    metadata: input.metadata,
    riskLevel: risk.level,
    riskScore: risk.score,
    paymentMethod: input.paymentMethod,
    failureCode: null,
    failureMessage: null,
    createdAt: now,
    updatedAt: now,
    canceledAt: null,
  };
}

/**
 * The row of a new transaction: a fresh time-sortable id, and the risk level
 * scored from the amount, the account's age and its transactions of the past hour
 * (domain/risk.ts). Used by POST /v1/transactions and by paid payment requests.
 */
export async function newTransactionFields(em: EntityManager, input: NewTransaction, account?: Pick<Account, 'createdAt'>): Promise<TransactionFields> {
  const owner = account ?? (await em.findOneOrFail(Account, { id: input.accountId }, { fields: ['createdAt'] }));
  const now = new Date();
  // The scorer stops counting at velocityCountCap, so the query does too: constant cost however busy the account.
  const [row] = await em
    .getConnection()
    .execute<{ n: number }[]>(
      `select count(*)::int as n from (select 1 from transactions where account_id = ? and created_at > ? limit ${velocityCountCap}) recent`,
      [input.accountId, new Date(now.getTime() - 3_600_000)],
      'all',
      em.getTransactionContext(),
    );
  const recent = row!.n;
  const risk = scoreRisk({ amount: input.amount, currency: input.currency, type: input.type, accountAgeMs: now.getTime() - owner.createdAt.getTime(), transactionsLastHour: recent });
  return fieldsOf(input, risk, now);
}

/**
 * Records a transaction that has succeeded and posts its money on the ledger, inside
 * the caller's database transaction: credits and payments add to the available
 * balance, refunds take from it (insufficient_funds when it does not cover them).
 * Its events (transaction.created, transaction.succeeded, payment.succeeded for a
 * payment) are recorded in the same database transaction.
 */
export async function recordSucceededTransaction(tx: EntityManager, fields: TransactionFields): Promise<Transaction> {
  const row = tx.create(Transaction, { ...fields, status: 'succeeded' });
  await tx.flush();
  await post(tx, {
    accountId: fields.accountId,
    livemode: fields.livemode,
    currency: fields.currency,
    transactionId: row.id,
    availableDelta: fields.type === 'refund' ? -fields.amount : fields.amount,
  });
  await recordTransactionEvents(tx, row, 'created');
  return row;
}
