import type { EntityName } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { ApiError } from '../domain/errors.ts';

/**
 * The not_found for a record missing from the caller's account and mode. When the same
 * account has the id in the other mode, the message says so (a live id with a sandbox
 * credential is the usual mix-up); another account's id still answers like an unknown one.
 */
export async function notFoundInMode<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  id: string,
  scope: { accountId: string; livemode: boolean },
  noun: string,
): Promise<ApiError> {
  const elsewhere = await em
    .fork()
    .count(entity, { id, accountId: scope.accountId, livemode: !scope.livemode } as never);
  if (elsewhere === 0) return new ApiError('not_found', `No such ${noun}.`);
  const [there, yours] = scope.livemode ? ['sandbox mode', 'live'] : ['live mode', 'sandbox'];
  return new ApiError('not_found', `No such ${noun}: ${id} exists in ${there}; you are using a ${yours} credential.`);
}
