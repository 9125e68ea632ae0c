import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event } from '../db/entities/index.ts';
import { sweepOrphanedSubscriptions } from '../services/subscriptions/watch.ts';
import { PlanIdKey } from '../workflows/search-attributes.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * What ops do to subscription workflows in the Temporal UI or CLI, and what the
 * API says afterwards (docs/operations.md).
 */
describe('ops traps: subscription workflows handled from Temporal', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const get = async (id: string) => (await engine.call('GET', `/v1/subscriptions/${id}`)).body;
  const subscribe = async (trialDays = 30) => {
    const { customerId, planId } = await seedCustomerAndPlan(engine, { amount: 2500, trial_period_days: trialDays });
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const events = async (id: string) =>
    (await engine.db.orm.em.fork().find(Event, { type: { $like: 'subscription.%' } }, { orderBy: { id: 'asc' } }))
      .filter((e) => (e.data as { object: { id: string } }).object.id === id)
      .map((e) => e.type);

  it('"Request Cancellation" ends the subscription as an immediate cancel by an operator; the API agrees', async () => {
    const sub = await subscribe();
    await engine.env.client.workflow.getHandle(sub.id).cancel();
    const ended = await eventually(
      () => get(sub.id),
      (s) => s.status === 'canceled',
    );
    expect(ended).toMatchObject({
      status: 'canceled',
      ended_reason: 'canceled_by_operator',
      cancel_at_period_end: false,
    });
    expect(ended.canceled_at).not.toBeNull();
    // The workflow closed normally (its subscription ended), and /cancel says so instead of hanging or claiming `active`.
    await eventually(
      () => engine.env.client.workflow.getHandle(sub.id).describe(),
      (d) => d.status.name === 'COMPLETED',
    );
    const again = await engine.call('POST', `/v1/subscriptions/${sub.id}/cancel`, {});
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('invalid_state');
    expect(await events(sub.id)).toEqual(['subscription.created', 'subscription.canceled']);
  });

  it('a terminated workflow is found by the maintenance sweep: its subscription is marked canceled with a reason, once', async () => {
    const live = await subscribe();
    const terminated = await subscribe();
    await engine.env.client.workflow.getHandle(terminated.id).terminate('operator clicked Terminate');
    const warnings: unknown[] = [];
    const log = { warn: (message: string, meta?: Record<string, unknown>) => warnings.push({ message, ...meta }) };

    // Sweep every live subscription of this test database, in batches of one to prove the cursor walks on.
    let cursor: string | null = null;
    let marked = 0;
    do {
      const result = await sweepOrphanedSubscriptions(engine.db.orm.em.fork(), engine.env.client, cursor, 1, log);
      marked += result.marked;
      cursor = result.nextCursor;
    } while (cursor);
    expect(marked).toBe(1);
    expect(await get(terminated.id)).toMatchObject({ status: 'canceled', ended_reason: 'workflow_terminated' });
    expect(await get(live.id)).toMatchObject({ status: 'trialing', ended_reason: null });
    expect(warnings).toEqual([
      expect.objectContaining({
        subscriptionId: terminated.id,
        workflowStatus: 'TERMINATED',
        endedReason: 'workflow_terminated',
      }),
    ]);
    expect(await events(terminated.id)).toEqual(['subscription.created', 'subscription.canceled']);

    // A second sweep finds nothing more to do.
    const again = await sweepOrphanedSubscriptions(engine.db.orm.em.fork(), engine.env.client, null, 100, log);
    expect(again.marked).toBe(0);
  });

  it('the Temporal UI names the customer and plan, the memo carries emails, and the first input shows real values', async () => {
    const sub = await subscribe(0);
    const handle = engine.env.client.workflow.getHandle(sub.id);
    const described = await handle.describe();
    const summary = await described.staticSummary();
    expect(summary).toBe('Ada <ada@example.com>, started on Pro ($25.00 every month)');
    expect(described.memo).toMatchObject({ customerEmail: 'ada@example.com', planName: 'Pro', planId: sub.plan });
    expect(String((described.memo as { account: string }).account)).toContain('@');
    const history = await handle.fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
    const payload = started.input!.payloads![0]!;
    const input = JSON.parse(Buffer.from(payload.data!).toString('utf8'));
    expect(input.snapshot.status).toBe('active');
    expect(new Date(input.snapshot.createdAt).getUTCFullYear()).toBeGreaterThan(2000);
  });

  it('after a plan change the current details, the memo and the PlanId search attribute name the new plan; a renewal adds nothing to them', async () => {
    const sub = await subscribe(0);
    const handle = engine.env.client.workflow.getHandle(sub.id);
    const currentDetails = async () =>
      (await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
    expect(await currentDetails()).toMatch(/^On Pro \(\$25\.00 every month\)\.\n/);
    const team = await engine.call('POST', '/v1/plans', {
      name: 'Team',
      amount: 6000,
      currency: 'USD',
      interval: 'month',
    });
    const changed = await engine.call('POST', `/v1/subscriptions/${sub.id}/update`, {
      plan: team.body.id,
      quantity: 2,
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(await currentDetails()).toMatch(/^On Team × 2 \(\$120\.00 every month\)\.\n\nRenewal, cycle 1 /);
    const described = await eventually(
      () => handle.describe(),
      (d) => (d.memo as { planId?: string }).planId === team.body.id,
    );
    expect(described.memo).toMatchObject({ customerEmail: 'ada@example.com', planName: 'Team', planId: team.body.id });
    expect(described.typedSearchAttributes.get(PlanIdKey)).toBe(team.body.id);
    // The summary stays what it was written as at the start, and says so.
    expect(await described.staticSummary()).toBe('Ada <ada@example.com>, started on Pro ($25.00 every month)');
    // A renewal on the same plan records no upsert of either.
    const upserts = async () =>
      (await handle.fetchHistory()).events!.filter(
        (e) => e.upsertWorkflowSearchAttributesEventAttributes || e.workflowPropertiesModifiedEventAttributes,
      ).length;
    const before = await upserts();
    await engine.env.sleep('32 days');
    await eventually(
      () => engine.invoices(sub.id),
      (rows) => rows.filter((i) => i.status === 'paid').length === 3,
    );
    expect(await upserts()).toBe(before);
    expect(await currentDetails()).toMatch(/^On Team × 2 /);
  });
});
