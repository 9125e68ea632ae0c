import { spawn } from 'node:child_process';
import { once } from 'node:events';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { IdempotencyKey, SandboxProcessorCharge, Subscription } from '../db/entities/index.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * The API as a real process, SIGKILLed right after the workflow did the work of a
 * request and before it answered (test/fixtures/crashing-api.ts); the client
 * retries with the same Idempotency-Key against a fresh API process.
 */
describe('an API process killed in the middle of an idempotent request', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  async function startApi(crashAfter = '') {
    const child = spawn(process.execPath, ['test/fixtures/crashing-api.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: engine.db.url,
        TEMPORAL_ADDRESS: engine.env.address,
        TASK_QUEUE: engine.taskQueue,
        CRASH_AFTER: crashAfter,
        IDEMPOTENCY_LEASE_MS: '1000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const exited = once(child, 'exit');
    const port = await eventually(
      async () => /listening (\d+)/.exec(output)?.[1],
      (p) => p !== undefined,
      30_000,
    );
    const call = async (path: string, body: unknown, key: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { ...engine.tenant.headers, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
      });
      return {
        status: response.status,
        body: (await response.json()) as any,
        replayed: response.headers.get('idempotent-replayed'),
      };
    };
    /** A client's retry loop: while the dead request's lease runs, the key answers idempotency_in_progress. */
    const retry = (path: string, body: unknown, key: string) =>
      eventually(
        () => call(path, body, key),
        (r) => r.body?.error !== 'idempotency_in_progress',
        15_000,
      );
    return { call, retry, exited, output: () => output, stop: () => child.kill('SIGTERM') };
  }

  const em = () => engine.db.orm.em.fork();
  const processorCharges = (id: string) => em().count(SandboxProcessorCharge, { idempotencyKey: { $like: `${id}:%` } });
  const mailTo = (email: string) => engine.mail.messages.filter((m) => m.envelopeTo.includes(email)).length;

  it(
    'a subscription create: one subscription, one charge, one email, and its success answered on the retry',
    { timeout: 90_000 },
    async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const body = { customer_id: customerId, plan: planId };
      const mailsBefore = mailTo('ada@example.com');

      const doomed = await startApi('subscriptionCreated');
      await expect(doomed.call('/v1/subscriptions', body, 'crash-create')).rejects.toThrow();
      const [, signal] = await doomed.exited;
      expect(signal).toBe('SIGKILL');
      expect(doomed.output()).toContain('subscriptionCreated returned; crashing');
      // The workflow made the subscription and charged it; nobody was told.
      expect(await em().count(Subscription, { customerId })).toBe(1);

      const fresh = await startApi();
      try {
        const retried = await fresh.retry('/v1/subscriptions', body, 'crash-create');
        expect(retried.status).toBe(201);
        expect(retried.body.status).toBe('active');
        const [only] = await em().find(Subscription, { customerId });
        expect(retried.body.id).toBe(only!.id);
        expect(retried.body).toEqual((await engine.call('GET', `/v1/subscriptions/${only!.id}`)).body);
        // From now on the stored answer is replayed: same id, same body.
        const again = await fresh.call('/v1/subscriptions', body, 'crash-create');
        expect(again.replayed).toBe('true');
        expect(again.body).toEqual(retried.body);

        expect(await em().count(Subscription, { customerId })).toBe(1);
        expect(await engine.charges(only!.id)).toHaveLength(1);
        expect(await processorCharges(only!.id)).toBe(1);
        await engine.mail.waitFor(mailsBefore + 1);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(mailTo('ada@example.com')).toBe(mailsBefore + 1);
        expect((await em().findOneOrFail(IdempotencyKey, { key: 'crash-create' })).state).toBe('completed');
      } finally {
        fresh.stop();
      }
    },
  );

  it(
    'an upgrade: one proration charge, one email, and the retry answers 200 with the changed subscription (not invalid_state)',
    { timeout: 90_000 },
    async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
      const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
      expect(created.status).toBe(201);
      expect(created.body.status).toBe('active');
      const id: string = created.body.id;
      const bigger = await engine.call('POST', '/v1/plans', {
        name: 'Max',
        amount: 5000,
        currency: 'USD',
        interval: 'month',
      });
      await engine.mail.waitFor(mailTo('ada@example.com'));
      const mailsBefore = mailTo('ada@example.com');
      expect(await processorCharges(id)).toBe(1);

      const doomed = await startApi('changePlan');
      await expect(
        doomed.call(`/v1/subscriptions/${id}/update`, { plan: bigger.body.id }, 'crash-upgrade'),
      ).rejects.toThrow();
      const [, signal] = await doomed.exited;
      expect(signal).toBe('SIGKILL');
      expect((await engine.subscription(id))!.planId).toBe(bigger.body.id);
      expect(await processorCharges(id)).toBe(2);

      const fresh = await startApi();
      try {
        const retried = await fresh.retry(`/v1/subscriptions/${id}/update`, { plan: bigger.body.id }, 'crash-upgrade');
        expect(retried.status).toBe(200);
        expect(retried.body.id).toBe(id);
        expect(retried.body.plan).toBe(bigger.body.id);
        const again = await fresh.call(`/v1/subscriptions/${id}/update`, { plan: bigger.body.id }, 'crash-upgrade');
        expect(again.replayed).toBe('true');
        expect(again.body).toEqual(retried.body);

        expect(await processorCharges(id)).toBe(2);
        expect(await engine.charges(id)).toHaveLength(2);
        await engine.mail.waitFor(mailsBefore + 1);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(mailTo('ada@example.com')).toBe(mailsBefore + 1);
      } finally {
        fresh.stop();
      }
    },
  );
});
