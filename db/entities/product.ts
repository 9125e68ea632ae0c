import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** What is sold; plans (prices) may belong to one. Archived with `active: false`, never deleted. */
export const Product = defineEntity({
  name: 'Product',
  tableName: 'products',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    name: p.string(),
    description: p.text().nullable(),
    active: p.boolean().default(true),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Product = InferEntity<typeof Product>;
