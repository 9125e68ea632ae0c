/**
 * domain/pricing.ts against a reference written apart from it: the engine sums tiers in
 * scaled bigints; the reference walks the quantity unit by unit in exact fractions
 * (numerator/denominator bigints), adds each tier's flat amount at the first unit that
 * enters it, and rounds the fraction half away from zero. Random schemes and quantities
 * (fast-check), then worked examples with the numbers docs/pricing.md shows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { lineAmount } from '../domain/invoice-lines.ts';
import { priceFor, type Pricing, pricingProblems, type Tier } from '../domain/pricing.ts';
import { initialSnapshot, type PlanTerms, type SubscriptionSnapshot } from '../domain/subscription.ts';
import {
  billingAnchorFrom,
  commandProblem,
  cycleInvoice,
  cycleLine,
  oneTimeLines,
  planChangeKind,
  termsPrice,
  upgradeLines,
} from '../domain/subscription-decisions.ts';

// ---- The reference: fractions, unit by unit -----------------------------------

interface Fraction {
  n: bigint;
  d: bigint;
}
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? (a < 0n ? -a : a) : gcd(b, a % b));
const frac = (n: bigint, d = 1n): Fraction => {
  const g = gcd(n, d) || 1n;
  return { n: n / g, d: d / g };
};
const add = (a: Fraction, b: Fraction): Fraction => frac(a.n * b.d + b.n * a.d, a.d * b.d);
const times = (a: Fraction, k: number): Fraction => frac(a.n * BigInt(k), a.d);
/** "12.345" as 12345/1000, written without the engine's parser. */
function fractionOf(decimal: string): Fraction {
  const dot = decimal.indexOf('.');
  if (dot < 0) return frac(BigInt(decimal));
  const places = decimal.length - dot - 1;
  return frac(BigInt(decimal.replace('.', '')), 10n ** BigInt(places));
}
/** Half away from zero, on a non-negative fraction: floor(x + 1/2). */
const roundFraction = (x: Fraction): number => Number((2n * x.n + x.d) / (2n * x.d));

const unitOf = (tier: Tier): Fraction =>
  tier.unit_amount_decimal != null ? fractionOf(tier.unit_amount_decimal) : frac(BigInt(tier.unit_amount ?? 0));
/** The 0-based tier that unit number `u` (1-based) falls in. */
const tierOfUnit = (tiers: Tier[], u: number): number => tiers.findIndex((t) => t.up_to === 'inf' || u <= t.up_to);

function reference(pricing: Pricing, quantity: number): Fraction {
  let total = frac(0n);
  if (quantity === 0) return total;
  switch (pricing.scheme) {
    case 'per_unit':
      for (let u = 1; u <= quantity; u++) total = add(total, frac(BigInt(pricing.amount)));
      return total;
    case 'package': {
      // Count packages by walking the units: a package is complete every package_size units; a started one counts when rounding up.
      let packages = 0;
      let inPackage = 0;
      for (let u = 1; u <= quantity; u++) {
        inPackage++;
        if (inPackage === pricing.package_size) {
          packages++;
          inPackage = 0;
        }
      }
      if (inPackage > 0 && pricing.round === 'up') packages++;
      return times(frac(BigInt(pricing.amount)), packages);
    }
    case 'tiered': {
      if (pricing.tiers_mode === 'volume') {
        const tier = pricing.tiers[tierOfUnit(pricing.tiers, quantity)]!;
        return add(times(unitOf(tier), quantity), frac(BigInt(tier.flat_amount ?? 0)));
      }
      let entered = -1;
      for (let u = 1; u <= quantity; u++) {
        const index = tierOfUnit(pricing.tiers, u);
        if (index !== entered) {
          total = add(total, frac(BigInt(pricing.tiers[index]!.flat_amount ?? 0)));
          entered = index;
        }
        total = add(total, unitOf(pricing.tiers[index]!));
      }
      return total;
    }
  }
}

// ---- Random schemes ---------------------------------------------------------

const decimalUnit = fc
  .tuple(
    fc.integer({ min: 0, max: 5000 }),
    fc.integer({ min: 0, max: 12 }),
    fc.bigInt({ min: 0n, max: 10n ** 12n - 1n }),
  )
  .map(([whole, places, digits]) =>
    places === 0 ? String(whole) : `${whole}.${digits.toString().padStart(12, '0').slice(0, places)}`,
  );

const tier = fc.record({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 5000 }).map((n) => ({ unit_amount: n })),
    decimalUnit.map((d) => ({ unit_amount_decimal: d })),
  ),
  flat: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
});

/** 1 to 5 tiers, up_to strictly ascending, the last "inf". */
const tiers = fc
  .tuple(
    fc.uniqueArray(fc.integer({ min: 1, max: 80 }), { minLength: 0, maxLength: 4 }),
    fc.array(tier, { minLength: 5, maxLength: 5 }),
  )
  .map(([bounds, shapes]): Tier[] => {
    const ups: (number | 'inf')[] = [...bounds.sort((a, b) => a - b), 'inf'];
    return ups.map((up_to, i) => ({
      up_to,
      ...shapes[i]!.unit,
      ...(shapes[i]!.flat !== undefined ? { flat_amount: shapes[i]!.flat } : {}),
    }));
  });

const tieredPricing = (mode: 'graduated' | 'volume') =>
  tiers.map((t): Pricing => ({ scheme: 'tiered', tiers_mode: mode, tiers: t }));
const pricing: fc.Arbitrary<Pricing> = fc.oneof(
  fc.integer({ min: 0, max: 1_000_000 }).map((amount): Pricing => ({ scheme: 'per_unit', amount })),
  fc
    .tuple(
      fc.integer({ min: 0, max: 1_000_000 }),
      fc.integer({ min: 1, max: 50 }),
      fc.constantFrom('up' as const, 'down' as const),
    )
    .map(([amount, size, round]): Pricing => ({ scheme: 'package', amount, package_size: size, round })),
  tieredPricing('graduated'),
  tieredPricing('volume'),
);
const quantity = fc.integer({ min: 0, max: 200 });

describe('property: prices match a reference computed unit by unit in fractions', () => {
  it('random schemes are valid to the engine', () => {
    fc.assert(
      fc.property(pricing, (p) => {
        expect(pricingProblems(p)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('graduated and volume tiers, per_unit and package: the amount is the reference rounded half away from zero, an integer', () => {
    fc.assert(
      fc.property(pricing, quantity, (p, q) => {
        const result = priceFor(p, q);
        const exact = reference(p, q);
        expect(Number.isSafeInteger(result.amount)).toBe(true);
        expect(result.amount).toBe(roundFraction(exact));
        // The exact amount the engine shows is the reference's fraction, digit for digit.
        const shown = fractionOf(result.amount_decimal);
        expect(shown.n * exact.d).toBe(exact.n * shown.d);
        // Its rows add up to it, and price every unit once (packages: every package).
        const rows = result.rows.reduce((sum, row) => add(sum, fractionOf(row.amount_decimal)), frac(0n));
        expect(rows.n * exact.d).toBe(exact.n * rows.d);
        if (p.scheme === 'tiered' && p.tiers_mode === 'graduated')
          expect(result.rows.reduce((sum, row) => sum + row.quantity, 0)).toBe(q);
      }),
      { numRuns: 1000 },
    );
  });

  it('a graduated amount never falls as the quantity grows', () => {
    fc.assert(
      fc.property(tieredPricing('graduated'), fc.integer({ min: 0, max: 199 }), (p, q) => {
        expect(priceFor(p, q + 1).amount).toBeGreaterThanOrEqual(priceFor(p, q).amount);
      }),
      { numRuns: 1000 },
    );
  });

  it('quantity 0 costs 0 in every scheme', () => {
    fc.assert(
      fc.property(pricing, (p) => {
        expect(priceFor(p, 0)).toMatchObject({ amount: 0, rows: [] });
      }),
    );
  });
});

describe('worked examples (docs/pricing.md)', () => {
  it('per_unit: 12 seats × 15.00 = 180.00', () => {
    expect(priceFor({ scheme: 'per_unit', amount: 1500 }, 12)).toEqual({
      quantity: 12,
      amount: 18000,
      amount_decimal: '18000',
      rows: [
        {
          tier: null,
          from_unit: 1,
          up_to: 12,
          quantity: 12,
          unit_amount_decimal: '1500',
          flat_amount: 0,
          amount_decimal: '18000',
        },
      ],
    });
  });

  const apiTiers: Tier[] = [
    { up_to: 10, unit_amount: 1000 },
    { up_to: 'inf', unit_amount_decimal: '750.5', flat_amount: 500 },
  ];

  it('graduated: 15 units = 10 × 10.00 + (5 × 7.505 + 5.00 flat) = 142.525, rounded once to 142.53', () => {
    const result = priceFor({ scheme: 'tiered', tiers_mode: 'graduated', tiers: apiTiers }, 15);
    expect(result.amount_decimal).toBe('14252.5');
    expect(result.amount).toBe(14253);
    expect(result.rows).toEqual([
      {
        tier: 0,
        from_unit: 1,
        up_to: 10,
        quantity: 10,
        unit_amount_decimal: '1000',
        flat_amount: 0,
        amount_decimal: '10000',
      },
      {
        tier: 1,
        from_unit: 11,
        up_to: null,
        quantity: 5,
        unit_amount_decimal: '750.5',
        flat_amount: 500,
        amount_decimal: '4252.5',
      },
    ]);
    // The flat amount of a tier is charged once the quantity reaches it: 10 units do not.
    expect(priceFor({ scheme: 'tiered', tiers_mode: 'graduated', tiers: apiTiers }, 10).amount).toBe(10000);
    expect(priceFor({ scheme: 'tiered', tiers_mode: 'graduated', tiers: apiTiers }, 11).amount).toBe(11251); // 10000 + 750.5 + 500 = 11250.5
  });

  it('volume: 15 units all at the second tier: 15 × 7.505 + 5.00 = 117.575 → 117.58; 10 units at the first: 100.00', () => {
    const volume: Pricing = { scheme: 'tiered', tiers_mode: 'volume', tiers: apiTiers };
    expect(priceFor(volume, 15)).toMatchObject({ amount: 11758, amount_decimal: '11757.5' });
    expect(priceFor(volume, 10)).toMatchObject({ amount: 10000, rows: [{ tier: 0, quantity: 10 }] });
    // A volume price may fall as the quantity crosses into a cheaper tier (11 units cost less than 10 at a steep first tier).
    const steep: Pricing = {
      scheme: 'tiered',
      tiers_mode: 'volume',
      tiers: [
        { up_to: 10, unit_amount: 2000 },
        { up_to: 'inf', unit_amount: 1000 },
      ],
    };
    expect(priceFor(steep, 11).amount).toBeLessThan(priceFor(steep, 10).amount);
  });

  it('package: 5.00 per 100 messages; 250 messages are 3 packs rounded up (15.00), 2 rounded down (10.00)', () => {
    expect(priceFor({ scheme: 'package', amount: 500, package_size: 100, round: 'up' }, 250)).toMatchObject({
      amount: 1500,
      rows: [{ quantity: 3, up_to: 300 }],
    });
    expect(priceFor({ scheme: 'package', amount: 500, package_size: 100, round: 'down' }, 250)).toMatchObject({
      amount: 1000,
      rows: [{ quantity: 2, up_to: 200 }],
    });
    expect(priceFor({ scheme: 'package', amount: 500, package_size: 100, round: 'down' }, 99)).toMatchObject({
      amount: 0,
      rows: [],
    });
  });

  it('sub-minor units round once per line, half away from zero: 3 × 0.5 = 1.5 → 2, 1 × 0.5 → 1, 1 × 0.4999 → 0', () => {
    const half = (unit: string): Pricing => ({
      scheme: 'tiered',
      tiers_mode: 'volume',
      tiers: [{ up_to: 'inf', unit_amount_decimal: unit }],
    });
    expect(priceFor(half('0.5'), 3).amount).toBe(2);
    expect(priceFor(half('0.5'), 1).amount).toBe(1);
    expect(priceFor(half('0.4999'), 1).amount).toBe(0);
    // Rounding per tier would make 1 + 1 = 2 here; the line rounds once: 0.5 + 0.5 = 1.
    const twoHalves: Pricing = {
      scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 1, unit_amount_decimal: '0.5' },
        { up_to: 'inf', unit_amount_decimal: '0.5' },
      ],
    };
    expect(priceFor(twoHalves, 2).amount).toBe(1);
    // A millionth of a cent per API call, for a billion calls: exactly 10.00.
    expect(priceFor(half('0.000001'), 1_000_000_000).amount).toBe(1000);
  });
});

describe('validation names each problem', () => {
  const tiered = (t: Tier[], mode: 'graduated' | 'volume' = 'graduated'): Pricing => ({
    scheme: 'tiered',
    tiers_mode: mode,
    tiers: t,
  });

  it('tiers ascend, only the last is "inf", and it must be', () => {
    expect(
      pricingProblems(
        tiered([
          { up_to: 10, unit_amount: 1 },
          { up_to: 5, unit_amount: 1 },
          { up_to: 'inf', unit_amount: 1 },
        ]),
      ),
    ).toEqual(["tiers[1].up_to: tiers must ascend; 5 is not above the previous tier's 10."]);
    expect(
      pricingProblems(
        tiered([
          { up_to: 'inf', unit_amount: 1 },
          { up_to: 'inf', unit_amount: 1 },
        ]),
      ),
    ).toEqual(['tiers[0].up_to: only the last tier may be "inf".']);
    expect(pricingProblems(tiered([{ up_to: 10, unit_amount: 1 }]))).toEqual([
      'tiers[0].up_to: the last tier must be "inf" (it takes every quantity above 0); got 10.',
    ]);
    expect(pricingProblems(tiered([]))).toEqual([
      'tiers: a tiered price needs at least one tier, the last with up_to "inf".',
    ]);
  });

  it('exactly one of unit_amount and unit_amount_decimal, a decimal of at most 12 places', () => {
    expect(pricingProblems(tiered([{ up_to: 'inf', unit_amount: 1, unit_amount_decimal: '1.5' }]))).toEqual([
      'tiers[0]: give exactly one of unit_amount and unit_amount_decimal, not both.',
    ]);
    expect(pricingProblems(tiered([{ up_to: 'inf', flat_amount: 100 }]))).toEqual([
      'tiers[0]: give exactly one of unit_amount and unit_amount_decimal (0 for a tier of only a flat_amount).',
    ]);
    expect(pricingProblems(tiered([{ up_to: 'inf', unit_amount_decimal: '0.0000000000001' }]))).toEqual([
      'tiers[0].unit_amount_decimal: must be a decimal string of minor units, like "0.125", with at most 12 decimal places.',
    ]);
    expect(pricingProblems(tiered([{ up_to: 'inf', unit_amount_decimal: '-1' }]))[0]).toMatch(
      /^tiers\[0\]\.unit_amount_decimal: must be a decimal string/,
    );
    expect(pricingProblems(tiered([{ up_to: 'inf', unit_amount: -1 }]))).toEqual([
      'tiers[0].unit_amount: must be an integer of minor units from 0 to 99999999.',
    ]);
  });

  it('package size and rounding', () => {
    expect(pricingProblems({ scheme: 'package', amount: 500, package_size: 0, round: 'up' })).toEqual([
      'package_size: must be an integer from 1 to 1000000000.',
    ]);
    expect(pricingProblems({ scheme: 'package', amount: 500, package_size: 10, round: 'sideways' as 'up' })).toEqual([
      'package_round: must be "up" or "down".',
    ]);
  });
});

describe('invoice lines from the workflow terms (domain/subscription-decisions.ts)', () => {
  const sub = (changes: Partial<SubscriptionSnapshot> = {}): SubscriptionSnapshot => ({
    ...initialSnapshot({
      id: 'sub_1',
      accountId: 'acct_1',
      customerId: 'cus_1',
      planId: 'plan_api',
      livemode: false,
      trialDays: 0,
      billingCycleMode: 'anniversary',
      pauseUntil: null,
      gracePeriodDays: null,
    }),
    status: 'active',
    version: 3,
    billingAnchor: '2025-01-01T00:00:00.000Z',
    billingCycle: 0,
    currentPeriodStart: '2025-01-01T00:00:00.000Z',
    currentPeriodEnd: '2025-02-01T00:00:00.000Z',
    ...changes,
  });
  const month = { unit: 'month' as const, count: 1 };
  const legacy: PlanTerms = { planId: 'plan_pro', name: 'Pro', amount: 3000, currency: 'USD', interval: month };
  const graduated: PlanTerms = {
    planId: 'plan_api',
    name: 'API calls',
    amount: 1000,
    currency: 'USD',
    interval: month,
    quantity: 15,
    pricing: {
      scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 10, unit_amount: 1000 },
        { up_to: 'inf', unit_amount_decimal: '750.5', flat_amount: 500 },
      ],
    },
  };
  const seats = (amount: number, planId = 'plan_seats'): PlanTerms => ({
    planId,
    name: planId,
    amount,
    currency: 'USD',
    interval: month,
    quantity: 12,
    pricing: { scheme: 'per_unit', amount },
  });
  const jan = { start: new Date('2025-01-01T00:00:00.000Z'), end: new Date('2025-02-01T00:00:00.000Z'), index: 0 };

  it('terms recorded before pricing schemes make exactly the line they always made', () => {
    expect(cycleLine(sub(), legacy, jan)).toStrictEqual({
      description: 'Pro',
      amount: 3000,
      quantity: 1,
      period_start: '2025-01-01T00:00:00.000Z',
      period_end: '2025-02-01T00:00:00.000Z',
      proration: false,
    });
    expect(termsPrice(legacy).amount).toBe(3000);
  });

  it('a tiered line: the whole amount in total, no unit amount, the tiers in the breakdown', () => {
    const line = cycleLine(sub(), graduated, jan);
    expect(line).toMatchObject({
      description: 'API calls',
      plan: 'plan_api',
      quantity: 15,
      amount: null,
      total: 14253,
      proration: false,
    });
    expect(line.breakdown!.map((row) => row.amount_decimal)).toEqual(['10000', '4252.5']);
    expect(lineAmount(line)).toBe(14253);
  });

  it("a calendar stub prorates the price's whole amount at its quantity once", () => {
    // Jan 15 to Feb 1: 17 of January's 31 days of 12 × 1500.
    const stub = sub({
      billingCycleMode: 'calendar',
      ...billingAnchorFrom('calendar', new Date('2025-01-15T00:00:00.000Z'), 'month'),
    });
    const { invoice } = cycleInvoice(
      { subscription: stub, plan: seats(1500), pendingPlan: null },
      0,
      new Date('2025-01-15T00:00:00.000Z'),
    );
    const exact = (18000 * 17) / 31; // 9870.97…
    expect(invoice.lines).toHaveLength(1);
    expect(lineAmount(invoice.lines[0]!)).toBe(Math.round(exact));
    expect(invoice.lines[0]).toMatchObject({ quantity: 12, proration: true });
  });

  it('setup fees ride on the cycle invoice the state carries them to, dated at its issue', () => {
    const setup = {
      planId: 'plan_setup',
      name: 'Onboarding',
      amount: 5000,
      currency: 'USD',
      quantity: 1,
      pricing: { scheme: 'per_unit' as const, amount: 5000 },
    };
    const now = new Date('2025-01-01T00:00:00.000Z');
    const { invoice } = cycleInvoice(
      { subscription: sub(), plan: seats(1500), pendingPlan: null, firstInvoiceItems: [setup] },
      0,
      now,
    );
    expect(invoice.lines.map((l) => [l.plan, l.quantity, lineAmount(l)])).toEqual([
      ['plan_seats', 12, 18000],
      ['plan_setup', 1, 5000],
    ]);
    expect(invoice.lines[1]).toMatchObject({
      period_start: now.toISOString(),
      period_end: now.toISOString(),
      proration: false,
    });
    expect(oneTimeLines([], now)).toEqual([]);
  });

  it('an upgrade is decided on the price at the quantity, and prorates each whole amount', () => {
    const s = { subscription: sub(), plan: seats(1000, 'plan_basic'), pendingPlan: null };
    expect(planChangeKind(s, seats(1500, 'plan_pro'))).toBe('upgrade');
    // 15 API units cost 142.53 a month; 12 seats at 10.00 cost 120.00: the tiered plan is the upgrade, though its unit amount is the same.
    expect(planChangeKind(s, { ...graduated, quantity: 15 })).toBe('upgrade');
    expect(planChangeKind(s, { ...graduated, quantity: 11 })).toBe('downgrade'); // 112.51 a month
    // A quantity alone: more is an upgrade, fewer a downgrade, the same plan and quantity a revert (or nothing to do).
    expect(planChangeKind(s, seats(1000, 'plan_basic'))).toBe('revert');
    expect(planChangeKind(s, { ...seats(1000, 'plan_basic'), quantity: 13 })).toBe('upgrade');
    expect(planChangeKind(s, { ...seats(1000, 'plan_basic'), quantity: 11 })).toBe('downgrade');
    expect(commandProblem(s, { kind: 'changePlan', plan: seats(1000, 'plan_basic') })).toBe(
      'The subscription is already on plan_basic × 12.',
    );
    expect(commandProblem(s, { kind: 'changePlan', plan: { ...seats(1000, 'plan_basic'), quantity: 11 } })).toBeNull();
    const half = new Date('2025-01-16T12:00:00.000Z'); // 15.5 of 31 days left
    const lines = upgradeLines(
      seats(1000, 'plan_basic'),
      seats(1500, 'plan_pro'),
      { start: jan.start, end: jan.end },
      half,
      null,
    );
    expect(lines.map((l) => [l.quantity, lineAmount(l), l.amount])).toEqual([
      [12, -6000, -500],
      [12, 9000, 750],
    ]);
  });
});
