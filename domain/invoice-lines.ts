import { numberFormat } from './intl-formats.ts';
import { currencyExponent } from './money.ts';
import type { PriceRow } from './pricing.ts';

/**
 * An invoice line's amount. Lines recorded before pricing schemes (and every line of a
 * whole unit amount) say `amount` per unit and `quantity`; a line whose amount is not a
 * whole unit amount × quantity (a tiered, package or prorated price of several units)
 * has `amount` null and its amount in `total`.
 */
export interface LineAmounts {
  amount: number | null;
  quantity: number;
  total?: number;
}

/** The line's amount in minor units: `total`, else unit amount × quantity. */
export function lineAmount(line: LineAmounts): number {
  if (line.total !== undefined) return line.total;
  if (line.amount === null) throw new Error('An invoice line with neither a unit amount nor a total.');
  return line.amount * line.quantity;
}

/** A decimal string of minor units as money ("0.125" USD → "$0.00125"), every digit kept (display only). */
export function formatMinorDecimal(decimal: string, currency: string, locale = 'en-US'): string {
  const exponent = currencyExponent(currency);
  const [whole = '0', fraction = ''] = decimal.replace(/^-/, '').split('.');
  // Leading zeros stripped, then put back up to the unit digit: "0.5" cents is $0.005, not $0.50.
  const digits = (whole + fraction).replace(/^0+(?=\d)/, '').padStart(fraction.length + exponent + 1, '0');
  const cut = digits.length - fraction.length - exponent;
  const major = `${decimal.startsWith('-') ? '-' : ''}${digits.slice(0, cut) || '0'}.${digits.slice(cut)}`;
  const decimals = Math.min(20, exponent + fraction.length);
  return numberFormat(locale, {
    style: 'currency',
    currency,
    minimumFractionDigits: exponent,
    maximumFractionDigits: decimals,
  }).format(Number(major));
}

/** A price breakdown as the PDF prints it: "Units 11–25: 15 × $1.00 + $5.00 flat" (a package: "3 packages of 10 units × $5.00"). */
export function breakdownText(rows: readonly PriceRow[], currency: string, locale = 'en-US'): string[] {
  return rows.map((row) => {
    const units = row.up_to === null ? `Units ${row.from_unit} and up` : `Units ${row.from_unit}–${row.up_to}`;
    const flat = row.flat_amount ? ` + ${formatMinorDecimal(String(row.flat_amount), currency, locale)} flat` : '';
    const what =
      row.tier === null && row.up_to !== null && row.quantity !== row.up_to - row.from_unit + 1
        ? `${row.quantity} packages of ${(row.up_to - row.from_unit + 1) / row.quantity} units`
        : `${row.quantity}`;
    return `${units}: ${what} × ${formatMinorDecimal(row.unit_amount_decimal, currency, locale)}${flat}`;
  });
}

/** An invoice's discount, taxes and balance, as its PDF and emails print them (services/invoices/pdf.ts pdfAdjustments makes it). */
export interface AdjustmentView {
  total: number;
  discount?: { label: string; amount: number } | null;
  taxes?: { label: string; amount: number; inclusive: boolean }[];
  totalExcludingTax?: number;
  startingBalance?: number;
  endingBalance?: number;
  reverseCharge?: boolean;
}

/** The legal note a reverse-charge invoice carries (EU VAT Directive, Article 196). */
export const reverseChargeNote =
  'Reverse charge: VAT to be accounted for by the recipient (Article 196, Council Directive 2006/112/EC).';

/**
 * The rows between the subtotal and the total (the discount, the total excluding tax, each
 * rate's tax), and the balance row after the total. The balance row shows −(ending −
 * starting): "Applied balance" when the invoice spent credit, "Credited to your balance"
 * when its total below zero became credit, "Previous balance" when it took in what was owed;
 * total + that row is what was due before payments.
 */
export function adjustmentRows(
  view: AdjustmentView,
  money: (amount: number) => string,
): { beforeTotal: { label: string; value: string }[]; afterTotal: { label: string; value: string }[] } {
  const taxes = view.taxes ?? [];
  const beforeTotal = [
    ...(view.discount && view.discount.amount !== 0
      ? [{ label: view.discount.label, value: money(-view.discount.amount) }]
      : []),
    ...(taxes.length > 0 && view.totalExcludingTax !== undefined
      ? [{ label: 'Total excluding tax', value: money(view.totalExcludingTax) }]
      : []),
    ...taxes.map((tax) => ({ label: `${tax.label}${tax.inclusive ? ' (included)' : ''}`, value: money(tax.amount) })),
  ];
  const applied = (view.endingBalance ?? 0) - (view.startingBalance ?? 0);
  const label = applied > 0 ? 'Applied balance' : view.total < 0 ? 'Credited to your balance' : 'Previous balance';
  return { beforeTotal, afterTotal: applied !== 0 ? [{ label, value: money(-applied) }] : [] };
}
