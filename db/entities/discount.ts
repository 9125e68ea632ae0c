import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** How long a coupon's discount lasts (Stripe's): one invoice, `duration_in_months` months, or for good. */
export const couponDurations = ['once', 'repeating', 'forever'] as const;
export type CouponDuration = (typeof couponDurations)[number];

/**
 * A coupon (POST /v1/coupons): percent_off (a decimal string, at most 2 places) or amount_off in
 * `currency`. `key` is the row's own key (cpn_…); `id` is what the merchant sees and may choose
 * ("LAUNCH20"), unique per account and mode among coupons not deleted. Its terms never change;
 * DELETE sets `deletedAt` (no new redemptions; discounts made from it go on).
 */
export const Coupon = defineEntity({
  name: 'Coupon',
  tableName: 'coupons',
  indexes: [{ properties: ['accountId', 'livemode', 'key'] }],
  properties: {
    key: p.string().primary(),
    id: p.string(),
    accountId: p.string(),
    livemode: p.boolean(),
    name: p.string().nullable(),
    percentOff: p.string().nullable(),
    amountOff: p.bigint('number').nullable(),
    currency: p.string().length(3).nullable(),
    duration: p.string().$type<CouponDuration>(),
    durationInMonths: p.integer().nullable(),
    maxRedemptions: p.integer().nullable(),
    redeemBy: p.datetime().nullable(),
    appliesToPlans: p.json<string[]>().nullable(),
    appliesToProducts: p.json<string[]>().nullable(),
    timesRedeemed: p.integer().default(0),
    metadata: p.json<Record<string, string>>(),
    deletedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type Coupon = InferEntity<typeof Coupon>;

/**
 * A customer-facing code for a coupon (POST /v1/promotion_codes): `code` unique per account and
 * mode whatever its case, with its own limits and restrictions.
 */
export const PromotionCode = defineEntity({
  name: 'PromotionCode',
  tableName: 'promotion_codes',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    code: p.string(),
    /** The coupon's row key (Coupon.key). */
    couponKey: p.string().index(),
    active: p.boolean().default(true),
    maxRedemptions: p.integer().nullable(),
    expiresAt: p.datetime().nullable(),
    firstTimeTransaction: p.boolean().default(false),
    minimumAmount: p.bigint('number').nullable(),
    minimumAmountCurrency: p.string().length(3).nullable(),
    /** The one customer who may redeem it, or null: anyone. */
    customerId: p.string().nullable(),
    timesRedeemed: p.integer().default(0),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type PromotionCode = InferEntity<typeof PromotionCode>;

/**
 * A coupon applied to a customer (`subscriptionId` null: all of its invoices) or to one subscription.
 * Active while `endedAt` is null and `end` (repeating only) is later than the instant asked about.
 * At most one active per customer and one per subscription (partial unique indexes).
 */
export const Discount = defineEntity({
  name: 'Discount',
  tableName: 'discounts',
  indexes: [
    { properties: ['accountId', 'livemode', 'id'] },
    { properties: ['customerId'] },
    { properties: ['subscriptionId'] },
  ],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    couponKey: p.string(),
    promotionCodeId: p.string().nullable(),
    customerId: p.string(),
    subscriptionId: p.string().nullable(),
    /** The one open one-off invoice it was made for (a promotion code on its pay page); used by it at once (endedAt = start). Null otherwise. */
    invoiceId: p.string().nullable(),
    start: p.datetime(),
    /** repeating: start + duration_in_months (UTC calendar); once and forever: null. */
    end: p.datetime().nullable(),
    /** When it stopped applying: removed, replaced, a `once` discount used, or past `end`. */
    endedAt: p.datetime().nullable(),
    /** The first invoice that applied it (a `once` discount ends there; recordDiscountApplied is idempotent by it). */
    firstInvoiceId: p.string().nullable(),
    createdAt: p.datetime(),
  },
});
export type Discount = InferEntity<typeof Discount>;
