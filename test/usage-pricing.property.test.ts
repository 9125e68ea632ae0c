/**
 * Usage prices (domain/pricing.ts with decimal quantities and the percentage scheme;
 * domain/usage-pricing.ts with free units and dimension prices) against a reference written
 * apart: plain rational arithmetic (numerator/denominator bigints) from the documented rules,
 * walking tiers by their bounds rather than sharing the engine's code.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { formatMinorDecimal } from '../domain/invoice-lines.ts';
import { priceFor, pricingProblems, type Tier, type UsagePricing } from '../domain/pricing.ts';
import { type MeteredPrice, usageCharges } from '../domain/usage-pricing.ts';

type Q = { n: bigint; d: bigint };
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? (a < 0n ? -a : a) : gcd(b, a % b));
const q = (n: bigint, d = 1n): Q => {
  const g = gcd(n, d) || 1n;
  return { n: n / g, d: d / g };
};
const add = (a: Q, b: Q) => q(a.n * b.d + b.n * a.d, a.d * b.d);
const sub = (a: Q, b: Q) => q(a.n * b.d - b.n * a.d, a.d * b.d);
const mul = (a: Q, b: Q) => q(a.n * b.n, a.d * b.d);
const cmp = (a: Q, b: Q) => (a.n * b.d < b.n * a.d ? -1 : a.n * b.d > b.n * a.d ? 1 : 0);
const min = (a: Q, b: Q) => (cmp(a, b) <= 0 ? a : b);
/** A decimal string as a fraction, by hand. */
const dec = (text: string): Q => {
  const [w, f = ''] = text.split('.');
  return q(BigInt(w! + f), 10n ** BigInt(f.length));
};
/** Half away from zero, for non-negative fractions. */
const roundRef = (x: Q): bigint => (2n * x.n + x.d) / (2n * x.d);
const ceilDiv = (x: Q, y: Q): bigint => {
  const r = q(x.n * y.d, x.d * y.n);
  return (r.n + r.d - 1n) / r.d;
};
const floorDiv = (x: Q, y: Q): bigint => {
  const r = q(x.n * y.d, x.d * y.n);
  return r.n / r.d;
};

const unitOf = (t: Tier): Q =>
  t.unit_amount_decimal != null ? dec(t.unit_amount_decimal) : q(BigInt(t.unit_amount ?? 0));

function reference(pricing: UsagePricing, quantity: Q, events: number): Q {
  const zero = q(0n);
  let total = zero;
  if (quantity.n > 0n) {
    switch (pricing.scheme) {
      case 'per_unit':
        total = mul(quantity, q(BigInt(pricing.amount)));
        break;
      case 'percentage':
        total = mul(quantity, mul(dec(pricing.percentage), q(1n, 100n)));
        break;
      case 'package': {
        const size = q(BigInt(pricing.package_size));
        const packs = pricing.round === 'up' ? ceilDiv(quantity, size) : floorDiv(quantity, size);
        total = q(packs * BigInt(pricing.amount));
        break;
      }
      case 'tiered': {
        const bounds = pricing.tiers.map((t) => (t.up_to === 'inf' ? null : q(BigInt(t.up_to))));
        if (pricing.tiers_mode === 'graduated') {
          let lower = zero;
          pricing.tiers.forEach((tier, i) => {
            if (cmp(quantity, lower) <= 0) return;
            const upper = bounds[i] === null ? quantity : min(quantity, bounds[i]!);
            total = add(total, add(mul(sub(upper, lower), unitOf(tier)), q(BigInt(tier.flat_amount ?? 0))));
            lower = bounds[i] ?? quantity;
          });
        } else {
          const i = bounds.findIndex((b) => b === null || cmp(quantity, b) <= 0);
          total = add(mul(quantity, unitOf(pricing.tiers[i]!)), q(BigInt(pricing.tiers[i]!.flat_amount ?? 0)));
        }
        break;
      }
    }
  }
  if (pricing.scheme === 'percentage' && pricing.fixed_amount_decimal)
    total = add(total, mul(q(BigInt(events)), dec(pricing.fixed_amount_decimal)));
  return total;
}

/** A decimal quantity string of up to 6 places, and sometimes a whole one. */
const quantityText = fc
  .tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 999_999 }), fc.integer({ min: 0, max: 6 }))
  .map(([whole, fraction, places]) =>
    places === 0 ? String(whole) : `${whole}.${String(fraction).padStart(6, '0').slice(0, places)}`,
  );
const unitDecimal = fc
  .tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 999 }))
  .map(([w, f]) => `${w}.${String(f).padStart(3, '0')}`);
const tier = (upTo: number | 'inf') =>
  fc
    .record({
      up_to: fc.constant(upTo),
      unit: fc.oneof(
        fc.integer({ min: 0, max: 5000 }).map((n) => ({ unit_amount: n })),
        unitDecimal.map((d) => ({ unit_amount_decimal: d })),
      ),
      flat: fc.option(fc.integer({ min: 0, max: 2000 }), { nil: undefined }),
    })
    .map((t): Tier => ({ up_to: t.up_to, ...t.unit, ...(t.flat !== undefined ? { flat_amount: t.flat } : {}) }));
const tiers = fc
  .uniqueArray(fc.integer({ min: 1, max: 250 }), { maxLength: 4 })
  .map((bounds) => [...bounds].sort((a, b) => a - b))
  .chain((bounds) => fc.tuple(...bounds.map((b) => tier(b)), tier('inf')));
const percentageText = fc
  .tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 999_999 }))
  .map(([w, f]) => (w === 100 ? '100' : `${w}.${String(f).padStart(6, '0')}`.replace(/\.?0+$/, '') || '0'));
const pricing: fc.Arbitrary<UsagePricing> = fc.oneof(
  fc.integer({ min: 0, max: 100_000 }).map((amount): UsagePricing => ({ scheme: 'per_unit', amount })),
  fc
    .record({
      amount: fc.integer({ min: 0, max: 100_000 }),
      size: fc.integer({ min: 1, max: 50 }),
      round: fc.constantFrom('up' as const, 'down' as const),
    })
    .map((p): UsagePricing => ({ scheme: 'package', amount: p.amount, package_size: p.size, round: p.round })),
  fc
    .record({ mode: fc.constantFrom('graduated' as const, 'volume' as const), tiers })
    .map((p): UsagePricing => ({ scheme: 'tiered', tiers_mode: p.mode, tiers: p.tiers })),
  fc
    .record({ percentage: percentageText, fee: fc.option(unitDecimal, { nil: null }) })
    .map((p): UsagePricing => ({ scheme: 'percentage', percentage: p.percentage, fixed_amount_decimal: p.fee })),
);

describe('decimal quantities and the percentage scheme against a rational reference', () => {
  it('every generated price is valid', () => {
    fc.assert(
      fc.property(pricing, (p) => {
        expect(pricingProblems(p)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('the amount is the reference rounded once, half away from zero; amount_decimal is the exact reference', () => {
    fc.assert(
      fc.property(pricing, quantityText, fc.integer({ min: 0, max: 40 }), (p, text, events) => {
        const exact = reference(p, dec(text), events);
        const result = priceFor(p, text, { events });
        expect(dec(result.amount_decimal)).toEqual(exact);
        expect(BigInt(result.amount)).toBe(roundRef(exact));
        expect(dec(result.quantity_decimal!)).toEqual(dec(text));
        // The rows add up to the exact amount.
        const sum = result.rows.reduce((acc, row) => add(acc, dec(row.amount_decimal)), q(0n));
        expect(sum).toEqual(exact);
      }),
      { numRuns: 1500 },
    );
  });

  it('a whole quantity prices the same as a number and as a decimal string ("12" and "12.000")', () => {
    fc.assert(
      fc.property(
        pricing.filter((p) => p.scheme !== 'percentage'),
        fc.integer({ min: 0, max: 300 }),
        (p, n) => {
          const asNumber = priceFor(p, n);
          for (const text of [String(n), `${n}.000`]) {
            const asText = priceFor(p, text);
            expect(asText.amount).toBe(asNumber.amount);
            expect(asText.amount_decimal).toBe(asNumber.amount_decimal);
            expect(asText.rows.map(({ quantity_decimal: _, ...row }) => row)).toEqual(asNumber.rows);
          }
          // The number path's result has no decimal fields (its shape is unchanged).
          expect('quantity_decimal' in asNumber).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a graduated price never falls as a decimal quantity grows', () => {
    fc.assert(
      fc.property(tiers, quantityText, quantityText, (t, a, b) => {
        const p: UsagePricing = { scheme: 'tiered', tiers_mode: 'graduated', tiers: t };
        const [lo, hi] = cmp(dec(a), dec(b)) <= 0 ? [a, b] : [b, a];
        expect(dec(priceFor(p, lo).amount_decimal).n * dec(priceFor(p, hi).amount_decimal).d).toBeLessThanOrEqual(
          dec(priceFor(p, hi).amount_decimal).n * dec(priceFor(p, lo).amount_decimal).d,
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe('usage charges: free units and dimension prices', () => {
  const dimensionValue = fc.constantFrom('gpt-small', 'gpt-large', '', 'eu');
  const aggregates = fc.array(
    fc.record({ dimension: dimensionValue, value: quantityText, events: fc.integer({ min: 0, max: 30 }) }),
    { maxLength: 6 },
  );

  it('each dimension value is priced once, by its override or the plan, on its summed quantity minus the free units', () => {
    fc.assert(
      fc.property(
        pricing,
        fc.option(quantityText, { nil: null }),
        aggregates,
        fc.boolean(),
        (p, free, rows, grouped) => {
          const overrides: MeteredPrice['dimensionPrices'] =
            p.scheme === 'per_unit' || p.scheme === 'package'
              ? { 'gpt-large': { amount: 7 } }
              : p.scheme === 'percentage'
                ? { 'gpt-large': { percentage: '50' } }
                : { 'gpt-large': { tiers: [{ up_to: 'inf', unit_amount_decimal: '0.5' }] } };
          const price: MeteredPrice = {
            pricing: p,
            freeQuantity: free,
            groupBy: grouped ? 'model' : null,
            dimensionPrices: grouped ? overrides : null,
          };
          const charges = usageCharges(
            price,
            rows.map((r) => ({
              dimensions: (grouped ? { model: r.dimension } : {}) as Record<string, string>,
              value: r.value,
              events: r.events,
            })),
          );
          // The reference: sum per key, subtract free (not below 0), price with the override's fields laid over the plan's.
          const keys = grouped ? [...new Set(rows.map((r) => r.dimension))].sort() : [null];
          expect(charges.map((c) => c.dimension)).toEqual(keys);
          for (const charge of charges) {
            const mine = rows.filter((r) => charge.dimension === null || r.dimension === charge.dimension);
            const total = mine.reduce((acc, r) => add(acc, dec(r.value)), q(0n));
            const events = mine.reduce((acc, r) => acc + r.events, 0);
            const freeQ = free ? dec(free) : q(0n);
            const billed = cmp(total, freeQ) > 0 ? sub(total, freeQ) : q(0n);
            const over = charge.dimension === 'gpt-large' ? overrides['gpt-large']! : null;
            const effective: UsagePricing = !over
              ? p
              : p.scheme === 'tiered'
                ? { ...p, tiers: over.tiers! }
                : p.scheme === 'percentage'
                  ? { ...p, percentage: over.percentage! }
                  : { ...p, amount: over.amount! };
            const exact = reference(effective, billed, events);
            expect(dec(charge.billedQuantity)).toEqual(billed);
            expect(charge.events).toBe(events);
            expect(BigInt(charge.price.amount)).toBe(roundRef(exact));
          }
        },
      ),
      { numRuns: 800 },
    );
  });

  it('worked example: 2.9% of $1,234.56 of payments + $0.30 × 3 payments = $36.70 (3580.224 + 90 → 3670.224 → 3670)', () => {
    const charge = usageCharges({ pricing: { scheme: 'percentage', percentage: '2.9', fixed_amount_decimal: '30' } }, [
      { dimensions: {}, value: '123456', events: 3 },
    ])[0]!;
    expect(charge.price.amount_decimal).toBe('3670.224');
    expect(charge.price.amount).toBe(3670);
    expect(charge.price.rows.map((r) => [r.quantity_decimal, r.unit_amount_decimal, r.amount_decimal])).toEqual([
      ['123456', '0.029', '3580.224'],
      ['3', '30', '90'],
    ]);
  });

  it('a negative aggregate bills nothing; free units never go below zero', () => {
    expect(
      usageCharges({ pricing: { scheme: 'per_unit', amount: 100 }, freeQuantity: '10' }, [
        { dimensions: {}, value: '-5', events: 2 },
      ])[0],
    ).toMatchObject({ quantity: '0', billedQuantity: '0', price: { amount: 0 } });
    expect(
      usageCharges({ pricing: { scheme: 'per_unit', amount: 100 }, freeQuantity: '10' }, [
        { dimensions: {}, value: '12.5', events: 2 },
      ])[0],
    ).toMatchObject({ freeQuantity: '10', billedQuantity: '2.5', price: { amount: 250 } });
  });

  it('percentage validation: at most 100, at most 6 places; the fee a decimal of minor units', () => {
    expect(pricingProblems({ scheme: 'percentage', percentage: '100.5' })).toHaveLength(1);
    expect(pricingProblems({ scheme: 'percentage', percentage: '2.9999999' })).toHaveLength(1);
    expect(pricingProblems({ scheme: 'percentage', percentage: '2.9', fixed_amount_decimal: '-1' })).toHaveLength(1);
    expect(pricingProblems({ scheme: 'percentage', percentage: '0.25', fixed_amount_decimal: '0.5' })).toEqual([]);
    expect(() => priceFor({ scheme: 'per_unit', amount: 1 }, '1.0000001')).toThrow(/at most 6 decimal places/);
    expect(() => priceFor({ scheme: 'per_unit', amount: 1 }, '-1')).toThrow(/non-negative/);
  });

  it('a breakdown prints sub-cent unit prices as they are (the PDF: 0.5 cents is $0.005, 2 cents $0.02)', () => {
    expect(['0.5', '2', '0.0025', '750.5', '1500', '0'].map((minor) => formatMinorDecimal(minor, 'USD'))).toEqual([
      '$0.005',
      '$0.02',
      '$0.000025',
      '$7.505',
      '$15.00',
      '$0.00',
    ]);
    expect(formatMinorDecimal('5', 'JPY')).toBe('¥5');
  });
});
