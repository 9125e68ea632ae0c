import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event, SentEmail, WebhookEndpoint } from '../db/entities/index.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { type Received, startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

/**
 * Issue #24, webhooks and test clocks as a new user met them: a sandbox endpoint created after a
 * year-long clock run was sent 81 deliveries of events recorded before it existed, judged its failure
 * window in the clock's time (failing_since 2027-01-01, disabled_at 2027-01-15), was disabled 7 s after
 * its creation, its owner emailed that it "failed every delivery since January 1, 2027", and the real
 * payment that followed was never delivered. And a sandbox url on loopback was accepted at creation
 * but refused at every delivery (the worker judged it by a second reading of the environment).
 * Real HTTP to a real receiver; no Temporal time is skipped.
 */
describe('webhooks and test clocks (issue #24)', () => {
  let engine: TestEngine;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    // No worker at first: the first test leaves a clock run's events waiting for the dispatcher, as a busy one did.
    engine = await startTestEngine({ startWorker: false });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await engine?.close();
  });

  /** The worker, started by the first test once its events wait (or by any test run alone). */
  let working = false;
  const work = async () => {
    if (!working) await engine.startWorker();
    working = true;
  };
  const customerOf = (r: Pick<Received, 'body'>) =>
    (JSON.parse(r.body) as { data: { object: { email?: string } } }).data.object.email;
  const endpointRow = (id: string) => engine.db.orm.em.fork().findOneOrFail(WebhookEndpoint, { id });

  it("an endpoint gets only the events recorded after it, in the real order, not by the clock's time", async () => {
    const { make, accountId } = await clockTenant(engine, 'Late endpoint');
    const clock = await make('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' });
    // A clock's events, recorded (at the clock's time, 2027) before the endpoint exists; the dispatcher has not handed them on yet.
    for (const n of [1, 2, 3]) await make('/v1/customers', { email: `before-${n}@example.com`, test_clock: clock.id });
    const endpoint = await make('/v1/webhooks', { url: receiver.url('/late'), events: ['customer.created'] });
    await make('/v1/customers', { email: 'after@example.com' });
    expect(
      await engine.db.orm.em
        .fork()
        .count(Event, { accountId, livemode: false, dispatchedAt: null, type: 'customer.created' }),
    ).toBe(4);

    await work();
    await receiver.waitFor(1, (r) => r.path === '/late' && customerOf(r) === 'after@example.com');
    // Every event of the account handed on by now (the dispatcher goes in id order): none of the clock's went to the endpoint.
    for (let i = 0; (await engine.db.orm.em.fork().count(Event, { accountId, dispatchedAt: null })) > 0; i++) {
      if (i > 200) throw new Error('events still undispatched');
      await new Promise((r) => setTimeout(r, 25));
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received.filter((r) => r.path === '/late').map(customerOf)).toEqual(['after@example.com']);
    expect(await endpointRow(endpoint.id)).toMatchObject({ enabled: true, failingSince: null });
  });

  it("a clock's failing deliveries never disable an endpoint live deliveries keep healthy, and never stamp it with the clock's time", async () => {
    const { call, make, advance, t } = await clockTenant(engine, 'Healthy endpoint');
    await work();
    // The receiver takes live events and refuses those of the clock's customers.
    receiver.respond = (r) => (r.path === '/healthy' && customerOf(r)?.startsWith('clocked') ? 500 : 200);
    const endpoint = await make('/v1/webhooks', {
      url: receiver.url('/healthy'),
      events: ['customer.created', 'customer.updated'],
    });
    await make('/v1/customers', { email: 'live-1@example.com' });
    await receiver.waitFor(1, (r) => r.path === '/healthy' && customerOf(r) === 'live-1@example.com');

    const clock = await make('/v1/test_clocks', { frozen_time: '2027-01-01T00:00:00Z' });
    await make('/v1/customers', { email: 'clocked-1@example.com', test_clock: clock.id });
    await receiver.waitFor(1, (r) => r.path === '/healthy' && customerOf(r) === 'clocked-1@example.com');
    // Two weeks of the clock: every retry of the delivery (7 attempts over an hour of the clock's time) fails, on 2027-01-01.
    await advance(clock.id, '2027-01-08T00:00:00Z');
    // Advanced at once: the clock waits for the event's delivery and its retries (registered as the dispatcher hands it on).
    await make('/v1/customers', { email: 'clocked-2@example.com', test_clock: clock.id });
    await advance(clock.id, '2027-01-15T00:00:00Z');
    const clockAttempts = receiver.received.filter(
      (r) => r.path === '/healthy' && customerOf(r)?.startsWith('clocked'),
    );
    expect(clockAttempts.length).toBe(14);
    expect(clockAttempts.every((r) => r.status === 500)).toBe(true);

    const row = await endpointRow(endpoint.id);
    expect(row).toMatchObject({ enabled: true, disabledAt: null, failingSince: null });
    expect((await call('GET', `/v1/webhooks/${endpoint.id}`)).body).toMatchObject({
      enabled: true,
      disabled_at: null,
      failing_since: null,
    });
    expect(
      await engine.db.orm.em
        .fork()
        .count(SentEmail, { accountId: t.accountId, dedupeKey: { $like: 'webhook_endpoint_disabled:%' } }),
    ).toBe(0);
    // The live event that follows is delivered.
    await make('/v1/customers', { email: 'live-2@example.com' });
    await receiver.waitFor(1, (r) => r.path === '/healthy' && customerOf(r) === 'live-2@example.com');
    receiver.respond = () => 200;
  });

  it("an endpoint's failure window is judged on the wall clock: a clock's 2027 does not end a run that began seconds ago", async () => {
    const { call, make } = await clockTenant(engine, 'Failing endpoint');
    await work();
    receiver.respond = (r) => (r.path === '/failing' ? 503 : 200);
    const endpoint = await make('/v1/webhooks', { url: receiver.url('/failing'), events: ['customer.created'] });
    const before = Date.now();
    await make('/v1/customers', { email: 'live-fail@example.com' });
    await receiver.waitFor(1, (r) => r.path === '/failing' && customerOf(r) === 'live-fail@example.com');
    for (let i = 0; !(await endpointRow(endpoint.id)).failingSince; i++) {
      if (i > 200) throw new Error('failing_since never set');
      await new Promise((r) => setTimeout(r, 25));
    }
    const failingSince = (await endpointRow(endpoint.id)).failingSince!;
    expect(failingSince.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(failingSince.getTime()).toBeLessThan(Date.now() + 60_000);

    // A clock's event fails too, stamped 2027-06-01: a year after the run began by the clock's time, seconds by the wall's.
    const clock = await make('/v1/test_clocks', { frozen_time: '2027-06-01T00:00:00Z' });
    await make('/v1/customers', { email: 'clocked-fail@example.com', test_clock: clock.id });
    await receiver.waitFor(1, (r) => r.path === '/failing' && customerOf(r) === 'clocked-fail@example.com');
    await new Promise((r) => setTimeout(r, 500));
    const row = await endpointRow(endpoint.id);
    expect(row.enabled).toBe(true);
    expect(row.disabledAt).toBeNull();
    expect(row.failingSince?.toISOString()).toBe(failingSince.toISOString());
    expect((await call('GET', `/v1/webhooks/${endpoint.id}`)).body.failing_since.startsWith('2027')).toBe(false);
    receiver.respond = () => 200;
  });

  it('the worker judges a sandbox url by the rule the API checked it with at creation (loopback allowed in development and test)', async () => {
    const { make } = await clockTenant(engine, 'Loopback endpoint');
    await work();
    // The API took its rule from the configuration (NODE_ENV=test: sandbox may target loopback); the worker
    // must apply that same rule, not re-read an environment that says otherwise.
    expect(engine.config.webhookUrlPolicy.sandboxPrivateNetworks).toBe(true);
    const saved = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      const endpoint = await make('/v1/webhooks', { url: receiver.url('/loopback'), events: ['customer.created'] });
      expect(endpoint.url).toBe(receiver.url('/loopback'));
      await make('/v1/customers', { email: 'loopback@example.com' });
      const [got] = await receiver.waitFor(1, (r) => r.path === '/loopback', 10_000);
      expect(got!.status).toBe(200);
    } finally {
      process.env.NODE_ENV = saved;
    }
  });
});
