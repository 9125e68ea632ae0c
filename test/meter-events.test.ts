/**
 * Meters and meter events through the Hono app on real PostgreSQL (issue #28, docs/usage.md):
 * meters (create, list, rename, deactivate, reactivate, events), single events and batches with
 * per-event answers, duplicates within and across batches, cancel, refusals, the batch's own body
 * limit, tenant isolation, summaries, and events of a test clock's customer stamped in clock time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event } from '../db/entities/index.ts';
import { createBillingClient } from '../sdk/client.ts';
import { createMeterEventBatcher } from '../sdk/meter-events.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('meters and meter events', () => {
  let engine: TestEngine;
  let customer: string;
  let tokens: { id: string };
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    customer = (await engine.call('POST', '/v1/customers', { email: 'usage@example.com' })).body.id;
    const created = await engine.call('POST', '/v1/meters', {
      display_name: 'API tokens',
      event_name: 'api_tokens',
      aggregation: 'sum',
      value_property: 'tokens',
      group_by: ['model'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    tokens = created.body;
  });
  afterAll(() => engine?.close());

  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const summary = async (query: string, headers?: Record<string, string>) => {
    const answer = await engine.call(
      'GET',
      `/v1/meters/${tokens.id}/event_summaries?customer=${customer}&start_time=${nowSeconds() - 86_400}&end_time=${nowSeconds() + 600}${query}`,
      undefined,
      headers,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.data as { aggregated_value: string; events: number; dimensions?: Record<string, string> }[];
  };

  it('creates, lists, renames, deactivates and reactivates meters, with their events', async () => {
    expect(tokens).toMatchObject({
      object: 'billing.meter',
      display_name: 'API tokens',
      event_name: 'api_tokens',
      aggregation: 'sum',
      value_property: 'tokens',
      group_by: ['model'],
      status: 'active',
      livemode: true,
    });
    expect(tokens.id).toMatch(/^mtr_[0-9a-z]{26}$/);
    const calls = await engine.call('POST', '/v1/meters', {
      display_name: 'Calls',
      event_name: 'calls',
      aggregation: 'count',
    });
    expect(calls.body.value_property).toBe('value');
    // One active meter per event_name.
    const taken = await engine.call('POST', '/v1/meters', {
      display_name: 'Again',
      event_name: 'calls',
      aggregation: 'count',
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('conflict');
    const bad = await engine.call('POST', '/v1/meters', { display_name: 'Bad', event_name: 'x', aggregation: 'avg' });
    expect(bad.status).toBe(400);
    const tooMany = await engine.call('POST', '/v1/meters', {
      display_name: 'Bad',
      event_name: 'y',
      aggregation: 'sum',
      group_by: ['a', 'b', 'c', 'd'],
    });
    expect(tooMany.status).toBe(400);

    const renamed = await engine.call('POST', `/v1/meters/${calls.body.id}`, { display_name: 'API calls' });
    expect(renamed.body.display_name).toBe('API calls');
    expect((await engine.call('POST', `/v1/meters/${calls.body.id}`, { aggregation: 'sum' })).status).toBe(400);
    expect((await engine.call('POST', `/v1/meters/${calls.body.id}/deactivate`)).body.status).toBe('inactive');
    // Its event_name is free again; reactivating the old one is then a conflict.
    const successor = await engine.call('POST', '/v1/meters', {
      display_name: 'Calls v2',
      event_name: 'calls',
      aggregation: 'count',
    });
    expect(successor.status).toBe(201);
    expect((await engine.call('POST', `/v1/meters/${calls.body.id}/reactivate`)).status).toBe(409);
    await engine.call('POST', `/v1/meters/${successor.body.id}/deactivate`);
    expect((await engine.call('POST', `/v1/meters/${calls.body.id}/reactivate`)).body.status).toBe('active');

    const list = await engine.call('GET', '/v1/meters?limit=2');
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([successor.body.id, calls.body.id]);
    expect(list.body.has_more).toBe(true);
    expect((await engine.call('GET', '/v1/meters?status=inactive')).body.data.map((m: { id: string }) => m.id)).toEqual(
      [successor.body.id],
    );
    expect((await engine.call('GET', `/v1/meters/${tokens.id}`)).body.id).toBe(tokens.id);

    const events = (
      await engine.db.orm.em.fork().find(Event, { accountId: engine.tenant.accountId }, { orderBy: { id: 'asc' } })
    )
      .filter((e) => (e.data.object as { id?: string }).id === calls.body.id)
      .map((e) => e.type);
    expect(events).toEqual([
      'billing.meter.created',
      'billing.meter.updated',
      'billing.meter.deactivated',
      'billing.meter.reactivated',
    ]);
  });

  it('stores a single event (201), answers a duplicate with the original (200), refuses with the reason', async () => {
    const at = nowSeconds() - 60;
    const one = await engine.call('POST', '/v1/meter_events', {
      event_name: 'api_tokens',
      customer,
      timestamp: at,
      identifier: 'single-1',
      payload: { tokens: '1250.5', model: 'small' },
    });
    expect(one.status, JSON.stringify(one.body)).toBe(201);
    expect(one.body).toMatchObject({
      object: 'billing.meter_event',
      identifier: 'single-1',
      meter: tokens.id,
      customer,
      timestamp: at,
      payload: { tokens: '1250.5', model: 'small' },
      cancelled_at: null,
      livemode: true,
    });
    const again = await engine.call('POST', '/v1/meter_events', {
      event_name: 'api_tokens',
      customer,
      identifier: 'single-1',
      payload: { tokens: 999 },
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(one.body);
    expect((await engine.call('GET', '/v1/meter_events/single-1')).body).toEqual(one.body);

    const refused = async (body: Record<string, unknown>, status: number, error: string) => {
      const answer = await engine.call('POST', '/v1/meter_events', {
        event_name: 'api_tokens',
        customer,
        payload: { tokens: 1 },
        ...body,
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      expect(answer.body.error).toBe(error);
    };
    await refused({ event_name: 'nothing' }, 400, 'unknown_meter');
    await refused({ customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }, 400, 'unknown_customer');
    await refused({ payload: { tokens: 'many' } }, 400, 'invalid_value');
    await refused({ payload: { tokens: '1.0000001' } }, 400, 'invalid_value');
    await refused({ payload: { tokens: 1e12 } }, 400, 'invalid_value');
    await refused({ payload: { model: 'small' } }, 400, 'invalid_value');
    await refused({ timestamp: nowSeconds() - 36 * 86_400 }, 400, 'timestamp_out_of_window');
    await refused({ timestamp: nowSeconds() + 3600 }, 400, 'timestamp_out_of_window');
    await refused({ timestamp: 'yesterday' }, 400, 'invalid_request');
    await refused({ payload: { tokens: { n: 1 } } }, 400, 'invalid_request');
    await refused({ extra: true }, 400, 'invalid_request');
    await refused({ identifier: 'x'.repeat(101) }, 400, 'invalid_request');
    // None of them counted.
    expect(await summary('')).toEqual([expect.objectContaining({ aggregated_value: '1250.5', events: 1 })]);
  });

  it('answers a batch per event; duplicates within and across batches count once', async () => {
    const event = (identifier: string, tokens: unknown, model = 'large') => ({
      event_name: 'api_tokens',
      customer,
      identifier,
      payload: { tokens, model },
    });
    const first = await engine.call('POST', '/v1/meter_events/batch', {
      events: [
        event('b-1', 10),
        event('b-2', 20),
        event('b-1', 10),
        event('b-3', 'ten'),
        { event_name: 'api_tokens' },
        event('single-1', 5),
        { ...event('b-4', 1), event_name: 'nope' },
      ],
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ object: 'billing.meter_event_batch', accepted: 2, duplicates: 2, refused: 3 });
    expect(first.body.data.map((r: { status: string; error?: { code: string } }) => r.error?.code ?? r.status)).toEqual(
      ['accepted', 'accepted', 'duplicate', 'invalid_value', 'invalid_request', 'duplicate', 'unknown_meter'],
    );
    expect(first.body.data[4]).toMatchObject({ index: 4, identifier: null, status: 'refused' });
    // The whole batch again (a client retrying after a lost answer): nothing counts twice; the fixed ones count.
    const retry = await engine.call('POST', '/v1/meter_events/batch', {
      events: [event('b-1', 10), event('b-2', 20), event('b-3', '30'), event('b-5', 40)],
    });
    expect(retry.body).toMatchObject({ accepted: 2, duplicates: 2, refused: 0 });
    expect(await summary('&group_by=model')).toEqual([
      expect.objectContaining({ dimensions: { model: 'large' }, aggregated_value: '100', events: 4 }),
      expect.objectContaining({ dimensions: { model: 'small' }, aggregated_value: '1250.5', events: 1 }),
    ]);

    const generated = await engine.call('POST', '/v1/meter_events/batch', {
      events: [{ event_name: 'api_tokens', customer, payload: { tokens: 1 } }],
    });
    expect(generated.body.data[0].identifier).toMatch(/^mev_[0-9a-z]{26}$/);
    await engine.call('POST', `/v1/meter_events/${generated.body.data[0].identifier}/cancel`);

    // The shape of the batch itself: a 400 and nothing stored.
    expect((await engine.call('POST', '/v1/meter_events/batch', { events: [] })).status).toBe(400);
    expect(
      (
        await engine.call('POST', '/v1/meter_events/batch', {
          events: Array.from({ length: 1001 }, (_, i) => event(`big-${i}`, 1)),
        })
      ).status,
    ).toBe(400);
    expect((await engine.call('POST', '/v1/meter_events/batch', { events: [event('b-9', 1)], more: 1 })).status).toBe(
      400,
    );
    // 1,000 events of ~190 bytes pass the batch's own limit (other routes take 100 KB)...
    const full = await engine.call('POST', '/v1/meter_events/batch', {
      events: Array.from({ length: 1000 }, (_, i) => event(`full-${i}-${'p'.repeat(40)}`, 1, 'bulk')),
    });
    expect(full.status, JSON.stringify(full.body).slice(0, 300)).toBe(200);
    expect(full.body.accepted).toBe(1000);
    // ...and a body past 1 MB is a 413.
    const huge = await engine.call('POST', '/v1/meter_events/batch', {
      events: Array.from({ length: 1000 }, (_, i) => event(`huge-${i}`, 1, 'm'.repeat(1100))),
    });
    expect(huge.status).toBe(413);
    expect(await summary('&group_by=model')).toEqual([
      expect.objectContaining({ dimensions: { model: 'bulk' }, aggregated_value: '1000', events: 1000 }),
      expect.objectContaining({ dimensions: { model: 'large' }, aggregated_value: '100', events: 4 }),
      expect.objectContaining({ dimensions: { model: 'small' }, aggregated_value: '1250.5', events: 1 }),
    ]);
  });

  it('cancels an event by identifier: it stops counting; idempotent; unknown is 404', async () => {
    await engine.call('POST', '/v1/meter_events', {
      event_name: 'api_tokens',
      customer,
      identifier: 'to-cancel',
      payload: { tokens: 7, model: 'large' },
    });
    const before = Number((await summary(''))[0]!.aggregated_value);
    const cancelled = await engine.call('POST', '/v1/meter_events/to-cancel/cancel');
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.cancelled_at).toEqual(expect.any(String));
    expect((await engine.call('POST', '/v1/meter_events/to-cancel/cancel')).body).toEqual(cancelled.body);
    expect(Number((await summary(''))[0]!.aggregated_value)).toBe(before - 7);
    expect((await engine.call('POST', '/v1/meter_events/never-sent/cancel')).status).toBe(404);
  });

  it('cuts summaries by hour or day, and checks their parameters', async () => {
    const hourly = await summary('&value_grouping_window=hour');
    expect(hourly.length).toBeGreaterThanOrEqual(24);
    expect(hourly.reduce((sum, s) => sum + Number(s.aggregated_value), 0)).toBe(
      Number((await summary(''))[0]!.aggregated_value),
    );
    const base = `/v1/meters/${tokens.id}/event_summaries?customer=${customer}`;
    expect((await engine.call('GET', `${base}&start_time=10&end_time=5`)).status).toBe(400);
    expect(
      (await engine.call('GET', `${base}&start_time=0&end_time=${nowSeconds()}&value_grouping_window=hour`)).status,
    ).toBe(400);
    expect((await engine.call('GET', `${base}&start_time=0&end_time=10&group_by=region`)).status).toBe(400);
    expect(
      (await engine.call('GET', `/v1/meters/${tokens.id}/event_summaries?customer=cus_nobody&start_time=0&end_time=10`))
        .status,
    ).toBe(404);
  });

  it('isolates tenants: another account (or mode) sees neither meters, events, identifiers nor customers', async () => {
    const other = await engine.signUp({ name: 'Other' });
    const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, other.headers);
    expect((await call('GET', `/v1/meters/${tokens.id}`)).status).toBe(404);
    expect((await call('GET', '/v1/meters')).body.data).toEqual([]);
    expect((await call('GET', '/v1/meter_events/single-1')).status).toBe(404);
    expect((await call('POST', '/v1/meter_events/single-1/cancel')).status).toBe(404);
    // The same event_name and identifier in the other account: its own meter, its own identifier space.
    await call('POST', '/v1/meters', { display_name: 'Theirs', event_name: 'api_tokens', aggregation: 'count' });
    const theirCustomer = (await call('POST', '/v1/customers', { email: 'theirs@example.com' })).body.id;
    expect(
      (
        await call('POST', '/v1/meter_events', {
          event_name: 'api_tokens',
          customer: theirCustomer,
          identifier: 'single-1',
        })
      ).status,
    ).toBe(201);
    // Our customer is unknown to them.
    expect(
      (await call('POST', '/v1/meter_events', { event_name: 'api_tokens', customer, identifier: 'steal' })).body.error,
    ).toBe('unknown_customer');
    // The sandbox of our own account is another mode: no meter there.
    const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
    expect(
      (
        await engine.call(
          'POST',
          '/v1/meter_events',
          { event_name: 'api_tokens', customer, payload: { tokens: 1 } },
          sandbox,
        )
      ).body.error,
    ).toBe('unknown_meter');
    expect((await engine.call('GET', `/v1/meters/${tokens.id}`, undefined, sandbox)).body.message).toContain(
      'exists in live mode',
    );
  });

  it("stamps a test clock customer's events in the clock's time and checks the window against it", async () => {
    const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
    const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, sandbox);
    const clock = (await call('POST', '/v1/test_clocks', { frozen_time: '2027-03-10T12:00:00Z' })).body;
    const clocked = (await call('POST', '/v1/customers', { email: 'clocked@example.com', test_clock: clock.id })).body;
    const meter = (
      await call('POST', '/v1/meters', { display_name: 'Calls', event_name: 'calls', aggregation: 'count' })
    ).body;
    const stamped = await call('POST', '/v1/meter_events', { event_name: 'calls', customer: clocked.id });
    expect(stamped.status, JSON.stringify(stamped.body)).toBe(201);
    expect(stamped.body.timestamp).toBe(Date.parse('2027-03-10T12:00:00Z') / 1000);
    // Real now is 35+ days before the clock's now: out of its window; the clock's yesterday is in it.
    expect(
      (await call('POST', '/v1/meter_events', { event_name: 'calls', customer: clocked.id, timestamp: nowSeconds() }))
        .body.error,
    ).toBe('timestamp_out_of_window');
    expect(
      (
        await call('POST', '/v1/meter_events', {
          event_name: 'calls',
          customer: clocked.id,
          timestamp: '2027-03-09T12:00:00Z',
        })
      ).status,
    ).toBe(201);
    const summaries = await call(
      'GET',
      `/v1/meters/${meter.id}/event_summaries?customer=${clocked.id}&start_time=${Date.parse('2027-03-01T00:00:00Z') / 1000}&end_time=${Date.parse('2027-04-01T00:00:00Z') / 1000}`,
    );
    expect(summaries.body.data).toEqual([
      expect.objectContaining({ aggregated_value: '2', events: 2, livemode: false }),
    ]);
  });

  it("the SDK's batching client sends 1,000 at a time and retries a batch whose answer was lost: counted once", async () => {
    let calls = 0;
    const client = createBillingClient({
      baseUrl: 'http://billing.test',
      headers: engine.tenant.headers,
      // The first batch reaches the API, whose answer is lost on the way back (a 502 from a proxy, say).
      fetch: async (request: Request) => {
        const answer = await engine.app.fetch(
          new Request(request.url.replace('http://billing.test', 'http://localhost'), request),
        );
        return ++calls === 1 ? new Response('bad gateway', { status: 502 }) : answer;
      },
    });
    const refused: string[] = [];
    const batcher = createMeterEventBatcher(client, {
      flushIntervalMs: 0,
      retryDelayMs: 10,
      onRefused: (r) => refused.push(r.code),
    });
    const before = Number((await summary(''))[0]!.aggregated_value);
    const full = Array.from({ length: 1000 }, () =>
      batcher.add({ event_name: 'api_tokens', customer, payload: { tokens: 2, model: 'sdk' } }),
    ).find(Boolean);
    expect(await full).toEqual({ accepted: 0, duplicates: 1000, refused: [] });
    void batcher.add({ event_name: 'api_tokens', customer, payload: { tokens: 3, model: 'sdk' } });
    void batcher.add({ event_name: 'nope', customer, payload: { tokens: 3 } });
    expect(batcher.pending).toBe(2);
    expect(await batcher.close()).toMatchObject({ accepted: 1, duplicates: 0 });
    expect(refused).toEqual(['unknown_meter']);
    expect(calls).toBe(3);
    expect(Number((await summary(''))[0]!.aggregated_value)).toBe(before + 2003);
  });
});
