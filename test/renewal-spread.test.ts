import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { loadConfig } from '../config.ts';
import { newId } from '../domain/ids.ts';
import { maxRenewalSpreadMinutes, renewalOffsetMs } from '../domain/renewal-spread.ts';
import { initialSnapshot, type PlanTerms, type SubscriptionSnapshot } from '../domain/subscription.ts';
import { cycleInvoice, nextWake, type SubscriptionState } from '../domain/subscription-decisions.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const hour = 60 * minute;

describe('renewal offset (domain/renewal-spread.ts)', () => {
  it('is stable, on whole seconds, and within [0, window)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 64 }), fc.integer({ min: 1, max: maxRenewalSpreadMinutes }), (id, window) => {
        const offset = renewalOffsetMs(id, window);
        expect(renewalOffsetMs(id, window)).toBe(offset);
        expect(offset).toBeGreaterThanOrEqual(0);
        expect(offset).toBeLessThan(window * minute);
        expect(offset % 1000).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('is 0 with the window off, and refuses a window that is not a whole number of minutes from 0 to 720', () => {
    fc.assert(fc.property(fc.string(), (id) => renewalOffsetMs(id, 0) === 0));
    for (const bad of [-1, 1.5, maxRenewalSpreadMinutes + 1, Number.NaN])
      expect(() => renewalOffsetMs('sub_x', bad)).toThrow(RangeError);
  });

  it('spreads real subscription ids roughly uniformly over the window', () => {
    // 12,000 ids made the way the API makes them (a time-ordered prefix and a random tail), in 12 five-minute buckets of a 60-minute window.
    const buckets = new Array<number>(12).fill(0);
    for (let i = 0; i < 12_000; i++) buckets[Math.floor(renewalOffsetMs(newId('subscription'), 60) / (5 * minute))]!++;
    // Expected 1,000 each, standard deviation ~29: ±150 is five of them.
    for (const count of buckets) expect(Math.abs(count - 1000), JSON.stringify(buckets)).toBeLessThan(150);
    // And ids that differ only in their last character (sequential ones) do not bunch together.
    const prefix = newId('subscription').slice(0, -1);
    const offsets = new Set('0123456789abcdefghjkmnpqrstvwxyz'.split('').map((c) => renewalOffsetMs(prefix + c, 60)));
    expect(offsets.size).toBeGreaterThan(28);
  });
});

describe('nextWake and cycleInvoice with a spread window', () => {
  const plan: PlanTerms = {
    planId: 'plan_pro',
    name: 'Pro',
    amount: 3000,
    currency: 'USD',
    interval: { unit: 'month', count: 1 },
  };
  const snapshot = (changes: Partial<SubscriptionSnapshot>): SubscriptionSnapshot => ({
    ...initialSnapshot({
      id: 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e',
      accountId: 'acct_1',
      customerId: 'cus_1',
      planId: plan.planId,
      livemode: false,
      trialDays: 0,
      billingCycleMode: 'calendar',
      pauseUntil: null,
      gracePeriodDays: null,
    }),
    status: 'active',
    billingAnchor: '2025-02-01T00:00:00.000Z',
    anchorCycle: 1,
    stubStart: '2025-01-15T00:00:00.000Z',
    billingCycle: 0,
    currentPeriodStart: '2025-01-15T00:00:00.000Z',
    currentPeriodEnd: '2025-02-01T00:00:00.000Z',
    ...changes,
  });
  const state = (s: SubscriptionSnapshot): SubscriptionState => ({ subscription: s, plan, pendingPlan: null });
  const offset = renewalOffsetMs('sub_01jd3x5k8q0m2v7c9r4t6y1w3e', 60);
  const boundary = Date.parse('2025-02-01T00:00:00.000Z');

  it('wakes a calendar renewal at the boundary plus the offset; nothing else moves', () => {
    expect(offset).toBeGreaterThan(0);
    expect(nextWake(state(snapshot({})), 60)).toMatchObject({
      at: new Date(boundary + offset).toISOString(),
      action: { kind: 'renew', cycle: 1 },
    });
    // Off: as before.
    expect(nextWake(state(snapshot({})), 0)).toEqual(nextWake(state(snapshot({}))));
    expect(nextWake(state(snapshot({})))!.at).toBe('2025-02-01T00:00:00.000Z');
    // Anniversary billing, a trial's end, a cancel at period end, a retry and a grace end are not spread.
    expect(nextWake(state(snapshot({ billingCycleMode: 'anniversary' })), 60)!.at).toBe('2025-02-01T00:00:00.000Z');
    expect(nextWake(state(snapshot({ cancelAtPeriodEnd: true })), 60)!.at).toBe('2025-02-01T00:00:00.000Z');
    expect(nextWake(state(snapshot({ status: 'trialing', trialEnd: '2025-02-01T00:00:00.000Z' })), 60)!.at).toBe(
      '2025-02-01T00:00:00.000Z',
    );
    const dunning = {
      invoiceId: 'in_1',
      invoiceNumber: 'X-1',
      billingKey: 'k',
      amount: 3000,
      currency: 'USD',
      attempts: 1,
      nextRetryAt: '2025-02-04T00:00:00.000Z',
      graceEndsAt: null,
      finalAction: 'cancel',
    } as never;
    expect(nextWake(state(snapshot({ status: 'past_due', dunning })), 60)!.at).toBe('2025-02-04T00:00:00.000Z');
  });

  it('dates the renewal invoice at the boundary when it runs within the window, else when it runs', () => {
    const at = (ms: number) => cycleInvoice(state(snapshot({})), 1, new Date(ms), 60).invoice;
    expect(at(boundary + offset)).toMatchObject({
      issuedAt: '2025-02-01T00:00:00.000Z',
      periodStart: '2025-02-01T00:00:00.000Z',
      periodEnd: '2025-03-01T00:00:00.000Z',
    });
    // A renewal that runs hours late (a worker outage) is dated when it runs, as without the setting.
    expect(at(boundary + 2 * hour).issuedAt).toBe(new Date(boundary + 2 * hour).toISOString());
    expect(cycleInvoice(state(snapshot({})), 1, new Date(boundary + offset)).invoice.issuedAt).toBe(
      new Date(boundary + offset).toISOString(),
    );
    expect(
      cycleInvoice(
        state(snapshot({ billingCycleMode: 'anniversary', stubStart: null, anchorCycle: 0 })),
        1,
        new Date(boundary + offset),
        60,
      ).invoice.issuedAt,
    ).toBe(new Date(boundary + offset).toISOString());
  });

  it('RENEWAL_SPREAD_MINUTES: 0 by default, a whole number of minutes up to 720', () => {
    expect(loadConfig({ NODE_ENV: 'test' }).renewalSpreadMinutes).toBe(0);
    expect(loadConfig({ NODE_ENV: 'test', RENEWAL_SPREAD_MINUTES: '60' }).renewalSpreadMinutes).toBe(60);
    expect(loadConfig({ NODE_ENV: 'test', RENEWAL_SPREAD_MINUTES: '' }).renewalSpreadMinutes).toBe(0);
    for (const bad of ['-5', '1.5', '721', 'an hour', '1e2']) {
      expect(() => loadConfig({ NODE_ENV: 'test', RENEWAL_SPREAD_MINUTES: bad }), bad).toThrow(
        /RENEWAL_SPREAD_MINUTES must be a whole number of minutes from 0 \(off\) to 720/,
      );
    }
  });
});

/** In skipped time: two subscriptions on the same calendar boundary renew at their own offsets; without the setting, at the boundary. */
describe('renewal spreading in the engine (RENEWAL_SPREAD_MINUTES=60)', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ env: { RENEWAL_SPREAD_MINUTES: '60' } });
  });
  afterAll(() => engine?.close());

  const now = () => engine.env.currentTimeMs();
  async function skipTo(instant: number) {
    const ahead = instant - (await now());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  const post = async (path: string, body: unknown) => {
    const created = await engine.call('POST', path, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const cycleOf = async (id: string) => (await engine.subscription(id))?.billingCycle;
  const invoiceOf = async (id: string, periodStart: number) =>
    (await engine.invoices(id)).find((i) => i.periodStart.getTime() === periodStart);

  it('renews each at boundary + offset(id), invoiced at the boundary; a subscription created without the setting renews at the boundary', async () => {
    expect(engine.config.renewalSpreadMinutes).toBe(60);
    const today = new Date(await now());
    await skipTo(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 11));
    const start = new Date(await now());
    const first = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
    const second = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 2, 1);
    const plan = (await post('/v1/plans', { name: 'Monthly', amount: 3100, currency: 'USD', interval: 'month' }))
      .id as string;
    const subscribe = async (i: number) => {
      const customer = (
        await post('/v1/customers', { email: `spread${i}@example.com`, payment_method: 'pm_card_visa' })
      ).id as string;
      return (
        await post('/v1/subscriptions', {
          customer_id: customer,
          plan,
          trial_period_days: 0,
          billing_cycle: 'calendar',
        })
      ).id as string;
    };
    const spread = [await subscribe(1), await subscribe(2)];
    // The same deployment without the setting (the API reads its config per request).
    engine.config.renewalSpreadMinutes = 0;
    const plain = await subscribe(3);
    engine.config.renewalSpreadMinutes = 60;

    const offsets = spread.map((id) => renewalOffsetMs(id, 60));
    const describe = async (id: string) =>
      (await engine.env.client.workflow.getHandle(id).fetchHistory()).events![0]!
        .workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    const input = async (id: string) => JSON.parse(Buffer.from((await describe(id)).data!).toString('utf8'));
    expect((await input(spread[0]!)).renewalSpreadMinutes).toBe(60);
    expect((await input(plain)).renewalSpreadMinutes).toBeUndefined();
    for (const id of [...spread, plain])
      expect((await engine.subscription(id))!.currentPeriodEnd!.getTime()).toBe(first);

    // Before the earlier offset: the plain one has renewed at the boundary, the spread ones wait.
    const earliest = Math.min(...offsets);
    if (earliest > 30_000) {
      await skipTo(first + earliest - 20_000);
      await eventually(
        () => cycleOf(plain),
        (c) => c === 1,
      );
      expect(await Promise.all(spread.map(cycleOf))).toEqual([0, 0]);
    }
    // Between the two offsets (when they are apart): only the earlier one has renewed.
    if (Math.abs(offsets[0]! - offsets[1]!) > 60_000) {
      const [early, late] = offsets[0]! < offsets[1]! ? [0, 1] : [1, 0];
      await skipTo(first + (offsets[0]! + offsets[1]!) / 2);
      await eventually(
        () => cycleOf(spread[early]!),
        (c) => c === 1,
      );
      expect(await cycleOf(spread[late]!)).toBe(0);
    }
    await skipTo(first + hour + minute);
    for (const id of [...spread, plain])
      await eventually(
        () => cycleOf(id),
        (c) => c === 1,
      );

    // Each spread renewal was paid at boundary + its offset (within the workflow task's own seconds) and dated at the boundary.
    for (const [i, id] of spread.entries()) {
      const invoice = (await invoiceOf(id, first))!;
      expect(invoice).toMatchObject({ status: 'paid', amountPaid: 3100 });
      expect(invoice.createdAt.getTime()).toBe(first);
      expect(invoice.periodEnd.getTime()).toBe(second);
      expect(invoice.paidAt!.getTime() - (first + offsets[i]!)).toBeGreaterThanOrEqual(0);
      expect(invoice.paidAt!.getTime() - (first + offsets[i]!)).toBeLessThan(30_000);
      expect((await engine.charges(id)).filter((c) => c.status === 'succeeded')).toHaveLength(2);
    }
    const plainInvoice = (await invoiceOf(plain, first))!;
    // Without the setting, as always: the renewal runs when its timer fires at the boundary and is dated then (the workflow task's milliseconds later).
    expect(plainInvoice.createdAt.getTime() - first).toBeGreaterThanOrEqual(0);
    expect(plainInvoice.createdAt.getTime() - first).toBeLessThan(30_000);
    expect(plainInvoice.paidAt!.getTime() - first).toBeLessThan(30_000);

    // The next month: the same offsets.
    await skipTo(second + hour + minute);
    for (const id of [...spread, plain])
      await eventually(
        () => cycleOf(id),
        (c) => c === 2,
      );
    for (const [i, id] of spread.entries()) {
      const invoice = (await invoiceOf(id, second))!;
      expect(invoice.createdAt.getTime()).toBe(second);
      expect(invoice.paidAt!.getTime() - (second + offsets[i]!)).toBeGreaterThanOrEqual(0);
      expect(invoice.paidAt!.getTime() - (second + offsets[i]!)).toBeLessThan(30_000);
      expect(await engine.invoices(id)).toHaveLength(3);
      expect((await engine.charges(id)).filter((c) => c.status === 'succeeded')).toHaveLength(3);
    }
    // The plain one was created without the window but renews in a deployment that has it: its first renewal (timed
    // when it was created) brought the worker's setting, so from the second on it renews at its own offset too.
    const plainOffset = renewalOffsetMs(plain, 60);
    const plainSecond = (await invoiceOf(plain, second))!;
    expect(plainSecond.createdAt.getTime()).toBe(second);
    expect(plainSecond.paidAt!.getTime() - (second + plainOffset)).toBeGreaterThanOrEqual(0);
    expect(plainSecond.paidAt!.getTime() - (second + plainOffset)).toBeLessThan(30_000);

    // A year on, past a continue-as-new (a run renews in place up to renewalsPerRun billing dates): the new run was
    // given the window and renews at the same offset.
    const handle = engine.env.client.workflow.getHandle(spread[0]!);
    const firstRun = (await handle.describe()).runId;
    const later = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 14, 1);
    await skipTo(later + hour + minute);
    await eventually(
      () => cycleOf(spread[0]!),
      (c) => c === 14,
      30_000,
    );
    const latest = await handle.describe();
    expect(latest.runId).not.toBe(firstRun);
    const runInput = (await handle.fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!.input!
      .payloads![0]!;
    expect(JSON.parse(Buffer.from(runInput.data!).toString('utf8')).renewalSpreadMinutes).toBe(60);
    const invoice = (await invoiceOf(spread[0]!, later))!;
    expect(invoice.createdAt.getTime()).toBe(later);
    expect(invoice.paidAt!.getTime() - (later + offsets[0]!)).toBeGreaterThanOrEqual(0);
    expect(invoice.paidAt!.getTime() - (later + offsets[0]!)).toBeLessThan(30_000);
    expect((await engine.charges(spread[0]!)).filter((c) => c.status === 'succeeded')).toHaveLength(15);
  }, 120_000);
});
