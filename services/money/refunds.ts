import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Transaction } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { formatMoney } from '../../domain/money.ts';
import { serializeTransaction } from '../../objects/transaction.ts';
import { recordEvent } from '../events/record.ts';
import type { PaymentProcessor } from '../processors/types.ts';
import { postAdjustment, postRefund } from './ledger.ts';
import { recordTransactionEvents } from './transaction-events.ts';
import type { TransactionFields } from './transactions.ts';

/*
 * A refund of a charge (POST /v1/transactions, type refund, source_transaction), in
 * three steps:
 * 1. reserveRefund: under a row lock on the source payment, checks what is left to
 *    refund (amount − amount_refunded), raises amount_refunded by the refund, and
 *    takes the money off the balance (the charge's own pending money first, then
 *    available: insufficient_funds otherwise), recording the refund `pending`;
 *    concurrent refunds of one payment queue on that lock and never exceed it;
 * 2. the processor's refund, keyed `<refund id>:refund` (a repeat answers the first);
 * 3. finishRefund: succeeded (transaction.succeeded, payment.refunded with the
 *    payment, the invoice's amount_refunded), or failed: the reservation and the
 *    money are given back (an `adjustment` balance transaction, external → available).
 * A process that dies between 1 and 3 leaves the refund pending with its money
 * reserved; the maintenance reconciler repeats 2 and 3 (reconcileStuckPayments).
 */

export interface RefundRequest {
  sourceTransactionId: string;
  scope: { accountId: string; livemode: boolean };
}

/** Step 1. Throws not_found, invalid_request (not a succeeded payment, wrong currency, more than is left) or insufficient_funds. */
export async function reserveRefund(
  em: EntityManager,
  fields: TransactionFields,
  request: RefundRequest,
): Promise<Transaction> {
  return em.transactional(async (tx) => {
    const source = await tx.findOne(
      Transaction,
      { id: request.sourceTransactionId, accountId: request.scope.accountId, livemode: request.scope.livemode },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (!source) throw new ApiError('not_found', 'source_transaction: no such transaction.');
    if (source.type !== 'payment' || source.status !== 'succeeded') {
      throw new ApiError('invalid_request', 'source_transaction: only a succeeded payment can be refunded.');
    }
    if (source.currency !== fields.currency)
      throw new ApiError(
        'invalid_request',
        `source_transaction: the payment is in ${source.currency}, not ${fields.currency}.`,
      );
    if (!source.processorChargeId)
      throw new ApiError('invalid_request', 'source_transaction: this payment has no processor charge to refund.');
    const remaining = source.amount - source.amountRefunded;
    if (fields.amount > remaining) {
      throw new ApiError(
        'invalid_request',
        `amount: ${formatMoney(fields.amount, source.currency)} exceeds what is left to refund of ${source.id}: ${remaining} (${formatMoney(remaining, source.currency)}).`,
      );
    }
    if (source.invoiceId) {
      // An invoice's credit notes may have credited part of it to the customer balance (services/credit-notes/issue.ts, under
      // this same lock): refunds and those credits together never give back more than the invoice collected.
      const [row] = await tx
        .getConnection()
        .execute<{ credited: string; pre_credited: string; amount_paid: string; total: string; amount_due: string }[]>(
          `select coalesce((select sum(credit_amount) from credit_notes where invoice_id = i.id and status = 'issued'), 0) as credited,
                coalesce((select sum(total) from credit_notes where invoice_id = i.id and status = 'issued' and refund_amount + credit_amount + out_of_band_amount = 0), 0) as pre_credited,
                i.amount_paid, i.total, i.amount_due from invoices i where i.id = ?`,
          [source.invoiceId],
          'all',
          tx.getTransactionContext(),
        );
      const credited = Number(row?.credited ?? 0);
      if (row && credited > 0) {
        // Collected: paid, and the customer balance applied (total − amount due, less what credit notes took off it while open).
        const collected =
          Number(row.amount_paid) + Math.max(0, Number(row.total) - Number(row.pre_credited) - Number(row.amount_due));
        const left = Math.max(0, collected - credited - source.amountRefunded);
        if (fields.amount > left) {
          throw new ApiError(
            'invalid_request',
            `amount: ${formatMoney(fields.amount, source.currency)} exceeds what is left to refund of ${source.id}: ${left} (${formatMoney(left, source.currency)}); credit notes credited ${formatMoney(credited, source.currency)} of its invoice to the customer balance.`,
          );
        }
      }
    }
    source.amountRefunded += fields.amount;
    source.updatedAt = new Date();
    const refund = tx.create(Transaction, {
      ...fields,
      type: 'refund',
      status: 'pending',
      sourceTransactionId: source.id,
      customerId: source.customerId,
      invoiceId: source.invoiceId,
      subscriptionId: source.subscriptionId,
      paymentRequestId: source.paymentRequestId,
    });
    await tx.flush();
    await postRefund(tx, refund, source);
    await recordTransactionEvents(tx, refund, 'created');
    return refund;
  });
}

/** Step 2 and 3 together: the processor's refund, then its outcome recorded. Returns the refund as it stands afterwards. */
export async function completeRefund(
  em: EntityManager,
  processor: PaymentProcessor,
  refundId: string,
): Promise<Transaction> {
  const refund = await em.findOneOrFail(Transaction, { id: refundId });
  if (refund.status !== 'pending' || !refund.sourceTransactionId) return refund;
  const source = await em.findOneOrFail(Transaction, { id: refund.sourceTransactionId });
  const outcome = await processor.refund({
    idempotencyKey: `${refund.id}:refund`,
    processorChargeId: source.processorChargeId!,
    amount: refund.amount,
    currency: refund.currency,
    reason: refund.reference ?? undefined,
    // Its refund.created webhook then names this refund and is not recorded a second time (services/money/processor-events.ts).
    metadata: { refund_transaction_id: refund.id },
  });
  return finishRefund(
    em,
    refundId,
    outcome.status === 'failed'
      ? { status: 'failed', failureCode: outcome.failureCode, failureMessage: outcome.failureMessage }
      : { status: 'succeeded' },
  );
}

/** Step 3, under a lock on the source payment then the refund; only a refund still pending changes. */
export async function finishRefund(
  em: EntityManager,
  refundId: string,
  outcome: { status: 'succeeded' } | { status: 'failed'; failureCode: string; failureMessage: string },
): Promise<Transaction> {
  return em.transactional(async (tx) => {
    const peek = await tx.findOneOrFail(Transaction, { id: refundId }, { refresh: true });
    const source = await tx.findOneOrFail(
      Transaction,
      { id: peek.sourceTransactionId! },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    const refund = await tx.findOneOrFail(
      Transaction,
      { id: refundId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (refund.status !== 'pending') return refund;
    const now = new Date();
    refund.updatedAt = now;
    if (outcome.status === 'succeeded') {
      refund.status = 'succeeded';
      if (source.invoiceId) {
        await tx
          .getConnection()
          .execute(
            `update invoices set amount_refunded = amount_refunded + ? where id = ?`,
            [refund.amount, source.invoiceId],
            'run',
            tx.getTransactionContext(),
          );
      }
      await tx.flush();
      await recordTransactionEvents(tx, refund, 'status');
      await recordEvent(tx, {
        accountId: source.accountId,
        livemode: source.livemode,
        type: 'payment.refunded',
        object: serializeTransaction(source),
        transactionId: source.id,
      });
    } else {
      refund.status = 'failed';
      refund.failureCode = outcome.failureCode;
      refund.failureMessage = outcome.failureMessage;
      source.amountRefunded -= refund.amount;
      source.updatedAt = now;
      await tx.flush();
      await postAdjustment(tx, refund, refund.amount);
      await recordTransactionEvents(tx, refund, 'status');
    }
    return refund;
  });
}
