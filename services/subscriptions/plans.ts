/**
 * The plans a subscription command names, found in the caller's account and mode and checked: what a create
 * subscribes to (subscribedPlans), the plan a change moves to (planToChangeTo) and an item's plan (itemTerms).
 * services/subscriptions/commands.ts and the routes that preview a change (upcoming invoice) read them from here.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { Plan, type Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { formatMoney } from '../../domain/money.ts';
import { maxPriceAmount } from '../../domain/pricing.ts';
import {
  type ItemTerms,
  type PlanTerms,
  type PriceTerms,
  subscriptionItemId,
  type SubscriptionItemSnapshot,
} from '../../domain/subscription.ts';
import { termsPrice } from '../../domain/subscription-decisions.ts';
import { chosenCurrency, planTerms, priceTerms } from './terms.ts';

/** The account and mode a command acts in. */
export interface CommandScope {
  accountId: string;
  livemode: boolean;
}

/** What a create names: `plan` (and `quantity`), or `items`, in `currency` (or the default one). */
export interface SubscribedPlans {
  plan?: string;
  quantity?: number;
  items?: { plan: string; quantity: number }[];
  currency?: string;
}

/**
 * What a create subscribes to: `plan` (and `quantity`), or `items`: recurring plans with their quantities
 * (`terms`, the first, and `others`, all of one interval: the subscription's billing period), and one_time plans
 * (setup fees) for the first invoice. Every plan of the caller's account and mode
 * (404), active (409 plan_archived), priced in the subscription's currency (400): `currency`, else the customer's
 * (read while the plans are), else the main plan's own (chosenCurrency).
 */
export async function subscribedPlans(
  em: EntityManager,
  wantedPlans: SubscribedPlans,
  scope: CommandScope,
  customer: Promise<{ id: string; currency?: string | null } | null>,
): Promise<{ plan: Plan; terms: PlanTerms; others: PlanTerms[]; firstInvoiceItems: PriceTerms[] }> {
  const wanted = wantedPlans.items ?? [{ plan: wantedPlans.plan!, quantity: wantedPlans.quantity ?? 1 }];
  const ids = wanted.map((item) => item.plan);
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
  if (repeated)
    throw new ApiError('invalid_request', `items: plan ${repeated} is given twice; give it once with its quantity.`);
  const found = await em.find(Plan, { id: { $in: ids }, accountId: scope.accountId, livemode: scope.livemode });
  const plans = wanted.map((item) => {
    const plan = found.find((p) => p.id === item.plan);
    if (!plan) throw new ApiError('not_found', `No such plan: ${item.plan}.`);
    if (!plan.active)
      throw new ApiError('plan_archived', `Plan ${plan.id} is archived; new subscriptions cannot use it.`);
    return { plan, quantity: item.quantity };
  });
  const recurring = plans.filter(({ plan }) => plan.type !== 'one_time');
  if (recurring.length === 0)
    throw new ApiError(
      'invalid_request',
      `${wantedPlans.items ? 'items' : 'plan'}: a subscription needs one recurring plan; ${ids.join(', ')} ${ids.length === 1 ? 'is' : 'are'} one_time.`,
    );
  const [main] = recurring;
  // Every item shares the subscription's one billing period: the first recurring plan's interval.
  const apart = recurring.filter(
    ({ plan }) => plan.interval !== main!.plan.interval || plan.intervalCount !== main!.plan.intervalCount,
  );
  if (apart.length > 0) {
    const every = (plan: Plan) => `every ${plan.intervalCount} ${plan.interval}${plan.intervalCount === 1 ? '' : 's'}`;
    throw new ApiError(
      'invalid_request',
      `items: every recurring item shares the subscription's billing period, and ${apart.map(({ plan }) => `${plan.id} bills ${every(plan)}`).join(', ')} while ${main!.plan.id} bills ${every(main!.plan)}. Make a subscription per interval.`,
    );
  }
  const currency = chosenCurrency(
    [main!.plan, ...plans.filter(({ plan }) => plan !== main!.plan).map(({ plan }) => plan)],
    wantedPlans.currency,
    await customer,
  );
  const terms = planTerms(main!.plan, { quantity: main!.quantity, currency });
  const others = recurring.slice(1).map(({ plan, quantity }) => planTerms(plan, { quantity, currency }));
  const firstInvoiceItems = plans
    .filter(({ plan }) => plan.type === 'one_time')
    .map(({ plan, quantity }) => priceTerms(plan, { quantity, currency }));
  const first = [terms, ...others, ...firstInvoiceItems].reduce((sum, item) => sum + termsPrice(item).amount, 0);
  if (first > maxPriceAmount) {
    throw new ApiError(
      'invalid_request',
      `items: the first invoice would be ${formatMoney(first, currency)}, above the largest charge (${formatMoney(maxPriceAmount, currency)}).`,
    );
  }
  return { plan: main!.plan, terms, others, firstInvoiceItems };
}

/**
 * The plan `planId` a plan or quantity change moves `subscription` to: of its account and mode (404), active unless it
 * is the plan the subscription is on (an archived plan keeps its subscribers, who may change their quantity).
 */
export async function planToChangeTo(
  em: EntityManager,
  subscription: Pick<Subscription, 'accountId' | 'livemode' | 'planId'>,
  planId: string,
): Promise<Plan> {
  const plan = await em.findOne(Plan, {
    id: planId,
    accountId: subscription.accountId,
    livemode: subscription.livemode,
  });
  if (!plan) throw new ApiError('not_found', `No such plan: ${planId}.`);
  if (!plan.active && plan.id !== subscription.planId)
    throw new ApiError('plan_archived', `Plan ${plan.id} is archived.`);
  return plan;
}

/** A subscription row's items: its items, or its one item of plan × quantity. */
export const rowItems = (row: Pick<Subscription, 'id' | 'planId' | 'quantity' | 'items'>): SubscriptionItemSnapshot[] =>
  row.items ?? [{ id: subscriptionItemId(row.id), planId: row.planId, quantity: row.quantity ?? 1 }];

/**
 * The terms of item `itemId` billing `planId` at `quantity` on `subscription`: a plan of its account and mode (404),
 * active unless the subscription already bills it (409 plan_archived), in its currency, of its billing period (400).
 */
export async function itemTerms(
  em: EntityManager,
  subscription: Subscription,
  item: { planId: string; quantity: number; itemId: string },
): Promise<ItemTerms> {
  const [plan, current] = await Promise.all([
    em.findOne(Plan, { id: item.planId, accountId: subscription.accountId, livemode: subscription.livemode }),
    em.findOne(Plan, { id: subscription.planId }),
  ]);
  if (!plan) throw new ApiError('not_found', `No such plan: ${item.planId}.`);
  const onIt = rowItems(subscription).some((i) => i.planId === plan.id);
  if (!plan.active && !onIt) throw new ApiError('plan_archived', `Plan ${plan.id} is archived; it cannot be added.`);
  const terms = planTerms(plan, { quantity: item.quantity, currency: subscription.currency ?? plan.currency });
  if (current && (current.interval !== plan.interval || current.intervalCount !== plan.intervalCount)) {
    throw new ApiError(
      'invalid_request',
      `plan: ${plan.id} bills every ${plan.intervalCount} ${plan.interval}(s) and the subscription every ${current.intervalCount} ${current.interval}(s): every item shares the subscription's billing period.`,
    );
  }
  return { ...terms, itemId: item.itemId };
}
