/**
 * An invoice's totals from its lines: discounts, taxes and the customer's balance, each
 * with one rounding rule (docs/discounts-and-taxes.md). Pure: the caller loads the
 * discount, the tax rates and the balance (services/invoices/adjustments.ts) and stores
 * what this answers.
 *
 *   subtotal            = Σ line amounts (already rounded by domain/pricing.ts)
 *   discount            = Σ discount amounts (one discount per invoice; allocated to its lines)
 *   total_excluding_tax = subtotal − discount − inclusive tax
 *   tax                 = Σ tax amounts (inclusive and exclusive)
 *   total               = total_excluding_tax + tax = subtotal − discount + exclusive tax
 *   amount_due          = max(0, total + starting_balance)
 *   ending_balance      = min(0, total + starting_balance)
 *
 * The customer balance follows Stripe's sign: negative is credit the customer holds,
 * positive is what the customer owes beyond invoices. A credit pays the invoice first; a
 * negative total (a downgrade's proration credit larger than the invoice) becomes credit.
 */
/** A tax rate as an invoice applies it. `percentage` is a decimal string of at most 4 places ("19", "8.875"). */
export interface TotalsTaxRate {
  id: string;
  display_name: string;
  percentage: string;
  inclusive: boolean;
  /** ISO country (and state) the rate is for, shown on the invoice; null everywhere. */
  country?: string | null;
  state?: string | null;
}

/** A coupon as an invoice applies it. `percent_off` is a decimal string of at most 2 places ("20", "12.5"). */
export interface TotalsCoupon {
  id: string;
  name: string | null;
  percent_off: string | null;
  amount_off: number | null;
  /** The plans (prices) it applies to; null: every line. */
  applies_to_plans: string[] | null;
  /** The products it applies to (a line's plan's product); null: every line. */
  applies_to_products?: string[] | null;
}

/** A discount (a coupon applied to a customer or a subscription) as an invoice applies it. */
export interface TotalsDiscount {
  id: string;
  coupon: TotalsCoupon;
}

export interface TotalsLineInput {
  /** The line's amount in minor units (negative for a credit). */
  amount: number;
  plan: string | null;
  product?: string | null;
  /** The line's tax rates (its item's, else the subscription's or account's defaults), as the tax calculator chose them. */
  tax_rates: TotalsTaxRate[];
}

export type TaxExempt = 'none' | 'exempt' | 'reverse';
export const taxExemptions = ['none', 'exempt', 'reverse'] as const satisfies readonly TaxExempt[];

export interface TotalsInput {
  lines: TotalsLineInput[];
  discount: TotalsDiscount | null;
  /** `exempt` and `reverse` (reverse charge) apply no tax; `reverse` prints the legal note. */
  tax_exempt: TaxExempt;
  /** The customer's balance before this invoice (negative: credit). */
  starting_balance: number;
}

export interface DiscountAmount {
  discount: string;
  amount: number;
}

export interface TaxAmount {
  tax_rate: string;
  display_name: string;
  percentage: string;
  inclusive: boolean;
  /** The amount the tax was computed on (excluding tax). */
  taxable_amount: number;
  amount: number;
}

export interface LineTotals {
  amount: number;
  discount_amounts: DiscountAmount[];
  tax_amounts: TaxAmount[];
}

export interface InvoiceTotals {
  lines: LineTotals[];
  subtotal: number;
  total_discount_amounts: DiscountAmount[];
  discount: number;
  total_excluding_tax: number;
  tax: number;
  /** Per rate, the sum of its lines' tax (each line rounded first). */
  total_tax_amounts: TaxAmount[];
  total: number;
  starting_balance: number;
  ending_balance: number;
  amount_due: number;
  reverse_charge: boolean;
}

/** The largest percentage a tax rate or a coupon may carry. */
export const maxPercentage = 100;

const percentScale = 10_000n; // 4 decimal places

/** A percentage string ("19", "8.875") as an integer of 1/10,000ths of a percent, or null when it is not one (at most 4 places, 0..100). */
export function parsePercentage(text: string, places = 4): bigint | null {
  if (!/^\d{1,3}(\.\d{1,4})?$/.test(text)) return null;
  const [whole, fraction = ''] = text.split('.');
  if (fraction.length > places) return null;
  const value = BigInt(whole!) * percentScale + BigInt(fraction.padEnd(4, '0'));
  return value > BigInt(maxPercentage) * percentScale ? null : value;
}

/** round(amount × percent ÷ 100), half away from zero, in integers. */
function percentOf(amount: number, percent: bigint): number {
  return roundRatio(BigInt(amount) * percent, 100n * percentScale);
}

/** numerator ÷ denominator (denominator > 0) rounded half away from zero. */
function roundRatio(numerator: bigint, denominator: bigint): number {
  const negative = numerator < 0n;
  const n = negative ? -numerator : numerator;
  const rounded = (2n * n + denominator) / (2n * denominator);
  return Number(negative ? -rounded : rounded);
}

/**
 * Splits `total` (≥ 0) over `weights` (each ≥ 0, Σ > 0) in proportion, by largest
 * remainder: each share is floor(total × weight ÷ Σ), and the units left go one each to
 * the largest remainders (earliest line first on ties). Shares add up to `total` exactly
 * and none exceeds its weight when total ≤ Σ weights.
 */
export function allocate(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum <= 0) return weights.map(() => 0);
  const exact = weights.map((w) => BigInt(total) * BigInt(w));
  const shares = exact.map((e) => Number(e / BigInt(sum)));
  let left = total - shares.reduce((a, b) => a + b, 0);
  const order = exact
    .map((e, i) => ({ i, rem: e % BigInt(sum) }))
    .sort((a, b) => (a.rem === b.rem ? a.i - b.i : a.rem > b.rem ? -1 : 1));
  for (const { i } of order) {
    if (left <= 0) break;
    shares[i]! += 1;
    left -= 1;
  }
  return shares;
}

/** Whether the coupon applies to the line (its plan, or its plan's product, is listed; or it lists neither). */
export function couponAppliesTo(coupon: TotalsCoupon, line: Pick<TotalsLineInput, 'plan' | 'product'>): boolean {
  const plans = coupon.applies_to_plans ?? null;
  const products = coupon.applies_to_products ?? null;
  if (plans === null && products === null) return true;
  return (
    (plans !== null && line.plan !== null && plans.includes(line.plan)) ||
    (products !== null && !!line.product && products.includes(line.product))
  );
}

/**
 * The discount on each line. The base is the applicable lines' positive amounts (a credit
 * line is never discounted, so a discount never grows a credit). percent_off: round(base ×
 * percent ÷ 100) half away from zero, once for the invoice; amount_off: at most the base.
 * The invoice's discount is then allocated to those lines by largest remainder.
 */
export function discountLines(
  lines: readonly Pick<TotalsLineInput, 'amount' | 'plan' | 'product'>[],
  discount: TotalsDiscount | null,
): number[] {
  if (!discount) return lines.map(() => 0);
  const weights = lines.map((line) => (line.amount > 0 && couponAppliesTo(discount.coupon, line) ? line.amount : 0));
  const base = weights.reduce((a, b) => a + b, 0);
  if (base === 0) return lines.map(() => 0);
  const { percent_off, amount_off } = discount.coupon;
  let total: number;
  if (percent_off !== null) {
    const percent = parsePercentage(percent_off);
    if (percent === null)
      throw new Error(`Coupon ${discount.coupon.id}: percent_off ${percent_off} is not a percentage.`);
    total = Math.min(base, percentOf(base, percent));
  } else {
    total = Math.min(base, Math.max(0, amount_off ?? 0));
  }
  return allocate(total, weights);
}

/**
 * One line's taxes on its amount after discount (`taxable`), rounded per line and per
 * rate, half away from zero:
 * - inclusive rates (the amount already holds them): the amount excluding them is
 *   round(taxable × 100 ÷ (100 + Σ inclusive %)); their tax, taxable − that, is split
 *   between the inclusive rates in proportion to their percentages (largest remainder);
 * - exclusive rates: round(net × % ÷ 100) each, on the amount excluding inclusive tax.
 */
export function taxLine(taxable: number, rates: readonly TotalsTaxRate[]): TaxAmount[] {
  const parsed = rates.map((rate) => {
    const percent = parsePercentage(rate.percentage);
    if (percent === null) throw new Error(`Tax rate ${rate.id}: percentage ${rate.percentage} is not a percentage.`);
    return { rate, percent };
  });
  const inclusive = parsed.filter((p) => p.rate.inclusive);
  const inclusivePercent = inclusive.reduce((sum, p) => sum + p.percent, 0n);
  const net =
    inclusive.length === 0
      ? taxable
      : roundRatio(BigInt(taxable) * 100n * percentScale, 100n * percentScale + inclusivePercent);
  const includedTax = taxable - net;
  const sign = includedTax < 0 ? -1 : 1;
  // A 0% inclusive rate gets a share of 0 (allocate answers zeros when the percentages add up to 0).
  const inclusiveShares = allocate(
    Math.abs(includedTax),
    inclusive.map((p) => Number(p.percent)),
  );
  const byRate = new Map<TotalsTaxRate, number>();
  // 0 − share, not −1 × share: a zero share stays 0, never −0.
  inclusive.forEach((p, i) => byRate.set(p.rate, sign < 0 ? 0 - inclusiveShares[i]! : inclusiveShares[i]!));
  return parsed.map(({ rate, percent }) => ({
    tax_rate: rate.id,
    display_name: rate.display_name,
    percentage: rate.percentage,
    inclusive: rate.inclusive,
    taxable_amount: net,
    amount: rate.inclusive ? byRate.get(rate)! : percentOf(net, percent),
  }));
}

/** The invoice's totals (see the top of this file). */
export function computeInvoiceTotals(input: TotalsInput): InvoiceTotals {
  const discounts = discountLines(input.lines, input.discount);
  const noTax = input.tax_exempt !== 'none';
  const lines: LineTotals[] = input.lines.map((line, i) => {
    const discount = discounts[i]!;
    const taxable = line.amount - discount;
    return {
      amount: line.amount,
      discount_amounts: input.discount && discount !== 0 ? [{ discount: input.discount.id, amount: discount }] : [],
      tax_amounts: noTax ? [] : taxLine(taxable, line.tax_rates),
    };
  });
  const subtotal = sum(lines.map((l) => l.amount));
  const discount = sum(discounts);
  const taxes = lines.flatMap((l) => l.tax_amounts);
  const tax = sum(taxes.map((t) => t.amount));
  const inclusiveTax = sum(taxes.filter((t) => t.inclusive).map((t) => t.amount));
  const totalExcludingTax = subtotal - discount - inclusiveTax;
  const total = totalExcludingTax + tax;
  const due = total + input.starting_balance;
  return {
    lines,
    subtotal,
    total_discount_amounts: input.discount && discount !== 0 ? [{ discount: input.discount.id, amount: discount }] : [],
    discount,
    total_excluding_tax: totalExcludingTax,
    tax,
    total_tax_amounts: sumByRate(taxes),
    total,
    starting_balance: input.starting_balance,
    ending_balance: Math.min(0, due),
    amount_due: Math.max(0, due),
    reverse_charge: input.tax_exempt === 'reverse',
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** Each rate's tax over the invoice, in the order rates first appear. */
function sumByRate(taxes: TaxAmount[]): TaxAmount[] {
  const byRate = new Map<string, TaxAmount>();
  for (const t of taxes) {
    const seen = byRate.get(t.tax_rate);
    if (seen) {
      seen.amount += t.amount;
      seen.taxable_amount += t.taxable_amount;
    } else byRate.set(t.tax_rate, { ...t });
  }
  return [...byRate.values()];
}
