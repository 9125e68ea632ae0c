import { randomBytes } from 'node:crypto';

import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import { PaymentRequest, RecurringPaymentRequest, Transaction } from '../../db/entities/index.ts';
import { paymentRequestEventTypes, recurringPaymentRequestEventType } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import type { PaymentRequestSnapshot, RecurringPaymentRequestSnapshot } from '../../domain/payment-requests.ts';
import { serializePaymentRequest, serializeRecurringPaymentRequest } from '../../objects/payment-request.ts';
import {
  paymentRequestCreatedUpdate,
  paymentRequestWorkflow,
  type PaymentRequestWorkflowInput,
} from '../../workflows/payment-request.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import type { ServiceContext, WorkflowStartContext } from '../context.ts';
import { recordEvent } from '../events/record.ts';
import { startAvailabilityOf } from '../money/balances.ts';
import { recordPaymentAttempt } from '../money/record-payment-attempt.ts';
import { charges } from '../observability/metrics.ts';
import { writeVersioned } from '../platform/versioned-write.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from '../test-clocks/clocks.ts';
import { currentTestClock } from '../test-clocks/now.ts';

const toDate = (iso: string | null) => (iso === null ? null : new Date(iso));

/** A new payment request's id and the secret of its link: 32 random bytes, base64url (256 bits). */
/**
 * What paying a request reaches: each mode's processor, and where the availability workflow of its money starts
 * (none: the maintenance reconciler starts it).
 */
export type PaymentServices = Pick<ServiceContext, 'processors'> & Partial<WorkflowStartContext>;

export function allocatePaymentRequest(): { id: string; token: string } {
  return { id: newId('paymentRequest'), token: randomBytes(32).toString('base64url') };
}

/** The columns a one-time and a recurring payment request's rows share, from its workflow's snapshot. */
function requestFields<S extends PaymentRequestSnapshot | RecurringPaymentRequestSnapshot>(s: S) {
  return {
    id: s.id,
    accountId: s.accountId,
    livemode: s.livemode,
    // Projections are written by the request's workflow, on its clock if it has one (services/test-clocks/now.ts).
    testClockId: currentTestClock()?.id ?? null,
    amount: s.amount,
    currency: s.currency,
    status: s.status as S['status'],
    customerEmail: s.customerEmail,
    reference: s.reference,
    metadata: s.metadata,
  };
}

/**
 * Writes a payment request's projection row. Idempotent and ordered: the row only
 * changes when the snapshot's version is newer than the stored one. A write that
 * changes the row records its events (domain/events.ts paymentRequestEventTypes) in
 * the same database transaction; `links.publicUrl` builds the payment_url they show.
 */
export async function projectPaymentRequest(
  em: EntityManager,
  s: PaymentRequestSnapshot,
  links: { publicUrl: string },
): Promise<void> {
  const row = {
    ...requestFields(s),
    token: s.token,
    expiresAt: new Date(s.expiresAt),
    transactionId: s.transactionId,
    paidAt: toDate(s.paidAt),
    failureReason: s.failureReason,
    canceledAt: toDate(s.canceledAt),
    cancellationReason: s.cancellationReason,
    lastPaymentError: s.lastPaymentError,
    attempts: s.attempts,
    recurringPaymentRequestId: s.recurringPaymentRequestId,
    period: s.period,
    version: s.version,
    createdAt: new Date(s.createdAt),
    updatedAt: new Date(s.updatedAt),
  };
  await em.transactional(async (tx) => {
    // The row as it was names the events; a write that changes nothing (a retry) records none.
    const { written, previous } = await writeVersioned<typeof row, { status: string; attempts: number }>(
      tx,
      PaymentRequest,
      'payment_requests',
      row,
      {
        insertOnly: ['accountId', 'testClockId', 'token', 'createdAt'],
        previousColumns: ['status', 'attempts'],
      },
    );
    if (!written) return;
    const object = serializePaymentRequest(s, links.publicUrl);
    for (const type of paymentRequestEventTypes(previous ?? null, s)) {
      await recordEvent(tx, {
        accountId: s.accountId,
        livemode: s.livemode,
        type,
        object,
        transactionId: s.transactionId,
      });
    }
  });
}

export async function projectRecurringPaymentRequest(
  em: EntityManager,
  s: RecurringPaymentRequestSnapshot,
): Promise<void> {
  const row = {
    ...requestFields(s),
    interval: s.interval.unit,
    intervalCount: s.interval.count,
    expiresInMs: s.expiresInMs,
    period: s.period,
    issuedPeriods: s.issuedPeriods,
    latestPaymentRequestId: s.latestPaymentRequestId,
    nextPaymentRequestAt: toDate(s.nextPaymentRequestAt),
    canceledAt: toDate(s.canceledAt),
    cancellationReason: s.cancellationReason,
    version: s.version,
    createdAt: new Date(s.createdAt),
    updatedAt: new Date(s.updatedAt),
  };
  await em.transactional(async (tx) => {
    const { written, previous } = await writeVersioned<typeof row, { status: string }>(
      tx,
      RecurringPaymentRequest,
      'recurring_payment_requests',
      row,
      {
        insertOnly: ['accountId', 'testClockId', 'createdAt'],
        previousColumns: ['status'],
      },
    );
    if (!written) return;
    const type = recurringPaymentRequestEventType(previous ?? null, s);
    await recordEvent(tx, {
      accountId: s.accountId,
      livemode: s.livemode,
      type,
      object: serializeRecurringPaymentRequest(s),
      transactionId: null,
    });
  });
}

export interface PaymentRequestChargeInput {
  paymentRequestId: string;
  /** `${paymentRequestId}:attempt:${n}`: one processor charge per attempt, however often this runs. */
  idempotencyKey: string;
  accountId: string;
  livemode: boolean;
  amount: number;
  currency: string;
  paymentMethod: string;
  reference: string | null;
  metadata: Record<string, string>;
}

export type PaymentRequestChargeOutcome =
  | { status: 'succeeded'; transactionId: string; processorChargeId: string }
  | { status: 'failed'; failureCode: string; failureMessage: string };

/**
 * Charges one attempt at paying a request and records it as a `payment`
 * transaction linked to the request (`payment_request`): `succeeded` with its
 * ledger entries (the money pending until available_on), or `failed` with the
 * decline reason and no entries. Safe to run again (activity retry, a worker that
 * died after the processor answered): the processor answers a repeated key with
 * its first outcome (the same processor charge id), and the write happens under a
 * lock on the request's row and finds the transaction of that processor charge
 * when there is one, so each attempt is recorded once. A succeeded attempt's
 * transaction is the request's `transaction_id`. The events of a failed attempt:
 * transaction.created and transaction.failed here; payment.failed comes with the
 * payment request (its projection).
 */
export async function chargePaymentRequest(
  ctx: PaymentServices,
  em: EntityManager,
  input: PaymentRequestChargeInput,
): Promise<PaymentRequestChargeOutcome> {
  const processor = ctx.processors.forMode(input.livemode);
  const answer = await processor.charge({
    idempotencyKey: input.idempotencyKey,
    amount: input.amount,
    currency: input.currency,
    paymentMethod: input.paymentMethod,
    description: input.reference ?? `Payment request ${input.paymentRequestId}`,
  });
  // The pay page offers only methods that answer at once; a processor that leaves one pending is not settled here.
  const result =
    answer.status === 'pending'
      ? {
          status: 'failed' as const,
          failureCode: 'payment_method_unsupported',
          failureMessage: 'This payment method settles later; pay with a card.',
        }
      : answer;
  const transactionId = await recordPaymentRequestPayment(em, processor.name, input, answer.processorChargeId, result, {
    markPaid: true,
  });
  charges.inc({ kind: 'payment_request', outcome: result.status, livemode: String(input.livemode) });
  if (result.status === 'failed')
    return { status: 'failed', failureCode: result.failureCode, failureMessage: result.failureMessage };
  await startAvailabilityOf(em.fork(), ctx, transactionId);
  return { status: 'succeeded', transactionId, processorChargeId: answer.processorChargeId };
}

/**
 * Records one attempt at paying a request as a `payment` transaction (once per processor
 * charge): under a lock on the request's row, a succeeded attempt of a request that already
 * has its transaction answers that one, and a transaction of the same processor charge
 * answers itself. `markPaid` makes a succeeded one the request's `transaction_id` (not for
 * money that arrived for a request no longer payable: it is on the ledger, the request
 * keeps its status).
 */
export async function recordPaymentRequestPayment(
  em: EntityManager,
  processorName: 'sandbox' | 'stripe',
  input: Pick<
    PaymentRequestChargeInput,
    'paymentRequestId' | 'accountId' | 'livemode' | 'amount' | 'currency' | 'paymentMethod' | 'reference' | 'metadata'
  >,
  processorChargeId: string,
  result: { status: 'succeeded' } | { status: 'failed'; failureCode: string; failureMessage: string },
  options: { markPaid: boolean },
): Promise<string> {
  return em.transactional(async (tx) => {
    const [locked] = await tx
      .getConnection()
      .execute<
        { transaction_id: string | null }[]
      >(`select transaction_id from payment_requests where id = ? for update`, [input.paymentRequestId], 'all', tx.getTransactionContext());
    if (!locked) throw new Error(`payment request ${input.paymentRequestId} has no projection row`);
    if (options.markPaid && result.status === 'succeeded' && locked.transaction_id) return locked.transaction_id;
    const recorded = await tx.findOne(Transaction, { processorChargeId, type: 'payment', livemode: input.livemode });
    if (recorded) {
      if (options.markPaid && result.status === 'succeeded' && recorded.status === 'succeeded')
        await tx.nativeUpdate(PaymentRequest, { id: input.paymentRequestId }, { transactionId: recorded.id });
      return recorded.id;
    }
    const { transaction } = await recordPaymentAttempt(
      tx,
      {
        accountId: input.accountId,
        livemode: input.livemode,
        amount: input.amount,
        currency: input.currency,
        reference: input.reference,
        metadata: input.metadata,
        paymentMethod: input.paymentMethod,
        links: { paymentRequestId: input.paymentRequestId, processorChargeId },
      },
      result,
      // A failed attempt's payment.failed comes with the payment request (its projection); a succeeded one's is the transaction's.
      { processor: processorName, paymentEvents: result.status === 'succeeded' },
    );
    if (options.markPaid && result.status === 'succeeded')
      await tx.nativeUpdate(PaymentRequest, { id: input.paymentRequestId }, { transactionId: transaction.id });
    return transaction.id;
  });
}

export interface CheckoutPaymentInput {
  paymentRequestId: string;
  /** The processor's charge of the completed checkout (Stripe: the Checkout Session's PaymentIntent). */
  processorChargeId: string;
  /** The payment method the customer paid with, when the processor said; else the checkout's id. */
  paymentMethod: string;
}

/**
 * A hosted checkout (Stripe Checkout) took the payment of a request: its `payment`
 * transaction, succeeded with its ledger entries, once per processor charge however
 * often this runs (the webhook redelivered, an activity retried). `markPaid` as above.
 */
export async function recordCheckoutPayment(
  ctx: PaymentServices,
  em: EntityManager,
  input: CheckoutPaymentInput,
  options: { markPaid: boolean },
): Promise<string> {
  const request = await em.findOneOrFail(PaymentRequest, { id: input.paymentRequestId });
  const processor = ctx.processors.forMode(request.livemode);
  const transactionId = await recordPaymentRequestPayment(
    em,
    processor.name,
    {
      paymentRequestId: request.id,
      accountId: request.accountId,
      livemode: request.livemode,
      amount: request.amount,
      currency: request.currency,
      paymentMethod: input.paymentMethod,
      reference: request.reference ?? null,
      metadata: request.metadata,
    },
    input.processorChargeId,
    { status: 'succeeded' },
    options,
  );
  await startAvailabilityOf(em.fork(), ctx, transactionId);
  return transactionId;
}

/**
 * Starts the workflow of a payment request that a recurring request issues, and
 * returns once it has recorded itself (its projection row exists). A top-level
 * workflow, not a child: a payment request outlives the run that issued it (the
 * recurring workflow continues as new every period), and it is a resource of its
 * own. Safe to run again: the id is fixed by the caller and a second start of it
 * is refused (REJECT_DUPLICATE), which means it is already there.
 */
export async function issuePaymentRequest(
  ctx: WorkflowStartContext,
  em: EntityManager,
  input: PaymentRequestWorkflowInput,
): Promise<void> {
  const { client, taskQueue } = ctx.temporal;
  const { request } = input;
  // Issued by a recurring request on a test clock: the clock waits for it too.
  if (input.testClock) await bindToClock(client, input.testClock, request.id);
  try {
    await client.workflow.start(paymentRequestWorkflow, {
      workflowId: request.id,
      taskQueue: taskQueueFor(taskQueue, input.testClock),
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Payment request of ${formatMoney(request.amount, request.currency)} to ${request.customerEmail} (period ${request.period} of ${request.recurringPaymentRequestId})`,
      typedSearchAttributes: [
        { key: AccountIdKey, value: request.accountId },
        { key: LivemodeKey, value: request.livemode },
      ],
    });
  } catch (error) {
    if (input.testClock) await unbindFromClock(client, input.testClock, request.id);
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  try {
    await client.workflow.getHandle(request.id).executeUpdate(paymentRequestCreatedUpdate);
  } catch (error) {
    // Already recorded and ended (canceled at once, say): its row is there, which is all this waits for.
    if (!(await em.findOne(PaymentRequest, { id: request.id }, { fields: ['id'] }))) throw error;
  }
}
