import type { EntityManager } from '@mikro-orm/postgresql';

import { type Invoice, type InvoiceLine, Plan } from '../../db/entities/index.ts';
import { lineAmount } from '../../domain/invoice-lines.ts';
import { computeInvoiceTotals, type InvoiceTotals, type TotalsDiscount } from '../../domain/invoice-totals.ts';
import { customerBalances, lockBalanceForInvoice, recordBalanceTransaction } from '../customers/balance.ts';
import { discountForInvoice, recordDiscountApplied } from '../discounts/redemptions.ts';
import { builtInTaxCalculator, type TaxCalculation, type TaxCalculator } from '../taxes/calculator.ts';

/**
 * Discounts, taxes and the customer's balance on an invoice (docs/discounts-and-taxes.md
 * "How an invoice adds up"). The lines come first (the subscription's, its pending invoice
 * items, a one-off invoice's items); this adds each line's discount and taxes and the
 * invoice's totals, through domain/invoice-totals.ts, from:
 * - the discount the invoice gets (services/discounts/redemptions.ts: the subscription's, else the customer's);
 * - the rates each line is taxed at and the customer's tax details, from the tax calculator
 *   (services/taxes/calculator.ts: the built-in rates, unless a merchant plugged in another);
 * - the customer's balance in the invoice's currency, locked for the rest of the transaction
 *   when the invoice is issued, so that two invoices never spend one credit.
 */

let taxCalculator: TaxCalculator = builtInTaxCalculator;

/**
 * Plugs a tax calculator in for this process (the worker's and the API's deps call it at
 * start with `deps.taxCalculator`); without it the built-in rates apply. One per process:
 * a deployment taxes with one service.
 */
export function useTaxCalculator(calculator: TaxCalculator | undefined): void {
  taxCalculator = calculator ?? builtInTaxCalculator;
}

export interface InvoiceParties {
  accountId: string;
  livemode: boolean;
  customerId: string;
  subscriptionId: string | null;
  currency: string;
  /** When the invoice is issued (workflow or clock time): a discount that ended by then does not apply. */
  at: Date;
}

export interface Adjusted {
  /** The lines with their product, discount amounts and tax amounts. */
  lines: InvoiceLine[];
  totals: InvoiceTotals;
  discount: TotalsDiscount | null;
  tax: TaxCalculation;
}

/** The products of the lines' plans (a coupon may apply to a product), one query. */
export async function productsOf(
  em: EntityManager,
  lines: readonly InvoiceLine[],
): Promise<Map<string, string | null>> {
  const planIds = [...new Set(lines.map((line) => line.plan).filter((id): id is string => !!id))];
  if (planIds.length === 0) return new Map();
  const plans = await em.find(Plan, { id: { $in: planIds } }, { fields: ['id', 'productId'] });
  return new Map(plans.map((plan) => [plan.id, plan.productId ?? null]));
}

/**
 * The lines' discounts and taxes and the invoice's totals. `startingBalance`: the customer's
 * balance the invoice starts from (0 to leave the balance out, as a draft does).
 */
export async function adjustLines(
  em: EntityManager,
  parties: InvoiceParties,
  lines: readonly InvoiceLine[],
  startingBalance: number,
): Promise<Adjusted> {
  const discount = await discountForInvoice(em, parties);
  // The lines' products matter only to a coupon that names products: read only then.
  const products = discount?.coupon.applies_to_products?.length
    ? await productsOf(em, lines)
    : new Map<string, string | null>();
  const base = lines.map((line) => {
    const { discount_amounts: _d, tax_amounts: _t, ...rest } = line;
    const product = line.plan ? (products.get(line.plan) ?? null) : null;
    return { ...rest, ...(product ? { product } : {}) } as InvoiceLine;
  });
  const tax = await taxCalculator.calculate(em, {
    ...parties,
    lines: base.map((line) => ({
      amount: lineAmount(line),
      plan: line.plan ?? null,
      product: line.product ?? null,
      ...(line.item_tax_rates ? { tax_rates: line.item_tax_rates } : {}),
    })),
  });
  const totals = computeInvoiceTotals({
    lines: base.map((line, i) => ({
      amount: lineAmount(line),
      plan: line.plan ?? null,
      product: line.product ?? null,
      tax_rates: tax.line_tax_rates[i] ?? [],
    })),
    discount,
    tax_exempt: tax.tax_exempt,
    starting_balance: startingBalance,
  });
  const adjusted = base.map((line, i) => {
    const { discount_amounts, tax_amounts } = totals.lines[i]!;
    return {
      ...line,
      ...(discount_amounts.length ? { discount_amounts } : {}),
      ...(tax_amounts.length ? { tax_amounts } : {}),
    };
  });
  return { lines: adjusted, totals, discount, tax };
}

/** The invoice's columns for `adjusted` (its lines and totals, with the customer's tax details as issued). */
export function invoiceFields(adjusted: Adjusted) {
  const { totals, tax, discount } = adjusted;
  return {
    lines: adjusted.lines,
    subtotal: totals.subtotal,
    discountId: discount && totals.discount !== 0 ? discount.id : null,
    discount: totals.discount,
    // The coupon's name and id kept with the amount, for the PDF and emails ("Launch (LAUNCH20)"); the API shows discount and amount.
    totalDiscountAmounts: totals.total_discount_amounts.map((d) => ({
      ...d,
      ...(discount ? { coupon: discount.coupon.id, name: discount.coupon.name } : {}),
    })),
    totalExcludingTax: totals.total_excluding_tax,
    tax: totals.tax,
    totalTaxAmounts: totals.total_tax_amounts,
    total: totals.total,
    startingBalance: totals.starting_balance,
    endingBalance: totals.ending_balance,
    amountDue: totals.amount_due,
    reverseCharge: totals.reverse_charge,
    customerTaxExempt: tax.tax_exempt,
    customerTaxIds: tax.customer_tax_ids,
    customerAddress: tax.customer_address,
  };
}

const partiesOf = (invoice: Invoice, at: Date): InvoiceParties => ({
  accountId: invoice.accountId,
  livemode: invoice.livemode,
  customerId: invoice.customerId,
  subscriptionId: invoice.subscriptionId ?? null,
  currency: invoice.currency,
  at,
});

/** What issuing an invoice decided: its columns, and what to record once the invoice row exists. */
export interface Issue {
  fields: ReturnType<typeof invoiceFields>;
  /** The balance movement and the discount's use, on `tx`, once the invoice `invoiceId` is written. */
  record(invoiceId: string): Promise<void>;
}

/**
 * Decides an invoice about to be issued, on `tx`, its lines final: its discounts and taxes,
 * then the customer's balance, locked until `tx` commits, applied to it. A credit pays the
 * invoice first; a total below zero adds to the credit; what the customer owes beyond
 * invoices (a positive balance) is added. `record` then writes the movement, one
 * `applied_to_invoice` balance transaction (at most one per invoice), and tells the discount
 * it was used (a `once` coupon ends there). Called before the invoice row is written, so a
 * new invoice is inserted once with its totals (services/invoices/cycle-invoices.ts: every renewal).
 */
export async function decideIssue(
  tx: EntityManager,
  parties: InvoiceParties,
  lines: readonly InvoiceLine[],
): Promise<Issue> {
  const starting = await lockBalanceForInvoice(tx, parties);
  const adjusted = await adjustLines(tx, parties, lines, starting);
  return {
    fields: invoiceFields(adjusted),
    async record(invoiceId) {
      const moved = adjusted.totals.ending_balance - adjusted.totals.starting_balance;
      if (moved !== 0) {
        await recordBalanceTransaction(tx, {
          ...parties,
          type: 'applied_to_invoice',
          amount: moved,
          invoiceId,
          description: `Applied to invoice ${invoiceId}`,
          createdAt: parties.at,
        });
      }
      if (adjusted.discount && adjusted.totals.discount !== 0)
        await recordDiscountApplied(tx, { discountId: adjusted.discount.id, invoiceId, at: parties.at });
    },
  };
}

/** decideIssue for an invoice row that exists already (a draft being finalized, a managed entity of `tx`). */
export async function issueWithAdjustments(tx: EntityManager, invoice: Invoice, at: Date): Promise<void> {
  const issue = await decideIssue(tx, partiesOf(invoice, at), invoice.lines);
  Object.assign(invoice, issue.fields);
  await tx.flush();
  await issue.record(invoice.id);
}

/** A draft's or a preview's adjustments: discounts and taxes, and the balance as it stands (read, not locked, not applied). */
export async function previewAdjustments(
  em: EntityManager,
  parties: InvoiceParties,
  lines: readonly InvoiceLine[],
  withBalance: boolean,
): Promise<Adjusted> {
  const starting = withBalance
    ? ((await customerBalances(em, parties.customerId))[parties.currency.toUpperCase()] ?? 0)
    : 0;
  return adjustLines(em, parties, lines, starting);
}

/**
 * Gives back what a voided invoice took from (or added to) the customer's balance, on `tx`
 * (the void's transaction): one `unapplied_from_invoice` transaction, at most once.
 */
export async function unapplyBalance(tx: EntityManager, invoice: Invoice, at: Date): Promise<void> {
  const applied = Number(invoice.endingBalance ?? 0) - Number(invoice.startingBalance ?? 0);
  if (applied === 0) return;
  await recordBalanceTransaction(tx, {
    ...partiesOf(invoice, at),
    type: 'unapplied_from_invoice',
    amount: -applied,
    invoiceId: invoice.id,
    description: `Invoice ${invoice.number} voided`,
    createdAt: at,
  });
}
