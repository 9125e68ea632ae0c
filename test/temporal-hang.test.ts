/**
 * A Temporal that hangs (issue #29): it accepts connections but answers nothing, as a frontend stopped with SIGSTOP
 * or behind a path that drops packets. A subscription create (update-with-start) and an update (a cancel) wait for a
 * worker, so they carry no deadline; without a watch they hung for the channel's keepalive (~45 s). The API's
 * connection (services/platform/temporal-connection.ts connectForRequests) probes Temporal while such a call waits:
 * both answer 503 `service_unavailable` with `Retry-After` within a few seconds and change nothing, and the create,
 * retried with its Idempotency-Key once Temporal answers again, is made once. A call that waits on a Temporal that
 * does answer (no worker for its workflow yet) is not cut short.
 *
 * The hang is real at the socket level: the app reaches this file's Temporal test server through a TCP proxy that
 * keeps every connection open and accepts new ones but passes no byte while stalled (a real hung Temporal cannot be
 * produced on demand).
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';

import { Client, type Connection } from '@temporalio/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type App, createApp } from '../api/app.ts';
import { Subscription } from '../db/entities/index.ts';
import { connectForRequests, livenessProbeAfterMs } from '../services/platform/temporal-connection.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';

/** A TCP proxy whose bytes can stop flowing (connections held open, new ones accepted): a server that hangs. */
async function startStallingProxy(targetHost: string, targetPort: number) {
  const pairs = new Set<[net.Socket, net.Socket]>();
  let stalled = false;
  const flow = ([client, upstream]: [net.Socket, net.Socket]) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (!stalled) flow(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    stall() {
      stalled = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream).pause();
        upstream.unpipe(client).pause();
      }
    },
    resume() {
      stalled = false;
      for (const pair of pairs) flow(pair);
    },
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('a Temporal that hangs: waiting calls answer 503 in seconds, not after the keepalive', () => {
  let engine: TestEngine;
  let proxy: Awaited<ReturnType<typeof startStallingProxy>>;
  let connection: Connection;
  let app: App;
  let customerId: string;
  let planId: string;
  let subscriptionId: string;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await app.request(path, {
      method,
      headers: { ...engine.tenant.headers, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any, headers: response.headers };
  };

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ customerId, planId } = await seedCustomerAndPlan(engine));
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status).toBe(201);
    subscriptionId = created.body.id;
    const [host, port] = (engine.env.connection as Connection).options.address.split(':');
    proxy = await startStallingProxy(host === 'localhost' ? '127.0.0.1' : host!, Number(port));
    connection = await connectForRequests(`127.0.0.1:${proxy.port}`);
    app = createApp({
      orm: engine.db.orm,
      temporal: new Client({ connection, namespace: 'default' }),
      config: engine.config,
      logger: pino({ level: 'silent' }),
    });
  });
  afterAll(async () => {
    proxy?.resume();
    await connection?.close();
    await proxy?.close();
    await engine?.close();
  });

  it(
    'a subscription create and a cancel answer 503 with Retry-After within a few seconds, change nothing, and the create goes through once after',
    { timeout: 120_000 },
    async () => {
      const em = () => engine.db.orm.em.fork();
      const before = await em().count(Subscription, { customerId });
      const key = `hang-${randomBytes(4).toString('hex')}`;
      // Through the proxy, before the hang: the app works.
      expect((await call('GET', `/v1/subscriptions/${subscriptionId}`)).status).toBe(200);
      proxy.stall();
      const asked = Date.now();
      const [created, canceled] = await Promise.all([
        call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }, { 'idempotency-key': key }),
        call('POST', `/v1/subscriptions/${subscriptionId}/cancel`, {}),
      ]);
      const took = Date.now() - asked;
      proxy.resume();
      for (const answer of [created, canceled]) {
        expect(answer.status, JSON.stringify(answer.body)).toBe(503);
        expect(answer.body).toEqual({ error: 'service_unavailable', message: expect.stringMatching(/Temporal/) });
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // Probe after 3 s, its 4 s deadline: about 7 s; the keepalive would have taken ~45 s. Loose for a loaded machine.
      expect(took).toBeLessThan(20_000);
      expect(await em().count(Subscription, { customerId })).toBe(before);
      expect((await em().findOneOrFail(Subscription, { id: subscriptionId })).status).not.toBe('canceled');
      // Temporal answers again: the create, retried with its key, is made once.
      let retried = await call(
        'POST',
        '/v1/subscriptions',
        { customer_id: customerId, plan: planId },
        { 'idempotency-key': key },
      );
      for (let i = 0; retried.status === 503 && i < 60; i++) {
        await new Promise((r) => setTimeout(r, 500));
        retried = await call(
          'POST',
          '/v1/subscriptions',
          { customer_id: customerId, plan: planId },
          { 'idempotency-key': key },
        );
      }
      expect(retried.status, JSON.stringify(retried.body)).toBe(201);
      expect(await em().count(Subscription, { customerId })).toBe(before + 1);
    },
  );

  it(
    'a call waiting on a Temporal that answers (no worker has taken its workflow yet) is not cut short by the watch',
    { timeout: 60_000 },
    async () => {
      const client = new Client({ connection, namespace: 'default' });
      // A workflow on a queue no worker polls: an update waits for one (Temporal answers the probes meanwhile).
      const handle = await client.workflow.start('noSuchWorkflowType', {
        taskQueue: `no-worker-${randomBytes(4).toString('hex')}`,
        workflowId: `hang-watch-${randomBytes(4).toString('hex')}`,
      });
      try {
        const controller = new AbortController();
        const waited = connection.withAbortSignal(controller.signal, () => handle.executeUpdate('anything'));
        const outcome = await Promise.race([
          waited.then(
            () => 'answered',
            (error: Error) => `failed: ${error.message}`,
          ),
          new Promise<string>((r) => setTimeout(() => r('still waiting'), 2 * livenessProbeAfterMs + 1_500)),
        ]);
        controller.abort();
        await waited.catch(() => undefined);
        // Two probes went by, both answered: the update still waits.
        expect(outcome).toBe('still waiting');
      } finally {
        await handle.terminate().catch(() => undefined);
      }
    },
  );
});
