/**
 * Group commit of single meter events (services/usage/group-commit.ts, docs/usage.md#single-events):
 * concurrent POST /v1/meter_events requests share statements and commits; duplicates among them count
 * once; a statement that fails (an event PostgreSQL cannot store) fails only the requests of its events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SingleEventCommitter, singleEventCommitterFor } from '../services/usage/group-commit.ts';
import { usageStoreFor } from '../services/usage/postgres-store.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('single meter events: group commit', () => {
  let engine: TestEngine;
  let customer: string;
  let meterId: string;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    customer = (await engine.call('POST', '/v1/customers', { email: 'singles@example.com' })).body.id;
    const meter = await engine.call('POST', '/v1/meters', {
      display_name: 'Calls',
      event_name: 'gc_calls',
      aggregation: 'sum',
      value_property: 'n',
    });
    expect(meter.status, JSON.stringify(meter.body)).toBe(201);
    meterId = meter.body.id;
  });
  afterAll(() => engine?.close());

  const total = async () => {
    const now = Math.floor(Date.now() / 1000);
    const answer = await engine.call(
      'GET',
      `/v1/meters/${meterId}/event_summaries?customer=${customer}&start_time=${now - 3600}&end_time=${now + 600}`,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.data[0].aggregated_value as string;
  };

  it('coalesces concurrent singles into fewer commits; duplicates among them count once', async () => {
    const committer = singleEventCommitterFor(usageStoreFor(engine.db.orm));
    const before = { batches: committer.batches, events: committer.events };
    // 30 distinct identifiers, each sent 3 times at once (90 requests), values 1..30.
    const requests = [];
    for (let copy = 0; copy < 3; copy++)
      for (let i = 1; i <= 30; i++)
        requests.push(
          engine.call('POST', '/v1/meter_events', {
            event_name: 'gc_calls',
            customer,
            identifier: `gc-${i}`,
            payload: { n: i },
          }),
        );
    const answers = await Promise.all(requests);
    for (const answer of answers) expect([200, 201], JSON.stringify(answer.body)).toContain(answer.status);
    expect(answers.filter((a) => a.status === 201)).toHaveLength(30);
    // Every answer, first or duplicate, is the stored event of its identifier.
    for (const answer of answers) expect(answer.body.payload.n).toBe(Number(answer.body.identifier.slice(3)));
    expect(await total()).toBe(String((30 * 31) / 2));
    const events = committer.events - before.events;
    const batches = committer.batches - before.batches;
    expect(events).toBe(90);
    expect(batches).toBeLessThan(events);
  });

  it('a failing statement fails only the requests whose own event fails', async () => {
    const store = usageStoreFor(engine.db.orm);
    // A long window: the four events below are one group, whatever the machine's load.
    const committer = new SingleEventCommitter(store, { windowMs: 50, maxBatch: 100 });
    const event = (identifier: string, payload: Record<string, unknown>) => ({
      accountId: engine.tenant.accountId,
      livemode: true,
      event: { eventName: 'gc_calls', customerId: customer, timestamp: null, identifier, payload },
    });
    const settled = await Promise.allSettled([
      committer.ingestOne(event('gc-ok-1', { n: 100 })),
      // PostgreSQL's text cannot hold a NUL character: this event's statement fails.
      committer.ingestOne(event('gc-bad', { n: 1, note: 'a\u0000b' })),
      committer.ingestOne(event('gc-ok-2', { n: 200 })),
      committer.ingestOne(event('gc-1', { n: 1 })),
    ]);
    expect(committer.batches).toBe(1);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.status : 'error'))).toEqual([
      'accepted',
      'error',
      'accepted',
      'duplicate',
    ]);
    expect(await total()).toBe(String((30 * 31) / 2 + 300));

    // Through HTTP the API refuses a NUL in any body first (400): the request never reaches a statement; its neighbours are stored.
    const answers = await Promise.all([
      engine.call('POST', '/v1/meter_events', { event_name: 'gc_calls', customer, payload: { n: 1000 } }),
      engine.call('POST', '/v1/meter_events', { event_name: 'gc_calls', customer, payload: { n: 1, x: 'a\u0000b' } }),
      engine.call('POST', '/v1/meter_events', { event_name: 'gc_calls', customer, payload: { n: 2000 } }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([201, 400, 201]);
    expect(answers[1]!.body.error).toBe('invalid_request');
    expect(await total()).toBe(String((30 * 31) / 2 + 3300));
  });
});
