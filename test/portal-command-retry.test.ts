/**
 * The customer portal's plan and quantity changes go through the same command as the API's plan change
 * (services/subscriptions/commands.ts changePlan): sent under the Idempotency-Key's update id, so a request retried
 * after its first try changed the subscription but died before answering gets the first change's answer from
 * Temporal, and the workflow takes the change once: sent anew it would undo what the customer changed since.
 *
 * The portal's credential is its link token, so its keys are scoped by the caller's address: the calls go over a
 * real HTTP server. The dead first try is its key left in progress with a lapsed lease and no stored answer (what
 * api/middleware/idempotency.ts leaves behind when the process dies before answering); the crash of a real process
 * is test/idempotency-crash.test.ts's.
 */
import type { AddressInfo } from 'node:net';

import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { IdempotencyKey } from '../db/entities/index.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('portal plan and quantity changes retried under one Idempotency-Key', () => {
  let engine: TestEngine;
  let server: ServerType;
  let port: number;
  let token: string;
  let subscriptionId: string;
  let planId: string;
  let biggerPlanId: string;
  beforeAll(async () => {
    engine = await startTestEngine();
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: engine.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    port = (server.address() as AddressInfo).port;
    const seeded = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
    const customerId = seeded.customerId;
    planId = seeded.planId;
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    subscriptionId = created.body.id;
    const bigger = await engine.call('POST', '/v1/plans', {
      name: 'Max',
      amount: 5000,
      currency: 'USD',
      interval: 'month',
    });
    biggerPlanId = bigger.body.id;
    const setting = await engine.call('PATCH', '/v1/settings/customer_portal', {
      plan_changes: true,
      quantity_changes: true,
    });
    expect(setting.status).toBe(200);
    token = (await engine.call('POST', `/v1/customers/${customerId}/portal_link`, {})).body.url.split('#')[1];
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await engine?.close();
  });

  async function portalPost(path: string, body: unknown, key: string) {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'x-portal-token': token, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as any,
      replayed: response.headers.get('idempotent-replayed'),
    };
  }

  /** The first try's process died after the workflow took the change: its key is in progress, its lease lapsed, no answer stored. */
  const firstTryDied = (key: string) =>
    engine.db.orm.em
      .fork()
      .nativeUpdate(
        IdempotencyKey,
        { key },
        { state: 'in_progress', lockedUntil: new Date(Date.now() - 60_000), responseStatus: null, responseBody: null },
      );

  /** How many changePlan updates the subscription's workflow accepted. */
  async function changePlanUpdates(): Promise<number> {
    const history = await engine.env.client.workflow.getHandle(subscriptionId).fetchHistory();
    return history.events!.filter(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'changePlan',
    ).length;
  }

  it('an upgrade retried after a downgrade was made since: the retry changes nothing, the downgrade stands', async () => {
    const path = `/v1/portal/subscriptions/${subscriptionId}/change_plan`;
    const upgraded = await portalPost(path, { plan: biggerPlanId }, 'portal-upgrade');
    expect(upgraded.status, JSON.stringify(upgraded.body)).toBe(200);
    expect(upgraded.body.plan).toBe(biggerPlanId);
    // The customer changes their mind: back to Pro, at the renewal.
    const back = await portalPost(path, { plan: planId }, 'portal-back');
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body).toMatchObject({ plan: biggerPlanId, pending_plan: planId });
    // Then the upgrade's request comes again, its first try having died before answering. Sent anew (no update id),
    // choosing the current plan would drop the waiting downgrade; under its first update id Temporal answers the
    // first change's result and the workflow takes nothing.
    await firstTryDied('portal-upgrade');
    const retried = await portalPost(path, { plan: biggerPlanId }, 'portal-upgrade');
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.replayed).toBeNull(); // it ran again (a takeover), not a replay of a stored answer
    expect(retried.body).toMatchObject({ id: subscriptionId, plan: biggerPlanId });
    expect(await changePlanUpdates()).toBe(2);
    expect(await engine.subscription(subscriptionId)).toMatchObject({ planId: biggerPlanId, pendingPlanId: planId });
    // The subscription and the upgrade's proration: one charge each.
    expect(await engine.charges(subscriptionId)).toHaveLength(2);
  });

  it('seats up retried after seats down was made since: the same with a quantity change', async () => {
    const path = `/v1/portal/subscriptions/${subscriptionId}/quantity`;
    const more = await portalPost(path, { quantity: 3 }, 'portal-seats-up');
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect(more.body.quantity).toBe(3);
    const fewer = await portalPost(path, { quantity: 2 }, 'portal-seats-down');
    expect(fewer.status, JSON.stringify(fewer.body)).toBe(200);
    expect(fewer.body).toMatchObject({ quantity: 3, pending_quantity: 2 });
    await firstTryDied('portal-seats-up');
    const retried = await portalPost(path, { quantity: 3 }, 'portal-seats-up');
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.replayed).toBeNull();
    expect(await changePlanUpdates()).toBe(4);
    expect(await engine.subscription(subscriptionId)).toMatchObject({ quantity: 3, pendingQuantity: 2 });
    expect(await engine.charges(subscriptionId)).toHaveLength(3);
  });
});
