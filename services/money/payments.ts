import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import { Transaction, type TransactionStatus } from '../../db/entities/index.ts';
import { paymentSettlementWorkflow } from '../../workflows/payment-settlement.ts';
import type { ServiceContext, WorkflowStartContext } from '../context.ts';
import { sandboxSettlementDelayMs } from '../processors/sandbox.ts';
import type { ProcessorChargeRequest, ProcessorChargeResult } from '../processors/types.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from '../test-clocks/clocks.ts';
import { currentTestClock } from '../test-clocks/now.ts';
import {
  type PaymentAttempt,
  type PaymentAttemptOptions,
  recordPaymentAttempt,
  settlePaymentAttempt,
} from './record-payment-attempt.ts';
import { raiseSandboxDispute } from './sandbox-disputes.ts';

/*
 * A direct card payment (POST /v1/transactions, type payment) reads downhill: payByCard
 * records the attempt `pending` (services/money/record-payment-attempt.ts, with its
 * transaction.created event), asks the processor once, keyed `<transaction id>:payment`
 * (paymentChargeRequest), then continuePayment: a pending answer starts
 * paymentSettlementWorkflow, a final one is recorded at once (settlePaymentAttempt).
 * A process that dies in between leaves the row pending; chargePendingPayment (a
 * retry taking over the Idempotency-Key) and the maintenance reconciler
 * (services/maintenance/sweeps.ts) ask again under the same key (the processor answers
 * with its first outcome) and continue.
 */

/** What a direct card payment reaches: the database, each mode's processor, Temporal's client and live queue. */
export type CardPaymentContext = Pick<ServiceContext, 'orm' | 'processors'> & WorkflowStartContext;

/**
 * A card payment made now: its attempt recorded pending (so a crash after the charge leaves a row
 * to reconcile), charged once, then settled. Returns the transaction as it stands afterwards.
 */
export async function payByCard(
  ctx: CardPaymentContext,
  attempt: PaymentAttempt,
  options: Pick<PaymentAttemptOptions, 'owner'> = {},
): Promise<Transaction> {
  const em = ctx.orm.em.fork();
  const { transaction } = await em.transactional((tx) =>
    recordPaymentAttempt(tx, attempt, { status: 'pending' }, { owner: options.owner }),
  );
  return chargePendingPayment(ctx, transaction, em);
}

/** Charges a pending card payment (again: the same key answers with the processor's first outcome) and continues it. */
export async function chargePendingPayment(
  ctx: Pick<CardPaymentContext, 'processors' | 'temporal'>,
  pending: Transaction,
  em: EntityManager,
): Promise<Transaction> {
  const outcome = await ctx.processors.forMode(pending.livemode).charge(paymentChargeRequest(pending));
  return continuePayment(ctx, em, pending, outcome);
}

/** The processor charge of a card payment: the same for the API and the reconciler, so the processor sees one charge. */
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
  ctx: WorkflowStartContext,
  transactionId: string,
  processorChargeId: string,
): Promise<boolean> {
  const { client, taskQueue } = ctx.temporal;
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

/**
 * What follows the processor's answer. Pending: the settlement workflow
 * takes over and the row is returned as it is; final: recorded now. Returns the
 * transaction as it stands afterwards.
 */
export async function continuePayment(
  ctx: WorkflowStartContext,
  em: EntityManager,
  transaction: Transaction,
  outcome: ProcessorChargeResult,
): Promise<Transaction> {
  if (outcome.status === 'pending') {
    await startPaymentSettlement(ctx, transaction.id, outcome.processorChargeId);
    return transaction;
  }
  const settled = await settlePaymentAttempt(em, transaction.id, outcome, {
    processorChargeId: outcome.processorChargeId,
    temporal: ctx.temporal,
  });
  // The sandbox's dispute test card: disputed once its success has committed (services/money/sandbox-disputes.ts).
  await raiseSandboxDispute(em, settled);
  return settled;
}

/**
 * Settles a payment that the processor left pending: asks the processor how it
 * ended and, if the transaction is still pending (not canceled meanwhile),
 * records the outcome and posts the money, under a row lock. Running it twice
 * changes nothing the second time. Its events are recorded with the outcome.
 */
export async function settlePendingPayment(
  ctx: Pick<ServiceContext, 'processors'> & Partial<WorkflowStartContext>,
  em: EntityManager,
  transactionId: string,
  processorChargeId: string,
): Promise<TransactionStatus> {
  const processor = ctx.processors.forMode(
    (await em.findOneOrFail(Transaction, { id: transactionId }, { fields: ['livemode'] })).livemode,
  );
  const outcome = await processor.settlement(processorChargeId);
  // Still pending at the processor (a slow bank debit): thrown, so the activity retries later.
  if (outcome.status === 'pending')
    throw new Error(`Charge ${processorChargeId} of ${transactionId} is still pending at the processor.`);
  return (
    await settlePaymentAttempt(em, transactionId, outcome, {
      processorChargeId,
      temporal: ctx.temporal,
      processor: processor.name,
    })
  ).status;
}
