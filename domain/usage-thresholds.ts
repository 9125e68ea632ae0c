/**
 * Progressive billing (#28, docs/usage.md "Billing thresholds"; Stripe's subscription `billing_thresholds`):
 * a subscription bills its period's usage early, on a threshold invoice (billing_reason
 * `subscription_threshold`), each time what its metered items amount to and was not yet billed reaches
 * `amount_gte`. Pure: the activity that makes a threshold invoice and the workflow that closes the period
 * share it.
 *
 * The rule is cumulative: every invoice of a period bills, per usage line, the line's amount over the
 * period so far (from its start: tiers and free units apply to the whole period, never restart) less what
 * earlier threshold invoices of the period billed for that line. So the threshold invoices and the
 * period-end invoice together bill exactly what one invoice over the whole period would, whatever the
 * tiers; a late event inside a span already billed is billed by the next invoice, as a difference.
 * The amount compared with amount_gte is the usage lines' totals (all metered items, after free units
 * and tiers), before tax and discounts.
 */
import type { InvoiceLineInput } from './subscription-decisions.ts';

/** A subscription's threshold (Stripe's shape); only `reset_billing_cycle_anchor: false` is supported. */
export interface BillingThresholds {
  amount_gte: number;
  reset_billing_cycle_anchor: boolean;
}

/** What the threshold invoices of one period billed so far, per usage line key (lineKey), in minor units. */
export type BilledByLine = Record<string, number>;

/**
 * A usage line's identity across the invoices of one period: its plan, its meter and its dimension value.
 * usageLines (domain/usage-billing.ts) writes the dimension into the description before ": usage", the only
 * place a line keeps it, so the key is that prefix.
 */
export function lineKey(line: Pick<InvoiceLineInput, 'plan' | 'meter' | 'description'>): string {
  const name = line.description.split(': usage ')[0] ?? line.description;
  return `${line.plan ?? ''}\u001f${line.meter ?? ''}\u001f${name}`;
}

/** The cumulative amount of each usage line (what one invoice from the period's start would bill). */
export function cumulativeByLine(lines: readonly InvoiceLineInput[]): BilledByLine {
  const out: BilledByLine = {};
  for (const line of lines) out[lineKey(line)] = (out[lineKey(line)] ?? 0) + (line.total ?? 0);
  return out;
}

/** The sum of what earlier threshold invoices of the period billed, per line (their rows' `amounts`). */
export function sumBilled(rows: readonly BilledByLine[]): BilledByLine {
  const out: BilledByLine = {};
  for (const row of rows) for (const [key, amount] of Object.entries(row)) out[key] = (out[key] ?? 0) + amount;
  return out;
}

/**
 * The lines an invoice bills now: each cumulative usage line less what was billed of it already, with the
 * description saying so. A line whose usage was all billed stays with total 0 (the invoice shows the
 * period's whole quantity); `billed` keys with no line now (a cancelled event, say) give a negative line so
 * the period's invoices still sum to its cumulative amounts.
 */
export function unbilledLines(
  lines: readonly InvoiceLineInput[],
  billed: BilledByLine | undefined,
  period: { start: Date; end: Date },
): InvoiceLineInput[] {
  if (!billed || Object.keys(billed).length === 0) return [...lines];
  const left = { ...billed };
  const out = lines.map((line) => {
    const key = lineKey(line);
    const already = left[key] ?? 0;
    if (already === 0) return line;
    // One line per key in usageLines; a second one with the same key takes nothing more off.
    left[key] = 0;
    return {
      ...line,
      total: (line.total ?? 0) - already,
      description: `${line.description} (${already} already billed on threshold invoices this period)`,
    };
  });
  for (const [key, amount] of Object.entries(left)) {
    if (amount === 0) continue;
    const [plan, meter, name] = key.split('\u001f');
    out.push({
      description: `${name}: billed on threshold invoices this period, no longer used`,
      amount: null,
      quantity: 0,
      total: -amount,
      ...(plan ? { plan } : {}),
      ...(meter ? { meter } : {}),
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
      proration: false,
    });
  }
  return out;
}

/** The amount of lines (their totals). */
export const linesAmount = (lines: readonly InvoiceLineInput[]): number =>
  lines.reduce((sum, line) => sum + (line.total ?? 0), 0);

/** Whether the unbilled usage reaches the threshold (an amount of 0 never does). */
export const thresholdReached = (unbilled: number, thresholds: Pick<BillingThresholds, 'amount_gte'>): boolean =>
  unbilled > 0 && unbilled >= thresholds.amount_gte;
