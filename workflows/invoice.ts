/**
 * invoiceWorkflow: one per finalized one-off invoice, workflow id = the invoice id (`inv_...`),
 * started by POST /v1/invoices/{id}/finalize (update-with-start: the API answers once the
 * workflow has finalized the draft). It owns the invoice's time:
 *
 * - `charge_automatically`: the customer's payment method is charged at once; a decline is
 *   retried on the account's retry policy (domain/dunning.ts, as subscriptions' dunning), and
 *   once the last attempt and the grace period are spent the invoice is marked uncollectible;
 * - `send_invoice`: the invoice is emailed with its pay link and due date, reminded 3 days
 *   before the due date, on it and 7 days after (domain/one-off-invoices.ts), and marked
 *   uncollectible the grace period after the last reminder.
 *
 * A `pay` (the API's POST /v1/invoices/{id}/pay, or the hosted pay page) or a `void` ends it;
 * an uncollectible invoice stays payable, so the workflow then waits for one of them without a
 * timer. Every change of the invoice's money runs one at a time (a promise-chain lock): a void
 * that arrives while a retry's charge is at the processor waits for it and is refused if it
 * paid the invoice; a pay while a void ran finds it void. So check-then-act is one decision.
 *
 * Deterministic code only: time is workflow time (or a test clock's: workflows/clock-sleep.ts).
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  defineQuery,
  defineUpdate,
  deprecatePatch,
  proxyActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import type { OpenInvoiceCredit } from '../domain/credit-notes.ts';
import { scheduledAttemptAt } from '../domain/dunning.ts';
import { reminderSchedule, sendInvoiceGivesUpAt } from '../domain/one-off-invoices.ts';
import type { FinalizedInvoice } from '../services/invoices/one-off.ts';
import type { InvoiceDiscountRequest } from '../services/invoices/promotion-codes.ts';
import type { ChargeOutcome } from '../services/money/charges.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface InvoiceWorkflowInput {
  invoiceId: string;
  /** The signed link of the hosted pay page, for the emails (domain/invoice-links.ts signedInvoicePayUrl). */
  payUrl: string;
  testClock?: ClockBinding;
}

export interface PayInvoiceInput {
  /** Paid outside the engine (bank transfer, cash): no charge, `invoice.paid` only. */
  paidOutOfBand?: boolean;
  /** A card from the hosted pay page; without it the customer's payment method is charged. */
  paymentMethod?: string;
  /** One per rendered pay form: a replayed form gets the first answer. */
  attemptKey?: string;
}

export interface PayInvoiceResult {
  outcome: 'paid' | 'declined';
  error: { code: string; message: string } | null;
}

type LocalStatus = 'open' | 'paid' | 'void' | 'uncollectible';

/** Resolves once the draft is finalized (the API's read-your-write); refused when it could not be (empty, or deleted). */
export const invoiceFinalizedUpdate = defineUpdate<FinalizedInvoice>('invoiceFinalized');
/** Pays the invoice now: a charge, or paid out of band. Refused (`invalid_state`) once paid or void. */
export const payInvoiceUpdate = defineUpdate<PayInvoiceResult, [PayInvoiceInput]>('payInvoice');
/** Voids the invoice: nothing is due, the workflow ends. Refused once paid or void. */
export const voidOneOffInvoiceUpdate = defineUpdate<{ status: string }>('voidOneOffInvoice');
/**
 * A credit note on the open invoice (services/credit-notes/owner.ts), run one at a time with its charges: the amount the next
 * charges ask for drops; credited to nothing due, the invoice is paid and the workflow ends. Refused once paid or void.
 */
export const creditOneOffInvoiceUpdate = defineUpdate<{ creditNoteId: string; amountDue: number }, [OpenInvoiceCredit]>(
  'creditOneOffInvoice',
);
/**
 * A promotion code (or coupon) on the open invoice (services/invoices/promotion-codes.ts), run one at a time with its charges:
 * its discount and amount_due change between charges, never while one is at the processor; discounted to nothing due,
 * the invoice is paid without a charge and the workflow ends. Refused unless open.
 */
export const discountOneOffInvoiceUpdate = defineUpdate<
  { discountId: string; amountDue: number },
  [InvoiceDiscountRequest]
>('discountOneOffInvoice');
/** Marks the update's activity; deprecated (docs/development.md, "Retiring a patch"): only runs that accepted the update reach it. */
export const invoicePromotionCodePatch = 'invoice-promotion-code';
export const invoiceStatusQuery = defineQuery<{ status: LocalStatus | 'finalizing'; attempts: number }>(
  'invoiceStatus',
);

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const iso = (instant: Date | number) => new Date(instant).toISOString();
const day = 86_400_000;

function refuse(type: 'invalid_state' | 'invalid_request', message: string): never {
  throw ApplicationFailure.create({ type, message, nonRetryable: true });
}

export async function invoiceWorkflow(input: InvoiceWorkflowInput): Promise<{ status: string }> {
  const clock = workflowClock(input.testClock);
  let finalized: FinalizedInvoice | { refused: string } | null = null;
  let status: LocalStatus | 'finalizing' = 'finalizing';
  let attempts = 0;
  const answered = new Map<string, PayInvoiceResult>();
  const done = () => status === 'paid' || status === 'void';

  let tail: Promise<unknown> = Promise.resolve();
  function serialized<T>(step: () => Promise<T>): Promise<T> {
    const run = tail.then(step);
    tail = run.catch(() => undefined);
    return run;
  }

  const invoice = () => finalized as FinalizedInvoice;

  /** One charge of the invoice (attempt n), settled at once when it succeeds. Runs inside `serialized`. */
  async function chargeOnce(paymentMethod?: string): Promise<ChargeOutcome> {
    const inv = invoice();
    attempts += 1;
    setCurrentDetails(`Charging invoice ${inv.number}, attempt ${attempts}.`);
    const outcome = await activities.charge({
      idempotencyKey: `${inv.billingKey}:attempt:${attempts}`,
      invoiceId: inv.invoiceId,
      attempt: attempts,
      accountId: inv.accountId,
      customerId: inv.customerId,
      amount: inv.amountDue,
      currency: inv.currency,
      description: `Invoice ${inv.number}${attempts > 1 ? ` (attempt ${attempts})` : ''}`,
      livemode: inv.livemode,
      ...(paymentMethod ? { paymentMethod } : {}),
    });
    if (outcome.status === 'succeeded') {
      await activities.settleInvoice(inv.invoiceId, outcome, iso(clock.now()));
      status = 'paid';
    }
    return outcome;
  }

  /** A scheduled charge: the invoice is read first (marked uncollectible or voided by hand meanwhile?). */
  async function scheduledCharge(): Promise<void> {
    await serialized(async () => {
      if (done()) return;
      const state = await activities.getInvoice(input.invoiceId);
      status = state.status as LocalStatus;
      if (done()) return;
      await chargeOnce();
    });
  }

  async function giveUp(): Promise<void> {
    await serialized(async () => {
      if (done()) return;
      const state = await activities.markInvoiceUncollectible(input.invoiceId, iso(clock.now()));
      status = state.status as LocalStatus;
    });
  }

  setHandler(invoiceStatusQuery, () => ({ status, attempts }));
  setHandler(invoiceFinalizedUpdate, async () => {
    await condition(() => finalized !== null);
    const answer = finalized!;
    if ('refused' in answer) refuse('invalid_state', answer.refused);
    return answer;
  });
  setHandler(
    payInvoiceUpdate,
    (pay) =>
      serialized(async (): Promise<PayInvoiceResult> => {
        const earlier = pay.attemptKey ? answered.get(pay.attemptKey) : undefined;
        if (earlier) return earlier;
        if (done() || status === 'finalizing')
          refuse('invalid_state', `Invoice ${invoice()?.number ?? input.invoiceId} is ${status}.`);
        let result: PayInvoiceResult;
        if (pay.paidOutOfBand) {
          await activities.markInvoicePaidOutOfBand(input.invoiceId, iso(clock.now()));
          status = 'paid';
          result = { outcome: 'paid', error: null };
        } else {
          const outcome = await chargeOnce(pay.paymentMethod);
          result =
            outcome.status === 'succeeded'
              ? { outcome: 'paid', error: null }
              : { outcome: 'declined', error: { code: outcome.failureCode, message: outcome.failureMessage } };
        }
        if (pay.attemptKey) answered.set(pay.attemptKey, result);
        return result;
      }),
    {
      validator: (pay) => {
        if (status === 'finalizing') refuse('invalid_state', 'This invoice is being finalized; try again in a moment.');
        if (done() && !(pay?.attemptKey && answered.has(pay.attemptKey)))
          refuse('invalid_state', `Invoice ${invoice().number} is ${status}.`);
      },
    },
  );
  setHandler(
    voidOneOffInvoiceUpdate,
    () =>
      serialized(async () => {
        // A charge that was in flight when the void arrived may have paid the invoice: then the void is refused.
        if (done()) refuse('invalid_state', `Invoice ${invoice().number} is ${status} and cannot be voided.`);
        const state = await activities.voidInvoice(input.invoiceId, iso(clock.now()));
        status = state.status as LocalStatus;
        if (status !== 'void')
          refuse('invalid_state', `Invoice ${invoice().number} is ${status} and cannot be voided.`);
        return { status };
      }),
    {
      validator: () => {
        if (status === 'finalizing') refuse('invalid_state', 'This invoice is being finalized; try again in a moment.');
        if (done()) refuse('invalid_state', `Invoice ${invoice().number} is ${status} and cannot be voided.`);
      },
    },
  );

  setHandler(
    creditOneOffInvoiceUpdate,
    (credit: OpenInvoiceCredit) =>
      serialized(async (): Promise<{ creditNoteId: string; amountDue: number }> => {
        if (status !== 'open')
          refuse(
            'invalid_state',
            `Invoice ${invoice().number} is ${status}: only a paid or open invoice takes a credit note, and a paid one is credited by the API.`,
          );
        const result = await activities.creditOpenInvoice(credit, iso(clock.now()));
        if ('refused' in result)
          refuse(result.refused.type === 'invalid_state' ? 'invalid_state' : 'invalid_request', result.refused.message);
        finalized = { ...invoice(), amountDue: result.amountDue };
        if (result.paid) status = 'paid';
        return { creditNoteId: result.creditNoteId, amountDue: result.amountDue };
      }),
    {
      validator: (_credit: OpenInvoiceCredit) => {
        if (status === 'finalizing') refuse('invalid_state', 'This invoice is being finalized; try again in a moment.');
        if (status !== 'open') refuse('invalid_state', `Invoice ${invoice().number} is ${status}.`);
      },
    },
  );

  setHandler(
    discountOneOffInvoiceUpdate,
    (request: InvoiceDiscountRequest) =>
      serialized(async (): Promise<{ discountId: string; amountDue: number }> => {
        if (status !== 'open')
          refuse(
            'invalid_state',
            `Invoice ${invoice().number} is ${status}: only an open invoice takes a promotion code.`,
          );
        deprecatePatch(invoicePromotionCodePatch);
        const result = await activities.discountOpenInvoice(request, iso(clock.now()));
        // The API's error code as is (not_found for an unknown code, invalid_request for a limit).
        if ('refused' in result)
          throw ApplicationFailure.create({
            type: result.refused.type,
            message: result.refused.message,
            nonRetryable: true,
          });
        finalized = { ...invoice(), amountDue: result.amountDue };
        if (result.amountDue <= 0) {
          // Discounted to nothing due (a 100% coupon): paid without a charge, as at finalize.
          await activities.settleInvoiceWithoutCharge(input.invoiceId, iso(clock.now()));
          status = 'paid';
        }
        return { discountId: result.discountId, amountDue: result.amountDue };
      }),
    {
      validator: (_request: InvoiceDiscountRequest) => {
        if (status === 'finalizing') refuse('invalid_state', 'This invoice is being finalized; try again in a moment.');
        if (status !== 'open')
          refuse(
            'invalid_state',
            `Invoice ${invoice().number} is ${status}: only an open invoice takes a promotion code.`,
          );
      },
    },
  );

  const result = await activities.finalizeOneOffInvoice(input.invoiceId, iso(clock.now()));
  finalized = result;
  if ('refused' in result) {
    await condition(allHandlersFinished);
    await clock.finished();
    return { status: 'refused' };
  }
  status = result.status === 'draft' ? 'open' : (result.status as LocalStatus);

  if (!done() && result.amountDue === 0) {
    // Nothing to collect (a credit, or items adding up to zero): paid at once.
    await serialized(async () => {
      if (done()) return;
      await activities.settleInvoiceWithoutCharge(input.invoiceId, iso(clock.now()));
      status = 'paid';
    });
  }

  if (!done() && result.collectionMethod === 'charge_automatically') {
    const firstFailedAt = clock.now();
    await scheduledCharge();
    if (!done()) {
      const settings = await activities.loadBillingSettings(result.accountId, result.livemode);
      const policy = settings.retryPolicy;
      let lastAttemptAt = firstFailedAt;
      for (let n = attempts + 1; n <= policy.max_attempts && !done(); n = attempts + 1) {
        const at = scheduledAttemptAt(policy, firstFailedAt, n)!;
        setCurrentDetails(`Invoice ${result.number}: retry ${n} at ${iso(at)}.`);
        if (await clock.sleepUntil(at, done, { summary: `Payment retry ${n}` })) break;
        lastAttemptAt = clock.now();
        await scheduledCharge();
      }
      if (!done()) {
        const givesUpAt = new Date(lastAttemptAt.getTime() + settings.gracePeriodDays * day);
        setCurrentDetails(`Invoice ${result.number}: retries spent; uncollectible at ${iso(givesUpAt)} unless paid.`);
        if (!(await clock.sleepUntil(givesUpAt, done, { summary: 'Grace period ends' }))) await giveUp();
      }
    }
  } else if (!done()) {
    await activities.sendOneOffInvoiceEmail({ invoiceId: input.invoiceId, kind: 'finalized', payUrl: input.payUrl });
    const due = new Date(result.dueDate);
    for (const reminder of reminderSchedule(due, new Date(result.finalizedAt))) {
      setCurrentDetails(
        `Invoice ${result.number}: due ${result.dueDate}; next reminder (${reminder.kind}) at ${iso(reminder.at)}.`,
      );
      if (await clock.sleepUntil(reminder.at, done, { summary: `Reminder ${reminder.kind}` })) break;
      await serialized(async () => {
        if (done()) return;
        const state = await activities.getInvoice(input.invoiceId);
        status = state.status as LocalStatus;
        if (status === 'open')
          await activities.sendOneOffInvoiceEmail({
            invoiceId: input.invoiceId,
            kind: reminder.kind,
            payUrl: input.payUrl,
          });
      });
    }
    if (!done()) {
      const settings = await activities.loadBillingSettings(result.accountId, result.livemode);
      const givesUpAt = sendInvoiceGivesUpAt(due, settings.gracePeriodDays);
      setCurrentDetails(`Invoice ${result.number}: overdue; uncollectible at ${iso(givesUpAt)} unless paid.`);
      if (!(await clock.sleepUntil(givesUpAt, done, { summary: 'Overdue: gives up' }))) await giveUp();
    }
  }
  // Uncollectible stays payable: the workflow still owns its pay and void, without a timer.
  if (!done()) {
    setCurrentDetails(`Invoice ${result.number} is ${status}: waiting for a payment or a void.`);
    await clock.sleepUntil(null, done);
  }
  setCurrentDetails(`Invoice ${result.number} is ${status}.`);
  await condition(allHandlersFinished);
  await clock.finished();
  return { status };
}
