/**
 * Invoice items (docs/invoices.md#invoice-items): one-off charges of a customer, pending until an
 * invoice takes them (the customer's next subscription invoice, or a one-off invoice that includes
 * pending items), or attached to a draft invoice (`invoice`). Priced once through domain/pricing.ts.
 */
import { createRoute, z } from '@hono/zod-openapi';

import { InvoiceItem } from '../../db/entities/index.ts';
import { currency as currencyCode } from '../../objects/common.ts';
import { InvoiceItemSchema, serializeInvoiceItem } from '../../objects/invoice-item.ts';
import { createInvoiceItem, deleteInvoiceItem, findOwnItem, updateInvoiceItem } from '../../services/invoices/items.ts';
import { maxTaxRatesPerLine } from '../../services/taxes/rates.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam, oneCustomerName } from '../schemas.ts';

const minor = z.number().int().min(-99_999_999).max(99_999_999);
const quantity = z.number().int().min(1).max(1_000_000_000);
const id = (prefix: string, what: string) =>
  z.string().regex(new RegExp(`^${prefix}_[0-9a-z]{26}$`), `must be ${what}`);
const isoInstant = z.string().datetime({ offset: true });
const taxRates = z
  .array(z.string().min(1).max(64))
  .max(maxTaxRatesPerLine)
  .openapi({
    description:
      "Tax rate ids (of the caller's account and mode, active) its line is taxed at, instead of the subscription's or account's defaults (docs/discounts-and-taxes.md#taxes)",
    example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
  });

const CreateBody = z
  .object({
    customer: z.string().min(1).max(64),
    amount: minor.optional().openapi({
      description:
        'The whole line in minor units (quantity 1); negative for a credit. Give amount, unit_amount or plan.',
    }),
    unit_amount: minor.optional().openapi({ description: 'Per unit, in minor units, × quantity' }),
    currency: currencyCode.optional().openapi({
      description:
        "Required with amount or unit_amount; with plan, one of its currency_options, by default the customer's currency when it has one (400 when the plan has no price in it), else the plan's own",
    }),
    plan: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'A price (plan, recurring or one_time) priced at quantity through its scheme' }),
    quantity: quantity.optional().openapi({ description: 'Default 1' }),
    description: z.string().min(1).max(500).optional().openapi({
      description:
        "What the customer reads on the invoice; required with amount or unit_amount, the plan's name by default",
    }),
    invoice: id('inv', 'a draft invoice id').optional().openapi({
      description: 'A draft invoice of the customer to attach the item to; without it the item is pending',
    }),
    period: z.object({ start: isoInstant, end: isoInstant }).strict().optional().openapi({
      description: 'The period the line covers (shown in human dates); default: the instant it is created',
    }),
    tax_rates: taxRates.optional(),
  })
  .strict()
  .openapi({
    example: {
      customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e',
      amount: 15000,
      currency: 'USD',
      description: 'Onboarding workshop (2 hours)',
    },
  });
const UpdateBody = z
  .object({
    amount: minor.optional(),
    unit_amount: minor.optional(),
    currency: currencyCode.optional(),
    plan: z.string().min(1).max(64).optional(),
    quantity: quantity.optional(),
    description: z.string().min(1).max(500).optional(),
    invoice: id('inv', 'a draft invoice id')
      .nullable()
      .optional()
      .openapi({ description: 'Attach to a draft invoice of the customer, or null to make it pending again' }),
    tax_rates: taxRates.optional().openapi({ description: 'Replaces its tax rates; [] removes them' }),
  })
  .strict()
  .openapi({ example: { quantity: 3, description: 'Onboarding workshop (3 hours)' } });
const ListQuery = z
  .object({
    customer: z.string().min(1).max(64).optional().openapi({
      description: 'Only this customer; `customer_id` is accepted as the same filter (give one of the two)',
    }),
    customer_id: z.string().min(1).max(64).optional().openapi({ description: 'Same as `customer`' }),
    pending: queryBoolean
      .optional()
      .openapi({ description: 'true: only items no invoice took yet; false: only those an invoice took' }),
    invoice: id('inv', 'an invoice id').optional().openapi({ description: 'Only the items of this invoice' }),
    ...cursorQuery('invoiceItem'),
  })
  .strict()
  .refine(...oneCursor)
  .refine(...oneCustomerName);

const forms =
  'Money in minor units. An item is pending until an invoice takes it; it changes or goes only while pending or attached to a draft (409 `invalid_state` after).';
const tags = ['Invoice items'];
const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Create an invoice item',
    description: `One of: \`amount\` (the whole line) with currency and description; \`unit_amount\` × \`quantity\`; or \`plan\` × \`quantity\` priced by the plan's scheme. ${forms} Records \`invoiceitem.created\`.`,
    request: { body: { ...json(CreateBody), required: true } },
    responses: { 201: { description: 'Created', ...json(InvoiceItemSchema) }, ...errorResponses(400, 401, 404, 409) },
  }),
  list: listRoute({ tags, summary: 'List invoice items, newest first', query: ListQuery, item: InvoiceItemSchema }),
  get: createRoute({
    method: 'get',
    path: '/{id}',
    tags,
    summary: 'Retrieve an invoice item',
    request: { params: idParam('ii') },
    responses: { 200: { description: 'The item', ...json(InvoiceItemSchema) }, ...errorResponses(401, 404) },
  }),
  update: createRoute({
    method: 'patch',
    path: '/{id}',
    tags,
    summary: 'Update a pending invoice item',
    description: `A new amount, unit_amount, plan or quantity prices the item again (a quantity alone keeps its plan or unit amount). ${forms} Records \`invoiceitem.updated\`.`,
    request: { params: idParam('ii'), body: { ...json(UpdateBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(InvoiceItemSchema) }, ...errorResponses(400, 401, 404, 409) },
  }),
  remove: createRoute({
    method: 'delete',
    path: '/{id}',
    tags,
    summary: 'Delete a pending invoice item',
    description: `${forms} Records \`invoiceitem.deleted\`.`,
    request: { params: idParam('ii') },
    responses: {
      200: {
        description: 'Deleted',
        ...json(z.object({ id: z.string(), object: z.literal('invoiceitem'), deleted: z.literal(true) })),
      },
      ...errorResponses(401, 404, 409),
    },
  }),
};

export function invoiceItemsApp(deps: AppDeps) {
  const { orm } = deps.context;
  return newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      const item = await createInvoiceItem(orm.em.fork(), scope, c.req.valid('json'));
      return c.json(serializeInvoiceItem(item), 201);
    })
    .openapi(routes.list, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      const query = c.req.valid('query');
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      const customer = query.customer ?? query.customer_id;
      if (customer) where.customerId = customer;
      if (query.invoice) where.invoiceId = query.invoice;
      else if (query.pending !== undefined) where.invoiceId = query.pending ? null : { $ne: null };
      const { page, hasMore } = await keysetPage(orm.em.fork(), InvoiceItem, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeInvoiceItem), has_more: hasMore }, 200);
    })
    .openapi(routes.get, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      return c.json(serializeInvoiceItem(await findOwnItem(orm.em.fork(), scope, c.req.valid('param').id)), 200);
    })
    .openapi(routes.update, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      return c.json(
        serializeInvoiceItem(
          await updateInvoiceItem(orm.em.fork(), scope, c.req.valid('param').id, c.req.valid('json')),
        ),
        200,
      );
    })
    .openapi(routes.remove, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      const item = await deleteInvoiceItem(orm.em.fork(), scope, c.req.valid('param').id);
      return c.json({ id: item.id, object: 'invoiceitem' as const, deleted: true as const }, 200);
    });
}
