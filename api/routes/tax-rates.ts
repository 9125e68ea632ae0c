/**
 * Taxes (docs/discounts-and-taxes.md#taxes): tax rates (/v1/tax_rates), the mode's default tax rates
 * (/v1/settings/tax), a subscription's default and item tax rates (/v1/subscriptions/{id}/tax_rates)
 * and customers' tax ids (/v1/customers/{id}/tax_ids). Invoices apply them through the TaxCalculator
 * seam (services/taxes/calculator.ts).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Customer, CustomerTaxId, Subscription, SubscriptionTaxRates, TaxRate } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { endedStatuses, subscriptionItemId } from '../../domain/subscription.ts';
import { taxIdDescriptions, taxIdTypes, validateTaxId } from '../../domain/tax-ids.ts';
import { metadata } from '../../objects/common.ts';
import { countryCode, stateCode } from '../../objects/customer-address.ts';
import { serializeTaxId, serializeTaxRate, TaxIdSchema, TaxRateSchema } from '../../objects/tax-rate.ts';
import { recordEvent } from '../../services/events/record.ts';
import {
  assignableTaxRates,
  createTaxRate,
  defaultTaxRates,
  findOwnTaxRate,
  maxDefaultTaxRates,
  maxTaxRatesPerLine,
  serializeSubscriptionTaxRates,
  setDefaultTaxRates,
  taxTypes,
  updateTaxRate,
  writeSubscriptionTaxRates,
} from '../../services/taxes/rates.ts';
import { clockTimeOf } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope, requireActor } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, listSchema, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

type Scope = { accountId: string; livemode: boolean };

const percentage = z.union([z.number(), z.string().max(12)]).openapi({
  description:
    'The rate in percent, 0 to 100 with at most 4 decimal places, as a number or a decimal string (19, "8.875"); never changes once created',
  example: 19,
});
const rateIds = (max: number) =>
  z
    .array(z.string().min(1).max(64))
    .max(max)
    .openapi({
      description: `Tax rate ids (txr_…) of the caller's account and mode, active, at most ${max}`,
      example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
    });
const immutable = (field: string) =>
  z
    .unknown()
    .refine(() => false, {
      message: `a tax rate's ${field} cannot change once created (as Stripe): create a new rate and deactivate this one`,
    })
    .optional()
    .openapi({ description: `Not changeable: 400`, type: 'string' });

const CreateTaxRateBody = z
  .object({
    display_name: z.string().min(1).max(50).openapi({ description: 'The name on invoices, e.g. "VAT"' }),
    description: z.string().min(1).max(500).optional(),
    percentage,
    inclusive: z
      .boolean()
      .openapi({ description: 'true: prices include the tax; false: it is added on top. Never changes' }),
    country: countryCode.optional().openapi({
      description:
        'ISO 3166-1 alpha-2; as an account default the rate applies only to customers whose address is in this country',
    }),
    state: stateCode
      .optional()
      .openapi({ description: 'With country: only customers in this state (ISO 3166-2 without the country)' }),
    jurisdiction: z
      .string()
      .min(1)
      .max(50)
      .optional()
      .openapi({ description: 'The jurisdiction as shown to customers' }),
    tax_type: z.enum(taxTypes).optional(),
    active: z.boolean().optional().openapi({ description: 'Default true' }),
    metadata: metadata.optional(),
  })
  .strict()
  .openapi({
    example: {
      display_name: 'VAT',
      description: 'German VAT, standard rate',
      percentage: 19,
      inclusive: false,
      country: 'DE',
      jurisdiction: 'DE',
      tax_type: 'vat',
    },
  });

const UpdateTaxRateBody = z
  .object({
    display_name: z.string().min(1).max(50).optional(),
    description: z.string().min(1).max(500).nullable().optional().openapi({ description: 'null removes it' }),
    country: countryCode.nullable().optional().openapi({ description: 'null: any jurisdiction' }),
    state: stateCode.nullable().optional(),
    jurisdiction: z.string().min(1).max(50).nullable().optional(),
    tax_type: z.enum(taxTypes).nullable().optional(),
    active: z
      .boolean()
      .optional()
      .openapi({ description: 'false deactivates it: no longer applied as an account default nor assignable anew' }),
    metadata: metadata.optional().openapi({ description: 'Replaces the metadata' }),
    percentage: immutable('percentage'),
    inclusive: immutable('inclusive'),
  })
  .strict()
  .openapi({ example: { active: false } });

const ListQuery = z
  .object({
    active: queryBoolean.optional().openapi({ description: 'true: only active rates; false: only inactive' }),
    inclusive: queryBoolean.optional(),
    ...cursorQuery('taxRate'),
  })
  .strict()
  .refine(...oneCursor);

const TaxSettingsSchema = z
  .object({
    object: z.literal('tax_settings'),
    livemode: z.boolean(),
    default_tax_rates: z.array(z.string()).openapi({
      description:
        "Applied to the mode's invoice lines that have no rates of their own (nor their subscription item's or subscription's), when the rate's country and state match the customer's address (a rate without a country matches every customer); inactive ones are skipped",
      example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
    }),
  })
  .openapi('TaxSettings');
const TaxSettingsBody = z
  .object({ default_tax_rates: rateIds(maxDefaultTaxRates) })
  .strict()
  .openapi({ example: { default_tax_rates: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'] } });

const SubscriptionTaxRatesSchema = z
  .object({
    object: z.literal('subscription_tax_rates'),
    subscription: z.string().openapi({ example: 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    default_tax_rates: z.array(z.string()).openapi({
      description:
        "Applied to the subscription's lines whose item has no tax_rates; empty: the account's defaults apply",
      example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
    }),
    items: z
      .array(
        z.object({
          id: z.string().openapi({ example: 'si_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
          tax_rates: z.array(z.string()).openapi({ example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'] }),
        }),
      )
      .openapi({ description: 'Items with tax rates of their own (applied to their lines instead of the defaults)' }),
  })
  .openapi('SubscriptionTaxRates');
const SubscriptionTaxRatesBody = z
  .object({
    default_tax_rates: rateIds(maxTaxRatesPerLine)
      .optional()
      .openapi({ description: 'Replaces the defaults; [] removes them' }),
    items: z
      .array(z.object({ id: z.string().min(1).max(64), tax_rates: rateIds(maxTaxRatesPerLine) }).strict())
      .max(20)
      .optional()
      .openapi({ description: "Replaces these items' tax rates ([] removes them); items left out keep theirs" }),
  })
  .strict()
  .refine((value) => value.default_tax_rates !== undefined || value.items !== undefined, {
    message: 'required (or items)',
    path: ['default_tax_rates'],
  })
  .openapi({ example: { default_tax_rates: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'] } });

const CreateTaxIdBody = z
  .object({
    type: z
      .enum(taxIdTypes)
      .openapi({ description: taxIdTypes.map((t) => `${t}: ${taxIdDescriptions[t].name}`).join('; ') }),
    value: z.string().min(1).max(40).openapi({
      description:
        'Spaces, dots and dashes are ignored; checked for its format and, where one exists, its check digits',
    }),
  })
  .strict()
  .openapi({ example: { type: 'eu_vat', value: 'DE136695976' } });
const TaxIdListQuery = z
  .object({ ...cursorQuery('customerTaxId') })
  .strict()
  .refine(...oneCursor);
const taxIdParams = z.object({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
  tax_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'tax_id', in: 'path' }, example: 'txi_01jd4a7n8p9q0r1s2t3v4w5x6y' }),
});

/** A customer may hold this many tax ids (as Stripe). */
const maxTaxIdsPerCustomer = 25;

const tags = ['Tax rates'];
const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Create a tax rate',
    description:
      'percentage and inclusive never change once created. Records `tax_rate.created`. Takes JSON or a form body.',
    request: { body: { ...json(CreateTaxRateBody), required: true } },
    responses: { 201: { description: 'Created', ...json(TaxRateSchema) }, ...errorResponses(400, 401) },
  }),
  list: listRoute({ tags, summary: 'List tax rates, newest first', query: ListQuery, item: TaxRateSchema }),
  get: createRoute({
    method: 'get',
    path: '/{id}',
    tags,
    summary: 'Retrieve a tax rate',
    request: { params: idParam('txr') },
    responses: { 200: { description: 'The tax rate', ...json(TaxRateSchema) }, ...errorResponses(401, 404) },
  }),
  update: createRoute({
    method: 'patch',
    path: '/{id}',
    tags,
    summary: 'Update a tax rate',
    description:
      'display_name, description, country, state, jurisdiction, tax_type, active, metadata; percentage and inclusive are 400. `active: false` deactivates it. Records `tax_rate.updated` when something changed.',
    request: { params: idParam('txr'), body: { ...json(UpdateTaxRateBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(TaxRateSchema) }, ...errorResponses(400, 401, 404) },
  }),
};

const settingsRoutes = {
  get: createRoute({
    method: 'get',
    path: '/',
    tags: ['Settings'],
    summary: "The mode's default tax rates",
    responses: { 200: { description: 'The tax settings', ...json(TaxSettingsSchema) }, ...errorResponses(401) },
  }),
  patch: createRoute({
    method: 'patch',
    path: '/',
    tags: ['Settings'],
    summary: "Set the mode's default tax rates",
    description:
      "Replaces the list; [] removes them. Each rate of the caller's account and mode and active (400 otherwise). Applies to invoices made from then on. Owners, admins and API keys (a member is 403).",
    request: { body: { ...json(TaxSettingsBody), required: true } },
    responses: {
      200: { description: 'The tax settings', ...json(TaxSettingsSchema) },
      ...errorResponses(400, 401, 403),
    },
  }),
};

const subscriptionRoutes = {
  get: createRoute({
    method: 'get',
    path: '/{id}/tax_rates',
    tags: ['Subscriptions'],
    summary: "A subscription's tax rates",
    description: "Its default_tax_rates and its items' tax_rates.",
    request: { params: idParam('sub') },
    responses: {
      200: { description: 'The tax rates', ...json(SubscriptionTaxRatesSchema) },
      ...errorResponses(401, 404),
    },
  }),
  set: createRoute({
    method: 'post',
    path: '/{id}/tax_rates',
    tags: ['Subscriptions'],
    summary: "Change a subscription's tax rates",
    description:
      "default_tax_rates (every line whose item has none of its own) and items' tax_rates, for the invoices made from then on (the next renewal, a proration). " +
      "Each rate of the caller's account and mode and active (400 otherwise); an item not of the subscription is 400; an ended subscription 409 `invalid_state`.",
    request: { params: idParam('sub'), body: { ...json(SubscriptionTaxRatesBody), required: true } },
    responses: {
      200: { description: 'The tax rates', ...json(SubscriptionTaxRatesSchema) },
      ...errorResponses(400, 401, 404, 409),
    },
  }),
};

const taxIdTags = ['Customers'];
const taxIdRoutes = {
  create: createRoute({
    method: 'post',
    path: '/{id}/tax_ids',
    tags: taxIdTags,
    summary: 'Add a tax id to a customer',
    description: `Checked for its type's format and check digits (400 otherwise); at most ${maxTaxIdsPerCustomer} per customer. Printed on the customer's invoices. Records \`customer.tax_id.created\`.`,
    request: { params: idParam('cus'), body: { ...json(CreateTaxIdBody), required: true } },
    responses: { 201: { description: 'Created', ...json(TaxIdSchema) }, ...errorResponses(400, 401, 404) },
  }),
  list: createRoute({
    method: 'get',
    path: '/{id}/tax_ids',
    tags: taxIdTags,
    summary: "List a customer's tax ids, newest first",
    request: { params: idParam('cus'), query: TaxIdListQuery },
    responses: { 200: { description: 'A page', ...json(listSchema(TaxIdSchema)) }, ...errorResponses(400, 401, 404) },
  }),
  get: createRoute({
    method: 'get',
    path: '/{id}/tax_ids/{tax_id}',
    tags: taxIdTags,
    summary: "Retrieve a customer's tax id",
    request: { params: taxIdParams },
    responses: { 200: { description: 'The tax id', ...json(TaxIdSchema) }, ...errorResponses(401, 404) },
  }),
  remove: createRoute({
    method: 'delete',
    path: '/{id}/tax_ids/{tax_id}',
    tags: taxIdTags,
    summary: "Delete a customer's tax id",
    description: 'Records `customer.tax_id.deleted`.',
    request: { params: taxIdParams },
    responses: {
      200: {
        description: 'Deleted',
        ...json(z.object({ id: z.string(), object: z.literal('tax_id'), deleted: z.literal(true) })),
      },
      ...errorResponses(401, 404),
    },
  }),
};

async function findOwnCustomer(em: EntityManager, id: string, scope: Scope): Promise<Customer> {
  const customer = await em.findOne(Customer, { id, ...scope });
  if (!customer) throw await notFoundInMode(em, Customer, id, scope, 'customer');
  return customer;
}

export function taxRatesApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const scope = await accountScope(c, orm);
      const { accountId, livemode } = scope;
      return c.json(
        serializeTaxRate(await createTaxRate(orm.em.fork(), { accountId, livemode }, c.req.valid('json'))),
        201,
      );
    })
    .openapi(routes.list, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const query = c.req.valid('query');
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.active !== undefined) where.active = query.active;
      if (query.inclusive !== undefined) where.inclusive = query.inclusive;
      const { page, hasMore } = await keysetPage(orm.em.fork(), TaxRate, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeTaxRate), has_more: hasMore }, 200);
    })
    .openapi(routes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(
        serializeTaxRate(await findOwnTaxRate(orm.em.fork(), { accountId, livemode }, c.req.valid('param').id)),
        200,
      );
    })
    .openapi(routes.update, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const { percentage: _p, inclusive: _i, ...change } = c.req.valid('json');
      return c.json(
        serializeTaxRate(await updateTaxRate(orm.em.fork(), { accountId, livemode }, c.req.valid('param').id, change)),
        200,
      );
    });
}

export function taxSettingsApp(deps: AppDeps) {
  const { orm } = deps.context;
  const body = (scope: Scope, ids: string[]) => ({
    object: 'tax_settings' as const,
    livemode: scope.livemode,
    default_tax_rates: ids,
  });
  return newOpenApiApp()
    .openapi(settingsRoutes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      return c.json(body({ accountId, livemode }, await defaultTaxRates(orm.em.fork(), { accountId, livemode })), 200);
    })
    .openapi(settingsRoutes.patch, async (c) => {
      // As the other settings: owners, admins and API keys (a member may read them, not change them).
      requireActor(c, ['admin', 'owner', 'api_key'], 'forbidden');
      const { accountId, livemode } = await accountScope(c, orm);
      const ids = await setDefaultTaxRates(
        orm.em.fork(),
        { accountId, livemode },
        c.req.valid('json').default_tax_rates,
      );
      return c.json(body({ accountId, livemode }, ids), 200);
    });
}

/** The subscription's item ids with the plan each bills (the one item of a one-item subscription has the subscription's own id). */
export function subscriptionItemPlans(
  subscription: Pick<Subscription, 'id' | 'planId' | 'items'>,
): Map<string, string> {
  const items = subscription.items ?? [
    { id: subscriptionItemId(subscription.id), planId: subscription.planId, quantity: 1 },
  ];
  return new Map(items.map((item) => [item.id, item.planId]));
}

export function subscriptionTaxRatesApp(deps: AppDeps) {
  const { orm } = deps.context;
  const own = async (em: EntityManager, id: string, scope: Scope) => {
    const subscription = await em.findOne(Subscription, { id, ...scope });
    if (!subscription) throw await notFoundInMode(em, Subscription, id, scope, 'subscription');
    return subscription;
  };
  return newOpenApiApp()
    .openapi(subscriptionRoutes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const subscription = await own(em, c.req.valid('param').id, { accountId, livemode });
      return c.json(
        serializeSubscriptionTaxRates(
          subscription.id,
          await em.findOne(SubscriptionTaxRates, { subscriptionId: subscription.id, accountId, livemode }),
        ),
        200,
      );
    })
    .openapi(subscriptionRoutes.set, async (c) => {
      const scope = await accountScope(c, orm).then(({ accountId, livemode }) => ({ accountId, livemode }));
      const em = orm.em.fork();
      const body = c.req.valid('json');
      const subscription = await own(em, c.req.valid('param').id, scope);
      if (endedStatuses.includes(subscription.status))
        throw new ApiError('invalid_state', `The subscription is ${subscription.status}.`);
      const defaults =
        body.default_tax_rates === undefined
          ? undefined
          : await assignableTaxRates(em, scope, body.default_tax_rates, 'default_tax_rates');
      const plans = subscriptionItemPlans(subscription);
      const items: { id: string; plan: string; taxRates: string[] }[] = [];
      for (const [i, item] of (body.items ?? []).entries()) {
        const plan = plans.get(item.id);
        if (!plan)
          throw new ApiError(
            'invalid_request',
            `items[${i}].id: ${item.id} is not an item of subscription ${subscription.id}.`,
          );
        items.push({
          id: item.id,
          plan,
          taxRates: await assignableTaxRates(em, scope, item.tax_rates, `items[${i}].tax_rates`),
        });
      }
      const row = await em.transactional((tx) =>
        writeSubscriptionTaxRates(tx, scope, subscription.id, {
          ...(defaults ? { defaultTaxRates: defaults } : {}),
          items,
        }),
      );
      return c.json(serializeSubscriptionTaxRates(subscription.id, row), 200);
    });
}

export function customerTaxIdsApp(deps: AppDeps) {
  const { orm } = deps.context;
  const withEvent = async (
    em: EntityManager,
    customer: Customer,
    work: (
      tx: EntityManager,
    ) => Promise<{ type: 'customer.tax_id.created' | 'customer.tax_id.deleted'; taxId: CustomerTaxId }>,
  ) => {
    const testClock = await clockTimeOf(em, customer.testClockId);
    return onTestClock(testClock, () =>
      em.transactional(async (tx) => {
        const { type, taxId } = await work(tx);
        await recordEvent(tx, {
          accountId: customer.accountId,
          livemode: customer.livemode,
          type,
          object: serializeTaxId(taxId),
          transactionId: null,
        });
        return taxId;
      }),
    );
  };
  const ownTaxId = async (em: EntityManager, customer: Customer, id: string) => {
    const taxId = await em.findOne(CustomerTaxId, {
      id,
      customerId: customer.id,
      accountId: customer.accountId,
      livemode: customer.livemode,
    });
    if (!taxId) throw new ApiError('not_found', `No such tax id: ${id}.`);
    return taxId;
  };
  return newOpenApiApp()
    .openapi(taxIdRoutes.create, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const customer = await findOwnCustomer(em, c.req.valid('param').id, { accountId, livemode });
      const { type, value } = c.req.valid('json');
      const check = validateTaxId(type, value);
      if (!check.valid) throw new ApiError('invalid_request', `value: ${check.reason}`);
      const taxId = await withEvent(em, customer, async (tx) => {
        // Under the customer's row lock: the count and the duplicate check see every other add.
        await tx.execute(`select 1 from "customers" where "id" = ? for update`, [customer.id], 'run');
        const existing = await tx.find(CustomerTaxId, { customerId: customer.id, accountId, livemode });
        if (existing.length >= maxTaxIdsPerCustomer)
          throw new ApiError(
            'invalid_request',
            `A customer has at most ${maxTaxIdsPerCustomer} tax ids; delete one first.`,
          );
        if (existing.some((t) => t.type === type && t.value === check.value))
          throw new ApiError('invalid_request', `value: the customer already has ${type} ${check.value}.`);
        const created = tx.create(CustomerTaxId, {
          id: newId('customerTaxId'),
          accountId,
          livemode,
          customerId: customer.id,
          type,
          value: check.value,
          country: check.country,
          createdAt: new Date(),
        });
        await tx.flush();
        return { type: 'customer.tax_id.created' as const, taxId: created };
      });
      return c.json(serializeTaxId(taxId), 201);
    })
    .openapi(taxIdRoutes.list, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const customer = await findOwnCustomer(em, c.req.valid('param').id, { accountId, livemode });
      const { page, hasMore } = await keysetPage(
        em,
        CustomerTaxId,
        { customerId: customer.id, accountId, livemode },
        c.req.valid('query'),
      );
      return c.json({ object: 'list' as const, data: page.map(serializeTaxId), has_more: hasMore }, 200);
    })
    .openapi(taxIdRoutes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const params = c.req.valid('param');
      const customer = await findOwnCustomer(em, params.id, { accountId, livemode });
      return c.json(serializeTaxId(await ownTaxId(em, customer, params.tax_id)), 200);
    })
    .openapi(taxIdRoutes.remove, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const params = c.req.valid('param');
      const customer = await findOwnCustomer(em, params.id, { accountId, livemode });
      const taxId = await ownTaxId(em, customer, params.tax_id);
      await withEvent(em, customer, async (tx) => {
        const deleted = await tx.nativeDelete(CustomerTaxId, { id: taxId.id });
        if (deleted === 0) throw new ApiError('not_found', `No such tax id: ${taxId.id}.`);
        return { type: 'customer.tax_id.deleted' as const, taxId };
      });
      return c.json({ id: taxId.id, object: 'tax_id' as const, deleted: true as const }, 200);
    });
}
