import type { EntityManager } from '@mikro-orm/postgresql';
import { Product } from '../db/entities/index.ts';
import { ApiError } from '../domain/errors.ts';

/** A product of the caller's account and mode, or not_found. */
export async function findOwnProduct(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
  const product = await em.findOne(Product, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!product) throw new ApiError('not_found', `No such product: ${id}.`);
  return product;
}
