import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Transaction, type TransactionStatus } from '../db/entities/index.ts';
import { post } from './ledger.ts';
import { recordTransactionEvents } from './transaction-events.ts';
import type { PaymentProcessor } from './processor.ts';

/**
 * Settles a payment that the processor left pending: asks the processor how it
 * ended and, if the transaction is still pending (not canceled meanwhile),
 * records the outcome and posts the money, under a row lock. Running it twice
 * changes nothing the second time. Its events are recorded with the outcome.
 */
export async function settlePendingPayment(em: EntityManager, processor: PaymentProcessor, transactionId: string, processorChargeId: string): Promise<TransactionStatus> {
  const outcome = await processor.settlement(processorChargeId);
  return em.transactional(async (tx) => {
    const transaction = await tx.findOneOrFail(Transaction, { id: transactionId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (transaction.status !== 'pending') return transaction.status;
    transaction.updatedAt = new Date();
    if (outcome.status === 'succeeded') {
      transaction.status = 'succeeded';
      await post(tx, { accountId: transaction.accountId, livemode: transaction.livemode, currency: transaction.currency, transactionId, availableDelta: transaction.amount });
    } else {
      transaction.status = 'failed';
      transaction.failureCode = outcome.failureCode;
      transaction.failureMessage = outcome.failureMessage;
    }
    await tx.flush();
    await recordTransactionEvents(tx, transaction, 'status');
    return transaction.status;
  });
}
