/**
 * The dispatcher's pass makes each delivery's first attempt itself and starts a
 * delivery workflow only for what failed. Here: a worker process killed in the
 * middle of a pass (one request sent and not yet recorded, the others recorded)
 * is replaced, and the repeated pass sends that delivery again with the same
 * webhook-id while sending nothing twice that was recorded; the delivery whose
 * first attempt failed is retried by its workflow on the schedule counted from
 * that attempt. And a pass that died after its first attempt disabled an
 * endpoint still gets the owner emailed. Signatures are checked with the
 * `standardwebhooks` package.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../db/entities/index.ts';
import { deliveryId } from '../domain/webhooks.ts';
import { recordEvent } from '../services/events/record.ts';
import { wakeEventDispatch } from '../services/webhooks/dispatch.ts';
import { startCrashingWorker } from './helpers/crashing-worker.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';
import { type Received, startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

let engine: TestEngine;
let receiver: WebhookReceiver;
const at = (path: string) => (r: Received) => r.path === path;
const seconds = (iso: string, from: string) => (Date.parse(iso) - Date.parse(from)) / 1000;

beforeAll(async () => {
  engine = await startTestEngine({ startWorker: false });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await engine?.close();
});

const sandbox = () => ({ ...engine.tenant.headers, 'x-sandbox-mode': 'true' });
async function register(path: string) {
  const created = await engine.call(
    'POST',
    '/v1/webhooks',
    { url: receiver.url(path), events: ['customer.created'] },
    sandbox(),
  );
  expect(created.status).toBe(201);
  return created.body as { id: string; secret: string };
}
async function deliveries(endpointId: string) {
  const response = await engine.call('GET', `/v1/webhooks/${endpointId}/deliveries`, undefined, sandbox());
  expect(response.status).toBe(200);
  return response.body.data as {
    id: string;
    event_id: string;
    status: string;
    attempt_count: number;
    attempts: { attempt: number; attempted_at: string; status_code: number | null; succeeded: boolean }[];
  }[];
}
async function workflowType(id: string): Promise<string | null> {
  try {
    return (await engine.env.client.workflow.getHandle(id).describe()).type;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}

describe('a worker killed in the middle of a dispatcher pass', () => {
  it(
    'is replaced; the next pass sends the unrecorded copy again with the same webhook-id, nothing recorded twice, and the failed one is retried on schedule',
    { timeout: 150_000 },
    async () => {
      const { child, exited } = await startCrashingWorker(engine, 'crashing-worker.ts', {
        CRASH_ON: 'no charge in this test',
      });

      const ok = await register('/ok');
      const down = await register('/down');
      const crash = await register('/crash');
      let killedAt: number | undefined;
      receiver.respond = async (r) => {
        if (r.path === '/down') return 500;
        if (r.path === '/crash' && killedAt === undefined) {
          // The worst moment: this request arrived and nothing is recorded of it. Hold the answer until the
          // pass has recorded the other two first attempts and started /down's workflow, then kill the worker.
          const event = await eventually(
            () =>
              engine.db.orm.em
                .fork()
                .findOne(Event, { type: 'customer.created', accountId: engine.tenant.accountId, livemode: false }),
            (e) => e !== null,
          );
          await eventually(
            () => workflowType(deliveryId(event!.id, down.id)),
            (type) => type === 'webhookDeliveryWorkflow',
            20_000,
          );
          await eventually(
            () => engine.db.orm.em.fork().count(WebhookDelivery, { eventId: event!.id, attemptCount: 1 }),
            (n) => n === 2,
          );
          child.kill('SIGKILL');
          await exited;
          killedAt = Date.now();
          return 200;
        }
        return 200;
      };

      const customer = await engine.call('POST', '/v1/customers', { email: 'crash@example.com' }, sandbox());
      expect(customer.status).toBe(201);
      const [held] = await receiver.waitFor(1, at('/crash'), 40_000);
      expect(killedAt).toBeDefined();
      const eventId = String(held!.headers['webhook-id']);
      const em = () => engine.db.orm.em.fork();

      // The state the dead pass left: /ok delivered and recorded, /down's failure recorded and its workflow
      // started, /crash sent but not recorded, and the event not dispatched.
      expect((await em().findOneOrFail(Event, { id: eventId })).dispatchedAt).toBeNull();
      expect(await em().findOneOrFail(WebhookDelivery, { id: deliveryId(eventId, ok.id) })).toMatchObject({
        status: 'succeeded',
        attemptCount: 1,
      });
      expect(await em().findOneOrFail(WebhookDelivery, { id: deliveryId(eventId, down.id) })).toMatchObject({
        status: 'pending',
        attemptCount: 1,
      });
      expect(await em().findOneOrFail(WebhookDelivery, { id: deliveryId(eventId, crash.id) })).toMatchObject({
        status: 'pending',
        attemptCount: 0,
      });
      expect(await em().count(WebhookAttempt, { deliveryId: deliveryId(eventId, crash.id) })).toBe(0);

      // A new worker. The lost pass times out on its heartbeat (15 s; the test server does not skip time
      // while an activity is in flight, so this is real time) and is repeated.
      await engine.startWorker();
      const crashCopies = await receiver.waitFor(2, at('/crash'), 60_000);
      const dispatched = await eventually(
        () => em().findOneOrFail(Event, { id: eventId }),
        (e) => e.dispatchedAt !== null,
        20_000,
      );
      expect(dispatched.dispatchedAt).not.toBeNull();

      // Same webhook-id, same body, both signed for the endpoint (checked by the reference library).
      expect(crashCopies.map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId]);
      expect(crashCopies[1]!.body).toBe(crashCopies[0]!.body);
      for (const copy of crashCopies)
        expect(
          (new Webhook(crash.secret).verify(copy.body, copy.headers as Record<string, string>) as { id: string }).id,
        ).toBe(eventId);
      // The recorded send of /ok is not repeated; /crash's repeated send is recorded as its attempt 1.
      expect(receiver.received.filter(at('/ok'))).toHaveLength(1);
      const [okDelivery] = await deliveries(ok.id);
      expect(okDelivery).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      const [crashDelivery] = await deliveries(crash.id);
      expect(crashDelivery).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      expect(crashDelivery!.attempts.map((a) => [a.attempt, a.status_code, a.succeeded])).toEqual([[1, 200, true]]);
      // Succeeded on the first attempt: no workflow for either. /down has exactly the one started before the crash.
      expect(await workflowType(okDelivery!.id)).toBeNull();
      expect(await workflowType(crashDelivery!.id)).toBeNull();
      expect(await workflowType(deliveryId(eventId, down.id))).toBe('webhookDeliveryWorkflow');

      // /down: attempt 2 by its workflow 5 s after the inline attempt 1 (in real time here: the timer ran while the
      // lost pass was in flight, so a little later if the new worker was not up yet), attempt 3 one minute later.
      await receiver.waitFor(2, at('/down'), 30_000);
      await eventually(
        () => deliveries(down.id),
        ([d]) => d!.attempt_count === 2,
      );
      await engine.env.sleep(60_000);
      await receiver.waitFor(3, at('/down'));
      const [downDelivery] = await eventually(
        () => deliveries(down.id),
        ([d]) => d!.attempt_count === 3,
      );
      const attempts = downDelivery!.attempts;
      expect(attempts.map((a) => [a.attempt, a.status_code, a.succeeded])).toEqual([
        [1, 500, false],
        [2, 500, false],
        [3, 500, false],
      ]);
      const gap12 = seconds(attempts[1]!.attempted_at, attempts[0]!.attempted_at);
      expect(gap12).toBeGreaterThanOrEqual(5);
      expect(gap12).toBeLessThan(20);
      const gap23 = seconds(attempts[2]!.attempted_at, attempts[1]!.attempted_at);
      expect(gap23).toBeGreaterThanOrEqual(60);
      expect(gap23).toBeLessThan(63);
      expect(downDelivery!.status).toBe('pending');
      const downCopies = receiver.received.filter(at('/down'));
      expect(new Set(downCopies.map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
      for (const copy of downCopies) new Webhook(down.secret).verify(copy.body, copy.headers as Record<string, string>);
      expect(downCopies[0]!.body).toBe(crashCopies[0]!.body);
    },
  );

  it('a pass that died after its first attempt disabled the endpoint leaves the owner emailed by the next pass', async () => {
    // The state such a pass leaves, written as it would have: the endpoint disabled by the attempt, the
    // delivery failed after 1 attempt, no workflow, the event undispatched.
    const endpoint = await register('/gone');
    const em = engine.db.orm.em.fork();
    const attemptedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const event = await em.transactional(async (tx) => {
      await tx.nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id },
        {
          enabled: false,
          disabledReason: 'failing',
          disabledAt: attemptedAt,
          failingSince: new Date(attemptedAt.getTime() - 3_600_000),
        },
      );
      const recorded = await recordEvent(tx, {
        accountId: engine.tenant.accountId,
        livemode: false,
        type: 'customer.created',
        object: { id: 'cus_gone', object: 'customer' },
      });
      tx.create(WebhookDelivery, {
        id: deliveryId(recorded.id, endpoint.id),
        accountId: engine.tenant.accountId,
        livemode: false,
        endpointId: endpoint.id,
        eventId: recorded.id,
        eventType: 'customer.created',
        redelivery: false,
        status: 'failed',
        attemptCount: 1,
        lastAttemptAt: attemptedAt,
        nextAttemptAt: null,
        completedAt: attemptedAt,
        createdAt: attemptedAt,
      });
      return recorded;
    });
    const id = deliveryId(event.id, endpoint.id);
    const mailBefore = engine.mail.messages.length;

    await wakeEventDispatch(engine.context.temporal);
    await eventually(
      () => engine.db.orm.em.fork().findOneOrFail(Event, { id: event.id }),
      (e) => e.dispatchedAt !== null,
      20_000,
    );
    const [message] = await engine.mail.waitFor(mailBefore + 1).then((all) => all.slice(mailBefore));
    expect(message!.parsed.subject).toBe(`Webhook endpoint disabled: ${receiver.url('/gone')}`);
    expect(await engine.env.client.workflow.getHandle(id).result()).toBe('failed');
    expect(receiver.received.filter(at('/gone'))).toHaveLength(0);
    // Repeating the pass again sends no second email (the workflow id is taken, and the email is sent once).
    await em.nativeUpdate(Event, { id: event.id }, { dispatchedAt: null });
    await wakeEventDispatch(engine.context.temporal);
    await eventually(
      () => engine.db.orm.em.fork().findOneOrFail(Event, { id: event.id }),
      (e) => e.dispatchedAt !== null,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(engine.mail.messages.length).toBe(mailBefore + 1);
  });
});
