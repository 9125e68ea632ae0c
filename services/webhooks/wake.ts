/**
 * The one wake-up of the webhook dispatcher. Every change records its events in
 * the outbox; the dispatcher (workflows/webhooks.ts) delivers them on its own
 * timer, and a wake-up right after a change makes that immediate. Used by the
 * API after each write (api/middleware/webhook-wake.ts) and by the worker after
 * each activity (events recorded by workflow-driven changes).
 *
 * It only wakes while the account (or, for the worker, the deployment) has an
 * enabled endpoint: that is cached for 5 s per process, and forgotten when an
 * endpoint changes. Wake-ups are at most one per 200 ms per process, with a
 * trailing one after a burst. Best effort: a lost wake-up only delays delivery
 * until the dispatcher's timer.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import { wakeEventDispatch } from './dispatch.ts';

export interface DispatchWaker {
  /** After a change: wakes the dispatcher if `scope` (or, without it, any account) has an enabled endpoint. Not awaited; never throws. */
  afterChange(scope?: { accountId: string; livemode: boolean }): void;
  /** Starts the dispatcher if needed and wakes it now; awaited (errors are reported, not thrown). */
  wake(): Promise<void>;
  /** Forgets what is cached about an account's endpoints (after one was created, changed or deleted). */
  forget(accountId: string): void;
}

export interface DispatchWakerDeps {
  orm: MikroORM;
  /** The Temporal client; a function because the worker only has one inside an activity. */
  client: () => Client;
  taskQueue: string;
  onError: (error: unknown) => void;
}

const cacheMs = 5_000;
const minGapMs = 200;

export function createDispatchWaker({ orm, client, taskQueue, onError }: DispatchWakerDeps): DispatchWaker {
  const cache = new Map<string, { has: boolean; until: number }>();
  // Bumped by forget(): a read that began before an endpoint changed must not cache its stale answer
  // (an account's first endpoint would otherwise go unwoken for up to 5 s).
  let generation = 0;
  let lastWake = 0;
  let trailing: NodeJS.Timeout | undefined;

  const hasEndpoints = async (scope?: { accountId: string; livemode: boolean }) => {
    const key = scope ? `${scope.accountId}:${scope.livemode}` : '*';
    const hit = cache.get(key);
    if (hit && hit.until > Date.now()) return hit.has;
    const began = generation;
    const rows = scope
      ? await orm.em
          .getConnection()
          .execute<
            unknown[]
          >('select 1 from webhook_endpoints where account_id = ? and livemode = ? and enabled limit 1', [scope.accountId, scope.livemode])
      : await orm.em.getConnection().execute<unknown[]>('select 1 from webhook_endpoints where enabled limit 1');
    if (cache.size > 10_000) cache.clear();
    if (began === generation) cache.set(key, { has: rows.length > 0, until: Date.now() + cacheMs });
    return rows.length > 0;
  };

  const wake = async () => {
    lastWake = Date.now();
    await wakeEventDispatch({ client: client(), taskQueue }).catch(onError);
  };

  const throttledWake = () => {
    const since = Date.now() - lastWake;
    if (since >= minGapMs) void wake();
    else
      trailing ??= setTimeout(() => {
        trailing = undefined;
        void wake();
      }, minGapMs - since);
  };

  return {
    wake,
    afterChange(scope) {
      void hasEndpoints(scope)
        .then((has) => (has ? throttledWake() : undefined))
        .catch(onError);
    },
    forget(accountId) {
      generation++;
      cache.delete(`${accountId}:true`);
      cache.delete(`${accountId}:false`);
      cache.delete('*');
    },
  };
}
