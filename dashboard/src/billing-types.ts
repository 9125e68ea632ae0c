/**
 * Shapes of the discounts, taxes, credit notes and customer balance APIs (issue #27): the SDK's
 * generated schemas (sdk/openapi.ts), and the option lists the pages' forms offer.
 */
import type { Schemas } from './api.ts';

export interface ListOf<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
}

export const couponDurations = ['once', 'repeating', 'forever'] as const;

export type Coupon = Schemas['Coupon'];

export type PromotionCode = Schemas['PromotionCode'];

export type Discount = Schemas['Discount'];

// The API's choices (domain/tax-rules.ts), one list for both.
export { taxTypes } from '../../domain/tax-rules.ts';

export type TaxRate = Schemas['TaxRate'];

export const taxIdTypes = [
  ['eu_vat', 'EU VAT number (DE136695976)'],
  ['gb_vat', 'UK VAT number (GB980780684)'],
  ['ch_vat', 'Swiss VAT number (CHE-107.787.577 IVA)'],
  ['no_vat', 'Norwegian VAT number (NO995525828MVA)'],
  ['au_abn', 'Australian Business Number (83914571673)'],
  ['ca_bn', 'Canadian Business Number (123026635)'],
  ['in_gst', 'Indian GSTIN (27AAPFU0939F1ZV)'],
  ['us_ein', 'US EIN (91-1144442)'],
] as const;

export type TaxId = Schemas['TaxId'];

export const balanceTransactionTypes = [
  'adjustment',
  'applied_to_invoice',
  'unapplied_from_invoice',
  'credit_note',
  'invoice_too_small',
] as const;

export type CustomerBalanceTransaction = Schemas['CustomerBalanceTransaction'];

export const creditNoteReasons = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;

export type CreditNote = Schemas['CreditNote'];

export type TaxAmount = Schemas['TaxAmount'];

/** The totals an invoice shows after its lines (objects/invoice.ts InvoiceTotalsShape). */
export type InvoiceTotalsFields = Partial<
  Pick<
    Schemas['Invoice'],
    | 'discounts'
    | 'total_discount_amounts'
    | 'total_excluding_tax'
    | 'tax'
    | 'total_tax_amounts'
    | 'starting_balance'
    | 'ending_balance'
    | 'customer_tax_exempt'
    | 'customer_tax_ids'
    | 'customer_address'
  >
>;

/** A line's share of the discount and its taxes. */
export type InvoiceLineTotalsFields = Partial<Pick<Schemas['InvoiceLine'], 'discount_amounts' | 'tax_amounts'>>;
