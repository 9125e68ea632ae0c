/**
 * GET /v1/subscriptions?plan=… finds a subscription by a plan on ANY of its recurring items (the main item's
 * plan_id, or any of the projection's `items`), through the real API, workflow, PostgreSQL and Temporal test
 * server: items given at creation, an item added later through /v1/subscription_items, an item removed (no longer
 * found), together with the other filters and pages. A downgrade waiting in pending_plan is not "on" the plan yet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('the subscription list filtered by plan', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const post = (path: string, body?: unknown) => engine.call('POST', path, body);
  async function plan(name: string, amount: number) {
    const created = await post('/v1/plans', { currency: 'USD', interval: 'month', name, amount });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  }
  async function customer() {
    const created = await post('/v1/customers', {
      email: 'noor@example.com',
      name: 'Noor',
      payment_method: 'pm_card_visa',
    });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  async function subscribe(body: Record<string, unknown>) {
    const created = await post('/v1/subscriptions', { customer_id: await customer(), ...body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id as string;
  }
  /** The ids the list answers for `query`, newest first. */
  async function listed(query: string): Promise<string[]> {
    const response = await engine.call('GET', `/v1/subscriptions?${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data.map((s: { id: string }) => s.id);
  }

  it('matches the plan on any item, follows items added and removed, and combines with the other filters and pages', async () => {
    const seats = await plan('Seats', 1500);
    const support = await plan('Priority support', 4900);
    const storage = await plan('Storage', 700);
    const unused = await plan('Unused', 100);

    const both = await subscribe({ items: [{ plan: seats, quantity: 12 }, { plan: support }] });
    const supportOnly = await subscribe({ plan: support });
    const seatsOnly = await subscribe({ plan: seats, quantity: 3 });

    // `support` is the second item of `both`: the filter used to see the main item's plan only.
    expect(await listed(`plan=${support}`)).toEqual([supportOnly, both]);
    expect(await listed(`plan=${seats}`)).toEqual([seatsOnly, both]);
    expect(await listed(`plan=${storage}`)).toEqual([]);
    expect(await listed(`plan=${unused}`)).toEqual([]);

    // An item added later: the projection's items carry it.
    const added = await post('/v1/subscription_items', {
      subscription: seatsOnly,
      plan: storage,
      quantity: 2,
      proration_behavior: 'none',
    });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    await eventually(
      () => listed(`plan=${storage}`),
      (ids) => ids.length === 1,
    );
    expect(await listed(`plan=${storage}`)).toEqual([seatsOnly]);

    // An item removed: no longer on that plan.
    const removed = await engine.call('DELETE', `/v1/subscription_items/${added.body.id}?proration_behavior=none`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    await eventually(
      () => listed(`plan=${storage}`),
      (ids) => ids.length === 0,
    );
    expect(await listed(`plan=${seats}`)).toEqual([seatsOnly, both]);

    // With the other filters, and paged.
    expect(await listed(`plan=${support}&status=active`)).toEqual([supportOnly, both]);
    expect(await listed(`plan=${support}&status=canceled`)).toEqual([]);
    const bothCustomer = (await engine.call('GET', `/v1/subscriptions/${both}`)).body.customer_id as string;
    expect(await listed(`plan=${support}&customer=${bothCustomer}`)).toEqual([both]);
    expect(await listed(`plan=${support}&limit=1`)).toEqual([supportOnly]);
    expect(await listed(`plan=${support}&limit=1&starting_after=${supportOnly}`)).toEqual([both]);
    expect(await listed(`plan=${support}&limit=1&ending_before=${both}`)).toEqual([supportOnly]);

    // Another account sees none of them, whatever the plan id.
    const other = await engine.signUp();
    const foreign = await engine.call('GET', `/v1/subscriptions?plan=${support}`, undefined, other.headers);
    expect(foreign.status).toBe(200);
    expect(foreign.body.data).toEqual([]);
  });

  it('a downgrade waiting for the renewal is not on its plan yet', async () => {
    const pro = await plan('Pro', 9900);
    const basic = await plan('Basic', 1900);
    const sub = await subscribe({ plan: pro });
    const downgrade = await post(`/v1/subscriptions/${sub}/update`, { plan: basic });
    expect(downgrade.status, JSON.stringify(downgrade.body)).toBe(200);
    expect(downgrade.body).toMatchObject({ plan: pro, pending_plan: basic });
    expect(await listed(`plan=${basic}`)).toEqual([]);
    expect(await listed(`plan=${pro}`)).toEqual([sub]);
  });
});
