import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AccountModeSettings, Subscription } from '../db/entities/index.ts';
import { defaultRetryPolicy } from '../domain/dunning.ts';
import { loadModeSettings } from '../services/accounts/mode-settings.ts';
import { createTestDatabase } from './helpers/db.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 24 * 60 * 60_000;

/**
 * Billing and notification settings belong to a mode (issue #11): a change in the
 * sandbox never changes live and the reverse, reads answer the caller's mode, and
 * dunning and emails follow the subscription's mode.
 */
describe('settings per mode', () => {
  let engine: TestEngine;
  let tenant: Tenant;
  let sandbox: Record<string, string>;
  let testKey: Record<string, string>;
  const live = () => tenant.headers;
  const as = (headers: Record<string, string>, method: string, path: string, body?: unknown) =>
    engine.call(method, path, body, headers);

  beforeAll(async () => {
    engine = await startTestEngine();
    tenant = await engine.signUp({ name: 'Two Modes' });
    sandbox = { ...tenant.headers, 'x-sandbox-mode': 'true' };
    const key = await engine.call('POST', '/v1/api_keys', { mode: 'test' }, tenant.headers);
    testKey = { authorization: `Bearer ${key.body.secret}` };
  });
  afterAll(() => engine?.close());

  const defaults = {
    object: 'billing_settings',
    grace_period_days: 7,
    retry_policy: defaultRetryPolicy,
    dunning_final_action: 'cancel',
  };
  const allOn = {
    object: 'notification_settings',
    payout_confirmations: true,
    failed_payments: true,
    subscription_cancellations: true,
  };

  it('billing settings: a sandbox change leaves live as it was, and a live change leaves the sandbox as it was', async () => {
    const sandboxPolicy = { max_attempts: 2, intervals: ['immediate', '2d'] };
    const changed = await as(sandbox, 'PATCH', '/v1/settings', {
      retry_policy: sandboxPolicy,
      dunning_final_action: 'pause',
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ ...defaults, retry_policy: sandboxPolicy, dunning_final_action: 'pause' });
    expect((await as(testKey, 'POST', '/v1/settings/grace_period', { days: 2 })).body).toMatchObject({
      grace_period_days: 2,
    });
    expect((await as(live(), 'GET', '/v1/settings')).body).toEqual(defaults);

    const livePolicy = { max_attempts: 3, intervals: ['immediate', '1d', '5d'] };
    expect(
      (await as(live(), 'PATCH', '/v1/settings', { retry_policy: livePolicy, grace_period_days: 5 })).body,
    ).toEqual({ ...defaults, retry_policy: livePolicy, grace_period_days: 5 });
    const sandboxNow = {
      ...defaults,
      retry_policy: sandboxPolicy,
      dunning_final_action: 'pause',
      grace_period_days: 2,
    };
    expect((await as(sandbox, 'GET', '/v1/settings')).body).toEqual(sandboxNow);
    expect((await as(testKey, 'GET', '/v1/settings')).body).toEqual(sandboxNow);
    expect((await as(live(), 'GET', '/v1/settings')).body).toEqual({
      ...defaults,
      retry_policy: livePolicy,
      grace_period_days: 5,
    });
  });

  it('notification settings: a sandbox change leaves live as it was, and the reverse; account.updated only in the mode changed', async () => {
    const other = await engine.signUp({ name: 'Quiet Sandbox' });
    const otherSandbox = { ...other.headers, 'x-sandbox-mode': 'true' };
    expect((await as(otherSandbox, 'PATCH', '/v1/settings/notifications', { failed_payments: false })).body).toEqual({
      ...allOn,
      failed_payments: false,
    });
    expect((await as(other.headers, 'GET', '/v1/settings/notifications')).body).toEqual(allOn);
    expect(
      (await as(other.headers, 'PATCH', '/v1/settings/notifications', { payout_confirmations: false })).body,
    ).toEqual({ ...allOn, payout_confirmations: false });
    expect((await as(otherSandbox, 'GET', '/v1/settings/notifications')).body).toEqual({
      ...allOn,
      failed_payments: false,
    });
    expect((await as(other.headers, 'GET', '/v1/settings/notifications')).body).toEqual({
      ...allOn,
      payout_confirmations: false,
    });
    // Billing settings of either mode are untouched by notification changes.
    expect((await as(otherSandbox, 'GET', '/v1/settings')).body).toEqual(defaults);
    const liveEvents = (await as(other.headers, 'GET', '/v1/events?type=account.updated')).body.data;
    const sandboxEvents = (await as(otherSandbox, 'GET', '/v1/events?type=account.updated')).body.data;
    expect(liveEvents).toHaveLength(1);
    expect(sandboxEvents).toHaveLength(1);
    expect(liveEvents[0]).toMatchObject({
      livemode: true,
      data: { object: { id: other.accountId, object: 'account' } },
    });
    expect(sandboxEvents[0].livemode).toBe(false);
  });

  it("dunning: a live subscription retries on the live policy while the sandbox one differs; each mode's failed_payments governs its emails", async () => {
    // From the first test: live retries at 1d and 5d, the sandbox at 2d and ends in a pause. The sandbox also turns failed-payment emails off.
    await as(sandbox, 'PATCH', '/v1/settings/notifications', { failed_payments: false });
    const subscribe = async (headers: Record<string, string>, email: string) => {
      const customer = await as(headers, 'POST', '/v1/customers', { email, payment_method: 'pm_card_chargeDeclined' });
      const plan = await as(headers, 'POST', '/v1/plans', {
        name: 'Team',
        amount: 4900,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await as(headers, 'POST', '/v1/subscriptions', {
        customer_id: customer.body.id,
        plan: plan.body.id,
        trial_period_days: 0,
      });
      expect(sub.body).toMatchObject({ status: 'past_due', dunning: { attempt_count: 1 } });
      return sub.body;
    };
    const liveSub = await subscribe(live(), 'live-dunning@example.com');
    const sandboxSub = await subscribe(sandbox, 'sandbox-dunning@example.com');
    const firstLive = Date.parse(liveSub.dunning.first_failed_at);
    const firstSandbox = Date.parse(sandboxSub.dunning.first_failed_at);
    expect(Date.parse(liveSub.dunning.next_payment_attempt) - firstLive).toBe(day);
    expect(Date.parse(sandboxSub.dunning.next_payment_attempt) - firstSandbox).toBe(2 * day);
    const stored = async (id: string) => (await engine.db.orm.em.fork().findOneOrFail(Subscription, { id })).dunning!;
    expect(await stored(liveSub.id)).toMatchObject({
      policy: { max_attempts: 3, intervals: ['immediate', '1d', '5d'] },
      gracePeriodDays: 5,
      finalAction: 'cancel',
    });
    expect(await stored(sandboxSub.id)).toMatchObject({
      policy: { max_attempts: 2, intervals: ['immediate', '2d'] },
      gracePeriodDays: 2,
      finalAction: 'pause',
    });

    // Live sends the failed-payment email; the sandbox, whose failed_payments is off, sends none.
    const liveMail = () => engine.mail.messages.filter((m) => m.envelopeTo.includes('live-dunning@example.com'));
    await eventually(
      async () => liveMail(),
      (m) => m.length >= 1,
    );
    const notified = async (id: string) => {
      const history = await engine.env.client.workflow.getHandle(id).fetchHistory();
      const scheduled = new Set(
        (history.events ?? [])
          .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'notifyPaymentFailed')
          .map((e) => String(e.eventId)),
      );
      return (history.events ?? []).filter(
        (e) =>
          e.activityTaskCompletedEventAttributes &&
          scheduled.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId)),
      ).length;
    };
    await eventually(
      () => notified(sandboxSub.id),
      (n) => n >= 1,
    );
    expect(engine.mail.messages.filter((m) => m.envelopeTo.includes('sandbox-dunning@example.com'))).toHaveLength(0);
    for (const id of [liveSub.id, sandboxSub.id])
      await engine.call('POST', `/v1/subscriptions/${id}/cancel`, {}, id === liveSub.id ? live() : sandbox);
  });

  it('a new account reads the defaults in both modes and has no settings row until it changes one', async () => {
    const fresh = await engine.signUp();
    expect((await as(fresh.headers, 'GET', '/v1/settings')).body).toEqual(defaults);
    expect(
      (await as({ ...fresh.headers, 'x-sandbox-mode': 'true' }, 'GET', '/v1/settings/notifications')).body,
    ).toEqual(allOn);
    expect(await engine.db.orm.em.fork().count(AccountModeSettings, { accountId: fresh.accountId })).toBe(0);
  });
});

describe('migration Migration20261123110000_settings_per_mode', () => {
  it('copies the settings an account had into both modes and leaves accounts.settings with only currency, timezone and language', async () => {
    const db = await createTestDatabase();
    try {
      await db.orm.migrator.down('Migration20261123110000_settings_per_mode');
      const connection = db.orm.em.getConnection();
      const old = {
        currency: 'EUR',
        timezone: 'Europe/Paris',
        language: 'fr',
        grace_period_days: 3,
        retry_policy: { max_attempts: 2, intervals: ['immediate', '3d'] },
        dunning_final_action: 'pause',
        notifications: { failed_payments: false },
      };
      const insert = `insert into accounts (id, email, name, type, status, settings, created_at, updated_at) values (?, ?, 'Old', 'business', 'active', ?::jsonb, now(), now())`;
      await connection.execute(insert, ['acct_old', 'old@example.com', JSON.stringify(old)]);
      await connection.execute(insert, [
        'acct_plain',
        'plain@example.com',
        JSON.stringify({ currency: 'USD', timezone: 'UTC', language: 'en' }),
      ]);
      await db.orm.migrator.up();

      for (const livemode of [true, false]) {
        expect(await loadModeSettings(db.orm.em.fork(), 'acct_old', livemode)).toEqual({
          billing: {
            gracePeriodDays: 3,
            retryPolicy: { max_attempts: 2, intervals: ['immediate', '3d'] },
            finalAction: 'pause',
          },
          notifications: { payout_confirmations: true, failed_payments: false, subscription_cancellations: true },
        });
        expect(await loadModeSettings(db.orm.em.fork(), 'acct_plain', livemode)).toEqual({
          billing: { gracePeriodDays: 7, retryPolicy: defaultRetryPolicy, finalAction: 'cancel' },
          notifications: { payout_confirmations: true, failed_payments: true, subscription_cancellations: true },
        });
      }
      const [row] = await connection.execute<{ settings: unknown }[]>(
        `select settings from accounts where id = 'acct_old'`,
      );
      expect(row!.settings).toEqual({ currency: 'EUR', timezone: 'Europe/Paris', language: 'fr' });

      // Down puts live's values back where they were.
      await connection.execute(
        `update account_mode_settings set grace_period_days = 9 where account_id = 'acct_old' and not livemode`,
      );
      await db.orm.migrator.down('Migration20261123110000_settings_per_mode');
      const [back] = await connection.execute<{ settings: unknown }[]>(
        `select settings from accounts where id = 'acct_old'`,
      );
      expect(back!.settings).toEqual(old);
    } finally {
      await db.close();
    }
  });
});
