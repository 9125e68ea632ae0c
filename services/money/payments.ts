import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import { Transaction, type TransactionStatus } from '../../db/entities/index.ts';
import type { ProcessorName } from '../../domain/balance-availability.ts';
import { paymentSettlementWorkflow } from '../../workflows/payment-settlement.ts';
import type { Processors } from '../processors/index.ts';
import { sandboxSettlementDelayMs } from '../processors/sandbox.ts';
import type { ProcessorChargeRequest, ProcessorChargeResult, ProcessorSettlement } from '../processors/types.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from '../test-clocks/clocks.ts';
import { currentTestClock, currentTime } from '../test-clocks/now.ts';
import { paymentAvailabilityDelayMs, startAvailabilityOf, type WorkflowStarter } from './balances.ts';
import { postPayment } from './ledger.ts';
import { recordTransactionEvents } from './transaction-events.ts';
import type { TransactionFields } from './transactions.ts';

/*
 * A direct payment (POST /v1/transactions, type payment) in three steps, shared by
 * the API and the maintenance workflow's reconciler (services/maintenance/sweeps.ts):
 * 1. recordPendingPayment: the row, `pending`, with its transaction.created event;
 * 2. the processor charge, keyed `<transaction id>:payment` (paymentChargeRequest);
 * 3. continuePayment: a pending outcome starts paymentSettlementWorkflow, a final
 *    one is recorded at once (recordPaymentOutcome).
 * A process that dies between 1 and 3 leaves the row pending; the reconciler
 * repeats 2 (the repeated key returns the first outcome) and 3.
 */

/** Step 1: the pending row of a payment and its transaction.created event, in one database transaction. */
export async function recordPendingPayment(em: EntityManager, fields: TransactionFields): Promise<Transaction> {
  return em.transactional(async (tx) => {
    const row = tx.create(Transaction, { ...fields, status: 'pending' });
    await tx.flush();
    await recordTransactionEvents(tx, row, 'created');
    return row;
  });
}

/** Step 2's request: the same for the API and the reconciler, so the processor sees one charge. */
export function paymentChargeRequest(
  transaction: Pick<Transaction, 'id' | 'amount' | 'currency' | 'paymentMethod' | 'reference'>,
): ProcessorChargeRequest {
  if (!transaction.paymentMethod) throw new Error(`Payment ${transaction.id} has no payment method.`);
  return {
    idempotencyKey: `${transaction.id}:payment`,
    amount: transaction.amount,
    currency: transaction.currency,
    paymentMethod: transaction.paymentMethod,
    description: transaction.reference ?? `Payment ${transaction.id}`,
    // The processor's webhooks (charge.succeeded/failed) find the payment by it (api/routes/processor-webhooks.ts).
    metadata: { transaction_id: transaction.id },
  };
}

/**
 * Starts the settlement workflow of a payment the processor left pending (workflow
 * id = transaction id). Idempotent: when a workflow with that id exists, running or
 * closed, it is left alone (`false`).
 */
export async function startPaymentSettlement(
  client: Client,
  taskQueue: string,
  transactionId: string,
  processorChargeId: string,
): Promise<boolean> {
  // A payment of an object on a test clock settles on the clock's time.
  const testClock = currentTestClock();
  if (testClock) await bindToClock(client, testClock, transactionId);
  try {
    await client.workflow.start(paymentSettlementWorkflow, {
      workflowId: transactionId,
      taskQueue: taskQueueFor(taskQueue, testClock),
      args: [
        {
          transactionId,
          processorChargeId,
          settleAfterMs: sandboxSettlementDelayMs,
          ...(testClock ? { testClock } : {}),
        },
      ],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Settlement of ${transactionId}`,
    });
    return true;
  } catch (error) {
    if (testClock) await unbindFromClock(client, testClock, transactionId);
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/** Optional context of recordPaymentOutcome (its first three parameters are the seam the processor webhooks call). */
export interface PaymentOutcomeOptions {
  /** Which processor settled it: sets how long its money stays pending (domain/balance-availability.ts). Default sandbox. */
  processor?: ProcessorName;
  /** The processor's charge id, recorded on the transaction when not already. */
  processorChargeId?: string;
  /** Starts the availability workflow of its pending money after the commit; without it the maintenance reconciler does. */
  starter?: WorkflowStarter;
}

/**
 * Records how a payment ended (succeeded: the money posted to the pending balance,
 * available after the processor's delay; failed: the processor's reason) with its
 * events, under a row lock, and only if the transaction is still pending: a second
 * call (a racing reconciler, a retried activity) or a payment canceled meanwhile
 * changes nothing. Returns the row.
 */
export async function recordPaymentOutcome(
  em: EntityManager,
  transactionId: string,
  outcome: Exclude<ProcessorSettlement, { status: 'pending' }>,
  options: PaymentOutcomeOptions = {},
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
  if (result.status === 'succeeded') await startAvailabilityOf(em, options.starter, result.id);
  return result;
}

/**
 * Step 3: what follows the processor's answer. Pending: the settlement workflow
 * takes over and the row is returned as it is; final: recorded now. Returns the
 * transaction as it stands afterwards.
 */
export async function continuePayment(
  em: EntityManager,
  client: Client,
  taskQueue: string,
  transaction: Transaction,
  outcome: ProcessorChargeResult,
): Promise<Transaction> {
  if (outcome.status === 'pending') {
    await startPaymentSettlement(client, taskQueue, transaction.id, outcome.processorChargeId);
    return transaction;
  }
  return recordPaymentOutcome(em, transaction.id, outcome, {
    processorChargeId: outcome.processorChargeId,
    starter: { client, taskQueue },
  });
}

/**
 * Settles a payment that the processor left pending: asks the processor how it
 * ended and, if the transaction is still pending (not canceled meanwhile),
 * records the outcome and posts the money, under a row lock. Running it twice
 * changes nothing the second time. Its events are recorded with the outcome.
 */
export async function settlePendingPayment(
  em: EntityManager,
  processors: Processors,
  transactionId: string,
  processorChargeId: string,
  starter?: WorkflowStarter,
): Promise<TransactionStatus> {
  const processor = processors.forMode(
    (await em.findOneOrFail(Transaction, { id: transactionId }, { fields: ['livemode'] })).livemode,
  );
  const outcome = await processor.settlement(processorChargeId);
  // Still pending at the processor (a slow bank debit): thrown, so the activity retries later.
  if (outcome.status === 'pending')
    throw new Error(`Charge ${processorChargeId} of ${transactionId} is still pending at the processor.`);
  return (
    await recordPaymentOutcome(em, transactionId, outcome, { processorChargeId, starter, processor: processor.name })
  ).status;
}
