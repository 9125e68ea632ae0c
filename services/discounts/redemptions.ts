/**
 * Discounts: a coupon applied to a customer (all its invoices) or to one subscription
 * (docs/discounts-and-taxes.md#discounts). The invoice side calls two functions in the
 * invoice's own transaction (services/invoices/adjustments.ts):
 *
 * - discountForInvoice: which discount an invoice applies (the subscription's, else the
 *   customer's), as domain/invoice-totals.ts takes it;
 * - recordDiscountApplied: an invoice used it (a `once` discount ends there).
 *
 * Redemption (redeemDiscount) is one decision under row locks on the coupon (and the
 * promotion code): every limit is checked and times_redeemed counted in the same
 * transaction, so concurrent redemptions of a max_redemptions=5 coupon make exactly 5.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Coupon, Customer, Discount, Invoice, PromotionCode, Transaction } from '../../db/entities/index.ts';
import { addIntervals } from '../../domain/billing-calendar.ts';
import { ApiError } from '../../domain/errors.ts';
import type { EventType } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import type { TotalsCoupon, TotalsDiscount } from '../../domain/invoice-totals.ts';
import { formatMoney } from '../../domain/money.ts';
import { couponValid, serializeDiscount } from '../../objects/discount.ts';
import { recordEvent } from '../events/record.ts';
import type { InvoiceParties } from '../invoices/adjustments.ts';
import { currentTime } from '../test-clocks/now.ts';

type Scope = { accountId: string; livemode: boolean };

/** A row read fresh and locked (`select … for update`) until the transaction ends: the limits decided under it hold. */
const writeLock = { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } as const;

/** A coupon as domain/invoice-totals.ts applies it. */
export function totalsCoupon(coupon: Coupon): TotalsCoupon {
  return {
    id: coupon.id,
    name: coupon.name ?? null,
    percent_off: coupon.percentOff ?? null,
    amount_off: coupon.amountOff ?? null,
    applies_to_plans: coupon.appliesToPlans ?? null,
    applies_to_products: coupon.appliesToProducts ?? null,
  };
}

/** Whether `discount` applies at `at`: not ended, and before its end (repeating). */
export const discountActiveAt = (discount: Pick<Discount, 'endedAt' | 'end'>, at: Date): boolean =>
  !discount.endedAt && (!discount.end || discount.end.getTime() > at.getTime());

/**
 * Ends a discount past its `end` that nothing ended yet (a customer's own discount has no
 * timer; a subscription's may be read before its workflow's timer fires) with its
 * customer.discount.deleted event, dated at its end. Inside the caller's transaction.
 */
async function endLapsed(tx: EntityManager, discount: Discount, at: Date): Promise<void> {
  // Only once its end has truly passed: an upcoming invoice's preview asks about a later `at` and must not end it early.
  if (discount.endedAt || !discount.end || discount.end.getTime() > Math.min(at.getTime(), currentTime().getTime()))
    return;
  // Locked and read again: its timer (endDiscountAtEnd) may be ending it at this moment, and it ends once (one event).
  const locked = await tx.findOne(Discount, { id: discount.id }, writeLock);
  if (!locked || locked.endedAt) return;
  await endDiscountRow(tx, locked, locked.end!);
}

async function endDiscountRow(tx: EntityManager, discount: Discount, at: Date): Promise<void> {
  discount.endedAt = at;
  await tx.flush();
  await recordDiscountEvent(tx, 'customer.discount.deleted', discount, at);
}

async function recordDiscountEvent(tx: EntityManager, type: EventType, discount: Discount, now: Date): Promise<void> {
  const coupon = await tx.findOneOrFail(Coupon, { key: discount.couponKey });
  await recordEvent(tx, {
    accountId: discount.accountId,
    livemode: discount.livemode,
    type,
    object: serializeDiscount(discount, coupon, now),
    transactionId: null,
  });
}

/**
 * The discount an invoice applies: the subscription's if it has one active at `at`, else
 * the customer's own; null if none, ended (end ≤ at), or an amount_off coupon in another
 * currency than the invoice's. A discount found past its end is ended here (with its event).
 */
export async function discountForInvoice(tx: EntityManager, q: InvoiceParties): Promise<TotalsDiscount | null> {
  const scope = { accountId: q.accountId, livemode: q.livemode, customerId: q.customerId, endedAt: null };
  // The subscription's and the customer's own in one read (every renewal asks; most find none).
  const found = await tx.find(
    Discount,
    {
      ...scope,
      ...(q.subscriptionId
        ? { $or: [{ subscriptionId: q.subscriptionId }, { subscriptionId: null }] }
        : { subscriptionId: null }),
    },
    { refresh: true },
  );
  let chosen: Discount | null = null;
  if (q.subscriptionId) {
    const own = found.find((d) => d.subscriptionId === q.subscriptionId);
    if (own) {
      await endLapsed(tx, own, q.at);
      if (discountActiveAt(own, q.at)) chosen = own;
    }
  }
  if (!chosen) {
    const customers = found.find((d) => !d.subscriptionId);
    if (customers) {
      await endLapsed(tx, customers, q.at);
      if (discountActiveAt(customers, q.at)) chosen = customers;
    }
  }
  if (!chosen) return null;
  const coupon = await tx.findOneOrFail(Coupon, { key: chosen.couponKey });
  if (coupon.amountOff != null && coupon.currency !== q.currency.toUpperCase()) return null;
  return { id: chosen.id, coupon: totalsCoupon(coupon) };
}

/**
 * An invoice applied the discount (called in the invoice's transaction): the first invoice is
 * remembered, and a `once` discount ends there (customer.discount.deleted). Idempotent per invoice.
 */
export async function recordDiscountApplied(
  tx: EntityManager,
  q: { discountId: string; invoiceId: string; at: Date },
): Promise<void> {
  const discount = await tx.findOne(Discount, { id: q.discountId }, writeLock);
  if (!discount) throw new Error(`No such discount: ${q.discountId}.`);
  if (discount.firstInvoiceId === q.invoiceId) return;
  if (!discount.firstInvoiceId) discount.firstInvoiceId = q.invoiceId;
  const coupon = await tx.findOneOrFail(Coupon, { key: discount.couponKey });
  if (coupon.duration === 'once' && !discount.endedAt) {
    await endDiscountRow(tx, discount, q.at);
    return;
  }
  await tx.flush();
}

/** The coupon of the caller's account and mode named `id` (deleted ones too when `deleted`), or not_found. */
export async function findOwnCoupon(
  em: EntityManager,
  id: string,
  scope: Scope,
  options: { lock?: boolean } = {},
): Promise<Coupon> {
  const found = await em.findOne(Coupon, { id, accountId: scope.accountId, livemode: scope.livemode, deletedAt: null });
  const coupon = found && options.lock ? await em.findOne(Coupon, { key: found.key }, writeLock) : found;
  if (!coupon || coupon.deletedAt) throw new ApiError('not_found', `No such coupon: ${id}.`);
  return coupon;
}

/** The promotion code of the caller's account and mode, by its id (promo_…), or not_found. */
export async function findOwnPromotionCode(
  em: EntityManager,
  id: string,
  scope: Scope,
  options: { lock?: boolean } = {},
): Promise<PromotionCode> {
  const found = await em.findOne(PromotionCode, { id, accountId: scope.accountId, livemode: scope.livemode });
  const code = found && options.lock ? await em.findOne(PromotionCode, { id: found.id }, writeLock) : found;
  if (!code) throw new ApiError('not_found', `No such promotion code: ${id}.`);
  return code;
}

/** A promotion code by what the customer typed (any case), or null. */
export async function findPromotionCodeByCode(
  em: EntityManager,
  code: string,
  scope: Scope,
): Promise<PromotionCode | null> {
  const [row] = await em
    .getConnection()
    .execute<
      { id: string }[]
    >(`select id from promotion_codes where account_id = ? and livemode = ? and lower(code) = lower(?)`, [scope.accountId, scope.livemode, code], 'all', em.getTransactionContext());
  return row ? em.findOne(PromotionCode, { id: row.id }) : null;
}

/** Whether the customer has paid before: a paid invoice, or a succeeded payment. */
async function hasPaidBefore(tx: EntityManager, customer: Customer): Promise<boolean> {
  const scope = { accountId: customer.accountId, livemode: customer.livemode, customerId: customer.id };
  const [invoices, payments] = await Promise.all([
    tx.count(Invoice, { ...scope, status: 'paid', amountPaid: { $gt: 0 } }),
    tx.count(Transaction, { ...scope, type: 'payment', status: 'succeeded' }),
  ]);
  return invoices + payments > 0;
}

export interface RedeemInput {
  scope: Scope;
  customer: Customer;
  /** The subscription it applies to; null: the customer's own discount. */
  subscriptionId: string | null;
  /**
   * The one open one-off invoice it is made for (services/invoices/promotion-codes.ts): no discount in force
   * is replaced, and it is used by that invoice at once (ended_at = start). With it, `discountId`
   * (the caller's id, so a retried activity finds what it made).
   */
  invoice?: { id: string; discountId: string };
  /** A coupon id, or a promotion code: its id (promo_…) or what the customer typed (`code`). */
  coupon?: string;
  promotionCode?: string;
  code?: string;
  /** The subscription's (or invoice's) currency (an amount_off coupon must be in it); null for a customer's discount. */
  currency: string | null;
  /** What a promotion code's minimum_amount is checked against: the subscription's first invoice, or the invoice's subtotal (before discount); null: none to check. */
  purchase: { amount: number; currency: string } | null;
  /** The customer's time (a test clock's). */
  now: Date;
}

/**
 * Applies a coupon or a promotion code to a customer or a subscription, in `tx`: the coupon (and
 * code) locked for update, every limit checked, times_redeemed counted, the target's discount
 * in force (if any) replaced, and customer.discount.created (or .updated when it replaced one)
 * recorded. A refusal is 400 (404 for an unknown coupon or code) and changes nothing.
 */
export async function redeemDiscount(
  tx: EntityManager,
  input: RedeemInput,
): Promise<{ discount: Discount; coupon: Coupon }> {
  const { scope, customer, now } = input;
  let promotion: PromotionCode | null = null;
  let coupon: Coupon;
  if (input.promotionCode || input.code) {
    const found = input.promotionCode?.startsWith('promo_')
      ? await tx.findOne(PromotionCode, {
          id: input.promotionCode,
          accountId: scope.accountId,
          livemode: scope.livemode,
        })
      : await findPromotionCodeByCode(tx, (input.code ?? input.promotionCode)!, scope);
    if (!found) throw new ApiError('not_found', `No such promotion code: ${input.code ?? input.promotionCode}.`);
    // Lock order everywhere: the coupon, then the code.
    const lockedCoupon = await tx.findOne(Coupon, { key: found.couponKey }, writeLock);
    promotion = (await tx.findOne(PromotionCode, { id: found.id }, writeLock))!;
    if (!lockedCoupon || lockedCoupon.deletedAt)
      throw new ApiError('invalid_request', `Promotion code ${promotion.code}: its coupon was deleted.`);
    coupon = lockedCoupon;
    const what = `Promotion code ${promotion.code}`;
    if (!promotion.active) throw new ApiError('invalid_request', `${what} is not active.`);
    if (promotion.expiresAt && promotion.expiresAt.getTime() <= now.getTime())
      throw new ApiError('invalid_request', `${what} expired at ${promotion.expiresAt.toISOString()}.`);
    if (promotion.maxRedemptions != null && promotion.timesRedeemed >= promotion.maxRedemptions) {
      throw new ApiError(
        'invalid_request',
        `${what} has been redeemed its maximum of ${promotion.maxRedemptions} times.`,
      );
    }
    if (promotion.customerId && promotion.customerId !== customer.id)
      throw new ApiError('invalid_request', `${what} is for another customer.`);
    if (promotion.firstTimeTransaction && (await hasPaidBefore(tx, customer)))
      throw new ApiError(
        'invalid_request',
        `${what} is for a first purchase only, and customer ${customer.id} has paid before.`,
      );
    if (promotion.minimumAmount != null) {
      const currency = promotion.minimumAmountCurrency!;
      const minimum = formatMoney(promotion.minimumAmount, currency);
      if (!input.purchase)
        throw new ApiError(
          'invalid_request',
          `${what} needs a purchase of at least ${minimum}: apply it to a subscription or an invoice.`,
        );
      if (input.purchase.currency !== currency)
        throw new ApiError(
          'invalid_request',
          `${what} needs a purchase of at least ${minimum}, and this one is in ${input.purchase.currency}.`,
        );
      if (input.purchase.amount < promotion.minimumAmount) {
        throw new ApiError(
          'invalid_request',
          `${what} needs a purchase of at least ${minimum}; this one is ${formatMoney(input.purchase.amount, currency)}.`,
        );
      }
    }
  } else {
    coupon = await findOwnCoupon(tx, input.coupon!, scope, { lock: true });
  }
  const name = `Coupon ${coupon.id}`;
  if (coupon.redeemBy && coupon.redeemBy.getTime() < now.getTime())
    throw new ApiError('invalid_request', `${name} could be redeemed until ${coupon.redeemBy.toISOString()}.`);
  if (coupon.maxRedemptions != null && coupon.timesRedeemed >= coupon.maxRedemptions) {
    throw new ApiError('invalid_request', `${name} has been redeemed its maximum of ${coupon.maxRedemptions} times.`);
  }
  if (!couponValid(coupon, now)) throw new ApiError('invalid_request', `${name} is no longer valid.`);
  if (coupon.amountOff != null && input.currency && coupon.currency !== input.currency) {
    throw new ApiError(
      'invalid_request',
      `${name} takes ${formatMoney(coupon.amountOff, coupon.currency!)} off, and the ${input.invoice ? 'invoice is' : 'subscription bills'} in ${input.currency}.`,
    );
  }

  // The target's discount in force is replaced (as Stripe); an invoice's own discount replaces nothing.
  const previous = input.invoice
    ? null
    : await lockedInForce(tx, { customerId: customer.id, subscriptionId: input.subscriptionId });
  if (previous) previous.endedAt = now;
  coupon.timesRedeemed += 1;
  coupon.updatedAt = now;
  if (promotion) {
    promotion.timesRedeemed += 1;
    promotion.updatedAt = now;
  }
  // The old one ends first (the unique index allows one in force per target).
  await tx.flush();
  const discount = tx.create(Discount, {
    id: input.invoice?.discountId ?? newId('discount'),
    accountId: scope.accountId,
    livemode: scope.livemode,
    couponKey: coupon.key,
    promotionCodeId: promotion?.id ?? null,
    customerId: customer.id,
    subscriptionId: input.subscriptionId,
    invoiceId: input.invoice?.id ?? null,
    start: now,
    end:
      !input.invoice && coupon.duration === 'repeating'
        ? addIntervals(now, { unit: 'month', count: coupon.durationInMonths! }, 1)
        : null,
    // An invoice's own discount is used by it at once: never in force for the customer or a subscription.
    endedAt: input.invoice ? now : null,
    firstInvoiceId: input.invoice?.id ?? null,
    createdAt: now,
  });
  await tx.flush();
  await recordDiscountEvent(tx, previous ? 'customer.discount.updated' : 'customer.discount.created', discount, now);
  return { discount, coupon };
}

/** The target's discount in force (not ended), locked; null if none. */
async function lockedInForce(
  tx: EntityManager,
  target: { customerId: string; subscriptionId: string | null },
): Promise<Discount | null> {
  const found = await tx.findOne(
    Discount,
    { customerId: target.customerId, subscriptionId: target.subscriptionId, endedAt: null },
    { refresh: true },
  );
  const locked = found ? await tx.findOne(Discount, { id: found.id }, writeLock) : null;
  return locked && !locked.endedAt ? locked : null;
}

/** Ends the discount in force of a customer (subscriptionId null) or a subscription now: customer.discount.deleted. Null when it had none. */
export async function removeDiscount(
  tx: EntityManager,
  target: { customerId: string; subscriptionId: string | null },
  now: Date,
): Promise<{ discount: Discount; coupon: Coupon } | null> {
  const discount = await lockedInForce(tx, target);
  if (!discount) return null;
  await endDiscountRow(tx, discount, discount.end && discount.end.getTime() <= now.getTime() ? discount.end : now);
  return { discount, coupon: await tx.findOneOrFail(Coupon, { key: discount.couponKey }) };
}

/**
 * The subscription workflow's timer reached a discount's end: it ends (customer.discount.deleted, dated at
 * its end) unless something ended it before. Idempotent.
 */
export async function endDiscountAtEnd(tx: EntityManager, discountId: string): Promise<boolean> {
  const discount = await tx.findOne(Discount, { id: discountId }, writeLock);
  if (!discount || discount.endedAt || !discount.end) return false;
  await endDiscountRow(tx, discount, discount.end);
  return true;
}

/** The discount in force of a customer (subscriptionId null) or a subscription, with its coupon; null if none (or past its end). */
export async function discountInForce(
  em: EntityManager,
  target: { customerId: string; subscriptionId: string | null },
  now: Date,
): Promise<{ discount: Discount; coupon: Coupon } | null> {
  const discount = await em.findOne(Discount, {
    customerId: target.customerId,
    subscriptionId: target.subscriptionId,
    endedAt: null,
  });
  if (!discount || !discountActiveAt(discount, now)) return null;
  return { discount, coupon: await em.findOneOrFail(Coupon, { key: discount.couponKey }) };
}

/** The discounts in force of several subscriptions (for a list), keyed by subscription id. */
export async function subscriptionDiscounts(
  em: EntityManager,
  subscriptionIds: string[],
  now: Date,
): Promise<Map<string, { discount: Discount; coupon: Coupon }>> {
  const result = new Map<string, { discount: Discount; coupon: Coupon }>();
  if (subscriptionIds.length === 0) return result;
  const discounts = (await em.find(Discount, { subscriptionId: { $in: subscriptionIds }, endedAt: null })).filter((d) =>
    discountActiveAt(d, now),
  );
  if (discounts.length === 0) return result;
  const coupons = await em.find(Coupon, { key: { $in: [...new Set(discounts.map((d) => d.couponKey))] } });
  for (const discount of discounts)
    result.set(discount.subscriptionId!, { discount, coupon: coupons.find((c) => c.key === discount.couponKey)! });
  return result;
}

/** The `discount` field of customers' answers: each customer's own discount in force (serialized), by customer id; absent: none. */
export async function customerDiscountObjects(
  em: EntityManager,
  customerIds: string[],
  now = new Date(),
): Promise<Map<string, ReturnType<typeof serializeDiscount>>> {
  const result = new Map<string, ReturnType<typeof serializeDiscount>>();
  if (customerIds.length === 0) return result;
  const discounts = (
    await em.find(Discount, { customerId: { $in: customerIds }, subscriptionId: null, endedAt: null })
  ).filter((d) => discountActiveAt(d, now));
  if (discounts.length === 0) return result;
  const coupons = await em.find(Coupon, { key: { $in: [...new Set(discounts.map((d) => d.couponKey))] } });
  for (const discount of discounts)
    result.set(
      discount.customerId,
      serializeDiscount(discount, coupons.find((c) => c.key === discount.couponKey)!, now),
    );
  return result;
}
