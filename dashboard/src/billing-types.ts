/**
 * Shapes of the discounts, taxes, credit notes and customer balance APIs (issue #27), as
 * objects/discount.ts, objects/tax-rate.ts, objects/credit-note.ts,
 * objects/customer-balance-transaction.ts and objects/invoice.ts serialize them. They are written
 * out here because sdk/openapi.ts is regenerated once at the end of the release; the pages call
 * these routes with `call` (api.ts). Once the SDK names them, these can become `Schemas[...]`.
 */

export interface ListOf<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
}

export const couponDurations = ['once', 'repeating', 'forever'] as const;

export interface Coupon {
  id: string;
  object: 'coupon';
  name: string | null;
  percent_off: number | null;
  amount_off: number | null;
  currency: string | null;
  duration: (typeof couponDurations)[number];
  duration_in_months: number | null;
  max_redemptions: number | null;
  redeem_by: string | null;
  applies_to: { plans: string[] | null; products: string[] | null };
  times_redeemed: number;
  valid: boolean;
  metadata: Record<string, string>;
  livemode: boolean;
  created_at: string;
}

export interface PromotionCode {
  id: string;
  object: 'promotion_code';
  code: string;
  coupon: Coupon;
  active: boolean;
  max_redemptions: number | null;
  expires_at: string | null;
  restrictions: { first_time_transaction: boolean; minimum_amount: number | null; minimum_amount_currency: string | null };
  customer: string | null;
  times_redeemed: number;
  livemode: boolean;
  created_at: string;
}

export interface Discount {
  id: string;
  object: 'discount';
  coupon: Coupon;
  promotion_code: string | null;
  customer: string;
  subscription: string | null;
  start: string;
  end: string | null;
  ended_at: string | null;
  livemode: boolean;
}

export const taxTypes = ['vat', 'gst', 'hst', 'pst', 'qst', 'rst', 'jct', 'sales_tax', 'service_tax', 'lease_tax', 'amusement_tax', 'communications_tax'] as const;

export interface TaxRate {
  id: string;
  object: 'tax_rate';
  display_name: string;
  description: string | null;
  percentage: string;
  inclusive: boolean;
  country: string | null;
  state: string | null;
  jurisdiction: string | null;
  tax_type: string | null;
  active: boolean;
  livemode: boolean;
  created_at: string;
}

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

export interface TaxId {
  id: string;
  object: 'tax_id';
  customer: string;
  type: string;
  value: string;
  country: string | null;
  livemode: boolean;
  created_at: string;
}

export const balanceTransactionTypes = ['adjustment', 'applied_to_invoice', 'unapplied_from_invoice', 'credit_note', 'invoice_too_small'] as const;

export interface CustomerBalanceTransaction {
  id: string;
  object: 'customer_balance_transaction';
  customer: string;
  type: (typeof balanceTransactionTypes)[number];
  amount: number;
  currency: string;
  ending_balance: number;
  invoice: string | null;
  credit_note: string | null;
  description: string | null;
  livemode: boolean;
  created_at: string;
}

export const creditNoteReasons = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;

export interface CreditNote {
  id: string;
  object: 'credit_note';
  number: string;
  invoice: string;
  customer: string;
  currency: string;
  lines: { type: 'invoice_line_item' | 'custom_amount'; invoice_line_index: number | null; description: string; quantity: number | null; unit_amount: number | null; amount: number }[];
  subtotal: number;
  total: number;
  amount: number;
  reason: (typeof creditNoteReasons)[number] | null;
  memo: string | null;
  refund: string | null;
  refund_amount: number;
  credit_amount: number;
  out_of_band_amount: number;
  customer_balance_transaction: string | null;
  status: 'issued' | 'void';
  pdf: string;
  created_at: string;
  voided_at: string | null;
  livemode: boolean;
}

export interface TaxAmount {
  tax_rate: string;
  display_name: string;
  percentage: string;
  inclusive: boolean;
  taxable_amount: number;
  amount: number;
}

/** The totals an invoice shows after its lines (objects/invoice.ts InvoiceTotalsShape); absent on an engine without them. */
export interface InvoiceTotalsFields {
  discounts?: string[];
  total_discount_amounts?: { discount: string; amount: number }[];
  total_excluding_tax?: number;
  tax?: number;
  total_tax_amounts?: TaxAmount[];
  starting_balance?: number;
  ending_balance?: number;
  customer_tax_exempt?: 'none' | 'exempt' | 'reverse';
  customer_tax_ids?: { type: string; value: string }[];
  customer_address?: { country: string | null; state: string | null } | null;
}

/** A line's share of the discount and its taxes. */
export interface InvoiceLineTotalsFields {
  discount_amounts?: { discount: string; amount: number }[];
  tax_amounts?: TaxAmount[];
}
