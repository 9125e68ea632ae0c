/**
 * Billing usage in arrears (#28, docs/pricing.md "Usage prices"), as pure decisions the subscription
 * workflow and the upcoming-invoice preview share. Stripe's way: the cycle invoice that starts period c
 * carries the usage lines of period c−1 (the first invoice none), issued once the account's usage grace
 * window past the boundary is over, so late events of c−1 still count. The workflow closes c−1 through
 * ONE local activity (services/usage/billing.ts → UsageStore.closePeriod, idempotent per period) and
 * these functions turn the closing's aggregates into invoice lines.
 */
import type { PriceTerms } from './subscription.ts';
import type { InvoiceLineInput } from './subscription-decisions.ts';
import { type MeteredPrice, type UsageAggregateInput, usageCharges } from './usage-pricing.ts';

/** Seconds after a period's end that late events still count, when the account set none (Stripe's hour). */
export const defaultUsageGraceSeconds = 3600;
/** The setting's bounds: none at all, to a week. */
export const maxUsageGraceSeconds = 7 * 86_400;

/** What a metered item bills by, beside its price terms: its meter and usage price (made from the plan). */
export interface UsageTerms {
  meterId: string;
  price: MeteredPrice;
}

/** A period's closing for one meter (UsageStore.closePeriod's result). */
export interface MeterClosing {
  meterId: string;
  aggregates: UsageAggregateInput[];
}

/** Terms that bill usage (a metered plan) rather than a quantity in advance. */
export const isMetered = (terms: Pick<PriceTerms, 'usage'>): boolean => terms.usage != null;

/** The meters a closing aggregates for `items`, each with the property its price groups by (one per meter and group_by). */
export function metersToClose(items: readonly PriceTerms[]): { meterId: string; groupBy?: string[] }[] {
  const seen = new Map<string, { meterId: string; groupBy?: string[] }>();
  for (const item of items) {
    if (!item.usage) continue;
    const groupBy = item.usage.price.groupBy ?? null;
    // Two items on one meter with different groupings aggregate apart; the key keeps them apart.
    const key = `${item.usage.meterId}\u0000${groupBy ?? ''}`;
    if (!seen.has(key)) seen.set(key, { meterId: item.usage.meterId, ...(groupBy ? { groupBy: [groupBy] } : {}) });
  }
  return [...seen.values()];
}

const sameGrouping = (closing: { groupBy?: string[] } | undefined, groupBy: string | null | undefined): boolean =>
  (closing?.groupBy?.[0] ?? null) === (groupBy ?? null);

/**
 * The invoice lines of `items`' usage over `period` from its closing: per metered item, one line per charge
 * (one per dimension value when its price groups by one), priced by domain/usage-pricing.ts. A line says the
 * meter, the exact quantity (quantity_decimal; `quantity` is the same as a number), the price rows (tiers
 * crossed, free units left out) and the usage period.
 */
export function usageLines(
  items: readonly PriceTerms[],
  closing: readonly (MeterClosing & { groupBy?: string[] })[],
  period: { start: Date; end: Date },
): InvoiceLineInput[] {
  const lines: InvoiceLineInput[] = [];
  for (const item of items) {
    if (!item.usage) continue;
    const { meterId, price } = item.usage;
    const closed =
      closing.find((c) => c.meterId === meterId && sameGrouping(c, price.groupBy)) ??
      closing.find((c) => c.meterId === meterId);
    for (const charge of usageCharges(price, closed?.aggregates ?? [])) {
      const dimension =
        charge.dimension === null ? '' : ` (${price.groupBy}: ${charge.dimension === '' ? 'none' : charge.dimension})`;
      const free = charge.freeQuantity !== '0' ? `, ${charge.freeQuantity} free` : '';
      lines.push({
        description: `${item.name}${dimension}: usage ${charge.quantity}${free}`,
        amount: null,
        quantity: Number(charge.quantity),
        quantity_decimal: charge.quantity,
        total: charge.price.amount,
        plan: item.planId,
        meter: meterId,
        breakdown: charge.price.rows,
        period_start: period.start.toISOString(),
        period_end: period.end.toISOString(),
        proration: false,
      });
    }
  }
  return lines;
}
