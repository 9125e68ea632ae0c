/**
 * Progressive billing's rule (domain/usage-thresholds.ts), property-tested: for random usage over a period
 * (integer units, graduated tiers with free units, several threshold crossings at random points, usage that
 * may go down again by a correction), the threshold invoices and the period-end invoice together bill exactly
 * what one invoice over the whole period bills, by a reference computed here apart from the engine; each
 * threshold invoice bills what was unbilled when it was made; and no invoice of the period bills twice.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import type { PriceTerms } from '../domain/subscription.ts';
import { usageLines } from '../domain/usage-billing.ts';
import {
  type BilledByLine,
  cumulativeByLine,
  linesAmount,
  sumBilled,
  thresholdReached,
  unbilledLines,
} from '../domain/usage-thresholds.ts';

/** Graduated tiers by hand, in whole units with integer unit prices: no rounding to agree on. */
function reference(quantity: number, free: number, tiers: { upTo: number | null; unit: number }[]): number {
  let left = Math.max(0, quantity - free);
  let previous = 0;
  let total = 0;
  for (const tier of tiers) {
    const room = tier.upTo === null ? left : Math.min(left, tier.upTo - previous);
    total += room * tier.unit;
    left -= room;
    if (tier.upTo !== null) previous = tier.upTo;
    if (left <= 0) break;
  }
  return total;
}

const period = { start: new Date('2033-01-01T00:00:00Z'), end: new Date('2033-02-01T00:00:00Z') };

function item(free: number, tiers: { upTo: number | null; unit: number }[]): PriceTerms {
  return {
    planId: 'plan_tokens',
    name: 'Tokens',
    amount: 0,
    currency: 'USD',
    quantity: 1,
    usage: {
      meterId: 'mtr_tokens',
      price: {
        pricing: {
          scheme: 'tiered',
          tiers_mode: 'graduated',
          tiers: tiers.map((t) => ({ up_to: t.upTo ?? 'inf', unit_amount: t.unit })),
        },
        freeQuantity: free > 0 ? String(free) : null,
      },
    },
  };
}

/** The usage lines of the period so far at a cumulative quantity, as the engine prices them. */
const linesAt = (terms: PriceTerms, quantity: number) =>
  usageLines(
    [terms],
    [{ meterId: 'mtr_tokens', aggregates: [{ dimensions: {}, value: String(quantity), events: 1 }] }],
    period,
  );

const tiersArb = fc
  .array(fc.record({ width: fc.integer({ min: 1, max: 500 }), unit: fc.integer({ min: 0, max: 20 }) }), {
    minLength: 1,
    maxLength: 4,
  })
  .chain((bounded) =>
    fc.integer({ min: 0, max: 20 }).map((last) => {
      let upTo = 0;
      const tiers: { upTo: number | null; unit: number }[] = bounded.map((t) => ({
        upTo: (upTo += t.width),
        unit: t.unit,
      }));
      return [...tiers, { upTo: null, unit: last }];
    }),
  );

describe('progressive billing: threshold invoices and the period-end invoice', () => {
  it('bill together what one invoice over the period bills, whatever the tiers and crossings', () => {
    fc.assert(
      fc.property(
        tiersArb,
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 3000 }),
        // Usage so far at each moment the threshold is looked at; a negative step is a cancelled event.
        fc.array(fc.integer({ min: -200, max: 1500 }), { minLength: 1, maxLength: 12 }),
        (tiers, free, amountGte, steps) => {
          const terms = item(free, tiers);
          const invoices: BilledByLine[] = [];
          const amounts: number[] = [];
          let quantity = 0;
          for (const step of steps) {
            quantity = Math.max(0, quantity + step);
            // What prepareThresholdInvoice does: the cumulative lines less what was billed.
            const billed = sumBilled(invoices);
            const unbilled = unbilledLines(linesAt(terms, quantity), billed, period);
            const amount = linesAmount(unbilled);
            expect(amount).toBe(reference(quantity, free, tiers) - (amounts.reduce((a, b) => a + b, 0) || 0));
            if (!thresholdReached(amount, { amount_gte: amountGte })) continue;
            expect(amount).toBeGreaterThanOrEqual(amountGte);
            const now = cumulativeByLine(linesAt(terms, quantity));
            const row: BilledByLine = {};
            for (const key of new Set([...Object.keys(now), ...Object.keys(billed)]))
              row[key] = (now[key] ?? 0) - (billed[key] ?? 0);
            invoices.push(row);
            amounts.push(amount);
          }
          // The period closes: its invoice bills the rest.
          const closing = unbilledLines(linesAt(terms, quantity), sumBilled(invoices), period);
          const total = amounts.reduce((a, b) => a + b, 0) + linesAmount(closing);
          expect(total).toBe(reference(quantity, free, tiers));
          // Each threshold invoice billed at least the threshold: never an invoice for less.
          for (const amount of amounts) expect(amount).toBeGreaterThanOrEqual(amountGte);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('leaves lines alone when nothing was billed early, and says what was', () => {
    const terms = item(0, [{ upTo: null, unit: 2 }]);
    const lines = linesAt(terms, 10);
    expect(unbilledLines(lines, undefined, period)).toEqual(lines);
    expect(unbilledLines(lines, {}, period)).toEqual(lines);
    const [line] = unbilledLines(lines, cumulativeByLine(linesAt(terms, 4)), period);
    expect(line).toMatchObject({ total: 12, quantity: 10 });
    expect(line!.description).toBe('Tokens: usage 10 (8 already billed on threshold invoices this period)');
    expect(thresholdReached(0, { amount_gte: 1 })).toBe(false);
  });
});
