/**
 * paymentRequestWorkflow: one per payment request, workflow id = payment request
 * id (`pay_...`). It owns the request's life: it records `pending`, emails the
 * customer the link, then waits for the first of
 * - a `pay` update from the pay page: one charge through the processor per
 *   attempt; a success records the payment on the ledger (`succeeded`), a decline
 *   keeps the request payable and answers with the reason;
 * - a `cancel` update (`canceled`);
 * - its expiry timer (`failed`, reason `expired`).
 *
 * Paying twice charges once: the validator refuses a pay once the request is no
 * longer pending, and every message that can change the state runs one at a time
 * (a promise-chain lock), so a second pay that arrives while a charge is in flight
 * waits for it and then finds the request paid. A replayed pay (same attempt key,
 * from the same rendered form) is answered with the first attempt's result.
 *
 * Deterministic code only: time is workflow time, every side effect is an activity.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { formatMoney } from '../domain/money.ts';
import {
  type CancellationReason,
  isPayPageMethod,
  maxPayAttempts,
  type PaymentRequestSnapshot,
  paymentUrl,
  type PayResult,
  receiptEmail,
  requestEmail,
} from '../domain/payment-requests.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface PaymentRequestWorkflowInput {
  /** Version 0: id, account, amount, customer, token set; times are placeholders the workflow fills in. */
  request: PaymentRequestSnapshot;
  /** Who asks, as the emails name them. */
  accountName: string;
  /** BCP 47 tag for formatting amounts in emails (the account's language). */
  locale: string;
  /** Base of the pay link in the email (PUBLIC_URL). */
  publicUrl: string;
  /** Payable for this long from the start, unless `expiresAt` is given. */
  expiresInMs: number;
  /** An exact expiry instant the caller asked for. */
  expiresAt: string | null;
  /** The test clock the request lives on (sandbox): its time is the request's. */
  testClock?: ClockBinding;
}

export interface PayInput {
  /** A test payment method the pay page offers (cards only). */
  paymentMethod: string;
  /** One per rendered form and method: a replay of the same form gets the first answer. */
  attemptKey: string;
}

/** Resolves once the request is recorded as pending: the API's read-your-write. */
export const paymentRequestCreatedUpdate = defineUpdate<PaymentRequestSnapshot>('paymentRequestCreated');
/** Pays with a method from the pay page. Refused (`invalid_state`) once the request is no longer pending. */
export const payUpdate = defineUpdate<PayResult, [PayInput]>('pay');
/** Cancels a pending request. Refused (`invalid_state`) otherwise. */
export const cancelPaymentRequestUpdate = defineUpdate<PaymentRequestSnapshot, [{ reason: CancellationReason }]>(
  'cancelPaymentRequest',
);
/**
 * A hosted checkout (Stripe Checkout, docs/processors.md) took the payment: sent by the
 * processor webhook. Records the payment once and the request `succeeded`; a request
 * already paid answers `already_paid`, one no longer payable `not_payable` (the caller
 * puts that money on the ledger without the request).
 */
export const checkoutPaidUpdate = defineUpdate<PayResult, [CheckoutPaid]>('checkoutPaid');
export interface CheckoutPaid {
  processorChargeId: string;
  paymentMethod: string;
}
export const paymentRequestQuery = defineQuery<PaymentRequestSnapshot>('paymentRequest');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['IdempotencyKeyReuseError'],
  },
});

const iso = (instant: Date | number) => new Date(instant).toISOString();

function refuse(type: 'invalid_state' | 'invalid_request', message: string): never {
  throw ApplicationFailure.create({ type, message, nonRetryable: true });
}

export async function paymentRequestWorkflow(input: PaymentRequestWorkflowInput): Promise<PaymentRequestSnapshot> {
  let request = input.request;
  let created = false;
  /** Workflow time, or the test clock's (workflows/clock-sleep.ts). */
  const clock = workflowClock(input.testClock);
  const now = () => clock.now().getTime();
  const amount = formatMoney(request.amount, request.currency, input.locale);
  /** Answers by attempt key, so a replayed form never charges again. */
  const answered = new Map<string, PayResult>();

  // One state-changing step at a time, in arrival order.
  let tail: Promise<unknown> = Promise.resolve();
  function serialized<T>(step: () => Promise<T>): Promise<T> {
    const run = tail.then(step);
    tail = run.catch(() => undefined);
    return run;
  }

  async function record(changes: Partial<PaymentRequestSnapshot>): Promise<void> {
    request = { ...request, ...changes, updatedAt: iso(now()), version: request.version + 1 };
    await activities.projectPaymentRequest(request);
    describe();
  }

  function describe(): void {
    const lastError = request.lastPaymentError ? ` Last attempt declined: ${request.lastPaymentError.code}.` : '';
    const details = {
      pending: `Waiting for ${request.customerEmail} to pay ${amount} (link expires at ${request.expiresAt}); ${request.attempts} attempt(s).${lastError}`,
      succeeded: `Paid ${amount} at ${request.paidAt}; transaction ${request.transactionId}.`,
      failed: `Expired unpaid at ${request.expiresAt}.`,
      canceled: `Canceled (${request.cancellationReason}) at ${request.canceledAt}.`,
    }[request.status];
    setCurrentDetails(details);
  }

  async function attempt(pay: PayInput): Promise<PayResult> {
    const earlier = answered.get(pay.attemptKey);
    if (earlier) return earlier;
    if (request.status === 'succeeded') return { outcome: 'already_paid', request, error: null };
    if (request.status !== 'pending') return { outcome: 'not_payable', request, error: null };
    const n = request.attempts + 1;
    setCurrentDetails(`Charging attempt ${n} with ${pay.paymentMethod}.`);
    const outcome = await activities.chargePaymentRequest({
      paymentRequestId: request.id,
      idempotencyKey: `${request.id}:attempt:${n}`,
      accountId: request.accountId,
      livemode: request.livemode,
      amount: request.amount,
      currency: request.currency,
      paymentMethod: pay.paymentMethod,
      reference: request.reference,
      metadata: request.metadata,
    });
    let result: PayResult;
    if (outcome.status === 'succeeded') {
      await record({ status: 'succeeded', attempts: n, transactionId: outcome.transactionId, paidAt: iso(now()) });
      result = { outcome: 'succeeded', request, error: null };
    } else {
      const error = { code: outcome.failureCode, message: outcome.failureMessage };
      await record({ attempts: n, lastPaymentError: { ...error, paymentMethod: pay.paymentMethod, at: iso(now()) } });
      result = { outcome: 'declined', request, error };
    }
    answered.set(pay.attemptKey, result);
    return result;
  }

  setHandler(paymentRequestQuery, () => request);
  setHandler(paymentRequestCreatedUpdate, async () => {
    await condition(() => created);
    return request;
  });
  setHandler(payUpdate, (pay) => serialized(() => attempt(pay)), {
    validator: (pay) => {
      if (typeof pay?.attemptKey !== 'string' || pay.attemptKey.length === 0 || pay.attemptKey.length > 200)
        refuse('invalid_request', 'attemptKey: 1 to 200 characters.');
      if (typeof pay.paymentMethod !== 'string' || !isPayPageMethod(pay.paymentMethod)) {
        refuse(
          'invalid_request',
          'Only the test cards of the pay page are accepted here; bank debits settle later and are not offered.',
        );
      }
      if (!created) refuse('invalid_state', 'This payment request is being created; try again in a moment.');
      if (request.status !== 'pending') refuse('invalid_state', `This payment request is ${request.status}.`);
      if (request.attempts >= maxPayAttempts && !answered.has(pay.attemptKey)) {
        refuse('invalid_state', `This payment request has had ${maxPayAttempts} declined attempts; ask for a new one.`);
      }
    },
  });
  // Added with Stripe Checkout: only new histories carry this update, so replays of older ones are unchanged.
  setHandler(
    checkoutPaidUpdate,
    (paid) =>
      serialized(async (): Promise<PayResult> => {
        if (request.status === 'succeeded') return { outcome: 'already_paid', request, error: null };
        if (request.status !== 'pending') return { outcome: 'not_payable', request, error: null };
        setCurrentDetails(`Recording the checkout payment ${paid.processorChargeId}.`);
        const transactionId = await activities.recordCheckoutPayment({
          paymentRequestId: request.id,
          processorChargeId: paid.processorChargeId,
          paymentMethod: paid.paymentMethod,
        });
        await record({ status: 'succeeded', attempts: request.attempts + 1, transactionId, paidAt: iso(Date.now()) });
        return { outcome: 'succeeded', request, error: null };
      }),
    {
      validator: (paid: CheckoutPaid) => {
        if (
          typeof paid?.processorChargeId !== 'string' ||
          paid.processorChargeId.length === 0 ||
          typeof paid.paymentMethod !== 'string'
        )
          refuse('invalid_request', 'processorChargeId and paymentMethod are required.');
        if (!created) refuse('invalid_state', 'This payment request is being created; try again in a moment.');
      },
    },
  );
  setHandler(
    cancelPaymentRequestUpdate,
    ({ reason }) =>
      serialized(async () => {
        // A pay that was in flight when the cancel arrived may have succeeded.
        if (request.status !== 'pending') refuse('invalid_state', `This payment request is already ${request.status}.`);
        await record({ status: 'canceled', canceledAt: iso(now()), cancellationReason: reason });
        return request;
      }),
    {
      validator: (_cancel: { reason: CancellationReason }) => {
        if (request.status !== 'pending') refuse('invalid_state', `This payment request is already ${request.status}.`);
      },
    },
  );

  const start = now();
  const expiresAt = input.expiresAt ?? iso(start + input.expiresInMs);
  await serialized(() => record({ status: 'pending', createdAt: iso(start), expiresAt }));
  created = true;

  await activities.sendEmail({
    dedupeKey: `${request.id}:request-email`,
    accountId: request.accountId,
    livemode: request.livemode,
    fromName: input.accountName,
    to: request.customerEmail,
    ...requestEmail(request, input.accountName, paymentUrl(input.publicUrl, request.token), input.locale),
  });

  // Without a clock: condition(..., expiresAt - now, { summary }), as always.
  const ended = await clock.sleepUntil(new Date(request.expiresAt), () => request.status !== 'pending', {
    summary: 'Link expires',
  });
  if (!ended) {
    // Behind any charge still in flight: a payment that lands first wins.
    await serialized(async () => {
      if (request.status === 'pending') await record({ status: 'failed', failureReason: 'expired' });
    });
  }
  if (request.status === 'succeeded') {
    await activities.sendEmail({
      dedupeKey: `${request.id}:receipt`,
      accountId: request.accountId,
      livemode: request.livemode,
      fromName: input.accountName,
      to: request.customerEmail,
      // The PDF link changes only this activity's input, not the commands: replay-safe.
      ...receiptEmail(request, input.accountName, input.publicUrl, input.locale),
    });
  }
  await condition(allHandlersFinished);
  await clock.finished();
  return request;
}
