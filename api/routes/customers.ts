import { createRoute, z } from '@hono/zod-openapi';
import { Customer } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { accountScope } from '../auth/principal.ts';
import type { ApiDeps } from '../deps.ts';
import { newOpenApiApp } from '../openapi-app.ts';
import { CustomerSchema, errorResponses, idParam } from '../schemas.ts';
import { serializeCustomer } from '../serializers.ts';

const CreateCustomerBody = z
  .object({
    email: z.email().max(254),
    name: z.string().min(1).max(200).optional(),
    payment_method: z.string().min(1).max(100).optional().openapi({ description: 'A sandbox test payment method such as pm_card_visa', example: 'pm_card_visa' }),
  })
  .strict();

const createCustomer = createRoute({
  method: 'post',
  path: '/',
  tags: ['Customers'],
  summary: 'Create a customer',
  request: { body: { content: { 'application/json': { schema: CreateCustomerBody } }, required: true } },
  responses: { 201: { description: 'Created', content: { 'application/json': { schema: CustomerSchema } } }, ...errorResponses(400) },
});

const getCustomer = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Customers'],
  summary: 'Retrieve a customer',
  request: { params: idParam('cus') },
  responses: { 200: { description: 'The customer', content: { 'application/json': { schema: CustomerSchema } } }, ...errorResponses(404) },
});

export function customersApp({ orm }: ApiDeps) {
  return newOpenApiApp()
    .openapi(createCustomer, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const customer = em.create(Customer, {
        id: newId('customer'),
        accountId,
        email: body.email,
        name: body.name ?? null,
        paymentMethod: body.payment_method ?? null,
        livemode,
      });
      await em.flush();
      return c.json(serializeCustomer(customer), 201);
    })
    .openapi(getCustomer, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const customer = await orm.em.fork().findOne(Customer, { id: c.req.valid('param').id, accountId, livemode });
      if (!customer) throw new ApiError('not_found', 'No such customer.');
      return c.json(serializeCustomer(customer), 200);
    });
}
