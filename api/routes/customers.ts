import { createRoute, z } from '@hono/zod-openapi';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Customer } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { currency } from '../../objects/common.ts';
import { CustomerSchema, serializeCustomer } from '../../objects/customer.ts';
import { AddressInput, taxExemptField, toAddress } from '../../objects/customer-address.ts';
import { customerBalances } from '../../services/customers/balance.ts';
import { customerBalancesOf } from '../../services/customers/balance-reads.ts';
import { notifyPaymentMethodUpdated, saveCustomerUpdate } from '../../services/customers/events.ts';
import { ProcessorCustomerError, upsertProcessorCustomer } from '../../services/customers/processor-twins.ts';
import { customerDiscountObjects } from '../../services/discounts/redemptions.ts';
import { recordEvent } from '../../services/events/record.ts';
import { isSandboxPaymentMethod, sandboxPaymentMethods } from '../../services/processors/sandbox.ts';
import { findOwnTestClock, reserveClockCustomer } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, testClockId } from '../schemas.ts';

const methods = Object.keys(sandboxPaymentMethods);

/**
 * A payment method the processor knows. Customers still take the sandbox's test
 * methods in every mode; a mode on Stripe (docs/processors.md) collects cards on
 * Stripe's Checkout instead, and its check belongs here once customers are synced.
 */
const paymentMethod = z
  .string()
  .min(1)
  .max(100)
  .refine(isSandboxPaymentMethod, { message: `unknown payment method; the sandbox takes ${methods.join(', ')}` })
  .openapi({
    description: 'A sandbox test payment method (docs/money-and-ledger.md lists them)',
    example: 'pm_card_visa',
    enum: methods,
  });

/** The merchant's own id for a customer (Stripe's stripe_customer_id in a meter event's payload, Lago's external_customer_id). */
const externalId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .openapi({
    description:
      "The merchant's own id for the customer: unique in the account and mode (409 `conflict` when taken). Meter events may name the customer by it instead of its cus_ id (docs/usage.md#events)",
    example: 'user_4821',
  });

const CreateCustomerBody = z
  .object({
    email: z.email().max(254),
    external_id: externalId.optional(),
    name: z.string().min(1).max(200).optional(),
    payment_method: paymentMethod.optional(),
    address: AddressInput.optional().openapi({
      description: "The billing address; its country (and state) choose the account's default tax rates",
    }),
    tax_exempt: taxExemptField.optional().openapi({
      description: 'Default none. exempt: no tax; reverse: reverse charge (no tax, the legal note on its invoices)',
    }),
    currency: currency.optional().openapi({
      description:
        "The currency it is billed in (ISO 4217): a subscription or plan-priced invoice item that names no currency is priced in it, among the plan's currency_options (docs/pricing.md#currencies)",
      example: 'EUR',
    }),
    test_clock: testClockId.optional().openapi({
      description:
        'A test clock (sandbox): the customer and everything billed to it live on its time (docs/testing-your-integration.md). A clock holds at most 3 customers (400 `invalid_request` beyond)',
    }),
  })
  .strict()
  .openapi({
    example: {
      email: 'jane.doe@example.com',
      external_id: 'user_4821',
      name: 'Jane Doe',
      payment_method: 'pm_card_visa',
      currency: 'EUR',
    },
  });

const UpdateCustomerBody = z
  .object({
    email: z.email().max(254).optional(),
    external_id: externalId.nullable().optional().openapi({ description: 'null (or an empty form value) removes it' }),
    name: z
      .string()
      .min(1)
      .max(200)
      .nullable()
      .optional()
      .openapi({ description: 'null (or an empty form value) removes it' }),
    payment_method: paymentMethod
      .nullable()
      .optional()
      .openapi({ description: 'null (or an empty form value) removes it' }),
    address: AddressInput.nullable().optional().openapi({
      description:
        'Replaces the whole address (fields left out become null); null removes it. Invoices made from then on use it',
    }),
    tax_exempt: taxExemptField
      .optional()
      .openapi({ description: 'none, exempt or reverse; invoices made from then on follow it' }),
    currency: currency.nullable().optional().openapi({
      description:
        'The currency it is billed in from now on (existing subscriptions keep theirs); null (or an empty form value) removes it',
      example: 'EUR',
    }),
  })
  .strict()
  .openapi({ example: { name: 'Jane Smith', payment_method: 'pm_card_mastercard' } });

const ListQuery = z
  .object({
    ...cursorQuery('customer'),
    email: z.string().min(1).max(254).optional().openapi({ description: 'Exact, case-sensitive (as Stripe)' }),
    external_id: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'The customer with this external_id (exact)', example: 'user_4821' }),
    test_clock: testClockId.optional().openapi({
      description:
        'Only the customers on this test clock; without it, customers on test clocks are left out (as Stripe)',
    }),
  })
  .strict()
  .refine(...oneCursor);

const forms = 'Takes JSON or an `application/x-www-form-urlencoded` body.';

const createCustomer = createRoute({
  method: 'post',
  path: '/',
  tags: ['Customers'],
  summary: 'Create a customer',
  description: forms,
  request: { body: { ...json(CreateCustomerBody), required: true } },
  responses: { 201: { description: 'Created', ...json(CustomerSchema) }, ...errorResponses(400, 401) },
});

const listCustomers = listRoute({
  tags: ['Customers'],
  summary: 'List customers, newest first',
  query: ListQuery,
  item: CustomerSchema,
});

const getCustomer = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Customers'],
  summary: 'Retrieve a customer',
  request: { params: idParam('cus') },
  responses: { 200: { description: 'The customer', ...json(CustomerSchema) }, ...errorResponses(401, 404) },
});

const updateRoute = (method: 'post' | 'patch') =>
  createRoute({
    method,
    path: '/{id}',
    tags: ['Customers'],
    summary: method === 'patch' ? 'Update a customer' : 'Update a customer (POST, as Stripe does)',
    description:
      'email, external_id, name, payment_method, currency; fields left out stay as they are. A new currency applies to subscriptions and invoice items made from then on; existing subscriptions keep theirs. Setting payment_method (even to the same one) ' +
      `retries the customer's past-due subscriptions at once. PATCH and POST do the same. ${forms}`,
    request: { params: idParam('cus'), body: { ...json(UpdateCustomerBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(CustomerSchema) }, ...errorResponses(400, 401, 404) },
  });

/** The partial unique index on (account, mode, external_id) refused the write: another customer has it. */
function externalIdTaken(error: unknown): never {
  if (
    error instanceof UniqueConstraintViolationException &&
    String(error.message).includes('customers_external_id_unique')
  )
    throw new ApiError('conflict', 'external_id: another customer of this account and mode has it.');
  throw error;
}

async function findOwnCustomer(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
  const customer = await em.findOne(Customer, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!customer) throw await notFoundInMode(em, Customer, id, scope, 'customer');
  return customer;
}

export function customersApp({ config, context }: AppDeps) {
  const { orm, processors } = context;
  const toProcessor = async (customer: Customer) => {
    try {
      return await upsertProcessorCustomer(processors, customer);
    } catch (error) {
      if (error instanceof ProcessorCustomerError) throw new ApiError('processor_error', error.message);
      throw error;
    }
  };
  const update = async (
    id: string,
    body: z.infer<typeof UpdateCustomerBody>,
    scope: { accountId: string; livemode: boolean },
  ) => {
    const em = orm.em.fork();
    const customer = await findOwnCustomer(em, id, scope);
    if (body.email !== undefined) customer.email = body.email;
    if (body.external_id !== undefined) customer.externalId = body.external_id;
    if (body.name !== undefined) customer.name = body.name;
    if (body.payment_method !== undefined) customer.paymentMethod = body.payment_method;
    if (body.address !== undefined) customer.address = body.address === null ? null : toAddress(body.address);
    if (body.tax_exempt !== undefined) customer.taxExempt = body.tax_exempt;
    if (body.currency !== undefined) customer.currency = body.currency;
    // A mode on Stripe: the Stripe customer follows (the card attached), before anything is written.
    if (customer.paymentMethod && (customer.processorCustomerId || body.payment_method !== undefined)) {
      customer.processorCustomerId = (await toProcessor(customer)) ?? customer.processorCustomerId ?? null;
    }
    await saveCustomerUpdate(em, customer).catch(externalIdTaken);
    if (body.payment_method !== undefined) await notifyPaymentMethodUpdated(context, customer);
    const discounts = await customerDiscountObjects(em, [customer.id]);
    return {
      ...serializeCustomer(customer, await customerBalances(em, customer.id)),
      discount: discounts.get(customer.id) ?? null,
    };
  };

  return newOpenApiApp()
    .openapi(createCustomer, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const clock = body.test_clock ? await findOwnTestClock(em, body.test_clock, { accountId, livemode }) : null;
      const customer = em.create(Customer, {
        id: newId('customer'),
        accountId,
        testClockId: clock?.id ?? null,
        ...(clock ? { createdAt: clock.frozenTime, updatedAt: clock.frozenTime } : {}),
        email: body.email,
        externalId: body.external_id ?? null,
        name: body.name ?? null,
        paymentMethod: body.payment_method ?? null,
        address: body.address ? toAddress(body.address) : null,
        taxExempt: body.tax_exempt ?? 'none',
        currency: body.currency ?? null,
        processorCustomerId: null,
        livemode,
      });
      // A mode on Stripe: a customer given a card gets its Stripe customer holding it, before anything is written.
      if (customer.paymentMethod) customer.processorCustomerId = await toProcessor(customer);
      // On a test clock: the event carries the clock's time and id, so its webhook retries follow the clock.
      await onTestClock(clock ? { id: clock.id, now: clock.frozenTime.toISOString() } : undefined, () =>
        em.transactional(async (tx) => {
          // At most config.testClocks.customersPerClock on one clock (docs/testing-your-integration.md#limits): counted under the clock's row lock.
          if (clock) await reserveClockCustomer(tx, clock.id, customer.id, config.testClocks);
          await tx.flush();
          await recordEvent(tx, {
            accountId,
            livemode,
            type: 'customer.created',
            object: serializeCustomer(customer),
            transactionId: null,
          });
        }),
      ).catch(externalIdTaken);
      // A new customer has no discount yet (its answer has the field, as retrieve, list and update do).
      return c.json({ ...serializeCustomer(customer), discount: null }, 201);
    })
    .openapi(listCustomers, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.email !== undefined) where.email = query.email;
      if (query.external_id !== undefined) where.externalId = query.external_id;
      if (query.test_clock) where.testClockId = query.test_clock;
      else if (!livemode) where.testClockId = null;
      const em = orm.em.fork();
      const { page, hasMore } = await keysetPage(em, Customer, where, query);
      const balances = await customerBalancesOf(
        em,
        page.map((customer) => customer.id),
      );
      const discounts = await customerDiscountObjects(
        em,
        page.map((customer) => customer.id),
      );
      return c.json(
        {
          object: 'list' as const,
          data: page.map((customer) => ({
            ...serializeCustomer(customer, balances.get(customer.id)),
            discount: discounts.get(customer.id) ?? null,
          })),
          has_more: hasMore,
        },
        200,
      );
    })
    .openapi(getCustomer, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const customer = await findOwnCustomer(em, c.req.valid('param').id, scope);
      const discounts = await customerDiscountObjects(em, [customer.id]);
      return c.json(
        {
          ...serializeCustomer(customer, await customerBalances(em, customer.id)),
          discount: discounts.get(customer.id) ?? null,
        },
        200,
      );
    })
    .openapi(updateRoute('patch'), async (c) =>
      c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200),
    )
    .openapi(updateRoute('post'), async (c) =>
      c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200),
    );
}
