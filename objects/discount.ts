import { z } from '@hono/zod-openapi';

import { couponDurations } from '../db/entities/discount.ts';
import type { Coupon, Discount, PromotionCode } from '../db/entities/index.ts';
import { isoOrNull, timestamp } from './common.ts';

/** Coupons, promotion codes and discounts as the API shows them (Stripe's shapes; docs/discounts-and-taxes.md#discounts). */

export const CouponSchema = z
  .object({
    id: z.string().openapi({
      description: "The merchant's id for it (given at creation, e.g. `LAUNCH20`) or a generated `cpn_…`",
      example: 'LAUNCH20',
    }),
    object: z.literal('coupon'),
    name: z.string().nullable().openapi({
      description: 'Shown to customers on invoices and in the portal',
      example: 'Launch: 20% off for 3 months',
    }),
    percent_off: z.number().nullable().openapi({
      description: 'Percent taken off (0 < p ≤ 100, at most 2 decimals), or null for an amount_off coupon',
      example: 20,
    }),
    amount_off: z.number().int().nullable().openapi({
      description: 'Minor units taken off each invoice it applies to (at most the lines it applies to), or null',
      example: null,
    }),
    currency: z.string().nullable().openapi({
      description: "amount_off's currency; an amount_off coupon applies only to invoices in it",
      example: null,
    }),
    duration: z.enum(couponDurations).openapi({
      description:
        'once: the first invoice only; repeating: for duration_in_months months from when it is applied; forever',
      example: 'repeating',
    }),
    duration_in_months: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'repeating only: how many months it lasts', example: 3 }),
    max_redemptions: z.number().int().nullable().openapi({
      description: 'How many times it may be applied (to customers or subscriptions) in all; null: no limit',
      example: 100,
    }),
    redeem_by: timestamp.nullable().openapi({ description: 'Last instant it may be applied; null: no limit' }),
    applies_to: z
      .object({
        plans: z.array(z.string()).nullable().openapi({
          description: 'Plans whose invoice lines it discounts; null: every line (unless products is set)',
        }),
        products: z
          .array(z.string())
          .nullable()
          .openapi({ description: "Products whose plans' lines it discounts; null: every line (unless plans is set)" }),
      })
      .openapi({ description: 'Which invoice lines it discounts; both null: every line' }),
    times_redeemed: z.number().int().openapi({ description: 'How many times it was applied', example: 12 }),
    valid: z.boolean().openapi({
      description: 'Whether it can still be applied: not deleted, redeem_by not passed, max_redemptions not reached',
    }),
    metadata: z.record(z.string(), z.string()),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('Coupon');

export const PromotionCodeSchema = z
  .object({
    id: z.string().openapi({ example: 'promo_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('promotion_code'),
    code: z.string().openapi({
      description: 'What the customer types; unique in the account and mode whatever its case',
      example: 'SPRING20',
    }),
    coupon: CouponSchema,
    active: z.boolean().openapi({ description: 'false: it cannot be redeemed (set with PATCH)' }),
    max_redemptions: z.number().int().nullable().openapi({
      description: "How many times this code may be redeemed; null: no limit of its own (the coupon's still applies)",
      example: 50,
    }),
    expires_at: timestamp.nullable().openapi({ description: 'Last instant it may be redeemed; null: no limit' }),
    restrictions: z
      .object({
        first_time_transaction: z
          .boolean()
          .openapi({ description: 'Only a customer with no paid invoice and no succeeded payment may redeem it' }),
        minimum_amount: z.number().int().nullable().openapi({
          description:
            'The smallest first invoice (minor units, before discount) of the subscription it is applied to; null: none',
        }),
        minimum_amount_currency: z.string().nullable().openapi({ description: "minimum_amount's currency" }),
      })
      .openapi({ description: 'Who and what may redeem it' }),
    customer: z.string().nullable().openapi({ description: 'The one customer who may redeem it; null: any customer' }),
    times_redeemed: z.number().int().openapi({ example: 3 }),
    metadata: z.record(z.string(), z.string()),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('PromotionCode');

export const DiscountSchema = z
  .object({
    id: z.string().openapi({ example: 'di_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('discount'),
    coupon: CouponSchema,
    promotion_code: z
      .string()
      .nullable()
      .openapi({ description: 'The promotion code it was redeemed through, or null (a coupon applied by id)' }),
    customer: z.string(),
    subscription: z.string().nullable().openapi({
      description:
        "The subscription it applies to; null: the customer's own discount, for all its invoices (a subscription's own discount comes first)",
    }),
    invoice: z.string().nullable().openapi({
      description:
        'The one open one-off invoice it was made for (a promotion code entered on its pay page, or POST /v1/invoices/{id}/discounts): used by that invoice at once, so ended_at is its start. Null otherwise',
    }),
    start: timestamp.openapi({ description: 'When it was applied' }),
    end: timestamp.nullable().openapi({
      description: 'repeating: when it stops applying (start + duration_in_months); once and forever: null',
    }),
    ended_at: timestamp.nullable().openapi({
      description: 'When it stopped applying (removed, replaced, a once coupon used, past end); null while it applies',
    }),
    livemode: z.boolean(),
  })
  .openapi('Discount');

/** Percent strings are kept as typed ("20", "12.5"); the API shows a number, as Stripe. */
export function serializeCoupon(coupon: Coupon, now: Date): z.infer<typeof CouponSchema> {
  return {
    id: coupon.id,
    object: 'coupon',
    name: coupon.name ?? null,
    percent_off: coupon.percentOff === null || coupon.percentOff === undefined ? null : Number(coupon.percentOff),
    amount_off: coupon.amountOff ?? null,
    currency: coupon.currency ?? null,
    duration: coupon.duration,
    duration_in_months: coupon.durationInMonths ?? null,
    max_redemptions: coupon.maxRedemptions ?? null,
    redeem_by: isoOrNull(coupon.redeemBy),
    applies_to: { plans: coupon.appliesToPlans ?? null, products: coupon.appliesToProducts ?? null },
    times_redeemed: coupon.timesRedeemed,
    valid: couponValid(coupon, now),
    metadata: coupon.metadata,
    livemode: coupon.livemode,
    created_at: coupon.createdAt.toISOString(),
  };
}

/** Whether a coupon may still be applied at `now`. */
export function couponValid(
  coupon: Pick<Coupon, 'deletedAt' | 'redeemBy' | 'maxRedemptions' | 'timesRedeemed'>,
  now: Date,
): boolean {
  if (coupon.deletedAt) return false;
  if (coupon.redeemBy && coupon.redeemBy.getTime() < now.getTime()) return false;
  if (coupon.maxRedemptions != null && coupon.timesRedeemed >= coupon.maxRedemptions) return false;
  return true;
}

export function serializePromotionCode(
  code: PromotionCode,
  coupon: Coupon,
  now: Date,
): z.infer<typeof PromotionCodeSchema> {
  return {
    id: code.id,
    object: 'promotion_code',
    code: code.code,
    coupon: serializeCoupon(coupon, now),
    active: code.active,
    max_redemptions: code.maxRedemptions ?? null,
    expires_at: isoOrNull(code.expiresAt),
    restrictions: {
      first_time_transaction: code.firstTimeTransaction,
      minimum_amount: code.minimumAmount ?? null,
      minimum_amount_currency: code.minimumAmountCurrency ?? null,
    },
    customer: code.customerId ?? null,
    times_redeemed: code.timesRedeemed,
    metadata: code.metadata,
    livemode: code.livemode,
    created_at: code.createdAt.toISOString(),
  };
}

export function serializeDiscount(discount: Discount, coupon: Coupon, now: Date): z.infer<typeof DiscountSchema> {
  return {
    id: discount.id,
    object: 'discount',
    coupon: serializeCoupon(coupon, now),
    promotion_code: discount.promotionCodeId ?? null,
    customer: discount.customerId,
    subscription: discount.subscriptionId ?? null,
    invoice: discount.invoiceId ?? null,
    start: discount.start.toISOString(),
    end: isoOrNull(discount.end),
    ended_at: isoOrNull(discount.endedAt),
    livemode: discount.livemode,
  };
}
