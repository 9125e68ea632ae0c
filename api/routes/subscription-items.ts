/**
 * A subscription's recurring items (phase 2 of #26, docs/pricing.md#subscription-items): add, change, remove and
 * read them, each change a message to the subscription's workflow (changeItemsUpdate, applied between its billing
 * steps); and the upcoming invoice, computed from the workflow's own state by the domain's own functions
 * (billingStateQuery, then upcomingInvoice: the lines its next invoice will have).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { Customer, InvoiceItem, Plan, Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { maxQuantity } from '../../domain/pricing.ts';
import { endedStatuses, type SubscriptionItemSnapshot } from '../../domain/subscription.ts';
import {
  billsUsage,
  type ItemChange,
  itemsOf,
  type ProrationBehavior,
  prorationBehaviors,
  type SubscriptionState,
  upcomingInvoice,
} from '../../domain/subscription-decisions.ts';
import { UpcomingInvoiceSchema } from '../../objects/upcoming-invoice.ts';
import { customerNow, itemLine } from '../../services/invoices/items.ts';
import { billingStateOf, presentUpcomingInvoice } from '../../services/invoices/upcoming.ts';
import { changeItems, refuseEnded } from '../../services/subscriptions/commands.ts';
import { itemTerms, rowItems } from '../../services/subscriptions/plans.ts';
import {
  assignableTaxRates,
  maxTaxRatesPerLine,
  subscriptionItemTaxRates,
  writeSubscriptionTaxRates,
} from '../../services/taxes/rates.ts';
import { usageSoFar } from '../../services/usage/billing.ts';
import { pendingUsageAdjustmentLines } from '../../services/usage/late-events.ts';
import { accountScope } from '../auth/principal.ts';
import { commandRetry } from '../command-retry.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { listSchema } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

export const SubscriptionItemSchema = z
  .object({
    object: z.literal('subscription_item'),
    id: z.string().openapi({ example: 'si_01jd3z8r2m4q6s8u0w2y4a6c8e' }),
    subscription: z.string().openapi({ example: 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    plan: z.string(),
    quantity: z.number().int(),
    tax_rates: z.array(z.string()).openapi({
      description:
        "The item's own tax rates (instead of the subscription's default_tax_rates); [] for none (docs/discounts-and-taxes.md#taxes)",
      example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
    }),
  })
  .openapi('SubscriptionItem');
type ItemBody = z.infer<typeof SubscriptionItemSchema>;

const prorationField = z
  .enum(prorationBehaviors)
  .default('create_prorations')
  .openapi({
    description:
      'create_prorations (default): prorated lines for the rest of the period on the next invoice; always_invoice: those lines (and any waiting) invoiced and charged now ' +
      '(a decline is 402 and changes nothing; a net credit waits for the next invoice); none: no proration, the next renewal bills the new items',
  });
const quantityField = z.number().int().min(1).max(maxQuantity);
const taxRatesField = z
  .array(z.string().min(1).max(64))
  .max(maxTaxRatesPerLine)
  .openapi({
    description:
      "Tax rate ids of the caller's account and mode, active, for the item's lines instead of the subscription's defaults; [] removes them",
    example: ['txr_01jd4a2b3c4d5e6f7g8h9j0k1m'],
  });

const CreateItemBody = z
  .object({
    subscription: z.string().min(1).max(64).openapi({ description: 'The subscription the item joins' }),
    plan: z
      .string()
      .min(1)
      .max(64)
      .openapi({ description: "A recurring plan of the subscription's interval, priced in its currency" }),
    quantity: quantityField.default(1).openapi({ description: 'Default 1' }),
    proration_behavior: prorationField,
    tax_rates: taxRatesField.optional(),
  })
  .strict()
  .openapi({
    example: {
      subscription: 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e',
      plan: 'plan_01jd3y0w2c5m8q1t4v7x9z3b6d',
      quantity: 2,
      proration_behavior: 'create_prorations',
    },
  });
const UpdateItemBody = z
  .object({
    plan: z.string().min(1).max(64).optional().openapi({ description: 'The new plan; left out: the current one' }),
    quantity: quantityField.optional().openapi({ description: 'The new quantity; left out: the current one' }),
    proration_behavior: prorationField,
    tax_rates: taxRatesField
      .optional()
      .openapi({ description: 'Alone, changes only the tax rates (no message to the workflow, no proration)' }),
  })
  .strict()
  .refine((value) => value.plan !== undefined || value.quantity !== undefined || value.tax_rates !== undefined, {
    message: 'required (or quantity, or tax_rates)',
    path: ['plan'],
  })
  .openapi({ example: { quantity: 15, proration_behavior: 'always_invoice' } });
const DeleteItemQuery = z.object({ proration_behavior: prorationField }).strict();
const ListItemsQuery = z
  .object({ subscription: z.string().min(1).max(64).openapi({ description: 'The subscription whose items to list' }) })
  .strict();

const ProposedItem = z
  .object({
    id: z.string().max(64).optional(),
    plan: z.string().max(64).optional(),
    quantity: quantityField.optional(),
    deleted: z.boolean().optional(),
  })
  .strict();
const UpcomingQuery = z
  .object({
    subscription: z.string().min(1).max(64),
    subscription_items: z.string().max(10_000).optional().openapi({
      description:
        'Proposed item changes, as JSON: `[{"id": "si_…", "quantity": 15}, {"plan": "plan_…", "quantity": 1}, {"id": "si_…", "deleted": true}]` (with an id: change or remove that item; without: add the plan)',
    }),
    subscription_proration_behavior: z.enum(prorationBehaviors).default('create_prorations'),
    proration_date: z.coerce.number().int().positive().optional().openapi({
      description: "Unix seconds: when the proposed changes are made (default: now, the subscription's time)",
    }),
  })
  .strict();

const itemBody = (
  subscriptionId: string,
  item: SubscriptionItemSnapshot,
  taxRates: Record<string, string[]> = {},
): ItemBody => ({
  object: 'subscription_item',
  id: item.id,
  subscription: subscriptionId,
  plan: item.planId,
  quantity: item.quantity,
  tax_rates: taxRates[item.id] ?? [],
});

const tags = ['Subscription items'];
const itemAnswer = (description: string) => ({ description, ...json(SubscriptionItemSchema) });

const createItem = createRoute({
  method: 'post',
  path: '/',
  tags,
  summary: 'Add an item to a subscription',
  description:
    "Adds a recurring plan at a quantity to a running subscription. It shares the subscription's billing period (a plan of another interval is 400) and currency. " +
    'The money follows proration_behavior; in a trial the item is simply added. The subscription records a `subscription.updated` event with the items before in previous_attributes.',
  request: { body: { ...json(CreateItemBody), required: true } },
  responses: { 201: itemAnswer('Added'), ...errorResponses(400, 401, 402, 404, 409) },
});
const listItems = createRoute({
  method: 'get',
  path: '/',
  tags,
  summary: "List a subscription's items",
  request: { query: ListItemsQuery },
  responses: {
    200: {
      description: "Its items, in order (the first is the subscription's `plan`)",
      ...json(listSchema(SubscriptionItemSchema)),
    },
    ...errorResponses(400, 401, 404),
  },
});
const getItem = createRoute({
  method: 'get',
  path: '/{id}',
  tags,
  summary: 'Retrieve a subscription item',
  request: { params: idParam('si') },
  responses: { 200: itemAnswer('The item'), ...errorResponses(401, 404) },
});
const updateItem = createRoute({
  method: 'patch',
  path: '/{id}',
  tags,
  summary: "Change an item's quantity or plan",
  description:
    'Takes effect now, a lower quantity or a cheaper plan too (as Stripe): with create_prorations the unused time is a credit line on the next invoice. The money follows proration_behavior.',
  request: { params: idParam('si'), body: { ...json(UpdateItemBody), required: true } },
  responses: { 200: itemAnswer('Changed'), ...errorResponses(400, 401, 402, 404, 409) },
});
const deleteItem = createRoute({
  method: 'delete',
  path: '/{id}',
  tags,
  summary: 'Remove an item',
  description:
    'Removes it now; with create_prorations (default) its unused time is a credit line on the next invoice. The last recurring item cannot be removed (409): cancel the subscription instead.',
  request: { params: idParam('si'), query: DeleteItemQuery },
  responses: {
    200: {
      description: 'Removed',
      ...json(z.object({ object: z.literal('subscription_item'), id: z.string(), deleted: z.literal(true) })),
    },
    ...errorResponses(400, 401, 404, 409),
  },
});
const upcoming = createRoute({
  method: 'get',
  path: '/',
  tags: ['Invoices'],
  summary: "Preview a subscription's next invoice",
  description:
    'The invoice the subscription will make next by itself (its renewal, or the first after a trial), line for line as its workflow will make it: one line per item at its quantity, ' +
    'prorated lines waiting from item changes, a waiting downgrade applied. With `subscription_items`, proposed changes made at `proration_date` are applied first. 409 when no invoice is coming ' +
    '(past due, paused, canceling at period end, ended).',
  request: { query: UpcomingQuery },
  responses: {
    200: { description: 'The next invoice', ...json(UpcomingInvoiceSchema) },
    ...errorResponses(400, 401, 404, 409),
  },
});

export function subscriptionItemsApps({ context: ctx }: AppDeps) {
  const { orm, temporal } = ctx;
  async function ownSubscription(c: Context, id: string): Promise<Subscription> {
    const { accountId, livemode } = await accountScope(c, orm);
    const subscription = await orm.em.fork().findOne(Subscription, { id, accountId, livemode });
    if (!subscription) throw await notFoundInMode(orm.em, Subscription, id, { accountId, livemode }, 'subscription');
    return subscription;
  }

  /** The item `id` of one of the caller's subscriptions (404 otherwise): a first item is found by its id, an added one in the projection's items. */
  async function ownItem(
    c: Context,
    id: string,
  ): Promise<{ subscription: Subscription; item: SubscriptionItemSnapshot }> {
    const { accountId, livemode } = await accountScope(c, orm);
    const em = orm.em.fork();
    const missing = new ApiError('not_found', `No such subscription item: ${id}.`);
    if (!/^si_[0-9a-z]{26}$/.test(id)) throw missing;
    let subscription = await em.findOne(Subscription, { id: `sub_${id.slice(3)}`, accountId, livemode });
    if (!subscription || !rowItems(subscription).some((i) => i.id === id)) {
      const [row] = await em
        .getConnection()
        .execute<
          { id: string }[]
        >('select id from subscriptions where account_id = ? and livemode = ? and items is not null and items @> ?::jsonb limit 1', [accountId, livemode, JSON.stringify([{ id }])]);
      subscription = row ? await em.findOne(Subscription, { id: row.id }) : null;
    }
    const item = subscription ? rowItems(subscription).find((i) => i.id === id) : undefined;
    if (!subscription || !item) throw missing;
    return { subscription, item };
  }

  /** The terms of `planId` at `quantity` for item `itemId` of `subscription` (services/subscriptions/plans.ts). */
  const termsOf = (subscription: Subscription, planId: string, quantity: number, itemId: string) =>
    itemTerms(orm.em.fork(), subscription, { planId, quantity, itemId });

  const items = newOpenApiApp()
    .openapi(createItem, async (c) => {
      const body = c.req.valid('json');
      const subscription = await ownSubscription(c, body.subscription);
      refuseEnded(subscription);
      const item = await termsOf(subscription, body.plan, body.quantity, newId('subscriptionItem'));
      // Its tax rates, checked and written before the change, so an invoice the change makes (always_invoice) applies them.
      const scope = { accountId: subscription.accountId, livemode: subscription.livemode };
      const taxRates = body.tax_rates
        ? await assignableTaxRates(orm.em.fork(), scope, body.tax_rates, 'tax_rates')
        : null;
      if (taxRates)
        await orm.em.fork().transactional((tx) =>
          writeSubscriptionTaxRates(tx, scope, subscription.id, {
            items: [{ id: item.itemId, plan: item.planId, taxRates }],
          }),
        );
      const snapshot = await changeItems(
        ctx,
        subscription,
        { action: 'add', item, prorationBehavior: body.proration_behavior },
        commandRetry(c),
      );
      const added = snapshot.items?.find((i) => i.planId === body.plan) ?? {
        id: item.itemId,
        planId: item.planId,
        quantity: body.quantity,
      };
      return c.json(itemBody(subscription.id, added, await subscriptionItemTaxRates(orm.em.fork(), subscription)), 201);
    })
    .openapi(listItems, async (c) => {
      const subscription = await ownSubscription(c, c.req.valid('query').subscription);
      const taxRates = await subscriptionItemTaxRates(orm.em.fork(), subscription);
      return c.json(
        {
          object: 'list' as const,
          data: rowItems(subscription).map((i) => itemBody(subscription.id, i, taxRates)),
          has_more: false,
        },
        200,
      );
    })
    .openapi(getItem, async (c) => {
      const { subscription, item } = await ownItem(c, c.req.valid('param').id);
      return c.json(itemBody(subscription.id, item, await subscriptionItemTaxRates(orm.em.fork(), subscription)), 200);
    })
    .openapi(updateItem, async (c) => {
      const body = c.req.valid('json');
      const { subscription, item } = await ownItem(c, c.req.valid('param').id);
      refuseEnded(subscription);
      if (body.tax_rates !== undefined) {
        const scope = { accountId: subscription.accountId, livemode: subscription.livemode };
        const taxRates = await assignableTaxRates(orm.em.fork(), scope, body.tax_rates, 'tax_rates');
        // Checked before the plan or quantity change too, so a bad rate changes nothing.
        if (body.plan !== undefined) await termsOf(subscription, body.plan, body.quantity ?? item.quantity, item.id);
        await orm.em.fork().transactional((tx) =>
          writeSubscriptionTaxRates(tx, scope, subscription.id, {
            items: [{ id: item.id, plan: body.plan ?? item.planId, taxRates }],
          }),
        );
        if (body.plan === undefined && body.quantity === undefined)
          return c.json(
            itemBody(subscription.id, item, await subscriptionItemTaxRates(orm.em.fork(), subscription)),
            200,
          );
      }
      const next = await termsOf(subscription, body.plan ?? item.planId, body.quantity ?? item.quantity, item.id);
      const snapshot = await changeItems(
        ctx,
        subscription,
        { action: 'update', item: next, prorationBehavior: body.proration_behavior },
        commandRetry(c),
      );
      const changed = snapshot.items?.find((i) => i.id === item.id) ?? {
        id: item.id,
        planId: next.planId,
        quantity: next.quantity ?? 1,
      };
      return c.json(
        itemBody(subscription.id, changed, await subscriptionItemTaxRates(orm.em.fork(), subscription)),
        200,
      );
    })
    .openapi(deleteItem, async (c) => {
      const { subscription, item } = await ownItem(c, c.req.valid('param').id);
      await changeItems(
        ctx,
        subscription,
        { action: 'remove', itemId: item.id, prorationBehavior: c.req.valid('query').proration_behavior },
        commandRetry(c),
      );
      return c.json({ object: 'subscription_item' as const, id: item.id, deleted: true as const }, 200);
    });

  /**
   * Metered items of an active subscription: the usage of the current period so far (from its start to the customer's
   * now: its test clock's time, else the real time), billed by the next renewal. Not the workflow's `now`: a query
   * answers with the time of the workflow's last task, so events sent since it ran were left out.
   */
  async function currentUsage(view: { state: SubscriptionState }) {
    const s = view.state.subscription;
    if (s.status !== 'active') return [];
    // The late events of earlier periods the next invoice will bill as usage adjustments (docs/usage.md#late-events),
    // also when no item is metered any more.
    const adjustments = await pendingUsageAdjustmentLines(orm, {
      accountId: s.accountId,
      livemode: s.livemode,
      customerId: s.customerId,
      subscriptionId: s.id,
      currency: view.state.plan.currency,
    });
    if (!billsUsage(view.state) || !s.currentPeriodStart || !s.currentPeriodEnd) return adjustments;
    const start = new Date(s.currentPeriodStart);
    const em = orm.em.fork();
    const now = await customerNow(
      em,
      await em.findOneOrFail(Customer, { id: s.customerId, accountId: s.accountId, livemode: s.livemode }),
    );
    const periodEnd = new Date(s.currentPeriodEnd);
    const usage = await usageSoFar(orm, {
      accountId: s.accountId,
      livemode: s.livemode,
      customerId: s.customerId,
      items: itemsOf(view.state),
      start,
      end: new Date(Math.min(Math.max(now.getTime(), start.getTime()), periodEnd.getTime())),
      periodEnd,
    });
    return [...usage, ...adjustments];
  }

  const upcomingInvoices = newOpenApiApp().openapi(upcoming, async (c) => {
    const query = c.req.valid('query');
    const subscription = await ownSubscription(c, query.subscription);
    if (endedStatuses.includes(subscription.status))
      throw new ApiError('invalid_state', `The subscription is ${subscription.status}: no invoice is coming.`);
    const view = await billingStateOf(temporal.client, subscription);
    const at = query.proration_date !== undefined ? new Date(query.proration_date * 1000) : new Date(view.now);
    const changes = await proposedChanges(
      subscription,
      query.subscription_items,
      query.subscription_proration_behavior,
      view.state,
    );
    let invoice;
    try {
      invoice = upcomingInvoice(
        view.state,
        view.spreadMinutes,
        changes,
        at,
        await pendingInvoiceItems(subscription),
        await currentUsage(view),
      );
    } catch (error) {
      if (error instanceof RangeError) throw new ApiError('invalid_request', `subscription_items: ${error.message}`);
      throw error;
    }
    if (!invoice)
      throw new ApiError(
        'invalid_state',
        `The subscription is ${subscription.status}${subscription.cancelAtPeriodEnd ? ' and cancels at period end' : ''}: no invoice is coming.`,
      );
    return c.json(await presentUpcomingInvoice(orm, subscription, invoice), 200);
  });

  /** The customer's pending invoice items in the subscription's currency, oldest first: the next cycle invoice takes them (services/invoices/items.ts). */
  async function pendingInvoiceItems(subscription: Subscription) {
    const currency =
      subscription.currency ?? (await orm.em.fork().findOneOrFail(Plan, { id: subscription.planId })).currency;
    const items = await orm.em.fork().find(
      InvoiceItem,
      {
        accountId: subscription.accountId,
        livemode: subscription.livemode,
        customerId: subscription.customerId,
        currency,
        invoiceId: null,
      },
      { orderBy: { id: 'asc' } },
    );
    return items.map((item) => ({ ...itemLine(item), proration: false }));
  }

  /** The proposed changes of an upcoming-invoice query as the workflow would take them (400 for a malformed one). */
  async function proposedChanges(
    subscription: Subscription,
    raw: string | undefined,
    prorationBehavior: ProrationBehavior,
    state: Parameters<typeof itemsOf>[0],
  ): Promise<ItemChange[]> {
    if (raw === undefined) return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new ApiError(
        'invalid_request',
        'subscription_items: must be a JSON array of {id?, plan?, quantity?, deleted?}.',
      );
    }
    const proposed = z.array(ProposedItem).max(20).safeParse(parsed);
    if (!proposed.success)
      throw new ApiError(
        'invalid_request',
        `subscription_items: ${proposed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    const current = itemsOf(state);
    const changes: ItemChange[] = [];
    for (const [index, p] of proposed.data.entries()) {
      if (p.id === undefined) {
        if (!p.plan) throw new ApiError('invalid_request', `subscription_items[${index}]: a new item names its plan.`);
        changes.push({
          action: 'add',
          item: await termsOf(subscription, p.plan, p.quantity ?? 1, `si_proposed${index}`),
          prorationBehavior,
        });
        continue;
      }
      const item = current.find((i) => i.itemId === p.id);
      if (!item)
        throw new ApiError('invalid_request', `subscription_items[${index}].id: the subscription has no item ${p.id}.`);
      if (p.deleted) changes.push({ action: 'remove', itemId: item.itemId, prorationBehavior });
      else
        changes.push({
          action: 'update',
          item: await termsOf(subscription, p.plan ?? item.planId, p.quantity ?? item.quantity ?? 1, item.itemId),
          prorationBehavior,
        });
    }
    return changes;
  }

  return { items, upcomingInvoices };
}
