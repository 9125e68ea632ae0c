import { createRoute, z } from '@hono/zod-openapi';

import { Product } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { metadataLimits } from '../../objects/common.ts';
import { ProductSchema, serializeProduct } from '../../objects/product.ts';
import { findOwnProduct } from '../../services/catalog/plan-prices.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor, queryBoolean } from '../pagination.ts';
import { errorResponses, idParam } from '../schemas.ts';

const metadataKey = z.string().min(1).max(metadataLimits.keyLength);
const metadataValue = z.string().max(metadataLimits.valueLength);
const tooManyKeys = { message: `at most ${metadataLimits.keys} keys` };
const metadata = z
  .record(metadataKey, metadataValue)
  .refine((value) => Object.keys(value).length <= metadataLimits.keys, tooManyKeys);

const CreateBody = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).optional(),
    active: z.boolean().default(true),
    metadata: metadata.optional(),
  })
  .strict()
  .openapi({ example: { name: 'Pro', metadata: { tier: 'pro' } } });

const UpdateBody = z
  .object({
    name: z.string().min(1).max(200).optional(),
    description: z
      .string()
      .max(2000)
      .nullable()
      .optional()
      .openapi({ description: 'null (or an empty form value) removes it' }),
    active: z.boolean().optional().openapi({ description: 'false archives the product, true restores it' }),
    metadata: z
      .record(metadataKey, metadataValue)
      .optional()
      .openapi({ description: 'Merged key by key; a key set to "" is removed' }),
  })
  .strict()
  .openapi({ example: { name: 'Pro (2027)', metadata: { tier: 'pro' } } });

const ListQuery = z
  .object({
    ...cursorQuery('product'),
    active: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
  })
  .strict()
  .refine(...oneCursor);

const forms = 'Takes JSON or an `application/x-www-form-urlencoded` body (`metadata[key]=value`).';

const createProduct = createRoute({
  method: 'post',
  path: '/',
  tags: ['Products'],
  summary: 'Create a product',
  description: forms,
  request: { body: { ...json(CreateBody), required: true } },
  responses: { 201: { description: 'Created', ...json(ProductSchema) }, ...errorResponses(400, 401) },
});
const listProducts = listRoute({
  tags: ['Products'],
  summary: 'List products, newest first',
  query: ListQuery,
  item: ProductSchema,
});
const getProduct = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Products'],
  summary: 'Retrieve a product',
  request: { params: idParam('prod') },
  responses: { 200: { description: 'The product', ...json(ProductSchema) }, ...errorResponses(401, 404) },
});
const updateRoute = (method: 'post' | 'patch') =>
  createRoute({
    method,
    path: '/{id}',
    tags: ['Products'],
    summary: method === 'patch' ? 'Update a product' : 'Update a product (POST, as Stripe does)',
    description: `name, description, active, metadata; fields left out stay as they are. PATCH and POST do the same. ${forms}`,
    request: { params: idParam('prod'), body: { ...json(UpdateBody), required: true } },
    responses: { 200: { description: 'Updated', ...json(ProductSchema) }, ...errorResponses(400, 401, 404) },
  });

export function productsApp({ context: { orm } }: AppDeps) {
  const update = async (
    id: string,
    body: z.infer<typeof UpdateBody>,
    scope: { accountId: string; livemode: boolean },
  ) => {
    const em = orm.em.fork();
    const product = await findOwnProduct(em, id, scope);
    if (body.name !== undefined) product.name = body.name;
    if (body.description !== undefined) product.description = body.description === '' ? null : body.description;
    if (body.active !== undefined) product.active = body.active;
    if (body.metadata) {
      const merged = { ...product.metadata };
      for (const [key, value] of Object.entries(body.metadata)) {
        if (value === '') delete merged[key];
        else merged[key] = value;
      }
      if (Object.keys(merged).length > metadataLimits.keys)
        throw new ApiError('invalid_request', `metadata: ${tooManyKeys.message}.`);
      product.metadata = merged;
    }
    product.updatedAt = new Date();
    await em.flush();
    return serializeProduct(product);
  };

  return newOpenApiApp()
    .openapi(createProduct, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const em = orm.em.fork();
      const product = em.create(Product, {
        id: newId('product'),
        accountId,
        livemode,
        name: body.name,
        description: body.description || null,
        active: body.active,
        metadata: body.metadata ?? {},
      });
      await em.flush();
      return c.json(serializeProduct(product), 201);
    })
    .openapi(listProducts, async (c) => {
      const query = c.req.valid('query');
      const { accountId, livemode } = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId, livemode };
      if (query.active !== undefined) where.active = query.active;
      const { page, hasMore } = await keysetPage(orm.em.fork(), Product, where, query);
      return c.json({ object: 'list' as const, data: page.map(serializeProduct), has_more: hasMore }, 200);
    })
    .openapi(getProduct, async (c) => {
      const scope = await accountScope(c, orm);
      return c.json(serializeProduct(await findOwnProduct(orm.em.fork(), c.req.valid('param').id, scope)), 200);
    })
    .openapi(updateRoute('patch'), async (c) =>
      c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200),
    )
    .openapi(updateRoute('post'), async (c) =>
      c.json(await update(c.req.valid('param').id, c.req.valid('json'), await accountScope(c, orm)), 200),
    );
}
