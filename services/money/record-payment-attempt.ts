/**
 * The one door for money in: every payment attempt, whatever its origin, gets its `payment`
 * transaction here (its fields and risk score, its ledger entries, its events):
 * - a subscription's or invoice's charge (services/money/charges.ts chargeCustomer): final at once,
 *   exactly once under its charge row's unique key;
 * - a payment request's attempt on the pay page, or a hosted checkout that paid it
 *   (services/payment-requests/projection.ts recordPaymentRequestPayment): final at once, under a lock on
 *   the request's row and once per processor charge;
 * - a direct card payment (POST /v1/transactions, services/money/payments.ts payByCard): opened `pending`
 *   before the processor is asked, then settled by settlePaymentAttempt;
 * - a processor webhook (services/money/processor-events.ts): charge.succeeded/failed settle a pending
 *   attempt (settlePaymentAttempt); checkout.completed pays a request (above).
 * Each origin holds its own exactly-once claim (named above) around recordPaymentAttempt, in the same
 * database transaction; settlePaymentAttempt takes its claim itself (a row lock, and only from pending).
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { type Account, type BalanceTransaction, Transaction } from '../../db/entities/index.ts';
import type { ProcessorName } from '../../domain/balance-availability.ts';
import type { WorkflowStartContext } from '../context.ts';
import type { ProcessorSettlement } from '../processors/types.ts';
import { currentTime } from '../test-clocks/now.ts';
import { paymentAvailabilityDelayMs } from './availability-delay.ts';
import { startAvailabilityOf } from './balances.ts';
import { postPayment } from './ledger.ts';
import { recordTransactionEvents } from './transaction-events.ts';
import {
  type NewTransaction,
  newTransactionFields,
  recordFailedPayment,
  recordSucceededTransaction,
} from './transactions.ts';

/** How an attempt stands when it is recorded: pending (the processor answers later) or final. */
export type AttemptOutcome =
  | { status: 'pending' }
  | { status: 'succeeded' }
  | { status: 'failed'; failureCode: string; failureMessage: string };

/** What was paid, by whom and for what: the payment transaction's fields before its risk score. */
export interface PaymentAttempt extends Omit<NewTransaction, 'type'> {
  /** Named up front by the caller (the charge row written with it, an id derived from an Idempotency-Key); fresh when unset. */
  id?: string;
}

export interface PaymentAttemptOptions {
  /** Whose delay a succeeded payment's money waits out (domain/balance-availability.ts); sandbox when unset. */
  processor?: ProcessorName;
  /** The account's creation time when the caller has it (the risk score reads it); read when unset. */
  owner?: Pick<Account, 'createdAt'>;
  /** false: payment.succeeded/failed are not the transaction's (the invoice or the payment request carries them). */
  paymentEvents?: boolean;
  /** The money's availability is the caller's workflow's: its balance transaction is written owned (renewCycle). */
  fundsOwnedByWorkflow?: boolean;
  /** The risk score's count of the account's transactions of the past hour, when the caller counted it (chargeCustomer). */
  transactionsLastHour?: number;
}

export interface RecordedAttempt {
  transaction: Transaction;
  /** A succeeded attempt's balance transaction (pending until available_on, or available at once); null otherwise. */
  balanceTransaction: BalanceTransaction | null;
}

/**
 * Records one payment attempt inside the caller's database transaction (under the caller's claim):
 * pending, with transaction.created; succeeded, with its money posted pending on the ledger and its
 * events; failed, with the processor's reason, its events and no ledger entries. The caller starts
 * the availability workflow of a succeeded payment's money after its commit (startAvailabilityOf).
 */
export async function recordPaymentAttempt(
  tx: EntityManager,
  attempt: PaymentAttempt,
  outcome: AttemptOutcome,
  options: PaymentAttemptOptions = {},
): Promise<RecordedAttempt> {
  const { id, ...input } = attempt;
  const fields = await newTransactionFields(
    tx,
    { ...input, type: 'payment' },
    options.owner,
    options.transactionsLastHour,
  );
  if (id) fields.id = id;
  if (outcome.status === 'pending') {
    const transaction = tx.create(Transaction, { ...fields, status: 'pending' });
    await tx.flush();
    await recordTransactionEvents(tx, transaction, 'created');
    return { transaction, balanceTransaction: null };
  }
  if (outcome.status === 'failed') {
    const transaction = await recordFailedPayment(tx, fields, outcome, { paymentEvents: options.paymentEvents });
    return { transaction, balanceTransaction: null };
  }
  return recordSucceededTransaction(tx, fields, {
    delayMs: paymentAvailabilityDelayMs(options.processor, attempt.livemode),
    paymentEvents: options.paymentEvents,
    fundsOwnedByWorkflow: options.fundsOwnedByWorkflow,
  });
}

/** Optional context of settlePaymentAttempt (its first three parameters are the seam the processor webhooks call). */
export interface SettleOptions {
  /** Which processor settled it: sets how long its money stays pending (domain/balance-availability.ts). Default sandbox. */
  processor?: ProcessorName;
  /** The processor's charge id, recorded on the transaction when not already. */
  processorChargeId?: string;
  /** Starts the availability workflow of its pending money after the commit; without it the maintenance reconciler does. */
  temporal?: WorkflowStartContext['temporal'];
}

/**
 * Records how a pending attempt ended (succeeded: the money posted to the pending balance,
 * available after the processor's delay; failed: the processor's reason) with its
 * events, under a row lock, and only if the transaction is still pending: a second
 * call (a racing reconciler, a retried activity, a redelivered webhook) or a payment
 * canceled meanwhile changes nothing. Returns the row.
 */
export async function settlePaymentAttempt(
  em: EntityManager,
  transactionId: string,
  outcome: Exclude<ProcessorSettlement, { status: 'pending' }>,
  options: SettleOptions = {},
): Promise<Transaction> {
  const result = await em.transactional(async (tx) => {
    const transaction = await tx.findOneOrFail(
      Transaction,
      { id: transactionId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (transaction.status !== 'pending') return transaction;
    transaction.updatedAt = currentTime();
    if (options.processorChargeId && !transaction.processorChargeId)
      transaction.processorChargeId = options.processorChargeId;
    if (outcome.status === 'succeeded') {
      transaction.status = 'succeeded';
      await tx.flush();
      await postPayment(tx, transaction, paymentAvailabilityDelayMs(options.processor, transaction.livemode));
    } else if (outcome.status === 'failed') {
      transaction.status = 'failed';
      transaction.failureCode = outcome.failureCode;
      transaction.failureMessage = outcome.failureMessage;
    } else {
      return transaction;
    }
    await tx.flush();
    await recordTransactionEvents(tx, transaction, 'status');
    return transaction;
  });
  if (result.status === 'succeeded') await startAvailabilityOf(em, options, result.id);
  return result;
}
