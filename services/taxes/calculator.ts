/**
 * The tax calculation seam (docs/discounts-and-taxes.md#taxes): what an invoice's lines are taxed
 * at, and the customer's tax details printed on it. The invoice code (services/invoices/adjustments.ts)
 * asks `deps.taxCalculator` — `builtInTaxCalculator` unless a merchant plugs in another (a tax
 * service's client, say) through the worker's and the API's deps. It runs inside the invoice's
 * database transaction: it must only read, and answer quickly.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { Subscription, SubscriptionTaxRates, TaxRate } from '../../db/entities/index.ts';
import type { TaxExempt, TotalsTaxRate } from '../../domain/invoice-totals.ts';
import { subscriptionItemId } from '../../domain/subscription.ts';
import { ratesForLine, type TaxRateRecord } from '../../domain/tax-rules.ts';

export interface TaxCalculationLine {
  /** The line's amount in minor units (negative for a credit). */
  amount: number;
  plan: string | null;
  product: string | null;
  /** Rate ids set on a one-off invoice item (its `tax_rates`); optional. */
  tax_rates?: string[];
}

export interface TaxCalculationInput {
  accountId: string;
  livemode: boolean;
  customerId: string;
  subscriptionId: string | null;
  currency: string;
  lines: TaxCalculationLine[];
}

export interface TaxCalculation {
  tax_exempt: TaxExempt;
  /** Per input line, in its order: the rates it is taxed at ([] for none). */
  line_tax_rates: TotalsTaxRate[][];
  customer_tax_ids: { type: string; value: string }[];
  customer_address: { country: string | null; state: string | null };
}

export interface TaxCalculator {
  calculate(tx: EntityManager, input: TaxCalculationInput): Promise<TaxCalculation>;
}

const asTotalsRate = (rate: TaxRateRecord): TotalsTaxRate => ({
  id: rate.id,
  display_name: rate.display_name,
  percentage: rate.percentage,
  inclusive: rate.inclusive,
  country: rate.country,
  state: rate.state,
});

export const asTaxRateRecord = (row: TaxRate): TaxRateRecord => ({
  id: row.id,
  display_name: row.displayName,
  percentage: row.percentage,
  inclusive: row.inclusive,
  country: row.country ?? null,
  state: row.state ?? null,
  active: row.active,
});

/**
 * The item id billing each plan of the subscription: the plans its tax rates were set with (a one_time
 * plan of the first invoice, an item since removed, whose proration credit is taxed as it was), and
 * over them its projection row's items as they are now (an item whose plan changed bills the new one).
 */
function itemsByPlan(
  subscription: SubscriptionItems | null,
  settings: SubscriptionRates | null,
  subscriptionId: string,
): Map<string, string> {
  const byPlan = new Map(Object.entries(settings?.itemTaxRates ?? {}).map(([itemId, { plan }]) => [plan, itemId]));
  if (subscription) {
    const items = subscription.items ?? [
      { id: subscriptionItemId(subscriptionId), planId: subscription.planId, quantity: subscription.quantity },
    ];
    const current = new Set(items.map((item) => item.id));
    for (const [plan, itemId] of [...byPlan]) if (current.has(itemId)) byPlan.delete(plan);
    for (const item of items) byPlan.set(item.planId, item.id);
  }
  return byPlan;
}

/** What itemsByPlan reads of a subscription and of its tax rate settings. */
type SubscriptionItems = Pick<Subscription, 'planId' | 'quantity' | 'items'>;
type SubscriptionRates = Pick<SubscriptionTaxRates, 'defaultTaxRates' | 'itemTaxRates'>;

/**
 * What the built-in calculator reads, in ONE statement (it runs in every invoice's transaction, every renewal's
 * too): the customer's tax details and tax ids, the mode's default rates, the subscription's rates and items.
 */
async function readTaxContext(tx: EntityManager, input: TaxCalculationInput) {
  const scope = [input.accountId, input.livemode];
  const [row] = await tx.execute<
    {
      tax_exempt: TaxExempt | null;
      address: { country?: string | null; state?: string | null } | null;
      tax_ids: { type: string; value: string }[];
      default_tax_rates: string[] | null;
      subscription_rates: {
        default_tax_rates: string[] | null;
        item_tax_rates: SubscriptionRates['itemTaxRates'] | null;
      } | null;
      subscription: { plan_id: string; quantity: number | null; items: Subscription['items'] } | null;
    }[]
  >(
    `select c.tax_exempt, c.address,
       (select coalesce(jsonb_agg(jsonb_build_object('type', t.type, 'value', t.value) order by t.id), '[]'::jsonb)
          from customer_tax_ids t where t.customer_id = ? and t.account_id = ? and t.livemode = ?) as tax_ids,
       (select m.default_tax_rates from account_mode_settings m where m.account_id = ? and m.livemode = ?) as default_tax_rates,
       (select jsonb_build_object('default_tax_rates', r.default_tax_rates, 'item_tax_rates', r.item_tax_rates)
          from subscription_tax_rates r where r.subscription_id = ? and r.account_id = ? and r.livemode = ?) as subscription_rates,
       (select jsonb_build_object('plan_id', s.plan_id, 'quantity', s.quantity, 'items', s.items)
          from subscriptions s where s.id = ? and s.account_id = ? and s.livemode = ?) as subscription
     from (select 1) one left join customers c on c.id = ? and c.account_id = ? and c.livemode = ?`,
    [
      input.customerId,
      ...scope,
      ...scope,
      input.subscriptionId,
      ...scope,
      input.subscriptionId,
      ...scope,
      input.customerId,
      ...scope,
    ],
  );
  return {
    customer: row?.tax_exempt ? { taxExempt: row.tax_exempt, address: row.address } : null,
    taxIds: row?.tax_ids ?? [],
    modeSettings: row ? { defaultTaxRates: row.default_tax_rates } : null,
    subscriptionSettings: row?.subscription_rates
      ? {
          defaultTaxRates: row.subscription_rates.default_tax_rates ?? [],
          itemTaxRates: row.subscription_rates.item_tax_rates ?? {},
        }
      : null,
    subscription: row?.subscription
      ? { planId: row.subscription.plan_id, quantity: row.subscription.quantity ?? 1, items: row.subscription.items }
      : null,
  };
}

/**
 * The built-in calculator: the account's own tax rates, chosen per line by domain/tax-rules.ts
 * (the line's, its subscription item's, the subscription's defaults, else the account's defaults
 * matching the customer's country and state); `exempt` and `reverse` customers pay none.
 */
export const builtInTaxCalculator: TaxCalculator = {
  async calculate(tx, input) {
    const { customer, taxIds, modeSettings, subscriptionSettings, subscription } = await readTaxContext(tx, input);
    const address = { country: customer?.address?.country ?? null, state: customer?.address?.state ?? null };
    const taxExempt: TaxExempt = customer?.taxExempt ?? 'none';
    const byPlan = input.subscriptionId
      ? itemsByPlan(subscription, subscriptionSettings, input.subscriptionId)
      : new Map<string, string>();
    const itemRates = (plan: string | null) => {
      const itemId = plan === null ? undefined : byPlan.get(plan);
      return itemId ? subscriptionSettings?.itemTaxRates[itemId]?.tax_rates : undefined;
    };
    const sources = input.lines.map((line) => ({
      line: line.tax_rates,
      item: itemRates(line.plan),
      subscription: subscriptionSettings?.defaultTaxRates,
      account: modeSettings?.defaultTaxRates,
    }));
    const ids = [
      ...new Set(
        sources.flatMap((s) => [...(s.line ?? []), ...(s.item ?? []), ...(s.subscription ?? []), ...(s.account ?? [])]),
      ),
    ];
    const rows =
      ids.length === 0
        ? []
        : await tx.find(TaxRate, { id: { $in: ids }, accountId: input.accountId, livemode: input.livemode });
    const rates = new Map(rows.map((row) => [row.id, asTaxRateRecord(row)]));
    const customerTax = { ...address, tax_exempt: taxExempt };
    return {
      tax_exempt: taxExempt,
      line_tax_rates: sources.map((s) => ratesForLine(s, rates, customerTax).map(asTotalsRate)),
      customer_tax_ids: taxIds.map((t) => ({ type: t.type, value: t.value })),
      customer_address: address,
    };
  },
};
