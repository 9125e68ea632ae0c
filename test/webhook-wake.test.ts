import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { WebhookEndpoint } from '../db/entities/index.ts';
import { createDispatchWaker } from '../services/webhooks/wake.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/**
 * The dispatcher's wake-up (services/webhooks/wake.ts) against a real database. The Temporal
 * client is a recorder of the signals it would send: what is checked here is when the waker
 * decides to send one, not Temporal (test/webhooks.test.ts covers the whole path).
 */
describe('the dispatch waker', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.close());

  const recorder = () => {
    const signals: string[] = [];
    const client = {
      workflow: {
        signalWithStart: async (_workflow: unknown, options: { workflowId: string }) =>
          void signals.push(options.workflowId),
      },
    } as unknown as Client;
    return { signals, client };
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

  it('does not cache a read that began before an endpoint was made: the first change after it wakes the dispatcher', async () => {
    const accountId = 'acct_01wakerace0000000000000000';
    const { signals, client } = recorder();
    const waker = createDispatchWaker({
      orm: db.orm,
      client: () => client,
      taskQueue: 'wake-test',
      onError: (error) => {
        throw error;
      },
    });
    // A change on an account with no endpoint: its read is in flight (it will find none)...
    waker.afterChange({ accountId, livemode: false });
    // ...when the account's first endpoint is made (the API forgets what it knew of the account).
    waker.forget(accountId);
    await settle();
    expect(signals).toEqual([]); // nothing to wake for yet
    const now = new Date();
    await db.orm.em.fork().insert(WebhookEndpoint, {
      id: 'we_01wakerace0000000000000000',
      accountId,
      livemode: false,
      url: 'https://example.com/hook',
      description: null,
      events: ['*'],
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      secret: 'sealed',
      previousSecret: null,
      previousSecretExpiresAt: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    });
    waker.afterChange({ accountId, livemode: false });
    await settle();
    expect(signals).toEqual(['event-dispatch-wake-test']);
    // The answer is cached now: a change in another mode of the account (no endpoint there) wakes nothing.
    waker.afterChange({ accountId, livemode: true });
    await settle();
    expect(signals).toHaveLength(1);
  });
});
