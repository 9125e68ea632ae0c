/**
 * Commands on payment-request workflows that the API gives (create, cancel, stop a
 * recurring one), and the account closure: start or update the workflow, answer
 * with its recorded state.
 */
import { WithStartWorkflowOperation } from '@temporalio/client';

import { PaymentRequest, type RecurringPaymentRequest } from '../../db/entities/index.ts';
import type { BillingInterval } from '../../domain/billing-calendar.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import {
  type CancellationReason,
  initialPaymentRequestSnapshot,
  initialRecurringPaymentRequestSnapshot,
  type PaymentRequestSnapshot,
  type RecurringPaymentRequestSnapshot,
} from '../../domain/payment-requests.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import {
  cancelPaymentRequestUpdate,
  checkoutPaidUpdate,
  paymentRequestCreatedUpdate,
  paymentRequestWorkflow,
} from '../../workflows/payment-request.ts';
import {
  cancelRecurringPaymentRequestUpdate,
  recurringPaymentRequestCreatedUpdate,
  recurringPaymentRequestWorkflow,
} from '../../workflows/recurring-payment-request.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import type { ServiceContext } from '../context.ts';
import { bindToClock, taskQueueFor } from '../test-clocks/clocks.ts';
import { allocatePaymentRequest, type CheckoutPaymentInput, recordCheckoutPayment } from './projection.ts';

/**
 * What a command reaches: Temporal (the client and the live queue) to start or message workflows, the links (their
 * public URL) the request's pages use, the database to re-read.
 */
export type PaymentRequestCommandContext = Pick<ServiceContext, 'orm' | 'temporal' | 'links'>;

export interface StartPaymentRequest {
  accountId: string;
  livemode: boolean;
  account: { name: string; language: string };
  amount: number;
  currency: string;
  customerEmail: string;
  reference: string | null;
  metadata: Record<string, string>;
  /** An explicit expiry (ISO), or null to expire `expiresInMs` after the workflow records the request. */
  expiresAt: string | null;
  expiresInMs: number;
  /** The test clock the request lives on (sandbox), from services/test-clocks/clocks.ts clockBindingOf. */
  testClock?: ClockBinding;
  /** The id bound to the request's Idempotency-Key: a retry after a crash reaches the workflow the first try started (its first state answers), never a second one. */
  id?: string;
}

/** The terms a request is made with (one-off or recurring), as its first snapshot records them. */
function termsOf(request: Omit<StartPaymentRequest, 'expiresAt'>) {
  return {
    accountId: request.accountId,
    livemode: request.livemode,
    amount: request.amount,
    currency: request.currency,
    customerEmail: request.customerEmail,
    reference: request.reference,
    metadata: request.metadata,
  };
}

/** Starts a payment request's workflow and answers with its first recorded state (update-with-start). */
export async function startPaymentRequest(
  ctx: PaymentRequestCommandContext,
  request: StartPaymentRequest,
): Promise<PaymentRequestSnapshot> {
  const allocated = allocatePaymentRequest();
  const id = request.id ?? allocated.id;
  const token = allocated.token;
  const snapshot = initialPaymentRequestSnapshot({
    id,
    ...termsOf(request),
    token,
    recurringPaymentRequestId: null,
    period: null,
  });
  if (request.testClock) await bindToClock(ctx.temporal.client, request.testClock, id);
  return ctx.temporal.client.workflow.executeUpdateWithStart(paymentRequestCreatedUpdate, {
    startWorkflowOperation: new WithStartWorkflowOperation(paymentRequestWorkflow, {
      workflowId: id,
      taskQueue: taskQueueFor(ctx.temporal.taskQueue, request.testClock),
      args: [
        {
          request: snapshot,
          accountName: request.account.name,
          locale: request.account.language,
          publicUrl: ctx.links.publicUrl,
          expiresInMs: request.expiresInMs,
          expiresAt: request.expiresAt,
          ...(request.testClock ? { testClock: request.testClock } : {}),
        },
      ],
      workflowIdConflictPolicy: request.id ? 'USE_EXISTING' : 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Payment request of ${formatMoney(request.amount, request.currency)} to ${request.customerEmail}`,
      typedSearchAttributes: [
        { key: AccountIdKey, value: request.accountId },
        { key: LivemodeKey, value: request.livemode },
      ],
    }),
  });
}

/** Starts a recurring request's workflow (it sends the first request at once) and answers with its first recorded state. */
export async function startRecurringPaymentRequest(
  ctx: PaymentRequestCommandContext,
  request: Omit<StartPaymentRequest, 'expiresAt'> & { interval: BillingInterval },
): Promise<RecurringPaymentRequestSnapshot> {
  const snapshot = initialRecurringPaymentRequestSnapshot({
    id: newId('recurringPaymentRequest'),
    ...termsOf(request),
    interval: request.interval,
    expiresInMs: request.expiresInMs,
  });
  const { interval } = request;
  if (request.testClock) await bindToClock(ctx.temporal.client, request.testClock, snapshot.id);
  return ctx.temporal.client.workflow.executeUpdateWithStart(recurringPaymentRequestCreatedUpdate, {
    startWorkflowOperation: new WithStartWorkflowOperation(recurringPaymentRequestWorkflow, {
      workflowId: snapshot.id,
      taskQueue: taskQueueFor(ctx.temporal.taskQueue, request.testClock),
      args: [
        {
          snapshot,
          accountName: request.account.name,
          locale: request.account.language,
          publicUrl: ctx.links.publicUrl,
          ...(request.testClock ? { testClock: request.testClock } : {}),
        },
      ],
      workflowIdConflictPolicy: 'FAIL',
      staticSummary: `Recurring request of ${formatMoney(request.amount, request.currency)} to ${request.customerEmail} every ${interval.count} ${interval.unit}(s)`,
      typedSearchAttributes: [
        { key: AccountIdKey, value: request.accountId },
        { key: LivemodeKey, value: request.livemode },
      ],
    }),
  });
}

/**
 * Cancels a pending request through its workflow, which refuses (`invalid_state`)
 * one that is no longer pending; the answer comes after the projection says canceled.
 */
export async function cancelPaymentRequest(
  ctx: PaymentRequestCommandContext,
  request: PaymentRequest,
  reason: CancellationReason,
): Promise<PaymentRequestSnapshot> {
  if (request.status !== 'pending')
    throw new ApiError('invalid_state', `This payment request is already ${request.status}.`);
  try {
    return await ctx.temporal.client.workflow
      .getHandle(request.id)
      .executeUpdate(cancelPaymentRequestUpdate, { args: [{ reason }] });
  } catch (error) {
    // The workflow may have ended (paid, expired) after the projection was read.
    const now = await ctx.orm.em.fork().findOne(PaymentRequest, { id: request.id });
    if (now && now.status !== 'pending')
      throw new ApiError('invalid_state', `This payment request is already ${now.status}.`);
    throw error;
  }
}

/** Stops a recurring request through its workflow; `invalid_state` when already canceled. */
export async function cancelRecurringPaymentRequest(
  ctx: PaymentRequestCommandContext,
  row: RecurringPaymentRequest,
  reason: CancellationReason,
): Promise<RecurringPaymentRequestSnapshot> {
  if (row.status !== 'active')
    throw new ApiError('invalid_state', 'This recurring payment request is already canceled.');
  return ctx.temporal.client.workflow
    .getHandle(row.id)
    .executeUpdate(cancelRecurringPaymentRequestUpdate, { args: [{ reason }] });
}

/**
 * A hosted checkout (Stripe Checkout) took a request's payment (the processor's webhook).
 * A pending request is paid through its workflow (the `checkoutPaid` update), which records
 * the payment transaction once and the request `succeeded` (receipt email, events). Money
 * for a request that is no longer payable (expired or canceled while the customer was on the
 * checkout page; its workflow may have ended) still moved: it goes on the ledger as a
 * payment linked to the request, which keeps its status (`paid: false`). Safe to repeat:
 * every path finds the transaction of the same processor charge.
 */
export async function settleCheckoutPayment(
  ctx: Pick<ServiceContext, 'orm' | 'temporal' | 'processors'>,
  input: CheckoutPaymentInput,
): Promise<{ transactionId: string; paid: boolean }> {
  try {
    const result = await ctx.temporal.client.workflow
      .getHandle(input.paymentRequestId)
      .executeUpdate(checkoutPaidUpdate, {
        args: [{ processorChargeId: input.processorChargeId, paymentMethod: input.paymentMethod }],
      });
    if (result.outcome === 'succeeded' && result.request.transactionId)
      return { transactionId: result.request.transactionId, paid: true };
  } catch (error) {
    // The workflow ended (expired, canceled, paid and done) after the request stopped being pending.
    const now = await ctx.orm.em.fork().findOne(PaymentRequest, { id: input.paymentRequestId });
    if (!now || now.status === 'pending') throw error;
  }
  const transactionId = await recordCheckoutPayment(ctx, ctx.orm.em.fork(), input, { markPaid: false });
  const request = await ctx.orm.em.fork().findOneOrFail(PaymentRequest, { id: input.paymentRequestId });
  return { transactionId, paid: request.transactionId === transactionId };
}
