/**
 * recurringPaymentRequestWorkflow: one per recurring payment request, workflow
 * id = its id (`preq_...`). Each period it issues a new payment request (its own
 * paymentRequestWorkflow, which records it and emails the customer its link),
 * sleeps on a durable timer until the next period starts, and continues as new,
 * so its history stays small however many periods it lives. It ends when canceled.
 *
 * Periods are calendar-correct (domain/billing-calendar.ts): period n starts at
 * anchor + n intervals, so monthly from Jan 31 issues on Feb 28 (29), then Mar 31.
 *
 * Each request's workflow is started by an activity as a workflow of its own, not
 * as a child: it outlives the run that issued it (each continue-as-new closes a
 * run), and a request already sent stays payable after the series is canceled (it
 * can be canceled on its own). (Abandoned children are also where the Java
 * time-skipping test server stops skipping time: sdk-java #1540, #2392.)
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { addIntervals } from '../domain/billing-calendar.ts';
import { formatMoney } from '../domain/money.ts';
import {
  type CancellationReason,
  initialPaymentRequestSnapshot,
  type RecurringPaymentRequestSnapshot,
} from '../domain/payment-requests.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface RecurringPaymentRequestWorkflowInput {
  /** On the first run: version 0 with the terms set. Later runs: the state carried over. */
  snapshot: RecurringPaymentRequestSnapshot;
  accountName: string;
  locale: string;
  publicUrl: string;
  /** The test clock the recurring request lives on (sandbox): its periods follow the clock. */
  testClock?: ClockBinding;
}

/** Resolves once the first period's request is issued and recorded: the API's read-your-write. */
export const recurringPaymentRequestCreatedUpdate = defineUpdate<RecurringPaymentRequestSnapshot>(
  'recurringPaymentRequestCreated',
);
/** Stops issuing requests. Refused (`invalid_state`) when already canceled. */
export const cancelRecurringPaymentRequestUpdate = defineUpdate<
  RecurringPaymentRequestSnapshot,
  [{ reason: CancellationReason }]
>('cancelRecurringPaymentRequest');
export const recurringPaymentRequestQuery = defineQuery<RecurringPaymentRequestSnapshot>('recurringPaymentRequest');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const iso = (instant: Date | number) => new Date(instant).toISOString();

export async function recurringPaymentRequestWorkflow(
  input: RecurringPaymentRequestWorkflowInput,
): Promise<RecurringPaymentRequestSnapshot> {
  let recurring = input.snapshot;
  /** Workflow time, or the test clock's (workflows/clock-sleep.ts). */
  const clock = workflowClock(input.testClock);
  const now = () => clock.now().getTime();
  let created = recurring.version > 0;
  let cancelReason: CancellationReason | null = null;
  const amount = formatMoney(recurring.amount, recurring.currency, input.locale);

  setHandler(recurringPaymentRequestQuery, () => recurring);
  setHandler(recurringPaymentRequestCreatedUpdate, async () => {
    await condition(() => created);
    return recurring;
  });
  setHandler(
    cancelRecurringPaymentRequestUpdate,
    async ({ reason }) => {
      cancelReason = reason;
      await condition(() => recurring.status === 'canceled');
      return recurring;
    },
    {
      validator: (_cancel: { reason: CancellationReason }) => {
        if (recurring.status === 'canceled' || cancelReason !== null) {
          throw ApplicationFailure.create({
            type: 'invalid_state',
            message: 'This recurring payment request is already canceled.',
            nonRetryable: true,
          });
        }
      },
    },
  );

  async function record(changes: Partial<RecurringPaymentRequestSnapshot>): Promise<void> {
    recurring = { ...recurring, ...changes, updatedAt: iso(now()), version: recurring.version + 1 };
    await activities.projectRecurringPaymentRequest(recurring);
  }

  const periodStart = (n: number) => addIntervals(new Date(recurring.anchor!), recurring.interval, n);

  /** Issues period `n`'s payment request as a child workflow, once per period. */
  async function issue(n: number): Promise<void> {
    setCurrentDetails(`Issuing the request for period ${n}.`);
    const { id, token } = await activities.allocatePaymentRequest();
    const request = initialPaymentRequestSnapshot({
      id,
      accountId: recurring.accountId,
      livemode: recurring.livemode,
      amount: recurring.amount,
      currency: recurring.currency,
      customerEmail: recurring.customerEmail,
      reference: recurring.reference,
      metadata: recurring.metadata,
      token,
      recurringPaymentRequestId: recurring.id,
      period: n,
    });
    await activities.issuePaymentRequest({
      request,
      accountName: input.accountName,
      locale: input.locale,
      publicUrl: input.publicUrl,
      expiresInMs: recurring.expiresInMs,
      expiresAt: null,
      ...(input.testClock ? { testClock: clock.binding() } : {}),
    });
    await record({ issuedPeriods: n + 1, latestPaymentRequestId: id, nextPaymentRequestAt: iso(periodStart(n + 1)) });
  }

  async function cancelNow(): Promise<RecurringPaymentRequestSnapshot> {
    await record({
      status: 'canceled',
      canceledAt: iso(now()),
      cancellationReason: cancelReason,
      nextPaymentRequestAt: null,
    });
    setCurrentDetails(`Canceled (${cancelReason}); no more requests.`);
    await condition(allHandlersFinished);
    await clock.finished();
    return recurring;
  }

  if (recurring.version === 0) {
    const started = iso(now());
    recurring = { ...recurring, status: 'active', anchor: started, createdAt: started, period: 0, issuedPeriods: 0 };
  }
  if (recurring.issuedPeriods <= recurring.period) await issue(recurring.period);
  created = true;
  if (cancelReason) return cancelNow();

  const next = periodStart(recurring.period + 1);
  setCurrentDetails(
    `Sending ${amount} requests to ${recurring.customerEmail} every ${recurring.interval.count} ${recurring.interval.unit}(s); next at ${iso(next)}.`,
  );
  // Without a clock: condition(..., next - now, { summary }) when ahead, as always.
  await clock.sleepUntil(next, () => cancelReason !== null, { summary: `Period ${recurring.period + 1} starts` });
  if (cancelReason) return cancelNow();

  // One period per run: carry the state into a fresh history.
  await condition(allHandlersFinished);
  return continueAsNew<typeof recurringPaymentRequestWorkflow>({
    ...input,
    snapshot: { ...recurring, period: recurring.period + 1 },
    ...(input.testClock ? { testClock: clock.binding() } : {}),
  });
}
