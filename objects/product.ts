import { z } from '@hono/zod-openapi';

import type { Product } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A product of the catalog. */

export const ProductSchema = z
  .object({
    id: z.string(),
    object: z.literal('product'),
    name: z.string(),
    description: z.string().nullable(),
    active: z.boolean(),
    metadata: z.record(z.string(), z.string()),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Product');

export function serializeProduct(product: Product): z.infer<typeof ProductSchema> {
  return {
    id: product.id,
    object: 'product',
    name: product.name,
    description: product.description ?? null,
    active: product.active,
    metadata: product.metadata,
    livemode: product.livemode,
    created_at: product.createdAt.toISOString(),
    updated_at: product.updatedAt.toISOString(),
  };
}
