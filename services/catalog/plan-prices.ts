import type { EntityManager } from '@mikro-orm/postgresql';

import { type Plan, Product } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import type { UsagePricing } from '../../domain/pricing.ts';

/** A product of the caller's account and mode, or not_found. */
export async function findOwnProduct(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
  const product = await em.findOne(Product, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!product) throw new ApiError('not_found', `No such product: ${id}.`);
  return product;
}

/**
 * A plan's price in `currency` (its own, or one of its currency_options) as the workflow bills it:
 * the 1-unit (per_unit: unit, package: package) `amount` and the pricing scheme; null when the plan
 * has no price in that currency.
 */
export function planPricing(
  plan: Plan,
  currency: string = plan.currency,
): { amount: number; pricing: UsagePricing } | null {
  const own = currency === plan.currency;
  const option = own ? null : plan.currencyOptions?.[currency];
  if (!own && !option) return null;
  const amount = Number(own ? plan.amount : option!.amount);
  switch (plan.pricingScheme ?? 'per_unit') {
    case 'per_unit':
      return { amount, pricing: { scheme: 'per_unit', amount } };
    case 'package':
      return {
        amount,
        pricing: { scheme: 'package', amount, package_size: plan.packageSize!, round: plan.packageRound! },
      };
    case 'tiered':
      return {
        amount,
        pricing: { scheme: 'tiered', tiers_mode: plan.tiersMode!, tiers: (own ? plan.tiers : option!.tiers) ?? [] },
      };
    case 'percentage':
      return {
        amount,
        pricing: {
          scheme: 'percentage',
          percentage: plan.percentage ?? '0',
          fixed_amount_decimal: plan.fixedAmountDecimal ?? null,
        },
      };
    default:
      throw new Error(`Plan ${plan.id} has an unknown pricing scheme ${String(plan.pricingScheme)}.`);
  }
}

/** The currencies a plan is priced in: its own first, then its currency_options. */
export const planCurrencies = (plan: Plan): string[] => [plan.currency, ...Object.keys(plan.currencyOptions ?? {})];
