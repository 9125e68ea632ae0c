/**
 * Usage alerts (docs/usage.md#usage-alerts) through the Hono app on real PostgreSQL: an alert at
 * gte 100 fires billing.alert.triggered exactly once for a customer pushed past it by concurrent
 * batches, not for a customer below it; a customer filter; a deactivated alert does not fire;
 * activate/archive; tenant isolation; bad input refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event } from '../db/entities/index.ts';
import { reaches } from '../services/usage/alerts.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('usage alerts', () => {
  let engine: TestEngine;
  let meter: string;
  let seq = 0;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    meter = (
      await engine.call('POST', '/v1/meters', {
        display_name: 'Calls',
        event_name: 'alert_calls',
        aggregation: 'sum',
        value_property: 'n',
      })
    ).body.id;
  });
  afterAll(() => engine?.close());

  const customer = async () =>
    (await engine.call('POST', '/v1/customers', { email: `alert${++seq}@example.com` })).body.id as string;
  const batch = async (customerId: string, values: number[], headers?: Record<string, string>) => {
    const answer = await engine.call(
      'POST',
      '/v1/meter_events/batch',
      {
        events: values.map((n) => ({
          event_name: 'alert_calls',
          customer: customerId,
          identifier: `e${++seq}`,
          payload: { n },
        })),
      },
      headers,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.accepted).toBe(values.length);
  };
  const triggered = async (accountId = engine.tenant.accountId) =>
    (
      await engine.db.orm.em
        .fork()
        .find(Event, { accountId, type: 'billing.alert.triggered' }, { orderBy: { id: 'asc' } })
    ).map((e) => e.data.object as { alert: { id: string }; customer: string; value: string });
  const createAlert = async (body: Record<string, unknown>, headers?: Record<string, string>) =>
    engine.call(
      'POST',
      '/v1/billing/alerts',
      {
        title: 'Calls 100',
        alert_type: 'usage_threshold',
        usage_threshold: { gte: 100, meter, recurrence: 'one_time' },
        ...body,
      },
      headers,
    );

  it('fires once per customer when concurrent batches push it past gte; not below; filter; deactivated', async () => {
    const created = await createAlert({});
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const alert = created.body;
    expect(alert).toMatchObject({
      object: 'billing.alert',
      alert_type: 'usage_threshold',
      usage_threshold: { gte: 100, meter, recurrence: 'one_time' },
      filter: null,
      status: 'active',
      livemode: true,
    });
    expect(alert.id).toMatch(/^alrt_[0-9a-z]{26}$/);

    const [ada, bob, cy] = [await customer(), await customer(), await customer()];
    // A filtered alert for cy only, at 10; and a deactivated one for everybody at 1.
    const forCy = (
      await createAlert({
        title: 'Cy 10',
        usage_threshold: { gte: 10, meter, recurrence: 'one_time' },
        filter: { customer: cy },
      })
    ).body;
    const off = (await createAlert({ title: 'Off', usage_threshold: { gte: 1, meter, recurrence: 'one_time' } })).body;
    expect((await engine.call('POST', `/v1/billing/alerts/${off.id}/deactivate`)).body.status).toBe('inactive');

    // 8 concurrent batches of 30 for ada (240 ≥ 100, crossing somewhere in the middle); bob stays at 90.
    await Promise.all([...Array.from({ length: 8 }, () => batch(ada, [10, 20])), batch(bob, [45, 45])]);
    await batch(cy, [9]); // below cy's 10
    let fired = await triggered();
    expect(fired.map((f) => [f.alert.id, f.customer])).toEqual([[alert.id, ada]]);
    expect(Number(fired[0]!.value)).toBeGreaterThanOrEqual(100);

    // More usage for ada: no second event. cy crosses 10: its filtered alert fires (and not for others).
    await batch(ada, [500]);
    await batch(cy, [1]);
    await batch(bob, [5]); // bob: 95, still below
    fired = await triggered();
    expect(fired.map((f) => [f.alert.id, f.customer])).toEqual([
      [alert.id, ada],
      [forCy.id, cy],
    ]);
    expect(fired[1]!.value).toBe('10');

    // Activated again, the 1-unit alert fires for the next batch's customers (once each).
    expect((await engine.call('POST', `/v1/billing/alerts/${off.id}/activate`)).body.status).toBe('active');
    await batch(bob, [1]);
    fired = await triggered();
    expect(fired.slice(2).map((f) => [f.alert.id, f.customer, f.value])).toEqual([[off.id, bob, '96']]);

    // Archive: gone from the list, read still works, cannot be activated.
    expect((await engine.call('POST', `/v1/billing/alerts/${off.id}/archive`)).body.status).toBe('archived');
    expect((await engine.call('POST', `/v1/billing/alerts/${off.id}/activate`)).status).toBe(409);
    const list = await engine.call('GET', '/v1/billing/alerts');
    expect(list.body.data.map((a: { id: string }) => a.id)).toEqual([forCy.id, alert.id]);
    expect((await engine.call('GET', `/v1/billing/alerts?limit=1`)).body).toMatchObject({
      has_more: true,
      data: [{ id: forCy.id }],
    });
    expect((await engine.call('GET', `/v1/billing/alerts/${off.id}`)).body.status).toBe('archived');
  });

  it('refuses bad input and isolates tenants', async () => {
    expect((await createAlert({ usage_threshold: { gte: 0, meter, recurrence: 'one_time' } })).status).toBe(400);
    expect((await createAlert({ usage_threshold: { gte: 5, meter, recurrence: 'forever' } })).status).toBe(400);
    expect((await createAlert({ alert_type: 'spend' })).status).toBe(400);
    const noMeter = await createAlert({
      usage_threshold: { gte: 5, meter: 'mtr_01jd5a2b3c4d5e6f7g8h9j0k1m', recurrence: 'one_time' },
    });
    expect(noMeter.status).toBe(400);
    expect(noMeter.body.error).toBe('invalid_request');

    const other = await engine.signUp({ name: 'Other' });
    // Another account sees none of our alerts and cannot point one at our meter or customer.
    expect((await engine.call('GET', '/v1/billing/alerts', undefined, other.headers)).body.data).toEqual([]);
    const ours = (await engine.call('GET', '/v1/billing/alerts')).body.data[0];
    expect((await engine.call('GET', `/v1/billing/alerts/${ours.id}`, undefined, other.headers)).status).toBe(404);
    expect(
      (await engine.call('POST', `/v1/billing/alerts/${ours.id}/deactivate`, undefined, other.headers)).status,
    ).toBe(404);
    expect((await createAlert({}, other.headers)).status).toBe(400);
    // Its own meter and alert with the same event_name: usage on our side does not fire its alert.
    const theirMeter = (
      await engine.call(
        'POST',
        '/v1/meters',
        { display_name: 'Calls', event_name: 'alert_calls', aggregation: 'sum', value_property: 'n' },
        other.headers,
      )
    ).body.id;
    const theirs = await engine.call(
      'POST',
      '/v1/billing/alerts',
      {
        title: 't',
        alert_type: 'usage_threshold',
        usage_threshold: { gte: 1, meter: theirMeter, recurrence: 'one_time' },
      },
      other.headers,
    );
    expect(theirs.status).toBe(201);
    await batch(await customer(), [50]);
    expect(await triggered(other.accountId)).toEqual([]);
  });

  it('compares exact decimals to gte', () => {
    expect(reaches('100', 100)).toBe(true);
    expect(reaches('99.999999', 100)).toBe(false);
    expect(reaches('999999999999.000001', 999999999999)).toBe(true);
    expect(reaches('-0.5', 0 + 1)).toBe(false);
  });
});
