/**
 * Late meter events billed on the next invoice (issue #28, docs/usage.md#late-events), as pure decisions.
 *
 * A mode's `late_events` setting says what becomes of an event stamped before a period that was already
 * invoiced: `refuse` (the default: 409 `period_invoiced`) or `bill_next_invoice`: it is accepted, and the
 * subscription's next invoice carries a **usage adjustment** line for the old period. The adjustment is
 * the old period's price of everything it counts now (what was billed plus the late events this invoice
 * takes) less its price of what was billed before (the closing, plus late events earlier invoices took):
 * tiers and free units apply to the whole period, never restarted.
 *
 * Rounding: each of the two totals is priced and rounded as an invoice prices usage (domain/usage-pricing.ts:
 * exact, rounded once per charge, half away from zero); the adjustment is their difference. So the period's
 * invoice and all its adjustments together bill exactly what one invoice over the final usage would.
 */
import { parseQuantity } from './pricing.ts';
import type { InvoiceLineInput } from './subscription-decisions.ts';
import { type MeteredPrice, type UsageAggregateInput, usageCharges } from './usage-pricing.ts';

export const lateEventsPolicies = ['refuse', 'bill_next_invoice'] as const;
export type LateEventsPolicy = (typeof lateEventsPolicies)[number];
export const defaultLateEventsPolicy: LateEventsPolicy = 'refuse';

/** One metered price's view of an old period: its aggregates as billed, and with the late events taken now. */
export interface LateUsageInput {
  planId: string;
  meterId: string;
  /** The meter's display name (the line says it). */
  meterName: string;
  price: MeteredPrice;
  /** The old period (its bounds as the period's invoice said them). */
  period: { start: Date; end: Date };
  /** The old period's aggregates over what was billed already. */
  billed: readonly UsageAggregateInput[];
  /** The same with the late events this invoice takes. */
  withLate: readonly UsageAggregateInput[];
}

/** A decimal quantity (up to 6 places, maybe negative) from micro-units. */
function formatSignedQuantity(micro: bigint): string {
  const abs = micro < 0n ? -micro : micro;
  const whole = abs / 1_000_000n;
  const fraction = (abs % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${micro < 0n ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

const micro = (quantity: string): bigint => parseQuantity(quantity) ?? 0n;

/**
 * The usage adjustment lines of one metered price for one old period: one per charge (per dimension value when
 * the price groups by one) whose quantity or amount changed. `quantity` is the change of the period's quantity,
 * `total` the change of its price (negative when the late events lower it: a `last` or a gauge).
 */
export function usageAdjustmentLines(input: LateUsageInput): InvoiceLineInput[] {
  const before = new Map(usageCharges(input.price, input.billed).map((c) => [c.dimension, c]));
  const after = usageCharges(input.price, input.withLate);
  const lines: InvoiceLineInput[] = [];
  for (const charge of after) {
    const was = before.get(charge.dimension);
    const quantity = micro(charge.quantity) - (was ? micro(was.quantity) : 0n);
    const total = charge.price.amount - (was?.price.amount ?? 0);
    if (quantity === 0n && total === 0) continue;
    const dimension =
      charge.dimension === null || !input.price.groupBy
        ? ''
        : ` (${input.price.groupBy}: ${charge.dimension === '' ? 'none' : charge.dimension})`;
    const text = formatSignedQuantity(quantity);
    lines.push({
      description: `Usage adjustment: ${input.meterName}${dimension} for ${input.period.start.toISOString()} – ${input.period.end.toISOString()} (${quantity < 0n ? '' : '+'}${text}, late events)`,
      amount: null,
      quantity: Number(text),
      quantity_decimal: text,
      total,
      plan: input.planId,
      meter: input.meterId,
      period_start: input.period.start.toISOString(),
      period_end: input.period.end.toISOString(),
      proration: false,
    });
  }
  return lines;
}

/** The reference of the whole-period amount an adjustment is the difference of (tests and docs). */
export function periodUsageAmount(price: MeteredPrice, aggregates: readonly UsageAggregateInput[]): number {
  return usageCharges(price, aggregates).reduce((sum, charge) => sum + charge.price.amount, 0);
}
