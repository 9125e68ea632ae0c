import type { EntityManager } from '@mikro-orm/postgresql';

import type { Account } from '../../db/entities/index.ts';
import { serializeAccount } from '../../objects/account.ts';
import { recordEvent } from '../events/record.ts';

/**
 * Records an account event on the caller's database transaction. An account spans
 * both modes, so its events are recorded once in each: live webhooks and sandbox
 * webhooks both hear about it. `data.object` is the account as GET /v1/account
 * shows it (with its settings).
 */
export async function recordAccountEvent(
  em: EntityManager,
  account: Account,
  type: 'account.created' | 'account.updated' | 'account.closed',
): Promise<void> {
  const object = serializeAccount(account);
  for (const livemode of [true, false]) {
    await recordEvent(em, { accountId: account.id, livemode, type, object, transactionId: null });
  }
}

/**
 * `account.updated` for a change of one mode's billing or notification settings:
 * recorded in that mode only, so live webhooks never hear of a sandbox change (and
 * the reverse). `data.object` is the account as GET /v1/account shows it.
 */
export async function recordModeSettingsEvent(em: EntityManager, account: Account, livemode: boolean): Promise<void> {
  await recordEvent(em, {
    accountId: account.id,
    livemode,
    type: 'account.updated',
    object: serializeAccount(account),
    transactionId: null,
  });
}
