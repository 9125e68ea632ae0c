/**
 * What the Temporal UI shows of a subscription that changes: its current plan, in the workflow's current details
 * (the first line, above what it waits for) and its memo (planId, planName). The workflow's static summary is
 * written once at its start and never changes, so it names the customer and the plan the subscription *started*
 * on; these say what it bills by now (workflows/subscription.ts, patch `plan-in-memo`).
 */
import type { BillingInterval } from './billing-calendar.ts';
import { formatMoney } from './money.ts';
import type { ItemTerms, PlanTerms, PriceTerms } from './subscription.ts';
import { termsPrice } from './subscription-decisions.ts';

/** "every month", "every 3 months". */
export function everyInterval(interval: BillingInterval): string {
  return interval.count === 1 ? `every ${interval.unit}` : `every ${interval.count} ${interval.unit}s`;
}

const named = (terms: PriceTerms): string => `${terms.name}${(terms.quantity ?? 1) > 1 ? ` × ${terms.quantity}` : ''}`;

/**
 * The first line of the current details: "On Pro × 2 ($50.00 every month)", each item when it has several, and a
 * downgrade waiting for the renewal ("; Basic from the next renewal").
 */
export function planDetails(
  plan: PlanTerms,
  pendingPlan: PlanTerms | null,
  items?: readonly ItemTerms[] | null,
): string {
  const billed: readonly PriceTerms[] = items && items.length > 1 ? items : [plan];
  const total = billed.reduce((sum, terms) => sum + termsPrice(terms).amount, 0);
  const pending = pendingPlan ? `; ${named(pendingPlan)} from the next renewal` : '';
  return `On ${billed.map(named).join(', ')} (${formatMoney(total, plan.currency)} ${everyInterval(plan.interval)})${pending}.`;
}

/** The memo's plan fields (the start's memo carries planName; a plan change replaces both). */
export function planMemo(plan: PlanTerms): { planId: string; planName: string } {
  return { planId: plan.planId, planName: plan.name };
}
