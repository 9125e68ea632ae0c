/**
 * Taking back a cancel at period end (workflows/subscription.ts, the update
 * undoCancelAtPeriodEnd under patched('undo-cancel-at-period-end')): from the API and from
 * the customer portal, before the period ends. The subscription then renews as before;
 * after the period ended (canceled) it is too late; nothing changes on a refusal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('undo cancel at period end', () => {
  let engine: TestEngine;
  let customerId: string;
  let planId: string;
  beforeAll(async () => {
    engine = await startTestEngine();
    ({ customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 }));
  });
  afterAll(async () => engine?.close());

  const subscribe = async () => {
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status).toBe(201);
    return created.body.id as string;
  };
  const updatedEvents = async (id: string) =>
    (
      (await engine.call('GET', '/v1/events?type=subscription.updated&limit=100')).body.data as {
        data: { object: { id: string; cancel_at_period_end: boolean } };
      }[]
    ).filter((e) => e.data.object.id === id);

  it('the API takes it back: cancel_at_period_end false, one subscription.updated, and the next period is charged', async () => {
    const id = await subscribe();
    const refusedEarly = await engine.call('POST', `/v1/subscriptions/${id}/undo_cancel`);
    expect(refusedEarly.status).toBe(409);
    expect(refusedEarly.body).toMatchObject({
      error: 'invalid_state',
      message: expect.stringContaining('not set to cancel at period end'),
    });

    expect(
      (await engine.call('POST', `/v1/subscriptions/${id}/cancel`, { at_period_end: true })).body.cancel_at_period_end,
    ).toBe(true);
    const before = (await updatedEvents(id)).length;
    const undone = await engine.call('POST', `/v1/subscriptions/${id}/undo_cancel`);
    expect(undone.status).toBe(200);
    expect(undone.body).toMatchObject({ id, status: 'active', cancel_at_period_end: false });
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body.cancel_at_period_end).toBe(false);
    await expect.poll(async () => (await updatedEvents(id)).length).toBe(before + 1);
    expect((await updatedEvents(id))[0]!.data.object.cancel_at_period_end).toBe(false);

    // Twice is a conflict, and changes nothing.
    expect((await engine.call('POST', `/v1/subscriptions/${id}/undo_cancel`)).status).toBe(409);

    // The period ends: it renews instead of ending.
    await engine.env.sleep(32 * day);
    const renewed = await eventually(
      () => engine.subscription(id),
      (s) => s?.billingCycle === 1,
    );
    expect(renewed).toMatchObject({ status: 'active', cancelAtPeriodEnd: false, canceledAt: null });
    expect((await engine.charges(id)).filter((c) => c.status === 'succeeded')).toHaveLength(2);
  });

  it('too late once the period has ended: the subscription is canceled and stays so', async () => {
    const id = await subscribe();
    await engine.call('POST', `/v1/subscriptions/${id}/cancel`, { at_period_end: true });
    await engine.env.sleep(32 * day);
    await eventually(
      () => engine.subscription(id),
      (s) => s?.status === 'canceled',
    );
    const late = await engine.call('POST', `/v1/subscriptions/${id}/undo_cancel`);
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('invalid_state');
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({ status: 'canceled' });
  });

  it("another account cannot take back this account's cancel", async () => {
    const id = await subscribe();
    await engine.call('POST', `/v1/subscriptions/${id}/cancel`, { at_period_end: true });
    const other = await engine.signUp();
    const foreign = await engine.call('POST', `/v1/subscriptions/${id}/undo_cancel`, undefined, other.headers);
    expect(foreign.status).toBe(404);
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body.cancel_at_period_end).toBe(true);
  });

  it('the portal takes it back when the account lets customers cancel, for its own customer only', async () => {
    const id = await subscribe();
    const link = await engine.call('POST', `/v1/customers/${customerId}/portal_link`, {});
    const token = link.body.url.split('#')[1];
    const portal = (method: string, path: string, portalToken = token) =>
      engine.call(method, path, undefined, { authorization: '', 'x-portal-token': portalToken });
    expect((await portal('POST', `/v1/portal/subscriptions/${id}/cancel`)).body.cancel_at_period_end).toBe(true);

    // A customer of the same account with their own link does not reach it.
    const stranger = await engine.call('POST', '/v1/customers', { email: 'grace@example.com' });
    const strangerToken = (
      await engine.call('POST', `/v1/customers/${stranger.body.id}/portal_link`, {})
    ).body.url.split('#')[1];
    expect((await portal('POST', `/v1/portal/subscriptions/${id}/undo_cancel`, strangerToken)).status).toBe(404);

    await engine.call('PATCH', '/v1/settings/customer_portal', { cancellation: false });
    const forbidden = await portal('POST', `/v1/portal/subscriptions/${id}/undo_cancel`);
    expect(forbidden.status).toBe(403);
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body.cancel_at_period_end).toBe(true);

    await engine.call('PATCH', '/v1/settings/customer_portal', { cancellation: true });
    const kept = await portal('POST', `/v1/portal/subscriptions/${id}/undo_cancel`);
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ id, cancel_at_period_end: false, status: 'active' });
    expect(
      (await portal('GET', '/v1/portal')).body.subscriptions.find((s: { id: string }) => s.id === id)
        .cancel_at_period_end,
    ).toBe(false);
  });
});
