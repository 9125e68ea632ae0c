/**
 * Webhooks end to end: a real HTTP receiver on 127.0.0.1 (sandbox endpoints:
 * live ones may not target loopback), events made through the API, and every
 * signature checked with the `standardwebhooks` package (the Standard Webhooks
 * reference implementation), not with the engine's own signing code.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
// Through the package's export, as a receiver written in TypeScript would import it.
import { verifyWebhook } from 'billing-engine/verify-webhook';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event, WebhookDelivery, WebhookEndpoint } from '../db/entities/index.ts';
import { eventDispatchWorkflowId } from '../services/webhooks/dispatch.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';
import { type Received, startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

let engine: TestEngine;
let receiver: WebhookReceiver;
const sandbox = { 'x-sandbox-mode': 'true' };
/** Status per path; 200 when unset. */
const statusByPath = new Map<string, number>();

beforeAll(async () => {
  engine = await startTestEngine();
  receiver = await startWebhookReceiver();
  // The dispatcher as the API would start it, but with a 30-minute idle timer instead of 60 s, so
  // skipping a day of time costs 48 idle passes, not 1,440 (the fast paths wake it for every change).
  await engine.env.client.workflow.start('eventDispatchWorkflow', {
    workflowId: eventDispatchWorkflowId(engine.taskQueue),
    taskQueue: engine.taskQueue,
    args: [{ idleMaxMs: 30 * 60_000 }],
  });
  receiver.respond = (r) => statusByPath.get(r.path) ?? 200;
  receiver.diagnose = dispatcherState;
});
afterAll(async () => {
  await receiver?.close();
  await engine?.close();
});

const as = (t: Tenant, extra: Record<string, string> = sandbox) => ({ ...t.headers, ...extra });
const at = (path: string) => (r: Received) => r.path === path;
const payload = (r: Received) =>
  JSON.parse(r.body) as {
    id: string;
    type: string;
    created_at: string;
    livemode: boolean;
    transaction_id: string | null;
    data: { object: Record<string, unknown> };
  };
/** The type of the workflow with this id, or null if there is none. */
async function workflowType(id: string): Promise<string | null> {
  try {
    return (await engine.env.client.workflow.getHandle(id).describe()).type;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}
/**
 * Where the dispatcher is when a wait times out: its workflow (pending activity, the last events of
 * its history), the events it has not dispatched, and what the database's connections are doing
 * (read on a connection of its own, in case the pool is what is stuck).
 */
async function dispatcherState(): Promise<string> {
  const handle = engine.env.client.workflow.getHandle(eventDispatchWorkflowId(engine.taskQueue));
  const described = await handle.describe();
  const history = (await handle.fetchHistory()).events ?? [];
  const tail = history.slice(-12).map((e) => {
    const failure = e.activityTaskFailedEventAttributes?.failure ?? e.workflowTaskFailedEventAttributes?.failure;
    // eventType is temporal.api.enums.v1.EventType's number (10 activity scheduled, 11 started, 12 completed, 14 timed out...).
    return `event ${String(e.eventId)} at ${new Date(Number(e.eventTime?.seconds ?? 0) * 1000).toISOString()}: type ${String(e.eventType)}${failure ? ` ${failure.message}` : ''}`;
  });
  const database = new pg.Client({ connectionString: engine.db.url });
  await database.connect();
  try {
    const undispatched = await database.query(
      'select id, type from events where dispatched_at is null order by id limit 10',
    );
    const sessions = await database.query(
      `select state, wait_event_type, wait_event, round(extract(epoch from now() - xact_start)::numeric, 1) as xact_s, left(query, 120) as query
         from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`,
    );
    return [
      `dispatcher ${described.status.name} run ${described.runId}, pending activities ${JSON.stringify(described.raw.pendingActivities?.map((a) => ({ type: a.activityType?.name, state: a.state, attempt: a.attempt, lastFailure: a.lastFailure?.message })))}`,
      ...tail,
      `undispatched events ${JSON.stringify(undispatched.rows)}`,
      `busy database sessions ${JSON.stringify(sessions.rows)}`,
    ].join('\n');
  } finally {
    await database.end();
  }
}

/** The independent check: the reference library, with its own HMAC and its 5-minute tolerance. */
const verified = (secret: string, r: Received) =>
  new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { id: string };

async function register(t: Tenant, body: Record<string, unknown>, headers = as(t)) {
  const response = await engine.call('POST', '/v1/webhooks', body, headers);
  if (response.status !== 201) throw new Error(`registration failed: ${JSON.stringify(response.body)}`);
  return response.body as { id: string; secret: string } & Record<string, unknown>;
}

async function credit(t: Tenant, amount: number, headers = as(t)) {
  const response = await engine.call(
    'POST',
    '/v1/transactions',
    { account_id: t.accountId, amount, currency: 'USD', type: 'credit' },
    headers,
  );
  expect(response.status).toBe(201);
  return response.body as { id: string };
}

describe('webhook endpoints', () => {
  it('show the signing secret once, at creation, and never again; update and delete', async () => {
    const t = await engine.signUp();
    const created = await engine.call(
      'POST',
      '/v1/webhooks',
      { url: receiver.url('/crud'), events: ['transaction.succeeded', 'payment.failed'], description: 'Main' },
      as(t),
    );
    expect(created.status).toBe(201);
    const { secret, ...endpoint } = created.body;
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^we_[0-9a-z]{26}$/),
      object: 'webhook_endpoint',
      url: receiver.url('/crud'),
      description: 'Main',
      events: ['transaction.succeeded', 'payment.failed'],
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
      previous_secret_expires_at: null,
      livemode: false,
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const got = await engine.call('GET', `/v1/webhooks/${endpoint.id}`, undefined, as(t));
    expect(got.status).toBe(200);
    expect(got.body).toEqual(endpoint);
    const list = await engine.call('GET', '/v1/webhooks', undefined, as(t));
    expect(list.body).toEqual({ object: 'list', data: [endpoint], has_more: false });
    // Stored sealed, not as shown.
    const row = await engine.db.orm.em.fork().findOneOrFail(WebhookEndpoint, { id: endpoint.id });
    expect(row.secret).toMatch(/^v1\./);
    expect(row.secret).not.toContain(secret.slice(6, 20));

    const patched = await engine.call(
      'PATCH',
      `/v1/webhooks/${endpoint.id}`,
      { events: ['*'], description: null, enabled: false },
      as(t),
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      events: ['*'],
      description: null,
      enabled: false,
      disabled_reason: 'manual',
      disabled_at: expect.stringMatching(/Z$/),
    });
    expect(patched.body).not.toHaveProperty('secret');
    const reenabled = await engine.call(
      'PATCH',
      `/v1/webhooks/${endpoint.id}`,
      { enabled: true, url: receiver.url('/crud2') },
      as(t),
    );
    expect(reenabled.body).toMatchObject({
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      url: receiver.url('/crud2'),
    });

    for (const [body, fragment] of [
      [{ url: receiver.url(), events: ['nope.happened'] }, 'nope.happened'],
      [{ url: receiver.url(), events: ['*', 'customer.created'] }, '["*"] alone'],
      [{ url: receiver.url(), events: [] }, 'events'],
      [{ events: ['*'] }, 'url'],
      [{ url: 'not a url', events: ['*'] }, 'url'],
      [{ url: receiver.url(), events: ['*'], secret: 'whsec_mine' }, 'secret'],
    ] as const) {
      const refused = await engine.call('POST', '/v1/webhooks', body, as(t));
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(['invalid_request', 'url_not_allowed']).toContain(refused.body.error);
      expect(refused.body.message).toContain(fragment);
    }
    const patchRefused = await engine.call(
      'PATCH',
      `/v1/webhooks/${endpoint.id}`,
      { events: ['subscription.exploded'] },
      as(t),
    );
    expect(patchRefused.status).toBe(400);
    expect(patchRefused.body.error).toBe('invalid_request');
    expect((await engine.call('GET', '/v1/webhooks', undefined, as(t))).body.data).toHaveLength(1);

    const deleted = await engine.call('DELETE', `/v1/webhooks/${endpoint.id}`, undefined, as(t));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: endpoint.id, object: 'webhook_endpoint', deleted: true });
    const gone = await engine.call('GET', `/v1/webhooks/${endpoint.id}`, undefined, as(t));
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('not_found');
    expect((await engine.call('GET', '/v1/webhooks', undefined, as(t))).body.data).toEqual([]);
  });

  it('belong to one account and one mode', async () => {
    const a = await engine.signUp();
    const b = await engine.signUp();
    const endpoint = await register(a, { url: receiver.url('/iso-a'), events: ['*'] });
    for (const [method, path, body] of [
      ['GET', `/v1/webhooks/${endpoint.id}`],
      ['PATCH', `/v1/webhooks/${endpoint.id}`, { enabled: false }],
      ['DELETE', `/v1/webhooks/${endpoint.id}`],
      ['POST', `/v1/webhooks/${endpoint.id}/rotate_secret`],
      ['GET', `/v1/webhooks/${endpoint.id}/deliveries`],
    ] as const) {
      for (const headers of [as(b), as(a, {})]) {
        const response = await engine.call(method, path, body, headers);
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(response.body.error).toBe('not_found');
      }
    }
    expect((await engine.call('GET', '/v1/webhooks', undefined, as(b))).body.data).toEqual([]);
    expect((await engine.call('GET', '/v1/webhooks', undefined, as(a, {}))).body.data).toEqual([]);

    // Another tenant's events and A's own live events never reach A's sandbox endpoint.
    const theirs = await credit(b, 500);
    // A live credit is the platform admin's to make (docs/security.md).
    const live = await credit(a, 700, { ...(await engine.admin()).headers, 'x-account-id': a.accountId });
    const ours = await credit(a, 900);
    const receipts = await receiver.waitFor(2, at('/iso-a'));
    const em = engine.db.orm.em.fork();
    await eventually(
      () => em.fork().count(Event, { transactionId: { $in: [theirs.id, live.id] }, dispatchedAt: null }),
      (n) => n === 0,
    );
    expect(
      await em.count(WebhookDelivery, {
        eventId: { $in: (await em.find(Event, { transactionId: { $in: [theirs.id, live.id] } })).map((e) => e.id) },
      }),
    ).toBe(0);
    expect(receiver.received.filter(at('/iso-a')).map((r) => payload(r).transaction_id)).toEqual([ours.id, ours.id]);
    expect(receipts.every((r) => payload(r).livemode === false)).toBe(true);

    // Nor can B redeliver A's event.
    const event = payload(receipts[0]!);
    const redeliver = await engine.call('POST', `/v1/events/${event.id}/redeliver`, {}, as(b));
    expect(redeliver.status).toBe(404);
  });
});

describe('delivery', () => {
  it('sends each event to the endpoints that subscribe to it, signed as Standard Webhooks, with x-risk-score', async () => {
    const t = await engine.signUp();
    const all = await register(t, { url: receiver.url('/all'), events: ['*'] });
    const customersOnly = await register(t, { url: receiver.url('/customers'), events: ['customer.created'] });

    const customer = await engine.call(
      'POST',
      '/v1/customers',
      { email: 'ada@example.com', name: 'Ada', payment_method: 'pm_card_visa' },
      as(t),
    );
    expect(customer.status).toBe(201);
    // 1,500.00 USD: ≥ 1,000 major units (+20) on an account younger than 24 h (+20) = 40, medium.
    const big = await credit(t, 150_000);
    const plan = await engine.call(
      'POST',
      '/v1/plans',
      { name: 'Pro', amount: 2000, currency: 'USD', interval: 'month', trial_period_days: 30 },
      as(t),
    );
    const subscription = await engine.call(
      'POST',
      '/v1/subscriptions',
      { customer_id: customer.body.id, plan: plan.body.id },
      as(t),
    );
    expect(subscription.status).toBe(201);

    const wanted = ['customer.created', 'transaction.created', 'transaction.succeeded', 'subscription.created'];
    const receipts = await receiver.waitFor(wanted.length, at('/all'));
    expect(receipts.map((r) => payload(r).type).sort()).toEqual([...wanted].sort());
    for (const r of receipts) {
      const event = verified(all.secret, r);
      expect(event.id).toBe(r.headers['webhook-id']);
      expect(verifyWebhook(all.secret, r.headers, r.body)).toEqual(event); // the package's own verifier agrees
      expect(() => verified(customersOnly.secret, r)).toThrow(); // another endpoint's secret does not verify
      expect(() =>
        new Webhook(all.secret).verify(
          r.body.replace('"livemode":false', '"livemode":true'),
          r.headers as Record<string, string>,
        ),
      ).toThrow();
      expect(r.headers['content-type']).toBe('application/json');
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      const body = payload(r);
      expect(Object.keys(body).sort()).toEqual(['created_at', 'data', 'id', 'livemode', 'transaction_id', 'type']);
      expect(body.id).toMatch(/^evt_[0-9a-z]{26}$/);
      expect(body.livemode).toBe(false);
      if (body.type.startsWith('transaction.')) {
        expect(body.transaction_id).toBe(big.id);
        expect(body.data.object).toMatchObject({ id: big.id, amount: 150_000, risk_level: 'medium' });
        expect(r.headers['x-risk-score']).toBe('40');
      } else {
        expect(body.transaction_id).toBeNull();
        expect(r.headers['x-risk-score']).toBe('0');
      }
    }
    const onlyCustomers = await receiver.waitFor(1, at('/customers'));
    expect(payload(onlyCustomers[0]!)).toMatchObject({
      type: 'customer.created',
      data: { object: { id: customer.body.id, email: 'ada@example.com' } },
    });
    verified(customersOnly.secret, onlyCustomers[0]!);
    // By the time /all had all four, every event was dispatched: /customers got its one and nothing else.
    const deliveries = await engine.call('GET', `/v1/webhooks/${customersOnly.id}/deliveries`, undefined, as(t));
    expect(deliveries.body.data.map((d: { event_type: string }) => d.event_type)).toEqual(['customer.created']);
    expect(receiver.received.filter(at('/customers'))).toHaveLength(1);
  });

  it('lists deliveries with their attempts, and redelivers an event with the same webhook-id', async () => {
    const t = await engine.signUp();
    const endpoint = await register(t, {
      url: receiver.url('/redeliver'),
      events: ['transaction.created', 'transaction.succeeded'],
    });
    const txn = await credit(t, 1234);
    await receiver.waitFor(2, at('/redeliver'));
    const list = await eventually(
      () => engine.call('GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined, as(t)),
      (r) => r.body.data.length === 2 && r.body.data.every((d: { status: string }) => d.status === 'succeeded'),
    );
    const [newer, older] = list.body.data;
    expect(newer.id > older.id).toBe(true); // newest event first
    for (const delivery of list.body.data) {
      expect(delivery).toMatchObject({
        id: expect.stringMatching(/^whd_evt_[0-9a-z]{26}_we_[0-9a-z]{26}$/),
        object: 'webhook_delivery',
        endpoint_id: endpoint.id,
        redelivery: false,
        status: 'succeeded',
        attempt_count: 1,
        next_attempt_at: null,
        livemode: false,
      });
      expect(delivery.id).toBe(`whd_${delivery.event_id}_${endpoint.id}`);
      expect(delivery.attempts).toEqual([
        {
          attempt: 1,
          attempted_at: delivery.last_attempt_at,
          url: receiver.url('/redeliver'),
          succeeded: true,
          status_code: 200,
          latency_ms: expect.any(Number),
          response_body: 'ok',
          error: null,
        },
      ]);
    }
    expect(list.body.data.map((d: { event_type: string }) => d.event_type).sort()).toEqual([
      'transaction.created',
      'transaction.succeeded',
    ]);
    // Delivered by the dispatcher's own first attempt: no delivery workflow was needed.
    for (const delivery of list.body.data) expect(await workflowType(delivery.id)).toBeNull();
    // Cursors both ways.
    const first = await engine.call('GET', `/v1/webhooks/${endpoint.id}/deliveries?limit=1`, undefined, as(t));
    expect(first.body).toMatchObject({ data: [{ id: newer.id }], has_more: true });
    const second = await engine.call(
      'GET',
      `/v1/webhooks/${endpoint.id}/deliveries?limit=1&starting_after=${newer.id}`,
      undefined,
      as(t),
    );
    expect(second.body).toMatchObject({ data: [{ id: older.id }], has_more: false });
    const back = await engine.call(
      'GET',
      `/v1/webhooks/${endpoint.id}/deliveries?limit=1&ending_before=${older.id}`,
      undefined,
      as(t),
    );
    expect(back.body).toMatchObject({ data: [{ id: newer.id }], has_more: false });
    const failedOnly = await engine.call(
      'GET',
      `/v1/webhooks/${endpoint.id}/deliveries?status=failed`,
      undefined,
      as(t),
    );
    expect(failedOnly.body.data).toEqual([]);
    expect(
      (await engine.call('GET', `/v1/webhooks/${endpoint.id}/deliveries?starting_after=we_x`, undefined, as(t))).status,
    ).toBe(400);

    const original = receiver.received.find((r) => at('/redeliver')(r) && payload(r).id === older.event_id)!;
    const redelivered = await engine.call(
      'POST',
      `/v1/events/${older.event_id}/redeliver`,
      { endpoint_id: endpoint.id },
      as(t),
    );
    expect(redelivered.status).toBe(202);
    expect(redelivered.body.data).toHaveLength(1);
    expect(redelivered.body.data[0]).toMatchObject({
      id: expect.stringMatching(new RegExp(`^whd_${older.event_id}_${endpoint.id}_r[0-9a-z]{26}$`)),
      redelivery: true,
      status: 'pending',
    });
    const again = await receiver.waitFor(3, at('/redeliver'));
    const copy = again[2]!;
    expect(copy.headers['webhook-id']).toBe(older.event_id);
    expect(copy.body).toBe(original.body);
    verified(endpoint.secret, copy);
    // Without endpoint_id: every enabled endpoint that subscribes.
    const toAll = await engine.call('POST', `/v1/events/${older.event_id}/redeliver`, undefined, as(t));
    expect(toAll.status).toBe(202);
    await receiver.waitFor(4, at('/redeliver'));
    const after = await eventually(
      () => engine.call('GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined, as(t)),
      (r) => r.body.data.length === 4 && r.body.data.every((d: { status: string }) => d.status === 'succeeded'),
    );
    const redeliveries = after.body.data.filter((d: { redelivery: boolean }) => d.redelivery);
    expect(redeliveries).toHaveLength(2);
    // A redelivery is its own workflow, which makes the first attempt.
    for (const r of redeliveries) expect(await engine.env.client.workflow.getHandle(r.id).result()).toBe('succeeded');
    expect(txn.id).toMatch(/^txn_/);

    const unknown = await engine.call('POST', '/v1/events/evt_01jd3x5k8q0m2v7c9r4t6y1w3e/redeliver', {}, as(t));
    expect(unknown.status).toBe(404);
    await engine.call('PATCH', `/v1/webhooks/${endpoint.id}`, { enabled: false }, as(t));
    const disabled = await engine.call(
      'POST',
      `/v1/events/${older.event_id}/redeliver`,
      { endpoint_id: endpoint.id },
      as(t),
    );
    expect(disabled.status).toBe(409);
    expect(disabled.body.error).toBe('invalid_state');
    const none = await engine.call('POST', `/v1/events/${older.event_id}/redeliver`, {}, as(t));
    expect(none.status).toBe(409);
  });

  it('signs with the old and the new secret for 24 hours after a rotation, then with the new one only', async () => {
    const t = await engine.signUp();
    const endpoint = await register(t, { url: receiver.url('/rotate'), events: ['customer.created'] });
    const oldSecret = endpoint.secret;
    const rotated = await engine.call('POST', `/v1/webhooks/${endpoint.id}/rotate_secret`, undefined, as(t));
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    const overlapEnds = Date.parse(rotated.body.previous_secret_expires_at);
    expect(Math.abs(overlapEnds - (Date.now() + 24 * 3_600_000))).toBeLessThan(60_000);
    expect((await engine.call('GET', `/v1/webhooks/${endpoint.id}`, undefined, as(t))).body).not.toHaveProperty(
      'secret',
    );

    await engine.call('POST', '/v1/customers', { email: 'during@example.com' }, as(t));
    const [during] = await receiver.waitFor(1, at('/rotate'));
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(newSecret, during!).id).toBe(during!.headers['webhook-id']);
    expect(verified(oldSecret, during!).id).toBe(during!.headers['webhook-id']);

    // The overlap ends (the API stamped it on the wall clock, which skipped time does not move).
    await engine.db.orm.em
      .fork()
      .nativeUpdate(WebhookEndpoint, { id: endpoint.id }, { previousSecretExpiresAt: new Date(Date.now() - 1_000) });
    await engine.call('POST', '/v1/customers', { email: 'after@example.com' }, as(t));
    const receipts = await receiver.waitFor(2, at('/rotate'));
    const afterOverlap = receipts[1]!;
    expect(payload(afterOverlap).data.object).toMatchObject({ email: 'after@example.com' });
    expect(String(afterOverlap.headers['webhook-signature']).split(' ')).toHaveLength(1);
    verified(newSecret, afterOverlap);
    expect(() => verified(oldSecret, afterOverlap)).toThrow();
  });
});

describe('retries in skipped time', () => {
  const seconds = (iso: string, from: string) => (Date.parse(iso) - Date.parse(from)) / 1000;

  it('a receiver that fails for a while and recovers gets every event; duplicates carry the same id; attempts follow the sandbox schedule', async () => {
    const t = await engine.signUp();
    const endpoint = await register(t, {
      url: receiver.url('/flaky'),
      events: ['transaction.created', 'transaction.succeeded'],
    });
    // It takes the request and answers 500 (as a receiver that crashes after processing would):
    // every retry is a duplicate the receiver must recognise by its webhook-id.
    statusByPath.set('/flaky', 500);
    const first = await credit(t, 100);
    const second = await credit(t, 200);
    const events = 4;
    await receiver.waitFor(events, at('/flaky'));
    await engine.env.sleep(5_000);
    await receiver.waitFor(2 * events, at('/flaky'));
    await engine.env.sleep(60_000);
    await receiver.waitFor(3 * events, at('/flaky'));
    statusByPath.set('/flaky', 200);
    await engine.env.sleep(5 * 60_000);
    const receipts = await receiver.waitFor(4 * events, at('/flaky'));
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.filter(at('/flaky'))).toHaveLength(4 * events);

    const byId = new Map<string, Received[]>();
    for (const r of receipts) {
      const event = verified(endpoint.secret, r);
      expect(r.headers['webhook-id']).toBe(event.id);
      byId.set(event.id, [...(byId.get(event.id) ?? []), r]);
    }
    expect(byId.size).toBe(events);
    for (const copies of byId.values()) {
      expect(copies.map((c) => c.status)).toEqual([500, 500, 500, 200]);
      expect(new Set(copies.map((c) => c.body)).size).toBe(1); // the same payload every time
    }
    expect(new Set(receipts.map((r) => payload(r).transaction_id))).toEqual(new Set([first.id, second.id]));

    const list = await eventually(
      () => engine.call('GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined, as(t)),
      (r) => r.body.data.length === events && r.body.data.every((d: { status: string }) => d.status === 'succeeded'),
    );
    for (const delivery of list.body.data) {
      // Attempt 1 was the dispatcher's; its failure started the delivery workflow, which made attempts 2-4.
      expect(await engine.env.client.workflow.getHandle(delivery.id).result()).toBe('succeeded');
      expect(await workflowType(delivery.id)).toBe('webhookDeliveryWorkflow');
      expect(delivery.attempt_count).toBe(4);
      const attempts = delivery.attempts as {
        attempt: number;
        attempted_at: string;
        status_code: number;
        succeeded: boolean;
        response_body: string;
        error: string | null;
      }[];
      expect(attempts.map((a) => [a.attempt, a.status_code, a.succeeded, a.response_body, a.error])).toEqual([
        [1, 500, false, 'failing with 500', 'HTTP 500'],
        [2, 500, false, 'failing with 500', 'HTTP 500'],
        [3, 500, false, 'failing with 500', 'HTTP 500'],
        [4, 200, true, 'ok', null],
      ]);
      // The sandbox schedule: 5 s, then 1 min, then 5 min (plus the few ms each attempt itself takes).
      const gaps = attempts.slice(1).map((a, i) => seconds(a.attempted_at, attempts[i]!.attempted_at));
      for (const [gap, wait] of gaps.map((g, i) => [g, [5, 60, 300][i]!] as const)) {
        expect(gap).toBeGreaterThanOrEqual(wait);
        expect(gap).toBeLessThan(wait + 3);
      }
    }
    const healed = await engine.call('GET', `/v1/webhooks/${endpoint.id}`, undefined, as(t));
    expect(healed.body).toMatchObject({ enabled: true, failing_since: null });
  });

  it('an endpoint failing for the whole window (sandbox: 1 hour) is disabled and the owner emailed', async () => {
    const t = await engine.signUp({ name: 'Down Co' });
    const endpoint = await register(t, { url: receiver.url('/down'), events: ['transaction.succeeded'] });
    statusByPath.set('/down', 503);
    const mailBefore = engine.mail.messages.length;
    await credit(t, 4242);
    await receiver.waitFor(1, at('/down'));
    await engine.env.sleep(60 * 60_000 + 1_000);
    const receipts = await receiver.waitFor(7, at('/down'));
    const [message] = await engine.mail.waitFor(mailBefore + 1).then((all) => all.slice(mailBefore));
    expect(
      receipts.every((r) => r.status === 503 && r.headers['webhook-id'] === receipts[0]!.headers['webhook-id']),
    ).toBe(true);

    const disabled = await engine.call('GET', `/v1/webhooks/${endpoint.id}`, undefined, as(t));
    const [delivery] = (await engine.call('GET', `/v1/webhooks/${endpoint.id}/deliveries`, undefined, as(t))).body.data;
    expect(delivery).toMatchObject({ status: 'failed', attempt_count: 7, next_attempt_at: null });
    const times = (delivery.attempts as { attempted_at: string }[]).map((a) => a.attempted_at);
    // Offsets from the first attempt: 0, 5 s, 1 min 5 s, 6 min 5 s, 21 min 5 s, 51 min 5 s, 60 min.
    const offsets = times.map((x) => seconds(x, times[0]!));
    [0, 5, 65, 365, 1265, 3065, 3600].forEach((expected, i) => {
      expect(offsets[i]).toBeGreaterThanOrEqual(expected);
      expect(offsets[i]).toBeLessThan(expected + 5);
    });
    expect(disabled.body).toMatchObject({
      enabled: false,
      disabled_reason: 'failing',
      disabled_at: times[6],
      failing_since: times[0],
    });

    expect(message!.envelopeTo).toEqual([t.email]);
    expect(message!.parsed.subject).toBe(`Webhook endpoint disabled: ${receiver.url('/down')}`);
    const text = message!.parsed.text!;
    expect(text).toContain('Hello Down Co,');
    expect(text).toContain(
      `Your sandbox webhook endpoint ${receiver.url('/down')} (${endpoint.id}) has failed every delivery since`,
    );
    expect(text).toContain('Last error: HTTP 503');
    expect(text).toContain(`PATCH /v1/webhooks/${endpoint.id} {"enabled": true}`);
    expect(message!.parsed.html).toContain('Webhook endpoint disabled');

    // Disabled: new events are not sent to it. Enabled again: they are.
    await credit(t, 1);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.received.filter(at('/down'))).toHaveLength(7);
    statusByPath.set('/down', 200);
    const enabled = await engine.call('PATCH', `/v1/webhooks/${endpoint.id}`, { enabled: true }, as(t));
    expect(enabled.body).toMatchObject({
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
    });
    const latest = await credit(t, 2);
    const after = await receiver.waitFor(8, at('/down'));
    expect(payload(after[7]!).transaction_id).toBe(latest.id);
    expect(engine.mail.messages.length).toBe(mailBefore + 1); // one email for one disabling
  });
});
