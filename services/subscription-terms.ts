/**
 * The terms a subscription workflow bills a plan by (domain/subscription.ts PlanTerms), made from a plan of the
 * catalog: the API's create and plan change, and the customer portal's plan change, share them from here.
 */
import { Plan, Subscription } from '../db/entities/index.ts';
import { ApiError } from '../domain/errors.ts';
import { formatMoney } from '../domain/money.ts';
import { maxPriceAmount, PricingError } from '../domain/pricing.ts';
import type { PlanTerms, PriceTerms } from '../domain/subscription.ts';
import { termsPrice } from '../domain/subscription-decisions.ts';
import { planCurrencies, planPricing } from './catalog.ts';

/**
 * The terms a subscription bills `plan` by: its price in `currency` (default: the plan's own; 400 when the
 * plan has none in it) with its pricing scheme, at `quantity` (default 1), and for a recurring plan its interval.
 */
export function priceTerms(plan: Plan, { quantity = 1, currency = plan.currency }: { quantity?: number; currency?: string } = {}): PriceTerms {
  const price = planPricing(plan, currency);
  if (!price) throw new ApiError('invalid_request', `currency: plan ${plan.id} has no price in ${currency} (it bills in ${planCurrencies(plan).join(', ')}).`);
  const terms: PriceTerms = { planId: plan.id, name: plan.name, amount: price.amount, currency, pricing: price.pricing, quantity };
  let amount: number;
  try {
    amount = termsPrice(terms).amount;
  } catch (error) {
    if (error instanceof PricingError) throw new ApiError('invalid_request', `quantity: ${error.message}`);
    throw error;
  }
  if (amount > maxPriceAmount) {
    throw new ApiError('invalid_request', `quantity: ${quantity} of plan ${plan.id} amounts to ${formatMoney(amount, currency)}, above the largest charge (${formatMoney(maxPriceAmount, currency)}).`);
  }
  return terms;
}

export function planTerms(plan: Plan, options: { quantity?: number; currency?: string } = {}): PlanTerms {
  if (plan.type === 'one_time' || !plan.interval) {
    throw new ApiError('invalid_request', `plan: ${plan.id} is a one_time plan (a setup fee); a subscription bills a recurring plan. Give it in items beside a recurring plan.`);
  }
  return { ...priceTerms(plan, options), interval: { unit: plan.interval, count: plan.intervalCount } };
}

/**
 * The terms a plan change moves `subscription` to: the new plan in the subscription's currency at `quantity`,
 * or its current quantity (seats stay seats). A plan with no price in that currency keeps its own, and the workflow
 * refuses the change (409 invalid_state, "The new plan bills in ...").
 */
export function changedPlanTerms(plan: Plan, subscription: Pick<Subscription, 'quantity' | 'currency'>, quantity?: number): PlanTerms {
  const currency = subscription.currency ?? plan.currency;
  return planTerms(plan, { quantity: quantity ?? subscription.quantity ?? 1, ...(planPricing(plan, currency) ? { currency } : {}) });
}
