import fs from 'node:fs';
import path from 'node:path';

import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventDispatchWorkflowId } from '../services/webhooks/dispatch.ts';
import { wakeSignal } from '../workflows/webhooks.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { histories, historiesDir, recordHistory } from './helpers/histories.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * Histories of real runs, kept under test/histories/ and replayed against the
 * current workflow code: a change that would break running subscriptions (a
 * command added, removed or reordered without `patched()`) fails here.
 *
 * Re-record after an intended, patched change: RECORD_HISTORIES=1 npx vitest run test/replay.test.ts
 */
const day = 86_400_000;

describe('workflow histories', () => {
  if (process.env.RECORD_HISTORIES === '1') {
    let engine: TestEngine;
    beforeAll(async () => {
      // Spreading only moves calendar renewals: the other recordings (anniversary billing) are as without it.
      engine = await startTestEngine({ env: { RENEWAL_SPREAD_MINUTES: '60' } });
    });
    afterAll(() => engine?.close());

    it('records a spread calendar renewal (patched renewal-spread)', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const now = new Date(await engine.env.currentTimeMs());
      const mid = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 11);
      await engine.env.sleep(mid - now.getTime());
      const id: string = (
        await engine.call('POST', '/v1/subscriptions', {
          customer_id: customerId,
          plan: planId,
          billing_cycle: 'calendar',
        })
      ).body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(22 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      record(id, run, 'subscription-calendar-renewal-spread');
    });

    it('records a subscription: the trial, its first charge, the money made available and a renewal, in one run', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine);
      const created = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        plan: planId,
        trial_period_days: 30,
      });
      const id: string = created.body.id;
      const firstRun = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(31 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 0 && s.status === 'active',
      );
      await engine.env.sleep(31 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      // Renew in place: still the first run.
      expect((await engine.env.client.workflow.getHandle(id).describe()).runId).toBe(firstRun);
      record(id, firstRun, 'subscription-trial-to-renewals-in-place');
    });

    it('records a run with an upgrade, a downgrade, a pause and a resume', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const bigger = await engine.call('POST', '/v1/plans', {
        name: 'Max',
        amount: 6000,
        currency: 'USD',
        interval: 'month',
      });
      const id: string = (await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }))
        .body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(5 * day);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/update`, { plan: bigger.body.id })).status).toBe(200);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/update`, { plan: planId })).status).toBe(200);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/pause`)).status).toBe(200);
      await engine.env.sleep(2 * day);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/resume`)).status).toBe(200);
      await engine.env.sleep(30 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      record(id, run, 'subscription-plan-changes-and-pause');
    });

    it('records a cancel at period end taken back, then the renewal', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const id: string = (await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }))
        .body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(3 * day);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/cancel`, { at_period_end: true })).status).toBe(200);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/undo_cancel`)).status).toBe(200);
      await engine.env.sleep(30 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      record(id, run, 'subscription-undo-cancel-at-period-end');
    });

    it('records dunning: four failed attempts, the grace period and the cancel', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(
        engine,
        { trial_period_days: 0 },
        'pm_card_chargeDeclined',
      );
      const id: string = (await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }))
        .body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(15 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.status === 'canceled',
      );
      record(id, run, 'subscription-dunning-to-cancel');
    });

    it('records an item subscription: two items, an add-on added (create_prorations), seats raised (always_invoice) and the add-on removed, then the renewal', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const support = (
        await engine.call('POST', '/v1/plans', { name: 'Support', amount: 900, currency: 'USD', interval: 'month' })
      ).body.id;
      const addOn = (
        await engine.call('POST', '/v1/plans', { name: 'Add-on', amount: 3000, currency: 'USD', interval: 'month' })
      ).body.id;
      const created = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        items: [{ plan: planId, quantity: 3 }, { plan: support }],
      });
      expect(created.status).toBe(201);
      const id: string = created.body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(5 * day);
      const added = await engine.call('POST', '/v1/subscription_items', { subscription: id, plan: addOn });
      expect(added.status).toBe(201);
      expect(
        (
          await engine.call('PATCH', `/v1/subscription_items/${created.body.items[0].id}`, {
            quantity: 5,
            proration_behavior: 'always_invoice',
          })
        ).status,
      ).toBe(200);
      await engine.env.sleep(5 * day);
      expect((await engine.call('DELETE', `/v1/subscription_items/${added.body.id}`)).status).toBe(200);
      await engine.env.sleep(25 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      record(id, run, 'subscription-items');
    });

    it('records a payout: pending, in transit, paid', async () => {
      const admin = { ...(await engine.admin()).headers, 'x-account-id': engine.tenant.accountId };
      expect(
        (
          await engine.call(
            'POST',
            '/v1/transactions',
            { account_id: engine.tenant.accountId, amount: 10_000, currency: 'USD', type: 'credit' },
            admin,
          )
        ).status,
      ).toBe(201);
      expect(
        (
          await engine.call('POST', '/v1/bank_accounts', {
            type: 'paypal',
            account_holder_name: 'Rec',
            currency: 'USD',
            email: 'rec@example.com',
          })
        ).status,
      ).toBe(201);
      const id: string = (await engine.call('POST', '/v1/payouts', { amount: 4000, currency: 'USD' })).body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(61_000 + day);
      expect(await engine.env.client.workflow.getHandle(id).result()).toBe('paid');
      record(id, run, 'payout-states-paid');
    });

    it('records the webhook dispatcher: passes, a wake-up during a wait, its timer firing while idle (patched dispatch-timer-kept)', async () => {
      const handle = await engine.env.client.workflow.start('eventDispatchWorkflow', {
        workflowId: eventDispatchWorkflowId(engine.taskQueue),
        taskQueue: engine.taskQueue,
        args: [{ idleMs: 1_000, idleMaxMs: 2_000 }],
      });
      const { EventType } = temporal.api.enums.v1;
      const count = async (type: number) =>
        ((await handle.fetchHistory()).events ?? []).filter((e) => e.eventType === type).length;
      await eventually(
        () => count(EventType.EVENT_TYPE_TIMER_STARTED),
        (n) => n >= 1,
        20_000,
      );
      await handle.signal(wakeSignal);
      await eventually(
        () => count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED),
        (n) => n >= 2,
        20_000,
      );
      await eventually(
        () => count(EventType.EVENT_TYPE_TIMER_FIRED),
        (n) => n >= 2,
        20_000,
      );
      record(handle.workflowId, handle.firstExecutionRunId, 'webhook-dispatch');
    });

    it('records repeating discounts ended by the timer (patched discount-end-timer): one from creation (input), one added mid-period (signal)', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      expect(
        (
          await engine.call('POST', '/v1/coupons', {
            id: 'REC1M',
            percent_off: 20,
            duration: 'repeating',
            duration_in_months: 1,
          })
        ).status,
      ).toBe(201);
      const created = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        plan: planId,
        coupon: 'REC1M',
      });
      const id: string = created.body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(40 * day);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/discount`, { coupon: 'REC1M' })).status).toBe(200);
      await engine.env.sleep(35 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 2,
      );
      record(id, run, 'subscription-discount-end-timer');
    });

    it('records an upgrade that the memo and the PlanId search attribute follow (patched plan-in-memo), then the renewal', async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const bigger = await engine.call('POST', '/v1/plans', {
        name: 'Max',
        amount: 6000,
        currency: 'USD',
        interval: 'month',
      });
      const id: string = (await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }))
        .body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      await engine.env.sleep(5 * day);
      expect(
        (await engine.call('POST', `/v1/subscriptions/${id}/update`, { plan: bigger.body.id, quantity: 2 })).status,
      ).toBe(200);
      await engine.env.sleep(30 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      record(id, run, 'subscription-plan-in-memo');
    });

    it('records a metered subscription (patched usage-billing, usage-pause): usage, a pause past its period, the resume billing the interrupted period, a renewal', async () => {
      const customerId: string = (
        await engine.call('POST', '/v1/customers', { email: 'usage@example.com', payment_method: 'pm_card_visa' })
      ).body.id;
      const meter = await engine.call('POST', '/v1/meters', {
        display_name: 'Calls',
        event_name: 'history_calls',
        aggregation: 'sum',
        value_property: 'n',
      });
      const plan = await engine.call('POST', '/v1/plans', {
        name: 'Calls',
        currency: 'USD',
        interval: 'month',
        usage_type: 'metered',
        meter: meter.body.id,
        amount: 3,
      });
      expect(plan.status, JSON.stringify(plan.body)).toBe(201);
      const id: string = (
        await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: plan.body.id })
      ).body.id;
      const run = (await engine.env.client.workflow.getHandle(id).describe()).runId;
      // Events are stamped in the database's time (no test clock), inside the first period.
      const sent = await engine.call('POST', '/v1/meter_events', {
        event_name: 'history_calls',
        customer: customerId,
        payload: { n: 40 },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(201);
      await engine.env.sleep(5 * day);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/pause`)).status).toBe(200);
      // Past the period's end: the resume starts a new period and bills the interrupted one's usage (usage-pause).
      await engine.env.sleep(30 * day);
      expect((await engine.call('POST', `/v1/subscriptions/${id}/resume`)).status).toBe(200);
      await eventually(
        () => engine.invoices(id),
        (invoices) => invoices.some((invoice) => invoice.total === 120),
      );
      // The next renewal closes the new period for usage after the grace window (usage-billing).
      await engine.env.sleep(32 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => (s?.billingCycle ?? 0) >= 2,
      );
      record(id, run, 'subscription-usage-pause-renewal');
    });

    const record = (id: string, runId: string, name: string) => recordHistory(engine.env.address, id, runId, name);
  }

  const files = () =>
    fs
      .readdirSync(historiesDir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => path.join(historiesDir, f));

  // The workflow code is bundled once and every file replayed against it (~17 s on a loaded machine; histories() allows 120 s).
  it('replay against the current workflow code', { timeout: 150_000 }, () => {
    expect(files().map((f) => path.basename(f))).toEqual([
      // Recorded with the exportWorkflow of before EXPORTS_TASK_QUEUE (stand-in activities on a dev server): the activity's queue is now an input.
      'export-failed.json',
      'export-succeeded.json',
      // One-off invoices' workflow (recorded by test/one-off-invoice-histories.test.ts): sent, reminded, paid; declined, retried, voided.
      'invoice-auto-retried-voided.json',
      // Recorded with patched('invoice-promotion-code'): a coupon applied to the open invoice, then paid.
      'invoice-promotion-code-paid.json',
      'invoice-send-reminded-paid.json',
      // Recorded with the payoutWorkflow of before payout states (commit a26a08e): replays through patched('payout-states').
      'payout-legacy-paid.json',
      // Recorded with the payoutScheduleWorkflow of before test clocks (main at 50c42bb: a daily schedule's empty run, a run paying out,
      // a settings change cancelling the timer): its waits moved to workflowClock, the same commands without a clock.
      'payout-schedule-daily.json',
      'payout-states-paid.json',
      // Recorded with RENEWAL_SPREAD_MINUTES=60: the calendar renewal's timer at the boundary plus the offset, through patched('renewal-spread').
      'subscription-calendar-renewal-spread.json',
      // Recorded with patched('discount-end-timer'): a repeating discount from creation (in the input) and one added mid-period (the
      // discountEnd signal), each ended by the workflow's timer at its end.
      'subscription-discount-end-timer.json',
      // Recorded before a due billing cycle ran as one local activity (commit abec835): replay the four activities through patched('renew-cycle').
      'subscription-dunning-to-cancel-before-renew-cycle.json',
      // Recorded before a run renewed in place and owned its money's availability (commit 50c42bb): they continue as new after each
      // billing date and start a funds-availability workflow per payment, through patched('renew-in-place') and patched('funds-in-subscription').
      'subscription-dunning-to-cancel-before-renew-in-place.json',
      'subscription-dunning-to-cancel.json',
      // Recorded with patched('subscription-items'): several items, one added, changed (always_invoice) and removed, then the renewal.
      'subscription-items.json',
      'subscription-plan-changes-and-pause-before-renew-cycle.json',
      'subscription-plan-changes-and-pause-before-renew-in-place.json',
      'subscription-plan-changes-and-pause.json',
      // Recorded with patched('plan-in-memo'): an upgrade the memo and the PlanId search attribute follow, then the renewal.
      'subscription-plan-in-memo.json',
      'subscription-renewal-before-renew-cycle.json',
      'subscription-renewal-before-renew-in-place.json',
      'subscription-trial-to-first-charge-before-renew-cycle.json',
      'subscription-trial-to-first-charge-before-renew-in-place.json',
      // The current code: the trial, its first charge, the money made available and a renewal, all in one run.
      'subscription-trial-to-renewals-in-place.json',
      // Recorded with patched('undo-cancel-at-period-end'): the cancel at period end taken back, then the renewal.
      'subscription-undo-cancel-at-period-end-before-renew-in-place.json',
      'subscription-undo-cancel-at-period-end.json',
      // Recorded with patched('usage-billing') and patched('usage-pause'): a metered subscription's usage billed by the resume
      // after a pause past its period, then a renewal closing the next period for usage.
      'subscription-usage-pause-renewal.json',
      // Test clocks' workflow, a trial end then a later advance. The current code: no 1 ms timer after an instant's webhook
      // hand-off when no delivery is pending, the final tick only to workflows that had not reported the target.
      'test-clock-advances.json',
      // Recorded before patched('test-clock-sleep-only-if-bound') and patched('test-clock-final-tick-to-stale') (main at 8240f6a):
      // a 1 ms timer after each hand-off (awaitClockEventsDispatched answered a bare count), the final tick to every workflow.
      'test-clock-before-ready-sooner.json',
      // Recorded with patched('test-clock-queued-not-stuck') by test/test-clock-registry.test.ts (RECORD_HISTORIES=1): a clock
      // whose quiet timeout (2 s) passed several times while its busy workflow's task waited in Temporal, then ready.
      'test-clock-queued-not-stuck.json',
      // Recorded with patched('test-clock-registry-in-table') by test/test-clock-registry.test.ts (RECORD_HISTORIES=1): the
      // registry in PostgreSQL, one stepClock, one tickClockInstant and one "done" signal for 5 trial ends, no 1 ms timer.
      'test-clock-registry-in-table.json',
      // Recorded with the eventDispatchWorkflow of before patched('dispatch-timer-kept') (main at 9796dcd): a wake-up during a wait
      // cancelled its timer (TimerCanceled), idle timers fired, wake-ups during a pass.
      'webhook-dispatch-before-timer-kept.json',
      // The current code: a wake-up during a wait leaves the timer running; it fires later.
      'webhook-dispatch.json',
    ]);
    const replay = histories('replay', ...files());
    expect(replay.stdout).not.toContain('FAILED');
    expect(replay.status, replay.stdout + replay.stderr).toBe(0);
  });

  it('fail against workflow code changed incompatibly without a patch', { timeout: 150_000 }, () => {
    const replay = histories('replay', ...files(), {
      REPLAY_WORKFLOWS_PATH: path.join(import.meta.dirname, 'fixtures', 'incompatible-workflows', 'index.ts'),
    });
    expect(replay.status).toBe(1);
    // Every subscription history fails; the payout, export and invoice ones replay.
    expect(replay.stdout.match(/FAILED/g)).toHaveLength(18);
  });
});
