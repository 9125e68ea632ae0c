/**
 * Customers' external_id (issue #28): set on create and update, unique per account and mode, a list
 * filter, and meter events (single and batch) and usage summaries naming the customer by it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('customer external_id', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it('is set, unique per account and mode, updated, removed and filtered on', async () => {
    const created = await engine.call('POST', '/v1/customers', { email: 'a@example.com', external_id: 'user_1' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.external_id).toBe('user_1');
    const plain = await engine.call('POST', '/v1/customers', { email: 'b@example.com' });
    expect(plain.body.external_id).toBeNull();

    const taken = await engine.call('POST', '/v1/customers', { email: 'c@example.com', external_id: 'user_1' });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('conflict');
    expect(taken.body.message).toContain('external_id');
    const takenByUpdate = await engine.call('POST', `/v1/customers/${plain.body.id}`, { external_id: 'user_1' });
    expect(takenByUpdate.status).toBe(409);
    expect((await engine.call('GET', `/v1/customers/${plain.body.id}`)).body.external_id).toBeNull();
    const bad = await engine.call('POST', '/v1/customers', { email: 'd@example.com', external_id: 'has space' });
    expect(bad.status).toBe(400);

    // The sandbox is another mode: the same external_id is free there.
    const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
    const other = await engine.call(
      'POST',
      '/v1/customers',
      { email: 'a@example.com', external_id: 'user_1' },
      sandbox,
    );
    expect(other.status, JSON.stringify(other.body)).toBe(201);

    const listed = await engine.call('GET', '/v1/customers?external_id=user_1');
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([created.body.id]);

    const renamed = await engine.call('POST', `/v1/customers/${created.body.id}`, { external_id: 'user_1b' });
    expect(renamed.body.external_id).toBe('user_1b');
    const moved = await engine.call('POST', `/v1/customers/${plain.body.id}`, { external_id: 'user_1' });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const removed = await engine.call('POST', `/v1/customers/${created.body.id}`, { external_id: null });
    expect(removed.body.external_id).toBeNull();
    expect((await engine.call('GET', '/v1/customers?external_id=user_1b')).body.data).toEqual([]);
  });

  it('names the customer of meter events, single and batch', async () => {
    const customer = (await engine.call('POST', '/v1/customers', { email: 'm@example.com', external_id: 'acct-77' }))
      .body;
    const meter = (
      await engine.call('POST', '/v1/meters', {
        display_name: 'Calls',
        event_name: 'ext_calls',
        aggregation: 'sum',
        value_property: 'n',
      })
    ).body;
    const single = await engine.call('POST', '/v1/meter_events', {
      event_name: 'ext_calls',
      customer: 'acct-77',
      payload: { n: 5 },
    });
    expect(single.status, JSON.stringify(single.body)).toBe(201);
    expect(single.body.customer).toBe(customer.id);
    const batch = await engine.call('POST', '/v1/meter_events/batch', {
      events: [
        { event_name: 'ext_calls', customer: 'acct-77', payload: { n: 7 } },
        { event_name: 'ext_calls', customer: customer.id, payload: { n: 11 } },
        { event_name: 'ext_calls', customer: 'nobody-here', payload: { n: 1 } },
      ],
    });
    expect(batch.body.data.map((d: { status: string }) => d.status)).toEqual(['accepted', 'accepted', 'refused']);
    expect(batch.body.data[2].error.code).toBe('unknown_customer');
    const stored = await engine.call('GET', `/v1/meter_events/${batch.body.data[0].identifier}`);
    expect(stored.body.customer).toBe(customer.id);

    const now = Math.floor(Date.now() / 1000);
    const summary = await engine.call(
      'GET',
      `/v1/meters/${meter.id}/event_summaries?customer=${customer.id}&start_time=${now - 3600}&end_time=${now + 600}`,
    );
    expect(summary.body.data[0].aggregated_value).toBe('23');

    // The customers search finds it by external_id, exactly.
    const found = await engine.call('GET', `/v1/customers/search?query=${encodeURIComponent('external_id:"acct-77"')}`);
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.map((c: { id: string }) => c.id)).toEqual([customer.id]);
    const partial = await engine.call('GET', `/v1/customers/search?query=${encodeURIComponent('external_id:"acct"')}`);
    expect(partial.body.data).toEqual([]);

    // Another account's customer with the same external_id is not ours; nor is our sandbox's.
    const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
    await engine.call('POST', '/v1/customers', { email: 's@example.com', external_id: 'sbx-1' }, sandbox);
    const foreign = await engine.call('POST', '/v1/meter_events', {
      event_name: 'ext_calls',
      customer: 'sbx-1',
      payload: { n: 1 },
    });
    expect(foreign.body.error).toBe('unknown_customer');
  });

  it('names the customer of usage summaries, an id winning over an equal external_id', async () => {
    const meter = (
      await engine.call('POST', '/v1/meters', {
        display_name: 'Summed',
        event_name: 'ext_summed',
        aggregation: 'sum',
        value_property: 'n',
      })
    ).body;
    const named = (await engine.call('POST', '/v1/customers', { email: 'n@example.com', external_id: 'acct-88' })).body;
    // Another customer whose external_id is the first one's id: the id names the first one.
    const shadow = (await engine.call('POST', '/v1/customers', { email: 'o@example.com', external_id: named.id })).body;
    const sent = await engine.call('POST', '/v1/meter_events/batch', {
      events: [
        { event_name: 'ext_summed', customer: 'acct-88', payload: { n: 3 } },
        { event_name: 'ext_summed', customer: shadow.id, payload: { n: 40 } },
      ],
    });
    expect(sent.body.accepted, JSON.stringify(sent.body)).toBe(2);
    const now = Math.floor(Date.now() / 1000);
    const summaries = (customer: string) =>
      engine.call(
        'GET',
        `/v1/meters/${meter.id}/event_summaries?customer=${encodeURIComponent(customer)}&start_time=${now - 3600}&end_time=${now + 600}`,
      );
    const byExternal = await summaries('acct-88');
    expect(byExternal.status, JSON.stringify(byExternal.body)).toBe(200);
    expect(
      byExternal.body.data.map((d: { customer: string; aggregated_value: string }) => [d.customer, d.aggregated_value]),
    ).toEqual([[named.id, '3']]);
    expect((await summaries(named.id)).body.data[0]).toMatchObject({ customer: named.id, aggregated_value: '3' });
    expect((await summaries(shadow.id)).body.data[0]).toMatchObject({ customer: shadow.id, aggregated_value: '40' });

    // Unknown, and another mode's external_id: not found.
    const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
    await engine.call('POST', '/v1/customers', { email: 't@example.com', external_id: 'sbx-88' }, sandbox);
    for (const customer of ['nobody-88', 'sbx-88']) {
      const missing = await summaries(customer);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toBe('not_found');
    }
  });
});
