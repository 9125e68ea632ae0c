import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, type BalanceTransaction, Transaction, type TransactionType } from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import { scoreRisk, velocityCountCap } from '../../domain/risk.ts';
import { insertRowsPart } from '../platform/row-inserts.ts';
import { currentTime } from '../test-clocks/now.ts';
import { paymentAvailabilityDelayMs } from './availability-delay.ts';
import { postCredit, postPayment, postRefund, withBalanceUpdatesLast } from './ledger.ts';
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
  /** What a charge paid: an invoice (with its subscription and customer) or a payment request. */
  links?: TransactionLinks;
}

export interface TransactionLinks {
  invoiceId?: string | null;
  subscriptionId?: string | null;
  paymentRequestId?: string | null;
  customerId?: string | null;
  processorChargeId?: string | null;
  sourceTransactionId?: string | null;
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
    invoiceId: input.links?.invoiceId ?? null,
    subscriptionId: input.links?.subscriptionId ?? null,
    paymentRequestId: input.links?.paymentRequestId ?? null,
    customerId: input.links?.customerId ?? null,
    processorChargeId: input.links?.processorChargeId ?? null,
    sourceTransactionId: input.links?.sourceTransactionId ?? null,
    amountRefunded: 0,
  };
}

/**
 * The risk score's count of an account's transactions of the hour before `now`, as a scalar subquery (`n`). The scorer
 * stops counting at velocityCountCap, so the query does too: constant cost however busy the account.
 */
export function recentTransactionsCount(accountId: string, now: Date): { sql: string; params: unknown[] } {
  return {
    sql: `select count(*)::int as n from (select 1 from transactions where account_id = ? and created_at > ? limit ${velocityCountCap}) recent`,
    params: [accountId, new Date(now.getTime() - 3_600_000)],
  };
}

/**
 * The row of a new transaction: a fresh time-sortable id, and the risk level
 * scored from the amount, the account's age and its transactions of the past hour
 * (domain/risk.ts). Used by POST /v1/transactions and by paid payment requests.
 */
export async function newTransactionFields(
  em: EntityManager,
  input: NewTransaction,
  account?: Pick<Account, 'createdAt'>,
  /** The account's transactions of the past hour, when the caller counted them with a statement of its own (recentTransactionsCount). */
  counted?: number,
): Promise<TransactionFields> {
  const owner = account ?? (await em.findOneOrFail(Account, { id: input.accountId }, { fields: ['createdAt'] }));
  const now = currentTime();
  let recent = counted;
  if (recent === undefined) {
    const count = recentTransactionsCount(input.accountId, now);
    const [row] = await em
      .getConnection()
      .execute<{ n: number }[]>(count.sql, count.params, 'all', em.getTransactionContext());
    recent = row!.n;
  }
  const risk = scoreRisk({
    amount: input.amount,
    currency: input.currency,
    type: input.type,
    accountAgeMs: now.getTime() - owner.createdAt.getTime(),
    transactionsLastHour: recent,
  });
  return fieldsOf(input, risk, now);
}

/**
 * Records a transaction that has succeeded and posts its money on the ledger, inside
 * the caller's database transaction (services/money/ledger.ts): a payment's money arrives
 * pending (available after the processor's delay, `delayMs`), a credit's is
 * available at once, a plain refund takes from the available balance
 * (insufficient_funds when it does not cover it). Its events (transaction.created,
 * transaction.succeeded, and payment.succeeded for a payment unless
 * `paymentEvents` is false: an invoice's charge has that event on the invoice) are
 * recorded in the same database transaction. The caller starts the availability
 * workflow of a payment after its commit (services/money/balances.ts startAvailabilityOf),
 * unless `fundsOwnedByWorkflow`: a subscription's renewal waits for its money itself,
 * and its balance transaction is written owned (services/subscriptions/renew-cycle.ts).
 */
export async function recordSucceededTransaction(
  tx: EntityManager,
  fields: TransactionFields,
  options: { delayMs?: number; paymentEvents?: boolean; fundsOwnedByWorkflow?: boolean } = {},
): Promise<{ transaction: Transaction; balanceTransaction: BalanceTransaction }> {
  // Money in reaches the balance row after the events (withBalanceUpdatesLast), or at the end of the caller's scope.
  return withBalanceUpdatesLast(tx, async () => {
    const data = { ...fields, status: 'succeeded' as const };
    // A payment's row is only inserted: written by postPayment in one statement with its money (no unit of work).
    const payment = fields.type === 'payment';
    const row = tx.create(Transaction, data, { persist: !payment });
    if (!payment) await tx.flush();
    const balanceTransaction = payment
      ? await postPayment(tx, row, options.delayMs ?? paymentAvailabilityDelayMs('sandbox', fields.livemode), {
          ownedByWorkflow: options.fundsOwnedByWorkflow,
          insertWith: [insertRowsPart(tx, Transaction, [data])],
        })
      : fields.type === 'credit'
        ? await postCredit(tx, row)
        : await postRefund(tx, row, null);
    await recordTransactionEvents(tx, row, 'created', { paymentEvents: options.paymentEvents });
    return { transaction: row, balanceTransaction };
  });
}

/** Records a declined payment attempt: `failed` with the processor's reason, no ledger entries; its events in the same database transaction. */
export async function recordFailedPayment(
  tx: EntityManager,
  fields: TransactionFields,
  failure: { failureCode: string; failureMessage: string },
  options: { paymentEvents?: boolean } = {},
): Promise<Transaction> {
  const row = tx.create(Transaction, {
    ...fields,
    status: 'failed',
    failureCode: failure.failureCode,
    failureMessage: failure.failureMessage,
  });
  await tx.flush();
  await recordTransactionEvents(tx, row, 'created', { paymentEvents: options.paymentEvents });
  return row;
}
