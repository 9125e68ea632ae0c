/**
 * A subscription's discount as the API applies it: the amount a promotion code's minimum_amount is
 * checked against, and the message that has the subscription's workflow wake at a repeating
 * discount's end (workflows/subscription.ts discountEndSignal, patched('discount-end-timer')).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import { type Discount, Plan, type Subscription } from '../../db/entities/index.ts';
import { termsPrice } from '../../domain/subscription-decisions.ts';
import { discountEndSignal } from '../../workflows/subscription.ts';
import { planPricing } from '../catalog/plan-prices.ts';
import { workflowGone } from '../platform/workflow-messages.ts';
import { priceTerms } from '../subscriptions/terms.ts';

/** What the subscription bills each period before any discount: its items (or plan × quantity) in its currency. */
export async function subscriptionFirstInvoiceAmount(em: EntityManager, subscription: Subscription): Promise<number> {
  const items = subscription.items ?? [{ id: '', planId: subscription.planId, quantity: subscription.quantity ?? 1 }];
  const plans = await em.find(Plan, {
    id: { $in: items.map((item) => item.planId) },
    accountId: subscription.accountId,
    livemode: subscription.livemode,
  });
  let amount = 0;
  for (const item of items) {
    const plan = plans.find((p) => p.id === item.planId);
    const currency = subscription.currency ?? plan?.currency;
    if (!plan || !currency || !planPricing(plan, currency)) continue;
    amount += termsPrice(priceTerms(plan, { quantity: item.quantity, currency })).amount;
  }
  return amount;
}

/** A repeating discount on a subscription: its workflow wakes at the end to end it on time. An ended workflow needs nothing. */
export async function tellWorkflowOfDiscount(
  temporal: Client,
  discount: Pick<Discount, 'id' | 'subscriptionId' | 'end'>,
): Promise<void> {
  if (!discount.subscriptionId || !discount.end) return;
  try {
    await temporal.workflow
      .getHandle(discount.subscriptionId)
      .signal(discountEndSignal, { discountId: discount.id, end: discount.end.toISOString() });
  } catch (error) {
    if (!workflowGone(error)) throw error;
  }
}
