/**
 * Late events' usage adjustments (domain/usage-late-events.ts), property-tested against a reference written here
 * apart from the engine: for random tiers (graduated or volume, integer or decimal unit prices, flat amounts), free
 * units, a billed quantity and late quantities (decimals with up to 6 places) taken by several invoices in turn,
 * each adjustment is the reference price of the period with the late events taken so far less its price before
 * them, and the period's invoice plus every adjustment sum to the reference price of the final quantity (tiers
 * never restart; each total rounded once, half away from zero).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { usageAdjustmentLines } from '../domain/usage-late-events.ts';

interface RefTier {
  upTo: number | null;
  /** Per unit, in 10^-3 minor units (so "1.250" cents is 1250). */
  unitMilli: number;
  flat: number;
}

/** Micro-units (10^-6) of a quantity. */
const MICRO = 1_000_000n;

/** Rounds a ratio half away from zero. */
function roundHalfAway(numerator: bigint, denominator: bigint): number {
  const negative = numerator < 0n;
  const abs = negative ? -numerator : numerator;
  const rounded = (2n * abs + denominator) / (2n * denominator);
  return Number(negative ? -rounded : rounded);
}

/** The price of `quantityMicro` units by hand: free units off, then tiers, exactly, rounded once at the end. */
function referencePrice(
  quantityMicro: bigint,
  freeMicro: bigint,
  mode: 'graduated' | 'volume',
  tiers: RefTier[],
): number {
  let billed = quantityMicro - freeMicro;
  if (billed < 0n) billed = 0n;
  // Exact amount in 10^-9 minor units (micro-units × milli-minor).
  let exact = 0n;
  if (mode === 'volume') {
    if (billed === 0n) return 0;
    const tier = tiers.find((t) => t.upTo === null || billed <= BigInt(t.upTo) * MICRO) ?? tiers[tiers.length - 1]!;
    exact = billed * BigInt(tier.unitMilli) + BigInt(tier.flat) * MICRO * 1000n;
  } else {
    let from = 0n;
    for (const tier of tiers) {
      if (billed <= from) break;
      const to = tier.upTo === null ? billed : BigInt(tier.upTo) * MICRO;
      const room = (billed < to ? billed : to) - from;
      exact += room * BigInt(tier.unitMilli) + BigInt(tier.flat) * MICRO * 1000n;
      from = to;
    }
  }
  return roundHalfAway(exact, MICRO * 1000n);
}

const text = (micro: bigint): string => {
  const whole = micro / MICRO;
  const fraction = (micro % MICRO).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
};

const tiersArb = fc
  .array(
    fc.record({
      width: fc.integer({ min: 1, max: 500 }),
      unitMilli: fc.integer({ min: 0, max: 5000 }),
      flat: fc.integer({ min: 0, max: 300 }),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((rows) => {
    let upTo = 0;
    return rows.map((row, i): RefTier => {
      upTo += row.width;
      return { upTo: i === rows.length - 1 ? null : upTo, unitMilli: row.unitMilli, flat: row.flat };
    });
  });

const quantityArb = fc.bigInt({ min: 0n, max: 900n * MICRO });

describe('usage adjustments of late events', () => {
  it('bill the old period price difference, invoice after invoice, summing to the final quantity’s reference price', () => {
    fc.assert(
      fc.property(
        tiersArb,
        fc.constantFrom('graduated' as const, 'volume' as const),
        fc.integer({ min: 0, max: 200 }),
        quantityArb,
        fc.array(quantityArb, { minLength: 1, maxLength: 4 }),
        (tiers, mode, free, billedMicro, lateBatches) => {
          const price = {
            pricing: {
              scheme: 'tiered' as const,
              tiers_mode: mode,
              tiers: tiers.map((t) => ({
                up_to: t.upTo ?? ('inf' as const),
                unit_amount_decimal: (t.unitMilli / 1000).toFixed(3),
                ...(t.flat ? { flat_amount: t.flat } : {}),
              })),
            },
            freeQuantity: free > 0 ? String(free) : null,
          };
          const freeMicro = BigInt(free) * MICRO;
          const period = { start: new Date('2033-01-15T00:00:00Z'), end: new Date('2033-02-15T00:00:00Z') };
          let before = billedMicro;
          let billedTotal = referencePrice(billedMicro, freeMicro, mode, tiers);
          for (const late of lateBatches) {
            const after = before + late;
            const lines = usageAdjustmentLines({
              planId: 'plan_tokens',
              meterId: 'mtr_tokens',
              meterName: 'Tokens',
              price,
              period,
              billed: [{ dimensions: {}, value: text(before), events: 1 }],
              withLate: [{ dimensions: {}, value: text(after), events: 2 }],
            });
            const expected =
              referencePrice(after, freeMicro, mode, tiers) - referencePrice(before, freeMicro, mode, tiers);
            const amount = lines.reduce((sum, line) => sum + (line.total ?? 0), 0);
            expect(amount).toBe(expected);
            // A line only when something changed, with the late quantity.
            if (late === 0n) expect(lines).toHaveLength(0);
            else {
              expect(lines).toHaveLength(1);
              expect(lines[0]!.quantity_decimal).toBe(text(late));
              expect(lines[0]!.description).toContain('Usage adjustment: Tokens for 2033-01-15T00:00:00.000Z');
            }
            billedTotal += amount;
            before = after;
          }
          expect(billedTotal).toBe(referencePrice(before, freeMicro, mode, tiers));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('per dimension value when the price groups by one, and negative when late events lower the usage', () => {
    const price = {
      pricing: { scheme: 'per_unit' as const, amount: 3 },
      groupBy: 'model',
    };
    const period = { start: new Date('2033-01-15T00:00:00Z'), end: new Date('2033-02-15T00:00:00Z') };
    const lines = usageAdjustmentLines({
      planId: 'plan_tokens',
      meterId: 'mtr_tokens',
      meterName: 'Tokens',
      price,
      period,
      billed: [
        { dimensions: { model: 'large' }, value: '10', events: 1 },
        { dimensions: { model: 'small' }, value: '5', events: 1 },
      ],
      withLate: [
        { dimensions: { model: 'large' }, value: '4', events: 2 },
        { dimensions: { model: 'small' }, value: '5', events: 1 },
        { dimensions: { model: 'tiny' }, value: '2', events: 1 },
      ],
    });
    expect(lines.map((l) => [l.description.split(' for ')[0], l.quantity_decimal, l.total])).toEqual([
      ['Usage adjustment: Tokens (model: large)', '-6', -18],
      ['Usage adjustment: Tokens (model: tiny)', '2', 6],
    ]);
  });
});
