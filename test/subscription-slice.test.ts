import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CustomerIdKey, SubscriptionStatusKey } from '../workflows/search-attributes.ts';
import { oneMonthAfter } from './helpers/calendar.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('the walking-skeleton slice: a trial that ends in its first charge', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('crosses a 30-day trial and two renewals with exactly one charge and invoice per billing date', async () => {
    const wallStart = Date.now();
    const { customerId, planId } = await seedCustomerAndPlan(engine);

    const created = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customerId,
      plan: planId,
      trial_period_days: 30,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'subscription',
      status: 'trialing',
      customer_id: customerId,
      plan: planId,
      billing_cycle: 0,
    });
    const id: string = created.body.id;
    expect(id).toMatch(/^sub_/);
    const trialEnd = Date.parse(created.body.trial_end);
    expect(trialEnd - Date.parse(created.body.trial_start)).toBe(30 * day);

    // The projection row is there as soon as the 201 is.
    const read = await engine.call('GET', `/v1/subscriptions/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);

    // What ops staff see in the Temporal UI: the subscription's search attributes
    // and what the workflow is waiting for (its "current details").
    const handle = engine.env.client.workflow.getHandle(id);
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SubscriptionStatusKey)).toBe('trialing');
    expect(description.typedSearchAttributes.get(CustomerIdKey)).toBe(customerId);
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    // Its first line is the plan it bills by now (the Temporal UI's current details; test/ops-traps.test.ts), then what it waits for.
    expect(metadata.currentDetails).toBe(
      `On Pro ($20.00 every month).\n\nTrial ends; first charge (at ${created.body.trial_end}).`,
    );

    // Day 29 of the trial: nothing charged, nothing invoiced.
    await engine.env.sleep(29 * day);
    expect(await engine.charges(id)).toHaveLength(0);
    expect(await engine.invoices(id)).toHaveLength(0);
    expect((await engine.subscription(id))?.status).toBe('trialing');

    // Trial end: the first charge, an invoice, active for one month.
    await engine.env.sleep(2 * day);
    const first = await eventually(
      () => engine.subscription(id),
      (s) => s?.status === 'active',
    );
    expect(first!.currentPeriodStart!.getTime()).toBe(trialEnd);
    expect(first!.currentPeriodEnd!.getTime()).toBe(oneMonthAfter(trialEnd).getTime());
    expect(await engine.charges(id)).toHaveLength(1);
    expect(await engine.invoices(id)).toHaveLength(1);
    const [invoice] = await engine.invoices(id);
    expect(invoice).toMatchObject({ status: 'paid', amountDue: 2000, amountPaid: 2000, currency: 'USD' });
    expect(invoice.periodStart.getTime()).toBe(trialEnd);

    // The next two billing dates: one more charge and invoice each, on the calendar.
    for (const cycle of [1, 2]) {
      const current = (await engine.subscription(id))!;
      const untilRenewal = current.currentPeriodEnd!.getTime() - (await engine.env.currentTimeMs());
      await engine.env.sleep(untilRenewal - day);
      expect(await engine.charges(id)).toHaveLength(cycle);
      await engine.env.sleep(2 * day);
      const renewed = await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === cycle,
      );
      expect(renewed!.currentPeriodStart!.getTime()).toBe(current.currentPeriodEnd!.getTime());
      expect(await engine.charges(id)).toHaveLength(cycle + 1);
      expect(await engine.invoices(id)).toHaveLength(cycle + 1);
      expect((await handle.describe()).typedSearchAttributes.get(SubscriptionStatusKey)).toBe('active');
    }
    const charges = await engine.charges(id);
    expect(charges.map((c) => c.idempotencyKey)).toEqual([0, 1, 2].map((n) => `${id}:cycle:${n}:attempt:1`));
    expect(charges.every((c) => c.status === 'succeeded' && c.amount === 2000)).toBe(true);
    // Skipped time, not real waiting (loose bound: speed is measured by the benchmarks, not here).
    expect(Date.now() - wallStart).toBeLessThan(60_000);
  });
});
