import type { EntityManager } from '@mikro-orm/postgresql';

import { CustomerBalance } from '../../db/entities/index.ts';

/** The balances of a page of customers in one query, by customer id (a customer without any is absent). */
export async function customerBalancesOf(
  em: EntityManager,
  ids: string[],
): Promise<Map<string, Record<string, number>>> {
  const byCustomer = new Map<string, Record<string, number>>();
  if (ids.length === 0) return byCustomer;
  const rows = await em.find(CustomerBalance, { customerId: { $in: ids } }, { orderBy: { currency: 'asc' } });
  for (const row of rows)
    byCustomer.set(row.customerId, { ...byCustomer.get(row.customerId), [row.currency]: Number(row.balance) });
  return byCustomer;
}
