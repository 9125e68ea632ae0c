import type { EntityManager } from '@mikro-orm/postgresql';
import type { Account } from '../db/entities/index.ts';
import { recordEvent } from './events.ts';
import { serializeAccount } from '../objects/account.ts';

/**
 * Records an account event on the caller's database transaction. An account spans
 * both modes, so its events are recorded once in each: live webhooks and sandbox
 * webhooks both hear about it. `data.object` is the account as GET /v1/account
 * shows it (with its settings).
 */
export async function recordAccountEvent(em: EntityManager, account: Account, type: 'account.created' | 'account.updated' | 'account.closed'): Promise<void> {
  const object = serializeAccount(account);
  for (const livemode of [true, false]) {
    await recordEvent(em, { accountId: account.id, livemode, type, object, transactionId: null });
  }
}
