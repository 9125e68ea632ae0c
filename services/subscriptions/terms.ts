/**
 * The terms a subscription workflow bills a plan by (domain/subscription.ts PlanTerms), made from a plan of the
 * catalog: the API's create and plan change, and the customer portal's plan change, share them from here.
 */
import { Plan, Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { formatMoney } from '../../domain/money.ts';
import { maxPriceAmount, PricingError, type UsagePricing } from '../../domain/pricing.ts';
import type { PlanTerms, PriceTerms } from '../../domain/subscription.ts';
import { termsPrice } from '../../domain/subscription-decisions.ts';
import type { UsageTerms } from '../../domain/usage-billing.ts';
import { planCurrencies, planPricing } from '../catalog/plan-prices.ts';

/**
 * The terms a subscription bills `plan` by: its price in `currency` (default: the plan's own; 400 when the
 * plan has none in it) with its pricing scheme, at `quantity` (default 1), and for a recurring plan its interval.
 */
export function priceTerms(
  plan: Plan,
  { quantity = 1, currency = plan.currency }: { quantity?: number; currency?: string } = {},
): PriceTerms {
  const price = planPricing(plan, currency);
  if (!price)
    throw new ApiError(
      'invalid_request',
      `currency: plan ${plan.id} has no price in ${currency} (it bills in ${planCurrencies(plan).join(', ')}).`,
    );
  if (plan.usageType === 'metered') {
    if (quantity !== 1)
      throw new ApiError(
        'invalid_request',
        `quantity: plan ${plan.id} is metered: it bills the usage its meter ${plan.meterId} aggregates each period, and takes no quantity.`,
      );
    // Metered: billed in arrears on the meter's usage (domain/usage-billing.ts); the quantity stays 1 and has no line of its own.
    return {
      planId: plan.id,
      name: plan.name,
      amount: price.amount,
      currency,
      pricing: price.pricing,
      quantity: 1,
      usage: meteredTerms(plan, price.pricing),
    };
  }
  const terms: PriceTerms = {
    planId: plan.id,
    name: plan.name,
    amount: price.amount,
    currency,
    pricing: price.pricing,
    quantity,
  };
  let amount: number;
  try {
    amount = termsPrice(terms).amount;
  } catch (error) {
    if (error instanceof PricingError) throw new ApiError('invalid_request', `quantity: ${error.message}`);
    throw error;
  }
  if (amount > maxPriceAmount) {
    throw new ApiError(
      'invalid_request',
      `quantity: ${quantity} of plan ${plan.id} amounts to ${formatMoney(amount, currency)}, above the largest charge (${formatMoney(maxPriceAmount, currency)}).`,
    );
  }
  return terms;
}

/** A metered plan's usage terms: its meter and its usage price (free units, dimension prices). */
function meteredTerms(plan: Plan, pricing: UsagePricing): UsageTerms {
  return {
    meterId: plan.meterId!,
    price: {
      pricing,
      freeQuantity: plan.freeQuantity ?? null,
      groupBy: plan.groupBy ?? null,
      dimensionPrices: plan.dimensionPrices ?? null,
    },
  };
}

export function planTerms(plan: Plan, options: { quantity?: number; currency?: string } = {}): PlanTerms {
  if (plan.type === 'one_time' || !plan.interval) {
    throw new ApiError(
      'invalid_request',
      `plan: ${plan.id} is a one_time plan (a setup fee); a subscription bills a recurring plan. Give it in items beside a recurring plan.`,
    );
  }
  return { ...priceTerms(plan, options), interval: { unit: plan.interval, count: plan.intervalCount } };
}

/**
 * The terms a plan change moves `subscription` to: the new plan in the subscription's currency at `quantity`,
 * or its current quantity (seats stay seats). A plan with no price in that currency keeps its own, and the workflow
 * refuses the change (409 invalid_state, "The new plan bills in ...").
 */
export function changedPlanTerms(
  plan: Plan,
  subscription: Pick<Subscription, 'quantity' | 'currency'>,
  quantity?: number,
): PlanTerms {
  const currency = subscription.currency ?? plan.currency;
  return planTerms(plan, {
    quantity: quantity ?? subscription.quantity ?? 1,
    ...(planPricing(plan, currency) ? { currency } : {}),
  });
}

/**
 * The currency a new subscription, or an invoice item priced from a plan, bills in (docs/pricing.md#currencies): the one
 * asked for; else the customer's, which every plan (the main one first) must be priced in, its own currency or one of
 * its currency_options (400 naming the first plan that is not); else the main plan's own.
 */
export function chosenCurrency(
  plans: readonly Plan[],
  requested: string | undefined,
  customer: { id: string; currency?: string | null } | null,
): string {
  if (requested) return requested;
  const wanted = customer?.currency;
  if (!wanted) return plans[0]!.currency;
  const missing = plans.find((plan) => !planPricing(plan, wanted));
  if (missing) {
    throw new ApiError(
      'invalid_request',
      `currency: customer ${customer!.id} is billed in ${wanted}, and plan ${missing.id} has no price in ${wanted} (it bills in ${planCurrencies(missing).join(', ')}). ` +
        `Give currency to bill in one of those, or use a plan priced in ${wanted}.`,
    );
  }
  return wanted;
}
