/**
 * A promotion code (or a coupon) applied to an OPEN one-off invoice after it was issued: typed by
 * the customer on the invoice's hosted pay page, or sent with POST /v1/invoices/{id}/discounts
 * (docs/discounts-and-taxes.md "On an open invoice").
 *
 * It runs in the invoice's workflow (workflows/invoice.ts discountOneOffInvoiceUpdate), one step
 * at a time with its charges, so the amount due never changes while a charge is at the processor.
 * Here, in one database transaction: the invoice's row locked, then the coupon and the code
 * (services/discounts/redemptions.ts redeemDiscount: every limit checked, times_redeemed counted), the totals
 * computed again by domain/invoice-totals.ts from the lines and the tax rates and balance the
 * invoice was issued with, and the balance moved by the difference when the discount turned part
 * of the customer's credit the invoice used back into credit. Lock order: invoice, coupon, code,
 * balance (as everywhere).
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { CreditNote, Customer, Discount, Invoice } from '../../db/entities/index.ts';
import { ApiError, type ErrorCode } from '../../domain/errors.ts';
import { lineAmount } from '../../domain/invoice-lines.ts';
import { computeInvoiceTotals, type TotalsDiscount, type TotalsTaxRate } from '../../domain/invoice-totals.ts';
import { formatMoney } from '../../domain/money.ts';
import { recordBalanceTransaction } from '../customers/balance.ts';
import { redeemDiscount, totalsCoupon } from '../discounts/redemptions.ts';
import { currentTime } from '../test-clocks/now.ts';
import { invoiceFields, productsOf } from './adjustments.ts';
import { type InvoiceLinks, recordInvoiceEvents } from './events.ts';

export interface InvoiceDiscountRequest {
  invoiceId: string;
  /** Chosen by the caller (the API), so a retried activity finds the discount it made. */
  discountId: string;
  scope: { accountId: string; livemode: boolean };
  /** One of: a coupon id or a promotion code (its promo_… id or its code) from the merchant's API; `code`: what the customer typed on the pay page (a code only). */
  coupon?: string;
  promotionCode?: string;
  code?: string;
}

export type InvoiceDiscountResult =
  | { discountId: string; amountDue: number }
  | { refused: { type: string; message: string } };

const writeLock = { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } as const;

/** Applies the discount to the open invoice in one transaction (see the top of this file); a refusal throws ApiError and changes nothing. */
export async function discountOpenInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  request: InvoiceDiscountRequest,
  at?: string,
): Promise<{ discountId: string; amountDue: number }> {
  return em.transactional(async (tx) => {
    const now = at ? new Date(at) : currentTime();
    const made = await tx.findOne(Discount, { id: request.discountId });
    if (made) {
      // A retried activity: it was applied.
      const invoice = await tx.findOneOrFail(Invoice, { id: made.invoiceId! }, { refresh: true });
      return { discountId: made.id, amountDue: Number(invoice.amountDue) - Number(invoice.amountPaid) };
    }
    const invoice = await tx.findOne(
      Invoice,
      { id: request.invoiceId, accountId: request.scope.accountId, livemode: request.scope.livemode },
      writeLock,
    );
    if (!invoice) throw new ApiError('not_found', `No such invoice: ${request.invoiceId}.`);
    const name = invoice.number ?? invoice.id;
    if (invoice.subscriptionId)
      throw new ApiError(
        'invalid_request',
        `Invoice ${name} is a subscription's: apply the discount to the subscription (POST /v1/subscriptions/{id}/discount), from its next invoice.`,
      );
    if (invoice.status !== 'open')
      throw new ApiError(
        'invalid_state',
        `Invoice ${name} is ${invoice.status}: only an open invoice takes a promotion code.`,
      );
    if (invoice.discountId || Number(invoice.discount) > 0)
      throw new ApiError('invalid_request', `Invoice ${name} already has a discount: an invoice takes one.`);
    if ((await tx.count(CreditNote, { invoiceId: invoice.id })) > 0) {
      throw new ApiError(
        'invalid_request',
        `Invoice ${name} has a credit note: its amount due was lowered already, so it takes no discount.`,
      );
    }
    const customer = await tx.findOneOrFail(Customer, { id: invoice.customerId });
    const subtotal = Number(invoice.subtotal);
    const { discount: row, coupon } = await redeemDiscount(tx, {
      scope: request.scope,
      customer,
      subscriptionId: null,
      invoice: { id: invoice.id, discountId: request.discountId },
      ...(request.coupon ? { coupon: request.coupon } : {}),
      ...(request.promotionCode ? { promotionCode: request.promotionCode } : {}),
      ...(request.code ? { code: request.code } : {}),
      currency: invoice.currency.toUpperCase(),
      purchase: { amount: subtotal, currency: invoice.currency.toUpperCase() },
      now,
    });

    // The totals again, from what the invoice was issued with: its lines, their tax rates, the customer's tax status and starting balance.
    const discount: TotalsDiscount = { id: row.id, coupon: totalsCoupon(coupon) };
    const products = discount.coupon.applies_to_products?.length
      ? await productsOf(tx, invoice.lines)
      : new Map<string, string | null>();
    const lines = invoice.lines.map((line) => {
      const { discount_amounts: _d, tax_amounts: _t, ...rest } = line;
      const product = line.product ?? (line.plan ? (products.get(line.plan) ?? null) : null);
      return { ...rest, ...(product ? { product } : {}) };
    });
    const lineRates = invoice.lines.map((line): TotalsTaxRate[] =>
      (line.tax_amounts ?? []).map((t) => ({
        id: t.tax_rate,
        display_name: t.display_name,
        percentage: t.percentage,
        inclusive: t.inclusive,
      })),
    );
    const startingBalance = Number(invoice.startingBalance);
    const totals = computeInvoiceTotals({
      lines: lines.map((line, i) => ({
        amount: lineAmount(line),
        plan: line.plan ?? null,
        product: line.product ?? null,
        tax_rates: lineRates[i]!,
      })),
      discount,
      tax_exempt: invoice.customerTaxExempt,
      starting_balance: startingBalance,
    });
    if (totals.discount === 0)
      throw new ApiError('invalid_request', `Coupon ${coupon.id} applies to none of the lines of invoice ${name}.`);

    const fields = invoiceFields({
      lines: lines.map((line, i) => {
        const { discount_amounts, tax_amounts } = totals.lines[i]!;
        return {
          ...line,
          ...(discount_amounts.length ? { discount_amounts } : {}),
          ...(tax_amounts.length ? { tax_amounts } : {}),
        };
      }),
      totals,
      discount,
      tax: {
        tax_exempt: invoice.customerTaxExempt,
        line_tax_rates: lineRates,
        customer_tax_ids: invoice.customerTaxIds ?? [],
        customer_address: invoice.customerAddress ?? { country: null, state: null },
      },
    });
    // What the invoice took from the customer's balance when issued, and what it takes now: a smaller total gives credit back.
    const movedBefore = Number(invoice.endingBalance) - startingBalance;
    const movedNow = totals.ending_balance - totals.starting_balance;
    const before = Number(invoice.amountDue);
    Object.assign(invoice, {
      lines: fields.lines,
      discountId: fields.discountId,
      discount: fields.discount,
      totalDiscountAmounts: fields.totalDiscountAmounts,
      totalExcludingTax: fields.totalExcludingTax,
      tax: fields.tax,
      totalTaxAmounts: fields.totalTaxAmounts,
      total: fields.total,
      endingBalance: fields.endingBalance,
      amountDue: fields.amountDue,
    });
    await tx.flush();
    if (movedNow !== movedBefore) {
      await recordBalanceTransaction(tx, {
        accountId: invoice.accountId,
        livemode: invoice.livemode,
        customerId: invoice.customerId,
        currency: invoice.currency,
        type: 'unapplied_from_invoice',
        amount: movedNow - movedBefore,
        invoiceId: invoice.id,
        description: `Invoice ${name} discounted: ${formatMoney(before - fields.amountDue, invoice.currency)} less due`,
        createdAt: now,
      });
    }
    await recordInvoiceEvents(tx, links, invoice, ['invoice.updated'], null);
    return { discountId: row.id, amountDue: Number(invoice.amountDue) - Number(invoice.amountPaid) };
  });
}

/** discountOpenInvoice for the workflow's activity: a refusal is answered, not thrown (the workflow refuses the update with it). */
export async function discountOpenInvoiceAnswer(
  em: EntityManager,
  links: InvoiceLinks,
  request: InvoiceDiscountRequest,
  at?: string,
): Promise<InvoiceDiscountResult> {
  try {
    return await discountOpenInvoice(em, links, request, at);
  } catch (error) {
    if (error instanceof ApiError) return { refused: { type: error.code as ErrorCode, message: error.message } };
    throw error;
  }
}
