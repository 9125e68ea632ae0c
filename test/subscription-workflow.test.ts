import { type WorkflowHandle, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import type { Activities } from '../activities/index.ts';
import { defaultRetryPolicy } from '../domain/dunning.ts';
import { prorate } from '../domain/proration.ts';
import { initialSnapshot, type PlanTerms, type SubscriptionSnapshot } from '../domain/subscription.ts';
import type { InvoiceInput } from '../domain/subscription-decisions.ts';
import type { ChargeInput, ChargeOutcome } from '../services/money/charges.ts';
import { installTemporalRuntime } from '../worker.ts';
import { SubscriptionStatusKey } from '../workflows/search-attributes.ts';
import {
  cancelSubscriptionUpdate,
  changePlanUpdate,
  pauseSubscriptionUpdate,
  paymentMethodUpdatedSignal,
  resumeSubscriptionUpdate,
  subscriptionCreatedUpdate,
  subscriptionQuery,
  subscriptionWorkflow,
} from '../workflows/subscription.ts';
import { createTimeSkippingEnv, eventually } from './helpers/temporal.ts';

/**
 * The subscription workflow against fake activities in skipped time: no database,
 * no processor. Each test reads what the workflow asked of its activities (the
 * calls recorded below, per subscription) and what it projected.
 */
const minute = 60_000;
const day = 86_400_000;
const pro: PlanTerms = {
  planId: 'plan_pro',
  name: 'Pro',
  amount: 3000,
  currency: 'USD',
  interval: { unit: 'month', count: 1 },
};
const max: PlanTerms = {
  planId: 'plan_max',
  name: 'Max',
  amount: 6000,
  currency: 'USD',
  interval: { unit: 'month', count: 1 },
};

interface Fake {
  invoices: (InvoiceInput & { invoiceId: string; status: string })[];
  charges: ChargeInput[];
  projections: SubscriptionSnapshot[];
  calls: string[];
  /** Decides each charge; succeeds by default. */
  charge: (input: ChargeInput) => ChargeOutcome;
}
const fakes = new Map<string, Fake>();
const fake = (subscriptionId: string) => fakes.get(subscriptionId)!;
const subscriptionOfKey = (key: string) => key.split(':')[0]!;
const invoiceById = (invoiceId: string) =>
  [...fakes.values()].flatMap((f) => f.invoices).find((i) => i.invoiceId === invoiceId)!;
const ofInvoice = (invoiceId: string) => fake(invoiceById(invoiceId).subscriptionId);
const declined = (input: ChargeInput): ChargeOutcome => ({
  status: 'failed',
  chargeId: `ch_${input.idempotencyKey}`,
  failureCode: 'card_declined',
  failureMessage: 'Your card was declined.',
});

type Used = Pick<
  Activities,
  | 'projectSubscription'
  | 'openInvoice'
  | 'charge'
  | 'settleInvoice'
  | 'getInvoice'
  | 'voidInvoice'
  | 'markInvoiceUncollectible'
  | 'settleInvoiceWithoutCharge'
  | 'loadBillingSettings'
  | 'notifyPaymentFailed'
  | 'notifyPaymentRecovered'
  | 'notifySubscriptionEnded'
  | 'renewCycle'
>;
const invoiceState = (invoiceId: string) => {
  const i = invoiceById(invoiceId);
  const amountDue = Math.max(
    0,
    i.lines.reduce((sum, l) => sum + (l.total ?? l.amount! * l.quantity), 0),
  );
  return {
    invoiceId,
    number: `INV-${invoiceId}`,
    status: i.status as 'open',
    amountDue,
    amountPaid: 0,
    attemptCount: 0,
  };
};
const activities: Used = {
  async projectSubscription(snapshot) {
    fake(snapshot.id).projections.push(snapshot);
  },
  async openInvoice(input) {
    const f = fake(input.subscriptionId);
    f.calls.push(`openInvoice ${input.billingKey}`);
    let invoice = f.invoices.find((i) => i.billingKey === input.billingKey);
    if (!invoice)
      f.invoices.push(
        (invoice = {
          ...(input as InvoiceInput),
          invoiceId: `inv_${f.invoices.length + 1}_${input.subscriptionId}`,
          status: 'open',
        }),
      );
    const { invoiceId, number, amountDue } = invoiceState(invoice.invoiceId);
    return { invoiceId, number, amountDue };
  },
  async charge(input) {
    const f = fake(subscriptionOfKey(input.idempotencyKey));
    f.calls.push(`charge ${input.idempotencyKey}`);
    f.charges.push(input);
    return f.charge(input);
  },
  async settleInvoice(invoiceId, charge) {
    ofInvoice(invoiceId).calls.push(`settleInvoice ${invoiceId} ${charge.status}`);
    invoiceById(invoiceId).status = 'paid';
  },
  async getInvoice(invoiceId) {
    return invoiceState(invoiceId);
  },
  async voidInvoice(invoiceId) {
    ofInvoice(invoiceId).calls.push(`voidInvoice ${invoiceId}`);
    invoiceById(invoiceId).status = 'void';
    return invoiceState(invoiceId);
  },
  async markInvoiceUncollectible(invoiceId) {
    ofInvoice(invoiceId).calls.push(`markInvoiceUncollectible ${invoiceId}`);
    invoiceById(invoiceId).status = 'uncollectible';
    return invoiceState(invoiceId);
  },
  async settleInvoiceWithoutCharge(invoiceId) {
    ofInvoice(invoiceId).calls.push(`settleInvoiceWithoutCharge ${invoiceId}`);
    invoiceById(invoiceId).status = 'paid';
  },
  async loadBillingSettings() {
    return { retryPolicy: defaultRetryPolicy, gracePeriodDays: 7, finalAction: 'cancel' };
  },
  async notifyPaymentFailed({ subscription, attempt }) {
    fake(subscription.id).calls.push(`notifyPaymentFailed ${attempt}`);
  },
  async notifyPaymentRecovered({ subscription, invoiceId }) {
    fake(subscription.id).calls.push(`notifyPaymentRecovered ${invoiceId}`);
  },
  async notifySubscriptionEnded({ subscription, kind }) {
    fake(subscription.id).calls.push(`notifySubscriptionEnded ${kind}`);
  },
  /** The engine's renewCycle (services/subscriptions/renew-cycle.ts) over these fakes: the same steps, recorded as the separate calls they replace. */
  async renewCycle(input) {
    const invoice = await activities.openInvoice(input.invoice);
    if (invoice.amountDue === 0) {
      await activities.settleInvoiceWithoutCharge(invoice.invoiceId, input.paidAt);
      const snapshot = { ...input.free, latestInvoiceId: invoice.invoiceId };
      await activities.projectSubscription(snapshot);
      return { status: 'paid', invoice, snapshot };
    }
    const outcome = await activities.charge({
      ...input.charge,
      invoiceId: invoice.invoiceId,
      attempt: 1,
      amount: invoice.amountDue,
      description: `Invoice ${invoice.number}`,
    });
    if (outcome.status === 'failed') return { status: 'unpaid', invoice, outcome };
    await activities.settleInvoice(invoice.invoiceId, outcome, input.paidAt);
    const snapshot = { ...input.paid, latestInvoiceId: invoice.invoiceId };
    await activities.projectSubscription(snapshot);
    return { status: 'paid', invoice, snapshot };
  },
};

describe('subscriptionWorkflow with fake activities', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `subscription-workflow-${process.pid}`;
  const started: string[] = [];

  beforeAll(async () => {
    // ERROR: the Java test server lacks a capability the SDK warns about on every worker start.
    installTemporalRuntime('error');
    env = await createTimeSkippingEnv();
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities,
    });
    running = worker.run();
  });
  afterAll(async () => {
    await Promise.all(
      started.map((id) =>
        env.client.workflow
          .getHandle(id)
          .terminate('test finished')
          .catch(() => undefined),
      ),
    );
    worker?.shutdown();
    await running;
    await env?.teardown();
  });

  let counter = 0;
  /** Starts a subscription (as the API does: update-with-start) and waits for its first recorded state. */
  async function subscribe(options: { trialDays?: number; charge?: Fake['charge'] } = {}) {
    const id = `sub_wf_${process.pid}_${++counter}`;
    fakes.set(id, {
      invoices: [],
      charges: [],
      projections: [],
      calls: [],
      charge: options.charge ?? ((input) => ({ status: 'succeeded', chargeId: `ch_${input.idempotencyKey}` })),
    });
    const snapshot = initialSnapshot({
      id,
      accountId: 'acct_1',
      customerId: 'cus_1',
      planId: pro.planId,
      livemode: false,
      trialDays: options.trialDays ?? 0,
      billingCycleMode: 'anniversary',
      pauseUntil: null,
      gracePeriodDays: null,
    });
    const handle = await env.client.workflow.start(subscriptionWorkflow, {
      workflowId: id,
      taskQueue,
      args: [{ snapshot, plan: pro }],
    });
    started.push(id);
    const first = await handle.executeUpdate(subscriptionCreatedUpdate);
    return {
      id,
      handle: env.client.workflow.getHandle(id) as WorkflowHandle<typeof subscriptionWorkflow>,
      first,
      f: fake(id),
    };
  }
  const latest = (id: string) => fake(id).projections.at(-1)!;
  const until = (id: string, done: (s: SubscriptionSnapshot) => boolean) => eventually(async () => latest(id), done);
  async function refused(update: Promise<unknown>): Promise<{ type: string | undefined; message: string }> {
    const error = await update.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    const cause = (error as WorkflowUpdateFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    return { type: (cause as ApplicationFailure).type ?? undefined, message: (cause as ApplicationFailure).message };
  }

  it('a due cycle runs as one local activity (renew-cycle) in the same run (renew-in-place), which upserts the new status', async () => {
    const { id, handle } = await subscribe({ trialDays: 3 });
    const firstRun = (await handle.describe()).runId;
    await env.sleep(3 * day + minute);
    await until(id, (s) => s.status === 'active' && s.billingCycle === 0);
    const described = await eventually(
      () => handle.describe(),
      (d) => d.typedSearchAttributes.get(SubscriptionStatusKey) === 'active',
    );
    // No new run: the renewal was one workflow task (timer fired, renewCycle, the next timer).
    expect(described.runId).toBe(firstRun);
    const events = (await env.client.workflow.getHandle(id, firstRun).fetchHistory()).events ?? [];
    // The only activity task of the run is the trial's projection; the cycle is a local activity (a marker) and three patch markers.
    expect(events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [])).toEqual([
      'projectSubscription',
    ]);
    expect(events.flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? []).sort()).toEqual([
      'core_local_activity',
      'core_patch',
      'core_patch',
      'core_patch',
    ]);
    expect(events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes)).toBe(false);
    const fired = events.findIndex((e) => e.timerFiredEventAttributes);
    const statusUpsert = (e: (typeof events)[number]) =>
      Boolean(
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[SubscriptionStatusKey.name],
      );
    const afterFire = events
      .slice(fired)
      .filter((e) => e.workflowTaskCompletedEventAttributes || e.timerStartedEventAttributes || statusUpsert(e));
    // One workflow task after the trial-end timer: it completes with the status upsert and the next renewal's timer (the patches' own upserts aside).
    expect(
      afterFire.map((e) =>
        e.workflowTaskCompletedEventAttributes ? 'completed' : e.timerStartedEventAttributes ? 'timer' : 'upsert',
      ),
    ).toEqual(['completed', 'upsert', 'timer']);
    expect(fake(id).calls).toEqual([
      `openInvoice ${id}:cycle:0`,
      `charge ${id}:cycle:0:attempt:1`,
      expect.stringMatching(/^settleInvoice inv_1_.* succeeded$/),
    ]);
  });

  it('continues as new after twelve billing dates in one run, carrying the state', async () => {
    const { id, handle } = await subscribe({ trialDays: 0 });
    const firstRun = (await handle.describe()).runId;
    // Cycle 0 was charged at creation; cycles 1 to 12 are twelve billing dates of the first run.
    for (let month = 1; month <= 12; month++) {
      await env.sleep(31 * day);
      await until(id, (s) => s.billingCycle >= month);
    }
    const next = await eventually(
      () => handle.describe(),
      (d) => d.runId !== firstRun,
    );
    const events = (await env.client.workflow.getHandle(id, firstRun).fetchHistory()).events ?? [];
    expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    // The first charge at creation, then the twelve renewals.
    expect(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(
      13,
    );
    expect(next.status.name).toBe('RUNNING');
    expect(await handle.query(subscriptionQuery)).toMatchObject({ status: 'active', billingCycle: 12 });
    await env.sleep(31 * day);
    await until(id, (s) => s.billingCycle === 13);
    expect(fake(id).charges.map((c) => c.idempotencyKey)).toEqual(
      Array.from({ length: 14 }, (_, cycle) => `${id}:cycle:${cycle}:attempt:1`),
    );
  });

  it('charges the first period when the trial ends', async () => {
    const { id, first, f } = await subscribe({ trialDays: 14 });
    expect(first).toMatchObject({ status: 'trialing', version: 1 });
    expect(Date.parse(first.trialEnd!) - Date.parse(first.trialStart!)).toBe(14 * day);
    expect(f.invoices).toEqual([]);

    await env.sleep(14 * day + minute);
    const active = await until(id, (s) => s.status === 'active');
    const [invoice] = f.invoices;
    expect(invoice).toMatchObject({
      billingKey: `${id}:cycle:0`,
      currency: 'USD',
      periodStart: first.trialEnd,
      lines: [{ description: 'Pro', amount: 3000, quantity: 1, period_start: first.trialEnd, proration: false }],
    });
    expect(f.charges).toEqual([
      {
        idempotencyKey: `${id}:cycle:0:attempt:1`,
        invoiceId: invoice!.invoiceId,
        attempt: 1,
        accountId: 'acct_1',
        customerId: 'cus_1',
        livemode: false,
        amount: 3000,
        currency: 'USD',
        description: `Invoice INV-${invoice!.invoiceId}`,
      },
    ]);
    expect(f.calls).toEqual([
      `openInvoice ${id}:cycle:0`,
      `charge ${id}:cycle:0:attempt:1`,
      `settleInvoice ${invoice!.invoiceId} succeeded`,
    ]);
    expect(active).toMatchObject({
      billingCycle: 0,
      currentPeriodStart: first.trialEnd,
      currentPeriodEnd: invoice!.periodEnd,
      latestInvoiceId: invoice!.invoiceId,
      dunning: null,
    });
  });

  it('a decline starts dunning; a failed scheduled retry, then a new payment method recovers', async () => {
    const outcomes: ((input: ChargeInput) => ChargeOutcome)[] = [declined, declined];
    const { id, handle, first, f } = await subscribe({
      charge: (input) =>
        (outcomes.shift() ?? ((i) => ({ status: 'succeeded', chargeId: `ch_${i.idempotencyKey}` })))(input),
    });
    const invoiceId = f.invoices[0]!.invoiceId;
    expect(first).toMatchObject({ status: 'past_due', billingCycle: 0, latestInvoiceId: invoiceId });
    const firstFailedAt = Date.parse(first.dunning!.firstFailedAt);
    expect(first.dunning).toMatchObject({
      invoiceId,
      attempts: 1,
      scheduledAttempts: 1,
      amount: 3000,
      lastFailureCode: 'card_declined',
      graceEndsAt: null,
    });
    expect(Date.parse(first.dunning!.nextRetryAt!)).toBe(firstFailedAt + day);

    // The scheduled retry 24 hours later fails too; the next is 3 days after the first failure.
    await env.sleep(day + minute);
    const second = await until(id, (s) => s.dunning?.attempts === 2);
    expect(second).toMatchObject({
      status: 'past_due',
      dunning: { scheduledAttempts: 2, nextRetryAt: new Date(firstFailedAt + 3 * day).toISOString() },
    });

    // A new payment method: one more attempt now, which succeeds.
    await handle.signal(paymentMethodUpdatedSignal);
    const recovered = await until(id, (s) => s.status === 'active');
    expect(recovered.dunning).toBeNull();
    expect(f.charges.map((c) => [c.idempotencyKey, c.invoiceId, c.amount])).toEqual([
      [`${id}:cycle:0:attempt:1`, invoiceId, 3000],
      [`${id}:cycle:0:attempt:2`, invoiceId, 3000],
      [`${id}:cycle:0:attempt:3`, invoiceId, 3000],
    ]);
    await eventually(
      async () => f.calls.at(-1),
      (c) => c === `notifyPaymentRecovered ${invoiceId}`,
    );
    expect(f.calls).toEqual([
      `openInvoice ${id}:cycle:0`,
      `charge ${id}:cycle:0:attempt:1`,
      'notifyPaymentFailed 1',
      `charge ${id}:cycle:0:attempt:2`,
      'notifyPaymentFailed 2',
      `charge ${id}:cycle:0:attempt:3`,
      `settleInvoice ${invoiceId} succeeded`,
      `notifyPaymentRecovered ${invoiceId}`,
    ]);
  });

  it('an upgrade opens an invoice with proration lines and charges its total; a declined one changes nothing', async () => {
    let decline = false;
    const { id, handle, first, f } = await subscribe({
      charge: (input) => (decline ? declined(input) : { status: 'succeeded', chargeId: `ch_${input.idempotencyKey}` }),
    });
    await env.sleep(10 * day);

    const version = (await handle.query(subscriptionQuery)).version;
    const upgraded = await handle.executeUpdate(changePlanUpdate, { args: [{ plan: max }] });
    expect(upgraded).toMatchObject({
      planId: 'plan_max',
      pendingPlanId: null,
      currentPeriodStart: first.currentPeriodStart,
      currentPeriodEnd: first.currentPeriodEnd,
    });
    const invoice = f.invoices[1]!;
    expect(invoice).toMatchObject({
      billingKey: `${id}:plan_change:${version}`,
      periodStart: first.currentPeriodStart,
      periodEnd: first.currentPeriodEnd,
    });
    const start = Date.parse(first.currentPeriodStart!);
    const end = Date.parse(first.currentPeriodEnd!);
    const at = invoice.issuedAt;
    const remaining = end - Date.parse(at);
    // Mid-period, at least 10 days in. (Not an exact day: the time-skipping server may move on
    // while the update is delivered; the lines are checked against the instant it was issued.)
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(end - start - 10 * day);
    expect(invoice.lines).toEqual([
      {
        description: `Unused time on Pro after ${at}`,
        amount: -prorate(3000, remaining, end - start),
        quantity: 1,
        period_start: at,
        period_end: first.currentPeriodEnd,
        proration: true,
      },
      {
        description: `Remaining time on Max after ${at}`,
        amount: prorate(6000, remaining, end - start),
        quantity: 1,
        period_start: at,
        period_end: first.currentPeriodEnd,
        proration: true,
      },
    ]);
    expect(f.charges.at(-1)).toMatchObject({
      idempotencyKey: `${id}:plan_change:${version}:attempt:1`,
      invoiceId: invoice.invoiceId,
      amount: invoice.lines[0]!.amount! + invoice.lines[1]!.amount!,
      description: `Invoice INV-${invoice.invoiceId} (plan change)`,
    });
    expect(upgraded.latestInvoiceId).toBe(invoice.invoiceId);

    // A declined upgrade is voided and refused; the subscription stays as it was.
    decline = true;
    const ultra: PlanTerms = { ...max, planId: 'plan_ultra', name: 'Ultra', amount: 9000 };
    const failed = await refused(handle.executeUpdate(changePlanUpdate, { args: [{ plan: ultra }] }));
    expect(failed.type).toBe('payment_failed');
    expect(f.invoices[2]).toMatchObject({ billingKey: `${id}:plan_change:${upgraded.version}`, status: 'void' });
    expect(await handle.query(subscriptionQuery)).toEqual(upgraded);
  });

  it('cancel at period end: no renewal, the subscription ends when the period does', async () => {
    const { id, handle, first, f } = await subscribe();
    const set = await handle.executeUpdate(cancelSubscriptionUpdate, { args: [{ atPeriodEnd: true }] });
    expect(set).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
    expect(await refused(handle.executeUpdate(cancelSubscriptionUpdate, { args: [{ atPeriodEnd: true }] }))).toEqual({
      type: 'invalid_state',
      message: 'The subscription is already set to cancel at period end.',
    });
    expect(
      await refused(handle.executeUpdate(pauseSubscriptionUpdate, { args: [{ pauseUntil: null }] })),
    ).toMatchObject({ type: 'invalid_state' });

    const ended = await handle.result(); // skips to the end of the period
    expect(ended).toMatchObject({ status: 'canceled', endedReason: 'requested', cancelAtPeriodEnd: false });
    expect(Date.parse(ended.canceledAt!)).toBeGreaterThanOrEqual(Date.parse(first.currentPeriodEnd!));
    expect(f.invoices).toHaveLength(1);
    expect(f.calls.at(-1)).toBe('notifySubscriptionEnded canceled');
    expect(latest(id).status).toBe('canceled');
  });

  it('pause and resume are refused in the wrong state, before anything is recorded', async () => {
    const trial = await subscribe({ trialDays: 30 });
    expect(
      await refused(trial.handle.executeUpdate(pauseSubscriptionUpdate, { args: [{ pauseUntil: null }] })),
    ).toEqual({
      type: 'invalid_state',
      message: 'Only an active subscription can be paused; it is trialing.',
    });

    const { id, handle, f } = await subscribe();
    expect(await refused(handle.executeUpdate(resumeSubscriptionUpdate))).toEqual({
      type: 'invalid_state',
      message: 'Only a paused subscription can be resumed; it is active.',
    });
    const now = await env.currentTimeMs();
    expect(
      await refused(
        handle.executeUpdate(pauseSubscriptionUpdate, { args: [{ pauseUntil: new Date(now - day).toISOString() }] }),
      ),
    ).toEqual({
      type: 'invalid_request',
      message: 'pause_until must be in the future.',
    });
    const before = f.projections.length;
    expect(fake(trial.id).projections).toHaveLength(1);

    const paused = await handle.executeUpdate(pauseSubscriptionUpdate, { args: [{ pauseUntil: null }] });
    expect(paused).toMatchObject({ status: 'paused', pauseReason: 'requested' });
    expect(f.projections).toHaveLength(before + 1);
    expect(await refused(handle.executeUpdate(pauseSubscriptionUpdate, { args: [{ pauseUntil: null }] }))).toEqual({
      type: 'invalid_state',
      message: 'Only an active subscription can be paused; it is paused.',
    });
    // Within the paid period: the period simply goes on, nothing is charged.
    const resumed = await handle.executeUpdate(resumeSubscriptionUpdate);
    expect(resumed).toMatchObject({ status: 'active', pausedAt: null, billingCycle: 0 });
    expect(f.charges).toHaveLength(1);
    expect(latest(id).version).toBe(resumed.version);
  });
});
