/**
 * domain/invoice-totals.ts against a reference written apart from it: the engine works in
 * scaled bigints; the reference in decimal.js-light decimals (60 significant digits) with its
 * own ROUND_HALF_UP (half away from zero) and its own largest-remainder split. Random
 * invoices (lines, credits, a percent or amount coupon limited to some plans, inclusive and
 * exclusive rates, exemptions, a balance) must total alike, and every total must reconcile:
 * subtotal − discount + exclusive tax = total = total_excluding_tax + tax, the lines' shares
 * add up to the invoice's, amount_due − ending_balance = total + starting_balance.
 * Then worked examples with the numbers docs/discounts-and-taxes.md shows.
 */
import { Decimal } from 'decimal.js-light';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  computeInvoiceTotals,
  parsePercentage,
  type TaxExempt,
  type TotalsDiscount,
  type TotalsInput,
  type TotalsTaxRate,
} from '../domain/invoice-totals.ts';

const D = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP });
const roundHalfAway = (x: Decimal): number => x.toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber();

/** Largest remainder, written apart: quotas as decimals, floors, then +1 by descending fraction (earlier first on ties). */
function split(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum <= 0) return weights.map(() => 0);
  // total × weight is an exact integer; its quotient and remainder by the sum are taken exactly (a quotient divided
  // out at Decimal's 20 significant digits rounds its fraction differently with the size of its integer part, which
  // once ranked equal remainders apart: 32/12 against 8/12).
  const products = weights.map((w) => new D(total).times(w));
  const floors = products.map((p) => p.dividedToIntegerBy(sum).toNumber());
  let left = total - floors.reduce((a, b) => a + b, 0);
  const order = products
    .map((p, i) => ({ i, frac: p.mod(sum) }))
    .sort((a, b) => {
      const c = b.frac.comparedTo(a.frac);
      return c !== 0 ? c : a.i - b.i;
    });
  for (const { i } of order) if (left-- > 0) floors[i]! += 1;
  return floors;
}

interface RefLine {
  amount: number;
  plan: string | null;
  rates: TotalsTaxRate[];
}

function reference(lines: RefLine[], discount: TotalsDiscount | null, exempt: TaxExempt, starting: number) {
  const applies = (line: RefLine) =>
    !!discount &&
    (discount.coupon.applies_to_plans === null ||
      (line.plan !== null && discount.coupon.applies_to_plans.includes(line.plan)));
  const weights = lines.map((line) => (line.amount > 0 && applies(line) ? line.amount : 0));
  const base = weights.reduce((a, b) => a + b, 0);
  let discountTotal = 0;
  if (discount && base > 0) {
    discountTotal =
      discount.coupon.percent_off !== null
        ? Math.min(base, roundHalfAway(new D(base).times(discount.coupon.percent_off).dividedBy(100)))
        : Math.min(base, discount.coupon.amount_off!);
  }
  const shares = split(discountTotal, weights);
  let tax = 0;
  let inclusiveTax = 0;
  const perRate = new Map<string, number>();
  lines.forEach((line, i) => {
    if (exempt !== 'none') return;
    const taxable = line.amount - shares[i]!;
    const inclusive = line.rates.filter((r) => r.inclusive);
    const pIncl = inclusive.reduce((s, r) => s.plus(r.percentage), new D(0));
    const net = inclusive.length ? roundHalfAway(new D(taxable).times(100).dividedBy(pIncl.plus(100))) : taxable;
    const included = taxable - net;
    const inclShares = split(
      Math.abs(included),
      inclusive.map((r) => new D(r.percentage).times(10_000).toNumber()),
    );
    line.rates.forEach((rate) => {
      const amount = rate.inclusive
        ? Math.sign(included) * inclShares[inclusive.indexOf(rate)]! || 0
        : roundHalfAway(new D(net).times(rate.percentage).dividedBy(100));
      tax += amount;
      if (rate.inclusive) inclusiveTax += amount;
      perRate.set(rate.id, (perRate.get(rate.id) ?? 0) + amount);
    });
  });
  const subtotal = lines.reduce((s, l) => s + l.amount, 0);
  const total = subtotal - discountTotal + (tax - inclusiveTax);
  return {
    subtotal,
    discount: discountTotal,
    shares,
    tax,
    inclusiveTax,
    total,
    perRate,
    amountDue: Math.max(0, total + starting),
    ending: Math.min(0, total + starting),
  };
}

const percentage = fc.oneof(
  fc.constantFrom('0', '5', '7.5', '8.875', '19', '20', '21', '25', '100'),
  fc
    .tuple(fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 9999 }))
    .map(([w, f]) => `${w}.${String(f).padStart(4, '0')}`),
);
const rate = fc
  .record({ id: fc.constantFrom('txr_a', 'txr_b', 'txr_c', 'txr_d'), percentage, inclusive: fc.boolean() })
  .map((r) => ({ ...r, display_name: `Tax ${r.id}` }));
const plans = ['plan_seats', 'plan_api', 'plan_addon', null] as const;
const line = fc.record({
  amount: fc.oneof(
    fc.integer({ min: 0, max: 5_000_000 }),
    fc.integer({ min: -2_000_000, max: 0 }),
    fc.integer({ min: 0, max: 3 }),
  ),
  plan: fc.constantFrom(...plans),
  // Distinct rates per line (a line is taxed at a rate once).
  rates: fc.uniqueArray(rate, { maxLength: 3, selector: (r) => r.id }),
});
const coupon = fc.oneof(
  fc.record({
    percent_off: fc.oneof(
      fc.constantFrom('10', '12.5', '33.33', '50', '100'),
      fc.integer({ min: 1, max: 10000 }).map((n) => (n / 100).toFixed(2)),
    ),
    amount_off: fc.constant(null),
  }),
  fc.record({ percent_off: fc.constant(null), amount_off: fc.integer({ min: 1, max: 3_000_000 }) }),
);
const discount = fc.option(
  fc
    .record({
      terms: coupon,
      plans: fc.option(fc.subarray(['plan_seats', 'plan_api', 'plan_addon'], { minLength: 1 })),
    })
    .map(
      ({ terms, plans }): TotalsDiscount => ({
        id: 'di_test',
        coupon: { id: 'cpn_test', name: null, ...terms, applies_to_plans: plans },
      }),
    ),
);

describe('invoice totals against the reference', () => {
  it('agree for random invoices, and every total reconciles', () => {
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 8 }),
        discount,
        fc.constantFrom<TaxExempt>('none', 'none', 'none', 'exempt', 'reverse'),
        fc.integer({ min: -3_000_000, max: 500_000 }),
        (lines, disc, exempt, starting) => {
          // The same rate id means the same rate within an invoice.
          const byId = new Map<string, TotalsTaxRate>();
          const canonical = lines.map((l) => ({
            ...l,
            rates: l.rates.map((r) => byId.get(r.id) ?? (byId.set(r.id, r), r)),
          }));
          const input: TotalsInput = {
            lines: canonical.map((l) => ({ amount: l.amount, plan: l.plan, tax_rates: l.rates })),
            discount: disc,
            tax_exempt: exempt,
            starting_balance: starting,
          };
          const got = computeInvoiceTotals(input);
          const want = reference(canonical, disc, exempt, starting);

          expect(got.subtotal).toBe(want.subtotal);
          expect(got.discount).toBe(want.discount);
          expect(got.lines.map((l) => l.discount_amounts.reduce((s, d) => s + d.amount, 0))).toEqual(want.shares);
          expect(got.tax).toBe(want.tax);
          expect(got.total).toBe(want.total);
          expect(Object.fromEntries(got.total_tax_amounts.map((t) => [t.tax_rate, t.amount]))).toEqual(
            Object.fromEntries([...want.perRate]),
          );
          expect(got.amount_due).toBe(want.amountDue);
          expect(got.ending_balance).toBe(want.ending);

          // Reconciliation, whatever the reference says.
          const exclusive = got.lines
            .flatMap((l) => l.tax_amounts)
            .filter((t) => !t.inclusive)
            .reduce((s, t) => s + t.amount, 0);
          expect(got.subtotal - got.discount + exclusive).toBe(got.total);
          expect(got.total_excluding_tax + got.tax).toBe(got.total);
          expect(got.lines.reduce((s, l) => s + l.amount, 0)).toBe(got.subtotal);
          expect(got.total_discount_amounts.reduce((s, d) => s + d.amount, 0)).toBe(got.discount);
          expect(got.amount_due).toBeGreaterThanOrEqual(0);
          expect(got.ending_balance).toBeLessThanOrEqual(0);
          expect(got.amount_due + got.ending_balance).toBe(got.total + starting);
          // A discount never exceeds a line, and never touches a credit line.
          got.lines.forEach((l, i) => {
            const share = l.discount_amounts.reduce((s, d) => s + d.amount, 0);
            expect(share).toBeGreaterThanOrEqual(0);
            expect(share).toBeLessThanOrEqual(Math.max(0, canonical[i]!.amount));
          });
          if (exempt !== 'none') expect(got.tax).toBe(0);
          expect(got.reverse_charge).toBe(exempt === 'reverse');
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('worked examples (docs/discounts-and-taxes.md)', () => {
  const vat19: TotalsTaxRate = { id: 'txr_de', display_name: 'VAT', percentage: '19', inclusive: false };
  const vat19incl: TotalsTaxRate = { ...vat19, id: 'txr_de_incl', inclusive: true };
  const twenty: TotalsDiscount = {
    id: 'di_launch',
    coupon: { id: 'LAUNCH20', name: 'Launch', percent_off: '20', amount_off: null, applies_to_plans: null },
  };

  it('12 seats at 15.00 with 20% off and 19% VAT on top', () => {
    const t = computeInvoiceTotals({
      lines: [{ amount: 18000, plan: 'plan_seats', tax_rates: [vat19] }],
      discount: twenty,
      tax_exempt: 'none',
      starting_balance: 0,
    });
    expect(t).toMatchObject({
      subtotal: 18000,
      discount: 3600,
      total_excluding_tax: 14400,
      tax: 2736,
      total: 17136,
      amount_due: 17136,
    });
  });

  it('19% VAT included in 119.00 is 19.00', () => {
    const t = computeInvoiceTotals({
      lines: [{ amount: 11900, plan: null, tax_rates: [vat19incl] }],
      discount: null,
      tax_exempt: 'none',
      starting_balance: 0,
    });
    expect(t).toMatchObject({ subtotal: 11900, total_excluding_tax: 10000, tax: 1900, total: 11900 });
  });

  it('taxes round per line: three lines of 0.05 at 19% are 0.01 each, 0.03 in all (not round(0.15 × 19%) = 0.03 by luck: 0.0285)', () => {
    const t = computeInvoiceTotals({
      lines: [5, 5, 5].map((amount) => ({ amount, plan: null, tax_rates: [vat19] })),
      discount: null,
      tax_exempt: 'none',
      starting_balance: 0,
    });
    expect(t.lines.map((l) => l.tax_amounts[0]!.amount)).toEqual([1, 1, 1]);
    expect(t.tax).toBe(3);
  });

  it('a 10.00 coupon over lines of 30.00 and 10.00 is split 7.50 and 2.50; over 1 cent and 2 cents 33.33% is 1 cent, to the larger line', () => {
    const ten: TotalsDiscount = {
      id: 'di_ten',
      coupon: { id: 'TEN', name: null, percent_off: null, amount_off: 1000, applies_to_plans: null },
    };
    expect(
      computeInvoiceTotals({
        lines: [
          { amount: 3000, plan: null, tax_rates: [] },
          { amount: 1000, plan: null, tax_rates: [] },
        ],
        discount: ten,
        tax_exempt: 'none',
        starting_balance: 0,
      }).lines.map((l) => l.discount_amounts[0]?.amount ?? 0),
    ).toEqual([750, 250]);
    const third: TotalsDiscount = {
      id: 'di_third',
      coupon: { id: 'THIRD', name: null, percent_off: '33.33', amount_off: null, applies_to_plans: null },
    };
    expect(
      computeInvoiceTotals({
        lines: [
          { amount: 1, plan: null, tax_rates: [] },
          { amount: 2, plan: null, tax_rates: [] },
        ],
        discount: third,
        tax_exempt: 'none',
        starting_balance: 0,
      }).lines.map((l) => l.discount_amounts[0]?.amount ?? 0),
    ).toEqual([0, 1]);
  });

  it('a credit of 50.00 pays a 30.00 invoice and 20.00 is left; a 40.00 proration credit becomes credit; reverse charge adds no tax', () => {
    const paid = computeInvoiceTotals({
      lines: [{ amount: 3000, plan: null, tax_rates: [] }],
      discount: null,
      tax_exempt: 'none',
      starting_balance: -5000,
    });
    expect(paid).toMatchObject({ total: 3000, amount_due: 0, starting_balance: -5000, ending_balance: -2000 });
    const credit = computeInvoiceTotals({
      lines: [
        { amount: -7000, plan: null, tax_rates: [] },
        { amount: 3000, plan: null, tax_rates: [] },
      ],
      discount: null,
      tax_exempt: 'none',
      starting_balance: 0,
    });
    expect(credit).toMatchObject({ total: -4000, amount_due: 0, ending_balance: -4000 });
    const reverse = computeInvoiceTotals({
      lines: [{ amount: 10000, plan: null, tax_rates: [vat19] }],
      discount: null,
      tax_exempt: 'reverse',
      starting_balance: 0,
    });
    expect(reverse).toMatchObject({ tax: 0, total: 10000, reverse_charge: true });
  });

  it('percentages are checked: at most 4 places, 0 to 100', () => {
    expect(parsePercentage('8.875')).toBe(88750n);
    expect(parsePercentage('100')).toBe(1_000_000n);
    for (const bad of ['100.0001', '-1', '1e2', '8.87501', '', '.5', '5.']) expect(parsePercentage(bad)).toBeNull();
  });
});
