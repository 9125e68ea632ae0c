/**
 * discountEndWorkflow: one per customer's own repeating discount (workflow id
 * `discount-end-<di_…>`, discountEndWorkflowId), started by the API right after the discount is
 * committed (services/discounts/customer-discount-end.ts). It sleeps until the discount's `end` — on the
 * customer's test clock when it has one (workflows/clock-sleep.ts) — and runs one activity that
 * ends it (customer.discount.deleted, dated at `end`) unless it was removed or replaced before:
 * then the activity changes nothing. A subscription's discount needs none of this: its
 * subscription workflow keeps that timer (workflows/subscription.ts discountEndSignal).
 *
 * If the API died between the commit and the start, nothing is lost: the maintenance workflow starts
 * it on a later run (services/maintenance/sweeps.ts reconcileMissingDiscountTimers, discounts of the last
 * hour), and failing that the customer's next invoice (or upcoming preview) at or after the end ends
 * it lazily, dated at the end (services/discounts/redemptions.ts discountForInvoice); the customer's `discount`
 * hides it once past.
 *
 * Deterministic code only.
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface DiscountEndInput {
  discountId: string;
  /** The discount's end (ISO instant). */
  end: string;
  testClock?: ClockBinding;
}

export const discountEndWorkflowId = (discountId: string) => `discount-end-${discountId}`;

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function discountEndWorkflow(input: DiscountEndInput): Promise<{ ended: boolean }> {
  const clock = workflowClock(input.testClock);
  setCurrentDetails(`Discount ${input.discountId} ends at ${input.end}.`);
  await clock.sleepUntil(new Date(input.end), () => false, { summary: 'Discount ends' });
  // Idempotent: a discount removed, replaced or already ended lazily is left as it is.
  const ended = await activities.endDiscountAtEnd(input.discountId);
  setCurrentDetails(
    ended
      ? `Discount ${input.discountId} ended at ${input.end}.`
      : `Discount ${input.discountId} had ended before ${input.end}.`,
  );
  await clock.finished();
  return { ended };
}
