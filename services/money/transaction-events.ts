import type { EntityManager } from '@mikro-orm/postgresql';

import type { Transaction } from '../../db/entities/index.ts';
import type { EventType } from '../../domain/events.ts';
import { serializeTransaction } from '../../objects/transaction.ts';
import { recordEvents } from '../events/record.ts';

/**
 * The events of one change of a transaction, recorded on the caller's database
 * transaction (see recordEvent):
 * - `created`: `transaction.created`, and, when it was born in a final status (a
 *   credit, a refund, a payment answered at once), that status's events too;
 * - `status`: a pending payment reached its final status (succeeded, failed, or
 *   canceled by DELETE);
 * - `updated`: reference or metadata changed.
 * A final status emits `transaction.<status>`, and for a payment also
 * `payment.succeeded` or `payment.failed` (unless `paymentEvents` is false: a
 * subscription charge's payment events carry the invoice, see services/money/charges.ts).
 */
export async function recordTransactionEvents(
  em: EntityManager,
  transaction: Transaction,
  change: 'created' | 'status' | 'updated',
  options: { paymentEvents?: boolean } = {},
): Promise<void> {
  const paymentEvents = options.paymentEvents ?? true;
  const types: EventType[] = [];
  if (change === 'created') types.push('transaction.created');
  if (change === 'updated') types.push('transaction.updated');
  else if (transaction.status !== 'pending') {
    types.push(`transaction.${transaction.status}`);
    if (paymentEvents && transaction.type === 'payment' && transaction.status === 'succeeded')
      types.push('payment.succeeded');
    if (paymentEvents && transaction.type === 'payment' && transaction.status === 'failed')
      types.push('payment.failed');
  }
  const object = serializeTransaction(transaction);
  await recordEvents(
    em,
    types.map((type) => ({
      accountId: transaction.accountId,
      livemode: transaction.livemode,
      type,
      object,
      transactionId: transaction.id,
    })),
  );
}
