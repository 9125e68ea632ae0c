import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { Payout } from '../db/entities/index.ts';
import { defaultScheduleSettings, nextRunAfter, type ScheduleSettings } from '../domain/payout-schedule.ts';
import { patchSchedule, payoutScheduleWorkflowId, runScheduledPayouts } from '../services/payouts/schedule.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const day = 86_400_000;

/**
 * Payout schedules in skipped time: one payoutScheduleWorkflow per account and
 * mode pays out exactly the available balance at each daily, weekly and monthly
 * run (Jan 31 → Feb 28), skips a held account saying why and resumes once the
 * hold is released; settings API and its errors; holds API; tenants and modes apart.
 */
describe('payout schedules', () => {
  let engine: TestEngine;
  const sandbox = { 'x-sandbox-mode': 'true' };
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    engine.call(method, path, body, headers);
  const as =
    (t: Tenant) =>
    (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      call(method, path, body, { ...t.headers, ...sandbox, ...headers });
  // Each test's schedules go manual when it ends: a daily schedule left running would run on every
  // skipped day of the later tests (the monthly test skips a year).
  const tenants: Tenant[] = [];
  afterEach(async () => {
    for (const t of tenants.splice(0)) {
      for (const currency of ['USD', 'EUR'])
        await as(t)('PATCH', '/v1/payout_settings', { currency, interval: 'manual' });
    }
  });
  async function newTenant() {
    const t = await engine.signUp();
    tenants.push(t);
    const api = as(t);
    expect(
      (
        await api('POST', '/v1/bank_accounts', {
          type: 'us_ach',
          account_holder_name: 'Sched',
          currency: 'USD',
          routing_number: '110000000',
          account_number: '000123456789',
        })
      ).status,
    ).toBe(201);
    return { t, api };
  }
  async function fund(t: Tenant, amount: number) {
    const credit = await as(t)('POST', '/v1/transactions', {
      account_id: t.accountId,
      amount,
      currency: 'USD',
      type: 'credit',
    });
    expect(credit.status, JSON.stringify(credit.body)).toBe(201);
  }
  const available = async (t: Tenant) =>
    ((await as(t)('GET', '/v1/balance')).body.available.find((m: { currency: string }) => m.currency === 'USD')
      ?.amount ?? 0) as number;
  const automatic = (t: Tenant) =>
    engine.db.orm.em.fork().find(Payout, { accountId: t.accountId, automatic: true }, { orderBy: { id: 'asc' } });
  const now = () => engine.env.currentTimeMs();
  async function skipTo(instant: number) {
    const ahead = instant - (await now());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  const details = async (t: Tenant) =>
    ((
      await engine.env.client.workflow
        .getHandle(payoutScheduleWorkflowId({ accountId: t.accountId, livemode: false }))
        .query<{ currentDetails?: string }>('__temporal_workflow_metadata')
    ).currentDetails ?? '') as string;
  /** Skips to `run` plus a few minutes, then waits for the run's payouts to be `count`. */
  async function runAndExpect(t: Tenant, run: Date, count: number) {
    await skipTo(run.getTime() + 2 * minute);
    return eventually(
      () => automatic(t),
      (rows) => rows.length === count,
      20_000,
    );
  }

  it('settings: defaults, validation, per mode and currency, next_payout_at', async () => {
    const { t, api } = await newTenant();
    const initial = await api('GET', '/v1/payout_settings');
    expect(initial.body).toEqual({
      object: 'payout_settings',
      livemode: false,
      schedules: ['USD', 'EUR', 'GBP'].map((currency) => ({
        currency,
        interval: 'manual',
        weekly_anchor: null,
        monthly_anchor: null,
        delay_days: 0,
        minimum_amount: 0,
        next_payout_at: null,
      })),
    });
    const bad: [unknown, string][] = [
      [{ currency: 'USD', interval: 'weekly' }, 'weekly_anchor: required for a weekly schedule'],
      [{ currency: 'USD', interval: 'monthly' }, 'monthly_anchor: required for a monthly schedule (1-31)'],
      [
        { currency: 'USD', interval: 'daily', weekly_anchor: 'monday' },
        'weekly_anchor: only a weekly schedule takes one (interval is daily)',
      ],
      [{ currency: 'JPY', interval: 'daily' }, 'currency: payouts go out in USD, EUR, GBP only, not JPY.'],
    ];
    for (const [body, message] of bad) {
      const response = await api('PATCH', '/v1/payout_settings', body);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', message });
    }
    expect(
      (await api('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'monthly', monthly_anchor: 32 })).status,
    ).toBe(400);
    expect((await api('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'yearly' })).status).toBe(400);
    const set = await api('PATCH', '/v1/payout_settings', {
      currency: 'eur',
      interval: 'weekly',
      weekly_anchor: 'friday',
      minimum_amount: 500,
    });
    expect(set.status).toBe(200);
    const eur = set.body.schedules.find((s: { currency: string }) => s.currency === 'EUR');
    expect(eur).toMatchObject({ interval: 'weekly', weekly_anchor: 'friday', minimum_amount: 500 });
    expect(new Date(eur.next_payout_at).getUTCDay()).toBe(5);
    // Switching interval drops the other anchor.
    const monthly = await api('PATCH', '/v1/payout_settings', {
      currency: 'EUR',
      interval: 'monthly',
      monthly_anchor: 31,
    });
    expect(monthly.body.schedules.find((s: { currency: string }) => s.currency === 'EUR')).toMatchObject({
      interval: 'monthly',
      weekly_anchor: null,
      monthly_anchor: 31,
    });
    // Live mode and other tenants are untouched.
    expect(
      (await call('GET', '/v1/payout_settings', undefined, t.headers)).body.schedules.every(
        (s: { interval: string }) => s.interval === 'manual',
      ),
    ).toBe(true);
    const other = await engine.signUp();
    expect(
      (await call('GET', '/v1/payout_settings', undefined, { ...other.headers, ...sandbox })).body.schedules.every(
        (s: { interval: string }) => s.interval === 'manual',
      ),
    ).toBe(true);
    // One workflow for the account and mode, showing the next payout in its memo.
    const handle = engine.env.client.workflow.getHandle(
      payoutScheduleWorkflowId({ accountId: t.accountId, livemode: false }),
    );
    const described = await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'RUNNING',
    );
    expect(described.type).toBe('payoutScheduleWorkflow');
    await eventually(
      () => details(t),
      (d) => d.startsWith('Next payout '),
    );
    // The memo nextPayoutAt is upserted (the test server does not show memos in describe; a real server's UI does).
    const memos = async () =>
      ((await handle.fetchHistory()).events ?? []).flatMap((e) => {
        const memo = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.nextPayoutAt;
        if (!memo) return [];
        // null is encoded as binary/null with no data.
        return [memo.data?.length ? JSON.parse(Buffer.from(memo.data).toString('utf8')) : null];
      });
    expect((await eventually(memos, (m) => m.length > 0)).at(-1)).toMatch(/^\d{4}-\d{2}-\d{2}T00:00:00\.000Z$/);
    expect((await api('PATCH', '/v1/payout_settings', { currency: 'EUR', interval: 'manual' })).status).toBe(200);
    await eventually(
      () => details(t),
      (d) => d.startsWith('No payout scheduled'),
    );
    await eventually(memos, (m) => m.at(-1) === null);
    const member = await api(
      'POST',
      '/v1/users',
      { email: `s-${Date.now()}@example.com`, password: 'Member!pass1', name: 'M' },
      { 'x-sandbox-mode': 'false' },
    );
    const session = await engine.login(member.body.email, 'Member!pass1');
    expect(
      (
        await call(
          'PATCH',
          '/v1/payout_settings',
          { currency: 'USD', interval: 'daily' },
          { ...session.headers, ...sandbox },
        )
      ).status,
    ).toBe(403);
  });

  it('closing the account stops its payout schedule: the workflow is canceled and pays nothing more', async () => {
    const { t, api } = await newTenant();
    expect((await api('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'daily' })).status).toBe(200);
    const handle = engine.env.client.workflow.getHandle(
      payoutScheduleWorkflowId({ accountId: t.accountId, livemode: false }),
    );
    await eventually(
      () => details(t),
      (d) => d.startsWith('Next payout '),
    );
    await fund(t, 5_000);
    expect((await call('DELETE', '/v1/account', undefined, t.headers)).status).toBe(200);
    tenants.splice(tenants.indexOf(t), 1); // closed: nothing left to set manual
    await eventually(
      () => handle.describe(),
      (d) => d.status.name === 'CANCELLED',
    );
    await skipTo((await now()) + 2 * day);
    expect(await automatic(t)).toEqual([]);
  });

  it('daily: each run pays out exactly the available balance; an empty run pays nothing; a hold skips and its release resumes', async () => {
    const { t, api } = await newTenant();
    await fund(t, 1000);
    const settings: ScheduleSettings = { ...defaultScheduleSettings, interval: 'daily' };
    expect((await api('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'daily' })).status).toBe(200);
    const first = nextRunAfter(settings, new Date(await now()))!;
    let rows = await runAndExpect(t, first, 1);
    expect(rows[0]).toMatchObject({ amount: 1000, currency: 'USD', automatic: true });
    expect(await available(t)).toBe(0);

    await fund(t, 250);
    const second = nextRunAfter(settings, first)!;
    rows = await runAndExpect(t, second, 2);
    expect(rows[1]!.amount).toBe(250);
    expect(await available(t)).toBe(0);

    // Nothing to pay: the run skips and says so.
    const third = nextRunAfter(settings, second)!;
    await skipTo(third.getTime() + 2 * minute);
    await eventually(
      () => details(t),
      (d) => d.includes(`Last run: ${third.toISOString()}: USD skipped ($0.00 to pay out)`),
      20_000,
    );
    expect(await automatic(t)).toHaveLength(2);

    // A hold on the account: the next run skips, naming it.
    await fund(t, 400);
    const hold = await api('POST', '/v1/payout_holds', { reason: 'KYC review' });
    expect(hold.status).toBe(201);
    expect(hold.body).toMatchObject({
      object: 'payout_hold',
      payout: null,
      reason: 'KYC review',
      active: true,
      created_by: 'owner',
    });
    const fourth = nextRunAfter(settings, third)!;
    await skipTo(fourth.getTime() + 2 * minute);
    await eventually(
      () => details(t),
      (d) => d.includes(`Last run: ${fourth.toISOString()}: USD skipped (held by ${hold.body.id}: KYC review)`),
      20_000,
    );
    expect(await automatic(t)).toHaveLength(2);
    expect(await available(t)).toBe(400);
    // Released: the next run pays the 400.
    const released = await api('DELETE', `/v1/payout_holds/${hold.body.id}`);
    expect(released.body).toMatchObject({ active: false, released_at: expect.any(String) });
    expect((await api('DELETE', `/v1/payout_holds/${hold.body.id}`)).body.error).toBe('invalid_state');
    rows = await runAndExpect(t, nextRunAfter(settings, fourth)!, 3);
    expect(rows[2]!.amount).toBe(400);
    // Every scheduled payout reaches paid.
    await skipTo((await now()) + day + 2 * minute);
    await eventually(
      () => automatic(t),
      (all) => all.every((p) => p.status === 'paid'),
      20_000,
    );
  });

  it('continues as new after runsPerExecution runs, carrying the last run, paying each run once', async () => {
    const { t, api } = await newTenant();
    // The settings as PATCH writes them, and the workflow as PATCH starts it but with a short execution (the default is 30 runs).
    await patchSchedule(
      engine.db.orm.em.fork(),
      { accountId: t.accountId, livemode: false },
      { currency: 'USD', interval: 'daily' },
    );
    expect((await api('GET', '/v1/payout_settings')).body.schedules[0].interval).toBe('daily');
    const workflowId = payoutScheduleWorkflowId({ accountId: t.accountId, livemode: false });
    await engine.env.client.workflow.start('payoutScheduleWorkflow', {
      workflowId,
      taskQueue: engine.taskQueue,
      args: [{ accountId: t.accountId, livemode: false, runsPerExecution: 2 }],
    });
    const firstRun = (await engine.env.client.workflow.getHandle(workflowId).describe()).runId;
    const settings: ScheduleSettings = { ...defaultScheduleSettings, interval: 'daily' };
    let run = nextRunAfter(settings, new Date(await now()))!;
    for (let i = 1; i <= 3; i++) {
      await fund(t, 10 * i);
      const rows = await runAndExpect(t, run, i);
      expect(rows[i - 1]!.amount).toBe(10 * i);
      if (i < 3) run = nextRunAfter(settings, run)!;
    }
    const described = await engine.env.client.workflow.getHandle(workflowId).describe();
    expect(described.runId).not.toBe(firstRun);
    expect(described.status.name).toBe('RUNNING');
    await eventually(
      () => details(t),
      (d) => d.includes(`Last run: ${run.toISOString()}: USD 30 in `),
      20_000,
    );
  });

  it('weekly: pays on the anchor day only', async () => {
    const { t, api } = await newTenant();
    await fund(t, 777);
    const settings: ScheduleSettings = { ...defaultScheduleSettings, interval: 'weekly', weeklyAnchor: 'wednesday' };
    expect(
      (await api('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'weekly', weekly_anchor: 'wednesday' }))
        .status,
    ).toBe(200);
    const first = nextRunAfter(settings, new Date(await now()))!;
    expect(first.getUTCDay()).toBe(3);
    const rows = await runAndExpect(t, first, 1);
    expect(rows[0]!.amount).toBe(777);
    await fund(t, 123);
    // Six days later: still one payout.
    await skipTo(first.getTime() + 6 * day + minute);
    expect(await automatic(t)).toHaveLength(1);
    const again = await runAndExpect(t, nextRunAfter(settings, first)!, 2);
    expect(again[1]!.amount).toBe(123);
    expect(again[1]!.createdAt.getTime() - again[0]!.createdAt.getTime()).toBeGreaterThanOrEqual(0);
  });

  it('monthly on the 31st: every month end, Jan 31 then Feb 28, each the balance then available', async () => {
    const { t, api } = await newTenant();
    // Skip to the next Jan 20 first, so the runs that matter (Jan 31, then February's end) come within three.
    const today = new Date(await now());
    await skipTo(Date.UTC(today.getUTCFullYear() + 1, 0, 20));
    const settings: ScheduleSettings = { ...defaultScheduleSettings, interval: 'monthly', monthlyAnchor: 31 };
    expect(
      (await api('PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'monthly', monthly_anchor: 31 })).status,
    ).toBe(200);
    let run = nextRunAfter(settings, new Date(await now()))!;
    const seen: string[] = [];
    for (let i = 1; i <= 15; i++) {
      const amount = 100 * i;
      await fund(t, amount);
      const rows = await runAndExpect(t, run, i);
      expect(rows[i - 1]!.amount).toBe(amount);
      expect(rows[i - 1]!.description).toBe(`Scheduled monthly payout of ${run.toISOString().slice(0, 10)}`);
      seen.push(run.toISOString().slice(0, 10));
      if (seen.length >= 2 && seen.at(-2)!.endsWith('-01-31')) break;
      run = nextRunAfter(settings, run)!;
    }
    const jan = seen.findIndex((d) => d.endsWith('-01-31'));
    expect(jan).toBeGreaterThanOrEqual(0);
    expect(seen[jan + 1]).toMatch(/-02-(28|29)$/);
    expect(await available(t)).toBe(0);
  });

  it('delay_days: money available for less than the delay stays for a later run', async () => {
    // The run itself, as the schedule's activity makes it (the workflow's own clock is the test
    // server's, which earlier files may have moved far from the wall clock that dates the money).
    const { t } = await newTenant();
    const scope = { accountId: t.accountId, livemode: false };
    await patchSchedule(engine.db.orm.em.fork(), scope, { currency: 'USD', interval: 'daily', delay_days: 2 });
    await fund(t, 1_000);
    const midnight = (daysAhead: number) => {
      const d = new Date();
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + daysAhead);
    };
    const run = (at: number) => runScheduledPayouts(engine.db.orm.em.fork(), engine.context.temporal, scope, at);
    // Tomorrow's run: the credit became available today, within the 2-day delay.
    expect(await run(midnight(1))).toEqual([{ currency: 'USD', skipped: '$0.00 to pay out' }]);
    // Three days on it is old enough: paid out whole, once however often the run is retried.
    const [paid] = await run(midnight(3));
    expect(paid).toMatchObject({ currency: 'USD', amount: 1_000, payoutId: expect.stringMatching(/^po_/) });
    expect(await run(midnight(3))).toEqual([paid]);
    expect(await available(t)).toBe(0);
  });

  it('a hold on one payout keeps it pending and shows it; released, it is sent; admins hold any account and only they release it', async () => {
    const { t, api } = await newTenant();
    await fund(t, 5000);
    const payout = await api('POST', '/v1/payouts', { amount: 1000, currency: 'USD' });
    const hold = await api('POST', '/v1/payout_holds', { reason: 'Check this one', payout: payout.body.id });
    expect(hold.body).toMatchObject({ payout: payout.body.id });
    await skipTo((await now()) + 2 * minute);
    const held = await eventually(
      async () => (await api('GET', `/v1/payouts/${payout.body.id}`)).body,
      (p) => p.hold !== null,
    );
    expect(held).toMatchObject({ status: 'pending', hold: { id: hold.body.id, reason: 'Check this one' } });
    await skipTo((await now()) + 2 * day);
    expect((await api('GET', `/v1/payouts/${payout.body.id}`)).body.status).toBe('pending');
    expect((await api('DELETE', `/v1/payout_holds/${hold.body.id}`)).status).toBe(200);
    const sent = await eventually(
      async () => (await api('GET', `/v1/payouts/${payout.body.id}`)).body,
      (p) => p.status === 'in_transit',
      20_000,
    );
    expect(sent.hold).toBeNull();

    // The admin holds the account; a new payout is caught by it; the owner cannot release it.
    const admin = { ...(await engine.admin()).headers, 'x-account-id': t.accountId, ...sandbox };
    const adminHold = await call(
      'POST',
      '/v1/payout_holds',
      { reason: 'Fraud review', until: new Date((await now()) + 30 * day).toISOString() },
      admin,
    );
    expect(adminHold.status).toBe(201);
    expect(adminHold.body).toMatchObject({ created_by: 'admin', account_id: t.accountId });
    const caught = await api('POST', '/v1/payouts', { amount: 500, currency: 'USD' });
    await skipTo((await now()) + 2 * minute);
    await eventually(
      async () => (await api('GET', `/v1/payouts/${caught.body.id}`)).body.hold,
      (h) => h?.id === adminHold.body.id,
    );
    const refused = await api('DELETE', `/v1/payout_holds/${adminHold.body.id}`);
    expect(refused.status).toBe(403);
    expect((await api('GET', '/v1/payout_holds?active=true')).body.data.map((h: { id: string }) => h.id)).toEqual([
      adminHold.body.id,
    ]);
    expect((await call('DELETE', `/v1/payout_holds/${adminHold.body.id}`, undefined, admin)).status).toBe(200);
    await eventually(
      async () => (await api('GET', `/v1/payouts/${caught.body.id}`)).body.status,
      (s) => s === 'in_transit',
      20_000,
    );

    // A hold with `until` lapses by itself: the payout it caught is sent then, with no release.
    const timed = await api('POST', '/v1/payout_holds', {
      reason: 'Cooling off',
      until: new Date((await now()) + day).toISOString(),
    });
    const waiting = await api('POST', '/v1/payouts', { amount: 300, currency: 'USD' });
    await skipTo((await now()) + 2 * minute);
    await eventually(
      async () => (await api('GET', `/v1/payouts/${waiting.body.id}`)).body.hold,
      (h) => h?.id === timed.body.id,
    );
    await skipTo(new Date(timed.body.until).getTime() + minute);
    await eventually(
      async () => (await api('GET', `/v1/payouts/${waiting.body.id}`)).body,
      (p) => p.status === 'in_transit' && p.hold === null,
      20_000,
    );

    // Errors and isolation.
    expect((await api('POST', '/v1/payout_holds', { reason: '' })).status).toBe(400);
    expect((await api('POST', '/v1/payout_holds', { reason: 'x', until: '2001-01-01T00:00:00Z' })).body).toEqual({
      error: 'invalid_request',
      message: 'until: must be in the future.',
    });
    expect((await api('POST', '/v1/payout_holds', { reason: 'x', payout: 'po_nope' })).status).toBe(404);
    expect((await api('POST', '/v1/payout_holds', { reason: 'x', payout: caught.body.id })).body.error).toBe(
      'invalid_state',
    );
    const other = await engine.signUp();
    expect(
      (await call('DELETE', `/v1/payout_holds/${hold.body.id}`, undefined, { ...other.headers, ...sandbox })).status,
    ).toBe(404);

    // Canceling a held payout ends its hold too: nothing is left for it to hold.
    const another = await api('POST', '/v1/payouts', { amount: 200, currency: 'USD' });
    const onIt = await api('POST', '/v1/payout_holds', { reason: 'Look first', payout: another.body.id });
    expect((await api('GET', '/v1/payout_holds?active=true')).body.data.map((h: { id: string }) => h.id)).toContain(
      onIt.body.id,
    );
    expect((await api('POST', `/v1/payouts/${another.body.id}/cancel`)).status).toBe(200);
    expect((await api('GET', '/v1/payout_holds?active=true')).body.data.map((h: { id: string }) => h.id)).not.toContain(
      onIt.body.id,
    );
    expect((await call('GET', '/v1/payout_holds', undefined, { ...other.headers, ...sandbox })).body.data).toEqual([]);
    expect((await call('GET', '/v1/payout_holds', undefined, t.headers)).body.data).toEqual([]);
  });
});
