import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { defaultRetryPolicy } from '../domain/dunning.ts';
import {
  type DunningState,
  initialSnapshot,
  type PlanTerms,
  type SubscriptionSnapshot,
  type SubscriptionStatus,
} from '../domain/subscription.ts';
import {
  afterFailedAttempt,
  billingAnchorFrom,
  commandProblem,
  cycleInvoice,
  failedRetry,
  nextWake,
  planChangeKind,
  refusal,
  resumeKind,
  startDunning,
  type SubscriptionCommand,
  type SubscriptionState,
  upgradeInvoice,
  upgradeLines,
  waitingDetails,
  wakeDelayMs,
} from '../domain/subscription-decisions.ts';

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
const lite: PlanTerms = {
  planId: 'plan_lite',
  name: 'Lite',
  amount: 1000,
  currency: 'USD',
  interval: { unit: 'month', count: 1 },
};
const yearly: PlanTerms = {
  planId: 'plan_year',
  name: 'Pro yearly',
  amount: 60000,
  currency: 'USD',
  interval: { unit: 'year', count: 1 },
};
const euro: PlanTerms = { ...max, planId: 'plan_eur', currency: 'EUR' };

function snapshot(changes: Partial<SubscriptionSnapshot> = {}): SubscriptionSnapshot {
  const base = initialSnapshot({
    id: 'sub_1',
    accountId: 'acct_1',
    customerId: 'cus_1',
    planId: pro.planId,
    livemode: false,
    trialDays: 0,
    billingCycleMode: 'anniversary',
    pauseUntil: null,
    gracePeriodDays: null,
  });
  return { ...base, version: 3, ...changes };
}
/** Active in the period from Jan 1 to Feb 1 2025, billed monthly from Jan 1. */
const active = (changes: Partial<SubscriptionSnapshot> = {}) =>
  snapshot({
    status: 'active',
    billingAnchor: '2025-01-01T00:00:00.000Z',
    billingCycle: 0,
    currentPeriodStart: '2025-01-01T00:00:00.000Z',
    currentPeriodEnd: '2025-02-01T00:00:00.000Z',
    ...changes,
  });
const state = (
  subscription: SubscriptionSnapshot,
  plan = pro,
  pendingPlan: PlanTerms | null = null,
): SubscriptionState => ({ subscription, plan, pendingPlan });

const dunning = (changes: Partial<DunningState> = {}): DunningState => ({
  invoiceId: 'inv_1',
  invoiceNumber: 'ACME-0001',
  billingKey: 'sub_1:cycle:0',
  amount: 3000,
  currency: 'USD',
  attempts: 1,
  scheduledAttempts: 1,
  firstFailedAt: '2025-01-01T00:00:00.000Z',
  nextRetryAt: '2025-01-02T00:00:00.000Z',
  graceEndsAt: null,
  gracePeriodDays: 7,
  finalAction: 'cancel',
  policy: defaultRetryPolicy,
  lastFailureCode: 'card_declined',
  lastFailureMessage: 'Declined.',
  ...changes,
});

describe('which command is allowed now', () => {
  const commands: SubscriptionCommand[] = [
    { kind: 'cancel', atPeriodEnd: false, reason: 'requested' },
    { kind: 'cancel', atPeriodEnd: true, reason: 'requested' },
    { kind: 'pause', pauseUntil: null },
    { kind: 'resume' },
    { kind: 'changePlan', plan: max },
    { kind: 'retryPayment' },
  ];
  /** Allowed commands per status (by index in `commands`), for a subscription with nothing pending. */
  const allowed: Record<SubscriptionStatus, number[]> = {
    trialing: [0, 1, 4],
    active: [0, 1, 2, 4],
    past_due: [0, 5],
    paused: [0, 3],
    canceled: [],
    expired: [],
  };

  it('follows the state machine', () => {
    for (const [status, ok] of Object.entries(allowed) as [SubscriptionStatus, number[]][]) {
      const s = state(status === 'active' ? active() : snapshot({ status }));
      const got = commands
        .map((c, i) => [i, commandProblem(s, c)] as const)
        .filter(([, p]) => p === null)
        .map(([i]) => i);
      expect(got, status).toEqual(ok);
    }
  });

  it('says why', () => {
    expect(commandProblem(state(snapshot({ status: 'canceled' })), { kind: 'resume' })).toBe(
      'The subscription is canceled.',
    );
    expect(
      commandProblem(state(snapshot({ status: 'past_due' })), {
        kind: 'cancel',
        atPeriodEnd: true,
        reason: 'requested',
      }),
    ).toBe(
      'Only an active or trialing subscription can be canceled at period end; it is past_due. Cancel it now instead.',
    );
    expect(commandProblem(state(active()), { kind: 'resume' })).toBe(
      'Only a paused subscription can be resumed; it is active.',
    );
    expect(commandProblem(state(snapshot({ status: 'paused' })), { kind: 'pause', pauseUntil: null })).toBe(
      'Only an active subscription can be paused; it is paused.',
    );
    expect(commandProblem(state(active()), { kind: 'retryPayment' })).toBe('Nothing to retry.');
  });

  it('refuses a second cancel at period end, and a pause of a subscription that cancels at period end', () => {
    const s = state(active({ cancelAtPeriodEnd: true }));
    expect(commandProblem(s, { kind: 'cancel', atPeriodEnd: true, reason: 'requested' })).toBe(
      'The subscription is already set to cancel at period end.',
    );
    expect(commandProblem(s, { kind: 'pause', pauseUntil: null })).toBe(
      'The subscription cancels at period end; it cannot be paused.',
    );
    expect(commandProblem(s, { kind: 'cancel', atPeriodEnd: false, reason: 'requested' })).toBeNull();
  });

  it('refuses a change to the same plan unless it drops a pending downgrade, and a change of currency', () => {
    expect(commandProblem(state(active()), { kind: 'changePlan', plan: pro })).toBe(
      'The subscription is already on plan_pro.',
    );
    expect(commandProblem(state(active(), pro, lite), { kind: 'changePlan', plan: pro })).toBeNull();
    expect(commandProblem(state(active()), { kind: 'changePlan', plan: euro })).toBe(
      'The new plan bills in EUR, the subscription in USD.',
    );
  });

  it('validators: a queued cancel wins, then the state, then a pause end in the past', () => {
    const now = new Date('2025-01-10T00:00:00.000Z');
    const cancel: SubscriptionCommand = { kind: 'cancel', atPeriodEnd: false, reason: 'requested' };
    expect(refusal(state(active()), [cancel], { kind: 'pause', pauseUntil: null }, now)).toEqual({
      type: 'invalid_state',
      message: 'The subscription is being canceled.',
    });
    expect(
      refusal(state(active()), [{ ...cancel, atPeriodEnd: true }], { kind: 'pause', pauseUntil: null }, now),
    ).toBeNull();
    expect(
      refusal(state(snapshot({ status: 'paused' })), [], { kind: 'pause', pauseUntil: '2024-01-01T00:00:00.000Z' }, now)
        ?.type,
    ).toBe('invalid_state');
    expect(refusal(state(active()), [], { kind: 'pause', pauseUntil: now.toISOString() }, now)).toEqual({
      type: 'invalid_request',
      message: 'pause_until must be in the future.',
    });
    expect(refusal(state(active()), [], { kind: 'pause', pauseUntil: '2025-01-10T00:00:00.001Z' }, now)).toBeNull();
  });
});

describe('the next wake-up', () => {
  it('trial end: first charge from the trial end, or the end when it cancels at period end', () => {
    const trialing = snapshot({ status: 'trialing', trialEnd: '2025-01-31T00:00:00.000Z' });
    expect(nextWake(state(trialing))).toEqual({
      at: '2025-01-31T00:00:00.000Z',
      what: 'Trial ends; first charge',
      action: { kind: 'endTrial', billingFrom: '2025-01-31T00:00:00.000Z' },
    });
    expect(nextWake(state({ ...trialing, cancelAtPeriodEnd: true }))).toEqual({
      at: '2025-01-31T00:00:00.000Z',
      what: 'Trial ends; cancels (cancel at period end)',
      action: { kind: 'endAtPeriodEnd' },
    });
  });

  it('period end: the next cycle (naming a pending downgrade), or the end', () => {
    expect(nextWake(state(active()))).toEqual({
      at: '2025-02-01T00:00:00.000Z',
      what: 'Renewal, cycle 1',
      action: { kind: 'renew', cycle: 1 },
    });
    expect(nextWake(state(active({ billingCycle: 4 }), pro, lite))?.what).toBe('Renewal, cycle 5 on plan_lite');
    expect(nextWake(state(active({ cancelAtPeriodEnd: true })))?.action).toEqual({ kind: 'endAtPeriodEnd' });
  });

  it('past due: the next retry, then the end of the grace period', () => {
    expect(nextWake(state(snapshot({ status: 'past_due', dunning: dunning() })))).toEqual({
      at: '2025-01-02T00:00:00.000Z',
      what: 'Payment retry 2 of invoice ACME-0001',
      action: { kind: 'retryPayment' },
    });
    const spent = dunning({ nextRetryAt: null, graceEndsAt: '2025-01-15T00:00:00.000Z', finalAction: 'pause' });
    expect(nextWake(state(snapshot({ status: 'past_due', dunning: spent })))).toEqual({
      at: '2025-01-15T00:00:00.000Z',
      what: 'Grace period ends; then pauses',
      action: { kind: 'endDunning' },
    });
  });

  it('paused: the end of the pause, or nothing but a message', () => {
    expect(nextWake(state(snapshot({ status: 'paused', pauseUntil: '2025-03-01T00:00:00.000Z' })))?.action).toEqual({
      kind: 'resume',
    });
    const paused = snapshot({ status: 'paused' });
    expect(nextWake(state(paused))).toBeNull();
    expect(waitingDetails(null, paused)).toBe('Paused until resumed.');
    expect(nextWake(state(snapshot({ status: 'canceled' })))).toBeNull();
    expect(waitingDetails(null, snapshot({ status: 'canceled' }))).toBe('Waiting.');
  });

  it('waits the time left; a past instant is due', () => {
    const wake = nextWake(state(active()))!;
    expect(wakeDelayMs(wake, new Date('2025-01-31T00:00:00.000Z'))).toBe(day);
    expect(wakeDelayMs(wake, new Date('2025-02-02T00:00:00.000Z'))).toBe(-day);
    expect(waitingDetails(wake, active())).toBe('Renewal, cycle 1 (at 2025-02-01T00:00:00.000Z).');
  });
});

describe('the first partial period (calendar billing)', () => {
  it('anchors anniversary billing where it starts', () => {
    const from = new Date('2025-01-15T10:30:00.000Z');
    expect(billingAnchorFrom('anniversary', from, 'month')).toEqual({
      billingAnchor: from.toISOString(),
      anchorCycle: 0,
      stubStart: null,
    });
  });

  it('anchors calendar billing on the next boundary with a stub before it, unless it starts on one', () => {
    expect(billingAnchorFrom('calendar', new Date('2025-01-15T10:30:00.000Z'), 'month')).toEqual({
      billingAnchor: '2025-02-01T00:00:00.000Z',
      anchorCycle: 1,
      stubStart: '2025-01-15T10:30:00.000Z',
    });
    expect(billingAnchorFrom('calendar', new Date('2025-02-01T00:00:00.000Z'), 'month')).toEqual({
      billingAnchor: '2025-02-01T00:00:00.000Z',
      anchorCycle: 0,
      stubStart: null,
    });
    // Wednesday to the next Monday.
    expect(billingAnchorFrom('calendar', new Date('2025-01-15T00:00:00.000Z'), 'week').billingAnchor).toBe(
      '2025-01-20T00:00:00.000Z',
    );
  });

  it('invoices the stub prorated against the full calendar month, then full periods', () => {
    // Jan 15 to Feb 1: 17 of January's 31 days.
    const s = state(
      snapshot({
        billingCycleMode: 'calendar',
        ...billingAnchorFrom('calendar', new Date('2025-01-15T00:00:00.000Z'), 'month'),
      }),
      { ...pro, amount: 3100 },
    );
    const issuedAt = new Date('2025-01-15T00:00:00.000Z');
    const first = cycleInvoice(s, 0, issuedAt);
    expect(first.invoice).toEqual({
      billingKey: 'sub_1:cycle:0',
      subscriptionId: 'sub_1',
      accountId: 'acct_1',
      customerId: 'cus_1',
      currency: 'USD',
      lines: [
        {
          description: 'Pro (partial period)',
          amount: 1700,
          quantity: 1,
          period_start: '2025-01-15T00:00:00.000Z',
          period_end: '2025-02-01T00:00:00.000Z',
          proration: true,
        },
      ],
      periodStart: '2025-01-15T00:00:00.000Z',
      periodEnd: '2025-02-01T00:00:00.000Z',
      issuedAt: '2025-01-15T00:00:00.000Z',
      livemode: false,
    });
    const second = cycleInvoice(s, 1, new Date('2025-02-01T00:00:00.000Z'));
    expect(second.invoice.lines).toEqual([
      {
        description: 'Pro',
        amount: 3100,
        quantity: 1,
        period_start: '2025-02-01T00:00:00.000Z',
        period_end: '2025-03-01T00:00:00.000Z',
        proration: false,
      },
    ]);
    expect(second.invoice.billingKey).toBe('sub_1:cycle:1');
    expect(second.period.start.toISOString()).toBe('2025-02-01T00:00:00.000Z');
  });

  it('never bills a stub more than a full period, nor less than nothing', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }),
        fc.constantFrom('day', 'week', 'month', 'year' as const),
        (ms, unit) => {
          const from = new Date(ms);
          const anchor = billingAnchorFrom('calendar', from, unit);
          const s = state(snapshot({ billingCycleMode: 'calendar', ...anchor }), {
            ...pro,
            interval: { unit, count: 1 },
          });
          const line = cycleInvoice(s, 0, from).invoice.lines[0]!;
          expect(line.amount).toBeGreaterThanOrEqual(0);
          expect(line.amount).toBeLessThanOrEqual(pro.amount);
          expect(line.proration).toBe(anchor.anchorCycle === 1);
          expect(line.period_start).toBe(from.toISOString());
        },
      ),
    );
  });
});

describe('plan changes', () => {
  it('tells a revert, a trial change, a downgrade and an upgrade apart', () => {
    expect(planChangeKind(state(active(), pro, lite), pro)).toBe('revert');
    expect(planChangeKind(state(snapshot({ status: 'trialing' })), max)).toBe('trial');
    expect(planChangeKind(state(active()), lite)).toBe('downgrade');
    expect(planChangeKind(state(active()), { ...max, amount: pro.amount })).toBe('downgrade'); // same price per day
    expect(planChangeKind(state(active()), max)).toBe('upgrade');
    expect(planChangeKind(state(active()), yearly)).toBe('upgrade'); // 60000 a year is more per day than 3000 a month
  });

  it('an upgrade within the interval: credit the unused old plan, charge the rest on the new one', () => {
    // Day 10 of a 31-day period: 21 days remain.
    const now = new Date('2025-01-11T00:00:00.000Z');
    const upgrade = upgradeInvoice(state(active({ version: 7 })), { ...max, amount: 6200 }, now);
    expect(upgrade.billingKey).toBe('sub_1:plan_change:7');
    expect(upgrade.sameInterval).toBe(true);
    expect([upgrade.periodStart, upgrade.periodEnd]).toEqual(['2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z']);
    expect(upgrade.invoice).toMatchObject({
      billingKey: 'sub_1:plan_change:7',
      currency: 'USD',
      periodStart: '2025-01-01T00:00:00.000Z',
      periodEnd: '2025-02-01T00:00:00.000Z',
      issuedAt: now.toISOString(),
    });
    expect(upgrade.invoice.lines).toEqual([
      {
        description: 'Unused time on Pro after 2025-01-11T00:00:00.000Z',
        amount: -2032,
        quantity: 1,
        period_start: '2025-01-11T00:00:00.000Z',
        period_end: '2025-02-01T00:00:00.000Z',
        proration: true,
      },
      {
        description: 'Remaining time on Max after 2025-01-11T00:00:00.000Z',
        amount: 4200,
        quantity: 1,
        period_start: '2025-01-11T00:00:00.000Z',
        period_end: '2025-02-01T00:00:00.000Z',
        proration: true,
      },
    ]);
  });

  it('an upgrade to another interval: credit the unused old plan, and a full new period starts now', () => {
    const now = new Date('2025-01-11T00:00:00.000Z');
    const upgrade = upgradeInvoice(state(active()), yearly, now);
    expect(upgrade.sameInterval).toBe(false);
    expect([upgrade.periodStart, upgrade.periodEnd]).toEqual(['2025-01-11T00:00:00.000Z', '2026-01-11T00:00:00.000Z']);
    expect(upgrade.invoice.lines.map((l) => [l.description, l.amount, l.period_end, l.proration])).toEqual([
      ['Unused time on Pro after 2025-01-11T00:00:00.000Z', -2032, '2025-02-01T00:00:00.000Z', true],
      ['Pro yearly', 60000, '2026-01-11T00:00:00.000Z', false],
    ]);
  });

  it('proration lines of a same-interval upgrade add up to the price difference for the rest of the period, within rounding', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 0, max: 31 * day }),
        (a, b, elapsed) => {
          const start = new Date('2025-01-01T00:00:00.000Z');
          const end = new Date('2025-02-01T00:00:00.000Z');
          const lines = upgradeLines(
            { ...pro, amount: a },
            { ...max, amount: b },
            { start, end },
            new Date(start.getTime() + elapsed),
            null,
          );
          const exact = ((b - a) * (31 * day - elapsed)) / (31 * day);
          expect(Math.abs(lines[0]!.amount! + lines[1]!.amount! - exact)).toBeLessThanOrEqual(1);
          expect(lines[0]!.amount!).toBeLessThanOrEqual(0);
        },
      ),
    );
  });
});

describe('dunning and resume', () => {
  const now = new Date('2025-01-01T00:00:00.000Z');
  const settings = { gracePeriodDays: 5, finalAction: 'pause' as const, retryPolicy: defaultRetryPolicy };
  const invoice = { invoiceId: 'inv_1', number: 'ACME-0001', billingKey: 'sub_1:cycle:0', amount: 3000 };
  const failure = { failureCode: 'card_declined', failureMessage: 'Declined.' };

  it('the first failure schedules the second attempt 24 hours later, with the account settings', () => {
    const d = startDunning(state(active()), invoice, failure, settings, now);
    expect(d).toEqual(dunning({ nextRetryAt: '2025-01-02T00:00:00.000Z', gracePeriodDays: 5, finalAction: 'pause' }));
    expect(startDunning(state(active({ gracePeriodDays: 9 })), invoice, failure, settings, now).gracePeriodDays).toBe(
      9,
    );
  });

  it('each failed retry moves to the next scheduled one, then to the grace period', () => {
    let d = startDunning(state(active()), invoice, failure, settings, now);
    d = failedRetry(d, true, { failureCode: 'x', failureMessage: 'X.' }, new Date('2025-01-02T00:00:00.000Z'));
    expect([d.attempts, d.scheduledAttempts, d.nextRetryAt, d.lastFailureCode]).toEqual([
      2,
      2,
      '2025-01-04T00:00:00.000Z',
      'x',
    ]);
    // A retry after a payment-method update does not move the schedule.
    d = failedRetry(d, false, failure, new Date('2025-01-03T00:00:00.000Z'));
    expect([d.attempts, d.scheduledAttempts, d.nextRetryAt]).toEqual([3, 2, '2025-01-04T00:00:00.000Z']);
    d = failedRetry(d, true, failure, new Date('2025-01-04T00:00:00.000Z'));
    d = failedRetry(d, true, failure, new Date('2025-01-08T00:00:00.000Z'));
    expect([d.attempts, d.scheduledAttempts, d.nextRetryAt, d.graceEndsAt]).toEqual([
      5,
      4,
      null,
      '2025-01-13T00:00:00.000Z',
    ]);
    // The grace period, once set, stays.
    expect(afterFailedAttempt(d, new Date('2025-01-10T00:00:00.000Z')).graceEndsAt).toBe('2025-01-13T00:00:00.000Z');
  });

  it('a resume continues a paid period, starts a new one after it or after a dunning pause, or starts billing', () => {
    const during = new Date('2025-01-20T00:00:00.000Z');
    expect(resumeKind(active({ status: 'paused', pauseReason: 'requested' }), during)).toBe('continue');
    expect(resumeKind(active({ status: 'paused', pauseReason: 'payment_failed' }), during)).toBe('newPeriod');
    expect(
      resumeKind(active({ status: 'paused', pauseReason: 'requested' }), new Date('2025-02-01T00:00:00.000Z')),
    ).toBe('newPeriod');
    expect(resumeKind(snapshot({ status: 'paused' }), during)).toBe('start');
  });
});
