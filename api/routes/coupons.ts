import { randomInt } from 'node:crypto';

import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';

import { couponDurations } from '../../db/entities/discount.ts';
import { Coupon, Customer, Plan, Product, PromotionCode, Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { maxPercentage } from '../../domain/invoice-totals.ts';
import { endedStatuses } from '../../domain/subscription.ts';
import { currency, metadata, metadataLimits } from '../../objects/common.ts';
import {
  CouponSchema,
  DiscountSchema,
  PromotionCodeSchema,
  serializeCoupon,
  serializeDiscount,
  serializePromotionCode,
} from '../../objects/discount.ts';
import { startDiscountEndTimer } from '../../services/discounts/customer-discount-end.ts';
import {
  discountInForce,
  findOwnCoupon,
  findOwnPromotionCode,
  findPromotionCodeByCode,
  redeemDiscount,
  removeDiscount,
} from '../../services/discounts/redemptions.ts';
import {
  subscriptionFirstInvoiceAmount,
  tellWorkflowOfDiscount,
} from '../../services/discounts/subscription-discounts.ts';
import { recordEvent } from '../../services/events/record.ts';
import { clockBindingOf, clockTimeOf } from '../../services/test-clocks/clocks.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { listRoute, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam, isoInstant, oneCustomerName } from '../schemas.ts';

/**
 * Coupons (/v1/coupons), promotion codes (/v1/promotion_codes) and discounts on customers and
 * subscriptions (/v1/customers/{id}/discount, /v1/subscriptions/{id}/discount), as Stripe has them
 * (docs/discounts-and-taxes.md#discounts).
 */

type Scope = { accountId: string; livemode: boolean };
const forms = 'Takes JSON or an `application/x-www-form-urlencoded` body.';

/** A merchant's coupon id, or a promotion code: letters, digits, `_` and `-`. */
const codeLike = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only');

/** A percentage with at most 2 decimals, 0 < p ≤ 100 (kept as typed: "12.5"). */
const percentOff = z
  .number()
  .positive()
  .max(maxPercentage)
  .refine((value) => /^\d{1,3}(\.\d{1,2})?$/.test(String(value)), { message: 'at most 2 decimal places' })
  .openapi({ example: 20 });

const idList = z.array(z.string().min(1).max(64)).min(1).max(100);

const CreateCouponBody = z
  .object({
    id: codeLike.optional().openapi({
      description: 'Your id for it (e.g. `LAUNCH20`), unique in the account and mode; default a generated `cpn_…`',
    }),
    name: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'Shown to customers on invoices and in the portal' }),
    percent_off: percentOff
      .optional()
      .openapi({ description: '0 < p ≤ 100, at most 2 decimals; or give amount_off and currency' }),
    amount_off: z
      .number()
      .int()
      .positive()
      .max(99_999_999)
      .optional()
      .openapi({ description: 'Minor units taken off each invoice it applies to; with currency' }),
    currency: currency.optional().openapi({ description: "amount_off's currency" }),
    duration: z
      .enum(couponDurations)
      .default('once')
      .openapi({ description: 'once (default): the first invoice; repeating: duration_in_months months; forever' }),
    duration_in_months: z
      .number()
      .int()
      .min(1)
      .max(120)
      .optional()
      .openapi({ description: 'With duration repeating: how many months from when it is applied' }),
    max_redemptions: z
      .number()
      .int()
      .min(1)
      .max(1_000_000_000)
      .optional()
      .openapi({ description: 'How many times it may be applied in all' }),
    redeem_by: isoInstant
      .optional()
      .openapi({ type: 'string', format: 'date-time', description: 'Last instant it may be applied (in the future)' }),
    applies_to: z
      .object({
        plans: idList.optional().openapi({ description: 'Plan ids whose lines it discounts' }),
        products: idList.optional().openapi({ description: "Product ids whose plans' lines it discounts" }),
      })
      .strict()
      .optional()
      .openapi({ description: 'Which invoice lines it discounts; left out: every line' }),
    metadata: metadata.optional(),
  })
  .strict()
  .refine((value) => (value.percent_off === undefined) !== (value.amount_off === undefined), {
    message: 'give percent_off or amount_off (with currency), one of the two',
    path: ['percent_off'],
  })
  .refine((value) => (value.amount_off === undefined) === (value.currency === undefined), {
    message: 'amount_off and currency go together',
    path: ['currency'],
  })
  .refine((value) => (value.duration === 'repeating') === (value.duration_in_months !== undefined), {
    message: 'duration_in_months is required with duration repeating, and only with it',
    path: ['duration_in_months'],
  })
  .openapi({
    example: {
      id: 'LAUNCH20',
      name: 'Launch: 20% off for 3 months',
      percent_off: 20,
      duration: 'repeating',
      duration_in_months: 3,
      max_redemptions: 100,
    },
  });

const UpdateCouponBody = z
  .object({
    name: z.string().max(200).nullable().optional().openapi({ description: 'null (or "") removes it' }),
    metadata: z
      .record(z.string().min(1).max(metadataLimits.keyLength), z.string().max(metadataLimits.valueLength))
      .optional()
      .openapi({ description: 'Merged key by key; a key set to "" is removed' }),
  })
  .strict()
  .openapi({ example: { name: 'Launch offer', metadata: { campaign: 'spring' } } });

const CreatePromotionCodeBody = z
  .object({
    coupon: z.string().min(1).max(64).openapi({ description: 'The coupon it redeems (its id)' }),
    code: codeLike.optional().openapi({
      description:
        'What the customer types, unique in the account and mode whatever its case; default a generated 8-character code',
    }),
    active: z.boolean().default(true),
    max_redemptions: z.number().int().min(1).max(1_000_000_000).optional(),
    expires_at: isoInstant
      .optional()
      .openapi({ type: 'string', format: 'date-time', description: 'Last instant it may be redeemed (in the future)' }),
    customer: z.string().min(1).max(64).optional().openapi({ description: 'The one customer who may redeem it' }),
    restrictions: z
      .object({
        first_time_transaction: z
          .boolean()
          .default(false)
          .openapi({ description: 'Only a customer who never paid (no paid invoice, no succeeded payment)' }),
        minimum_amount: z.number().int().positive().max(99_999_999).optional().openapi({
          description:
            'The smallest first invoice (before discount) of the subscription it is applied to, in minor units',
        }),
        minimum_amount_currency: currency.optional().openapi({ description: "minimum_amount's currency" }),
      })
      .strict()
      .refine((value) => (value.minimum_amount === undefined) === (value.minimum_amount_currency === undefined), {
        message: 'minimum_amount and minimum_amount_currency go together',
        path: ['minimum_amount_currency'],
      })
      .optional(),
    metadata: metadata.optional(),
  })
  .strict()
  .openapi({
    example: {
      coupon: 'LAUNCH20',
      code: 'SPRING20',
      max_redemptions: 50,
      restrictions: { first_time_transaction: true },
    },
  });

const UpdatePromotionCodeBody = z
  .object({
    active: z.boolean().optional().openapi({ description: 'false: it can no longer be redeemed; true: again' }),
    metadata: z
      .record(z.string().min(1).max(metadataLimits.keyLength), z.string().max(metadataLimits.valueLength))
      .optional()
      .openapi({ description: 'Merged key by key; a key set to "" is removed' }),
  })
  .strict()
  .openapi({ example: { active: false } });

const ApplyDiscountBody = z
  .object({
    coupon: z.string().min(1).max(64).optional().openapi({ description: 'A coupon id' }),
    promotion_code: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'A promotion code: its id (`promo_…`) or the code itself (any case)' }),
  })
  .strict()
  .refine((value) => (value.coupon === undefined) !== (value.promotion_code === undefined), {
    message: 'give coupon or promotion_code, one of the two',
    path: ['coupon'],
  })
  .openapi({ example: { promotion_code: 'SPRING20' } });

const couponCursor = z.string().min(1).max(64);
const CouponListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: '1 to 100' }),
    starting_after: couponCursor
      .optional()
      .openapi({ description: 'A coupon id from the previous page: the page of older coupons after it' }),
    ending_before: couponCursor
      .optional()
      .openapi({ description: 'A coupon id from the current page: the page of newer coupons before it' }),
  })
  .strict()
  .refine(...oneCursor);

const promoCursor = z.string().regex(/^promo_[0-9a-z]{26}$/, 'must be a promo_ id');
const PromotionCodeListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20).openapi({ description: '1 to 100' }),
    starting_after: promoCursor.optional(),
    ending_before: promoCursor.optional(),
    coupon: z.string().min(1).max(64).optional().openapi({ description: 'Only codes of this coupon' }),
    code: z.string().min(1).max(64).optional().openapi({ description: 'Only the code with this text (any case)' }),
    customer: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'Only codes restricted to this customer; `customer_id` is the same filter' }),
    customer_id: z.string().min(1).max(64).optional().openapi({ description: 'Same as `customer`' }),
    active: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
  })
  .strict()
  .refine(...oneCursor)
  .refine(...oneCustomerName);

const couponParam = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'LAUNCH20' }),
});
const DeletedCouponSchema = z
  .object({ id: z.string(), object: z.literal('coupon'), deleted: z.literal(true) })
  .openapi('DeletedCoupon');
const CustomerDiscountSchema = z
  .object({
    discount: DiscountSchema.nullable().openapi({ description: 'The discount now in force; null after DELETE' }),
  })
  .openapi('DiscountAnswer');

const tags = { coupons: ['Coupons'], codes: ['Promotion codes'], discounts: ['Discounts'] };

const routes = {
  createCoupon: createRoute({
    method: 'post',
    path: '/',
    tags: tags.coupons,
    summary: 'Create a coupon',
    description: `percent_off, or amount_off with currency; duration once, repeating (with duration_in_months) or forever. Its terms never change afterwards. ${forms}`,
    request: { body: { ...json(CreateCouponBody), required: true } },
    responses: { 201: { description: 'Created', ...json(CouponSchema) }, ...errorResponses(400, 401) },
  }),
  listCoupons: listRoute({
    tags: tags.coupons,
    summary: 'List coupons, newest first',
    description: 'Deleted coupons are left out.',
    query: CouponListQuery,
    item: CouponSchema,
  }),
  getCoupon: createRoute({
    method: 'get',
    path: '/{id}',
    tags: tags.coupons,
    summary: 'Retrieve a coupon',
    request: { params: couponParam },
    responses: { 200: { description: 'The coupon', ...json(CouponSchema) }, ...errorResponses(401, 404) },
  }),
  updateCoupon: createRoute({
    method: 'patch',
    path: '/{id}',
    tags: tags.coupons,
    summary: 'Update a coupon (name, metadata)',
    description: `Only name and metadata change; a coupon's terms never do (make a new coupon). ${forms}`,
    request: { params: couponParam, body: { ...json(UpdateCouponBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(CouponSchema) }, ...errorResponses(400, 401, 404) },
  }),
  deleteCoupon: createRoute({
    method: 'delete',
    path: '/{id}',
    tags: tags.coupons,
    summary: 'Delete a coupon',
    description:
      'No new redemptions (its promotion codes stop working too); discounts already made from it go on until they end, as Stripe. Its id may be used again.',
    request: { params: couponParam },
    responses: { 200: { description: 'Deleted', ...json(DeletedCouponSchema) }, ...errorResponses(401, 404) },
  }),
  createCode: createRoute({
    method: 'post',
    path: '/',
    tags: tags.codes,
    summary: 'Create a promotion code',
    description: `A code customers type for a coupon, with its own limits and restrictions. ${forms}`,
    request: { body: { ...json(CreatePromotionCodeBody), required: true } },
    responses: { 201: { description: 'Created', ...json(PromotionCodeSchema) }, ...errorResponses(400, 401, 404) },
  }),
  listCodes: listRoute({
    tags: tags.codes,
    summary: 'List promotion codes, newest first',
    query: PromotionCodeListQuery,
    item: PromotionCodeSchema,
  }),
  getCode: createRoute({
    method: 'get',
    path: '/{id}',
    tags: tags.codes,
    summary: 'Retrieve a promotion code',
    request: { params: idParam('promo') },
    responses: {
      200: { description: 'The promotion code', ...json(PromotionCodeSchema) },
      ...errorResponses(401, 404),
    },
  }),
  updateCode: createRoute({
    method: 'patch',
    path: '/{id}',
    tags: tags.codes,
    summary: 'Update a promotion code (active, metadata)',
    description: forms,
    request: { params: idParam('promo'), body: { ...json(UpdatePromotionCodeBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(PromotionCodeSchema) }, ...errorResponses(400, 401, 404) },
  }),
  applyToCustomer: createRoute({
    method: 'post',
    path: '/customers/{id}/discount',
    tags: tags.discounts,
    summary: 'Apply a coupon or promotion code to a customer',
    description:
      "The customer's own discount, for all its invoices (a subscription's own discount comes first). Replaces the one in force (customer.discount.updated). " +
      "Checked and counted as one decision: the coupon's max_redemptions and redeem_by; the code's active, expires_at, max_redemptions, customer and " +
      'first_time_transaction. A code with a minimum_amount applies to a subscription or an invoice only. A refusal is 400 and changes nothing. ' +
      "A repeating discount ends at its `end` on time, by a timer of its own (on the customer's test clock too; customer.discount.deleted dated at `end`). " +
      forms,
    request: { params: idParam('cus'), body: { ...json(ApplyDiscountBody), required: true } },
    responses: { 200: { description: 'Applied', ...json(CustomerDiscountSchema) }, ...errorResponses(400, 401, 404) },
  }),
  removeFromCustomer: createRoute({
    method: 'delete',
    path: '/customers/{id}/discount',
    tags: tags.discounts,
    summary: "Remove a customer's discount",
    description: 'It stops applying now (customer.discount.deleted). 404 when the customer has none.',
    request: { params: idParam('cus') },
    responses: { 200: { description: 'Removed', ...json(CustomerDiscountSchema) }, ...errorResponses(401, 404) },
  }),
  applyToSubscription: createRoute({
    method: 'post',
    path: '/subscriptions/{id}/discount',
    tags: tags.discounts,
    summary: 'Apply a coupon or promotion code to a subscription',
    description:
      "From its next invoice on. Replaces the one in force. A repeating discount ends at its `end` on time, by the subscription's timer (customer.discount.deleted). " +
      "A code's minimum_amount is checked against the subscription's renewal amount. A refusal is 400 and changes nothing; an ended subscription is 409. " +
      forms,
    request: { params: idParam('sub'), body: { ...json(ApplyDiscountBody), required: true } },
    responses: {
      200: { description: 'Applied', ...json(CustomerDiscountSchema) },
      ...errorResponses(400, 401, 404, 409),
    },
  }),
  removeFromSubscription: createRoute({
    method: 'delete',
    path: '/subscriptions/{id}/discount',
    tags: tags.discounts,
    summary: "Remove a subscription's discount",
    description:
      "It stops applying now (customer.discount.deleted); the customer's own discount, if any, applies again. 404 when it has none.",
    request: { params: idParam('sub') },
    responses: { 200: { description: 'Removed', ...json(CustomerDiscountSchema) }, ...errorResponses(401, 404) },
  }),
};

/** A generated promotion code: 8 characters without look-alikes (0/O, 1/I/L). */
function generatedCode(): string {
  const alphabet = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
  return Array.from({ length: 8 }, () => alphabet[randomInt(alphabet.length)]).join('');
}

function mergeMetadata(current: Record<string, string>, changes: Record<string, string>): Record<string, string> {
  const merged = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value === '') delete merged[key];
    else merged[key] = value;
  }
  if (Object.keys(merged).length > metadataLimits.keys)
    throw new ApiError('invalid_request', `metadata: at most ${metadataLimits.keys} keys.`);
  return merged;
}

/** A unique index refused the row: the id or code is taken. */
function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === '23505' || /unique/i.test(String((error as Error)?.message ?? ''));
}

async function checkAppliesTo(
  em: EntityManager,
  appliesTo: { plans?: string[]; products?: string[] } | undefined,
  scope: Scope,
): Promise<void> {
  if (!appliesTo) return;
  for (const [field, entity, ids] of [
    ['plans', Plan, appliesTo.plans],
    ['products', Product, appliesTo.products],
  ] as const) {
    if (!ids) continue;
    const found = await em.find(
      entity as typeof Plan,
      { id: { $in: ids }, accountId: scope.accountId, livemode: scope.livemode },
      { fields: ['id'] },
    );
    const missing = ids.filter((id) => !found.some((row) => row.id === id));
    if (missing.length > 0)
      throw new ApiError(
        'invalid_request',
        `applies_to.${field}: no such ${field === 'plans' ? 'plan' : 'product'} ${missing.join(', ')}.`,
      );
  }
}

export function discountsApps({ context }: AppDeps) {
  const { orm, temporal } = context;
  async function couponPage(scope: Scope, query: z.infer<typeof CouponListQuery>) {
    const em = orm.em.fork();
    const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode, deletedAt: null };
    const cursor = query.starting_after ?? query.ending_before;
    if (cursor) {
      const at = await em.findOne(
        Coupon,
        { id: cursor, accountId: scope.accountId, livemode: scope.livemode },
        { orderBy: { key: 'desc' } },
      );
      if (!at)
        throw new ApiError(
          'invalid_request',
          `${query.starting_after ? 'starting_after' : 'ending_before'}: no such coupon ${cursor}.`,
        );
      where.key = query.starting_after ? { $lt: at.key } : { $gt: at.key };
    }
    const backwards = Boolean(query.ending_before);
    const rows = await em.find(Coupon, where, { orderBy: { key: backwards ? 'asc' : 'desc' }, limit: query.limit + 1 });
    const page = rows.slice(0, query.limit);
    if (backwards) page.reverse();
    const now = new Date();
    return {
      object: 'list' as const,
      data: page.map((coupon) => serializeCoupon(coupon, now)),
      has_more: rows.length > query.limit,
    };
  }

  const coupons = newOpenApiApp()
    .openapi(routes.createCoupon, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const now = new Date();
      if (body.redeem_by && body.redeem_by.getTime() <= now.getTime())
        throw new ApiError('invalid_request', 'redeem_by: must be in the future.');
      const em = orm.em.fork();
      await checkAppliesTo(em, body.applies_to, scope);
      if (
        body.id &&
        (await em.count(Coupon, {
          id: body.id,
          accountId: scope.accountId,
          livemode: scope.livemode,
          deletedAt: null,
        })) > 0
      ) {
        throw new ApiError('invalid_request', `id: a coupon ${body.id} already exists.`);
      }
      const key = newId('coupon');
      try {
        const coupon = await em.transactional(async (tx) => {
          const row = tx.create(Coupon, {
            key,
            id: body.id ?? key,
            accountId: scope.accountId,
            livemode: scope.livemode,
            name: body.name ?? null,
            percentOff: body.percent_off !== undefined ? String(body.percent_off) : null,
            amountOff: body.amount_off ?? null,
            currency: body.currency ?? null,
            duration: body.duration,
            durationInMonths: body.duration_in_months ?? null,
            maxRedemptions: body.max_redemptions ?? null,
            redeemBy: body.redeem_by ?? null,
            appliesToPlans: body.applies_to?.plans ?? null,
            appliesToProducts: body.applies_to?.products ?? null,
            timesRedeemed: 0,
            metadata: body.metadata ?? {},
            deletedAt: null,
            createdAt: now,
            updatedAt: now,
          });
          await tx.flush();
          await recordEvent(tx, { ...scope, type: 'coupon.created', object: serializeCoupon(row, now) });
          return row;
        });
        return c.json(serializeCoupon(coupon, now), 201);
      } catch (error) {
        if (isUniqueViolation(error)) throw new ApiError('invalid_request', `id: a coupon ${body.id} already exists.`);
        throw error;
      }
    })
    .openapi(routes.listCoupons, async (c) =>
      c.json(await couponPage(await accountScope(c, orm), c.req.valid('query')), 200),
    )
    .openapi(routes.getCoupon, async (c) => {
      const scope = await accountScope(c, orm);
      return c.json(
        serializeCoupon(await findOwnCoupon(orm.em.fork(), c.req.valid('param').id, scope), new Date()),
        200,
      );
    })
    .openapi(routes.updateCoupon, async (c) => {
      const scope = await accountScope(c, orm);
      const body = c.req.valid('json');
      const now = new Date();
      const coupon = await orm.em.fork().transactional(async (tx) => {
        const row = await findOwnCoupon(tx, c.req.valid('param').id, scope, { lock: true });
        const previous: Record<string, unknown> = {};
        if (body.name !== undefined) {
          previous.name = row.name ?? null;
          row.name = body.name === '' || body.name === null ? null : body.name;
        }
        if (body.metadata) {
          previous.metadata = row.metadata;
          row.metadata = mergeMetadata(row.metadata, body.metadata);
        }
        row.updatedAt = now;
        await tx.flush();
        await recordEvent(tx, {
          ...scope,
          type: 'coupon.updated',
          object: serializeCoupon(row, now),
          previousAttributes: previous,
        });
        return row;
      });
      return c.json(serializeCoupon(coupon, now), 200);
    })
    .openapi(routes.deleteCoupon, async (c) => {
      const scope = await accountScope(c, orm);
      const now = new Date();
      const coupon = await orm.em.fork().transactional(async (tx) => {
        const row = await findOwnCoupon(tx, c.req.valid('param').id, scope, { lock: true });
        row.deletedAt = now;
        row.updatedAt = now;
        await tx.flush();
        await recordEvent(tx, { ...scope, type: 'coupon.deleted', object: serializeCoupon(row, now) });
        return row;
      });
      return c.json({ id: coupon.id, object: 'coupon' as const, deleted: true as const }, 200);
    });

  const promotionCodes = newOpenApiApp()
    .openapi(routes.createCode, async (c) => {
      const body = c.req.valid('json');
      const scope = await accountScope(c, orm);
      const now = new Date();
      if (body.expires_at && body.expires_at.getTime() <= now.getTime())
        throw new ApiError('invalid_request', 'expires_at: must be in the future.');
      const em = orm.em.fork();
      const coupon = await findOwnCoupon(em, body.coupon, scope);
      if (!serializeCoupon(coupon, now).valid)
        throw new ApiError('invalid_request', `coupon: ${coupon.id} can no longer be redeemed.`);
      if (
        body.customer &&
        (await em.count(Customer, { id: body.customer, accountId: scope.accountId, livemode: scope.livemode })) === 0
      ) {
        throw new ApiError('not_found', `No such customer: ${body.customer}.`);
      }
      const code = body.code ?? generatedCode();
      if (await findPromotionCodeByCode(em, code, scope))
        throw new ApiError('invalid_request', `code: ${code} already exists (codes are unique whatever their case).`);
      try {
        const row = await em.transactional(async (tx) => {
          const created = tx.create(PromotionCode, {
            id: newId('promotionCode'),
            accountId: scope.accountId,
            livemode: scope.livemode,
            code,
            couponKey: coupon.key,
            active: body.active,
            maxRedemptions: body.max_redemptions ?? null,
            expiresAt: body.expires_at ?? null,
            firstTimeTransaction: body.restrictions?.first_time_transaction ?? false,
            minimumAmount: body.restrictions?.minimum_amount ?? null,
            minimumAmountCurrency: body.restrictions?.minimum_amount_currency ?? null,
            customerId: body.customer ?? null,
            timesRedeemed: 0,
            metadata: body.metadata ?? {},
            createdAt: now,
            updatedAt: now,
          });
          await tx.flush();
          await recordEvent(tx, {
            ...scope,
            type: 'promotion_code.created',
            object: serializePromotionCode(created, coupon, now),
          });
          return created;
        });
        return c.json(serializePromotionCode(row, coupon, now), 201);
      } catch (error) {
        if (isUniqueViolation(error))
          throw new ApiError('invalid_request', `code: ${code} already exists (codes are unique whatever their case).`);
        throw error;
      }
    })
    .openapi(routes.listCodes, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      if (query.active !== undefined) where.active = query.active;
      const customer = query.customer ?? query.customer_id;
      if (customer) where.customerId = customer;
      if (query.coupon) {
        const coupon = await em.findOne(
          Coupon,
          { id: query.coupon, accountId: scope.accountId, livemode: scope.livemode },
          { orderBy: { key: 'desc' } },
        );
        where.couponKey = coupon?.key ?? '';
      }
      if (query.code) {
        const found = await findPromotionCodeByCode(em, query.code, scope);
        where.id = found?.id ?? '';
      }
      if (query.starting_after)
        where.id =
          where.id !== undefined ? { $eq: where.id, $lt: query.starting_after } : { $lt: query.starting_after };
      if (query.ending_before)
        where.id = where.id !== undefined ? { $eq: where.id, $gt: query.ending_before } : { $gt: query.ending_before };
      const backwards = Boolean(query.ending_before);
      const rows = await em.find(PromotionCode, where, {
        orderBy: { id: backwards ? 'asc' : 'desc' },
        limit: query.limit + 1,
      });
      const page = rows.slice(0, query.limit);
      if (backwards) page.reverse();
      const coupons = page.length
        ? await em.find(Coupon, { key: { $in: [...new Set(page.map((p) => p.couponKey))] } })
        : [];
      const now = new Date();
      return c.json(
        {
          object: 'list' as const,
          data: page.map((p) => serializePromotionCode(p, coupons.find((k) => k.key === p.couponKey)!, now)),
          has_more: rows.length > query.limit,
        },
        200,
      );
    })
    .openapi(routes.getCode, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const code = await findOwnPromotionCode(em, c.req.valid('param').id, scope);
      return c.json(
        serializePromotionCode(code, await em.findOneOrFail(Coupon, { key: code.couponKey }), new Date()),
        200,
      );
    })
    .openapi(routes.updateCode, async (c) => {
      const scope = await accountScope(c, orm);
      const body = c.req.valid('json');
      const now = new Date();
      const answer = await orm.em.fork().transactional(async (tx) => {
        const code = await findOwnPromotionCode(tx, c.req.valid('param').id, scope, { lock: true });
        const previous: Record<string, unknown> = {};
        if (body.active !== undefined) {
          previous.active = code.active;
          code.active = body.active;
        }
        if (body.metadata) {
          previous.metadata = code.metadata;
          code.metadata = mergeMetadata(code.metadata, body.metadata);
        }
        code.updatedAt = now;
        await tx.flush();
        const object = serializePromotionCode(code, await tx.findOneOrFail(Coupon, { key: code.couponKey }), now);
        await recordEvent(tx, { ...scope, type: 'promotion_code.updated', object, previousAttributes: previous });
        return object;
      });
      return c.json(answer, 200);
    });

  async function ownCustomer(em: EntityManager, id: string, scope: Scope): Promise<Customer> {
    const customer = await em.findOne(Customer, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!customer) throw new ApiError('not_found', `No such customer: ${id}.`);
    return customer;
  }
  async function ownSubscription(em: EntityManager, id: string, scope: Scope): Promise<Subscription> {
    const subscription = await em.findOne(Subscription, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!subscription) throw new ApiError('not_found', `No such subscription: ${id}.`);
    return subscription;
  }
  /** The customer's time: its test clock's, or the wall clock. */
  const customerNow = async (em: EntityManager, customer: Customer): Promise<Date> => {
    const clock = await clockTimeOf(em, customer.testClockId);
    return clock ? new Date(clock.now) : new Date();
  };

  const discounts = newOpenApiApp()
    .openapi(routes.applyToCustomer, async (c) => {
      const scope = await accountScope(c, orm);
      const body = c.req.valid('json');
      const em = orm.em.fork();
      const customer = await ownCustomer(em, c.req.valid('param').id, scope);
      // Read first: a clock that is advancing refuses (409) before anything is redeemed.
      const testClock = await clockBindingOf(em, customer);
      const now = await customerNow(em, customer);
      const { discount, coupon } = await em.transactional((tx) =>
        redeemDiscount(tx, {
          scope,
          customer,
          subscriptionId: null,
          coupon: body.coupon,
          promotionCode: body.promotion_code,
          currency: null,
          purchase: null,
          now,
        }),
      );
      // After the commit: its end timer (a repeating discount). Should this process die first, its next invoice ends it lazily.
      await startDiscountEndTimer(context, discount, testClock);
      return c.json({ discount: serializeDiscount(discount, coupon, now) }, 200);
    })
    .openapi(routes.removeFromCustomer, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const customer = await ownCustomer(em, c.req.valid('param').id, scope);
      const now = await customerNow(em, customer);
      const removed = await em.transactional((tx) =>
        removeDiscount(tx, { customerId: customer.id, subscriptionId: null }, now),
      );
      if (!removed) throw new ApiError('not_found', `Customer ${customer.id} has no discount.`);
      return c.json({ discount: null }, 200);
    })
    .openapi(routes.applyToSubscription, async (c) => {
      const scope = await accountScope(c, orm);
      const body = c.req.valid('json');
      const em = orm.em.fork();
      const subscription = await ownSubscription(em, c.req.valid('param').id, scope);
      if (endedStatuses.includes(subscription.status))
        throw new ApiError('invalid_state', `The subscription is ${subscription.status}.`);
      const customer = await ownCustomer(em, subscription.customerId, scope);
      const now = await customerNow(em, customer);
      const currency = subscription.currency ?? null;
      const purchase = currency ? { amount: await subscriptionFirstInvoiceAmount(em, subscription), currency } : null;
      const { discount, coupon } = await em.transactional((tx) =>
        redeemDiscount(tx, {
          scope,
          customer,
          subscriptionId: subscription.id,
          coupon: body.coupon,
          promotionCode: body.promotion_code,
          currency,
          purchase,
          now,
        }),
      );
      await tellWorkflowOfDiscount(temporal.client, discount);
      return c.json({ discount: serializeDiscount(discount, coupon, now) }, 200);
    })
    .openapi(routes.removeFromSubscription, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const subscription = await ownSubscription(em, c.req.valid('param').id, scope);
      const customer = await ownCustomer(em, subscription.customerId, scope);
      const now = await customerNow(em, customer);
      const removed = await em.transactional((tx) =>
        removeDiscount(tx, { customerId: customer.id, subscriptionId: subscription.id }, now),
      );
      if (!removed) throw new ApiError('not_found', `Subscription ${subscription.id} has no discount.`);
      return c.json({ discount: null }, 200);
    });

  return { coupons, promotionCodes, discounts };
}

/** The `discount` a customer or subscription answer carries: the one in force, or null. */
export async function discountField(
  em: EntityManager,
  target: { customerId: string; subscriptionId: string | null },
  now = new Date(),
) {
  const found = await discountInForce(em, target, now);
  return found ? serializeDiscount(found.discount, found.coupon, now) : null;
}
