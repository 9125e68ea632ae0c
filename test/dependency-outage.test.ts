/**
 * A dependency outage through the real app (issue #29): while PostgreSQL or Temporal cannot be
 * reached, or PostgreSQL hangs, every request that needs it answers 503 `service_unavailable` with `Retry-After`
 * (never 500 `internal_error`), changes nothing, is logged as "dependency unavailable", and
 * `GET /health` names the dependency that is down; once it is back, the same requests succeed
 * (with the same Idempotency-Key) and health says ok.
 *
 * The outage is real at the socket level: the app under test reaches the embedded PostgreSQL and
 * this file's Temporal test server through TCP proxies in this process. "Down" closes the proxy's
 * listener (new connections are refused, ECONNREFUSED, as with a stopped server) and resets every
 * open connection (pooled database connections and the gRPC channel die mid-use); "up" listens
 * again on the same port. The servers themselves are shared (PostgreSQL with every other test
 * file), so they are not stopped. No fixed sleeps: recovery is polled with a deadline.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';

import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type App, createApp } from '../api/app.ts';
import { Customer, Subscription } from '../db/entities/index.ts';
import { openOrm, requestPathDatabaseOptions } from '../db/orm.ts';
import { requestPathTemporalInterceptors } from '../services/platform/temporal-connection.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';

/** A TCP proxy that can be taken down (listener closed, open connections reset) and brought back on the same port. */
async function startProxy(targetHost: string, targetPort: number) {
  const sockets = new Set<net.Socket>();
  // Open pairs, and whether bytes flow: stalled, the proxy holds them, as a stopped (SIGSTOP) server does.
  const pairs = new Set<[net.Socket, net.Socket]>();
  let stalled = false;
  const flow = ([client, upstream]: [net.Socket, net.Socket]) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  let server: net.Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        sockets.add(client).add(upstream);
        const pair: [net.Socket, net.Socket] = [client, upstream];
        pairs.add(pair);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
          pairs.delete(pair);
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
        if (!stalled) flow(pair);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });
  await listen();
  return {
    get port() {
      return port;
    },
    async down() {
      const s = server!;
      server = undefined;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      for (const socket of sockets) socket.resetAndDestroy();
      sockets.clear();
      await closed;
    },
    up: listen,
    /** Connections stay open (and new ones are accepted) but no byte passes either way: a server that hangs. */
    stall() {
      stalled = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream).pause();
        upstream.unpipe(client).pause();
      }
    },
    /** Bytes flow again, those held meanwhile first: the server resumed (SIGCONT). */
    resume() {
      stalled = false;
      for (const pair of pairs) flow(pair);
    },
    async close() {
      if (server) await this.down();
    },
  };
}
type Proxy = Awaited<ReturnType<typeof startProxy>>;

/** Polls until `done` holds, or fails naming the last value after `timeoutMs`. */
async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('a dependency outage: 503 with Retry-After, nothing changed, health names it, and back after', () => {
  let engine: TestEngine;
  let dbProxy: Proxy;
  let temporalProxy: Proxy;
  let orm: MikroORM;
  let connection: Connection;
  let app: App;
  const logLines: { level: number; msg: string; dependency?: string }[] = [];
  let lastRetryDue = 0;
  let customerId: string;
  let planId: string;
  let subscriptionId: string;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await app.request(path, {
      method,
      headers: {
        ...engine.tenant.headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any, headers: response.headers };
  };
  const expectUnavailable = (response: { status: number; body: any; headers: Headers }, dependency: RegExp) => {
    expect(response.status, JSON.stringify(response.body)).toBe(503);
    expect(response.body).toEqual({ error: 'service_unavailable', message: expect.stringMatching(dependency) });
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
  };

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ customerId, planId } = await seedCustomerAndPlan(engine));
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status).toBe(201);
    subscriptionId = created.body.id;

    const dbUrl = new URL(engine.db.url);
    dbProxy = await startProxy(dbUrl.hostname, Number(dbUrl.port));
    dbUrl.hostname = '127.0.0.1';
    dbUrl.port = String(dbProxy.port);
    // The API's timeouts (api/server.ts), shortened so that a hung database answers within a few seconds here.
    orm = await openOrm(dbUrl.toString(), {
      pool: { min: 0, max: 4 },
      ...requestPathDatabaseOptions({ connectMs: 1_500, statementMs: 2_000, readMarginMs: 1_000 }),
    });
    const [temporalHost, temporalPort] = (engine.env.connection as Connection).options.address.split(':');
    temporalProxy = await startProxy(temporalHost === 'localhost' ? '127.0.0.1' : temporalHost!, Number(temporalPort));
    // The API's retry and deadlines (as api/server.ts connects), watched so that teardown can wait for its last scheduled retry.
    connection = await Connection.connect({
      address: `127.0.0.1:${temporalProxy.port}`,
      interceptors: requestPathTemporalInterceptors(
        (delay) => (lastRetryDue = Math.max(lastRetryDue, Date.now() + delay)),
      ),
    });
    const temporal = new Client({ connection, namespace: 'default' });
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
        done();
      },
    });
    app = createApp({ orm, temporal, config: engine.config, logger: pino({ level: 'info' }, sink) });
    // The app through the proxies works before any outage.
    expect((await call('GET', '/health')).status).toBe(200);
    expect((await call('GET', `/v1/customers/${customerId}`)).status).toBe(200);
  });
  afterAll(async () => {
    // A health check's call retried in the background until its deadline: closing the channel under a retry
    // still scheduled would make that retry throw. Its deadline has passed, so it ends at once when it fires.
    await until(async () => Date.now() > lastRetryDue + 100, Boolean, 30_000);
    await connection?.close();
    await orm?.close();
    await dbProxy?.close();
    await temporalProxy?.close();
    await engine?.close();
  });

  it('PostgreSQL down: reads, writes and a subscription answer 503 naming the database; health says database down; all works once it is back', async () => {
    const email = `outage-${randomBytes(3).toString('hex')}@example.com`;
    const key = `outage-db-${randomBytes(4).toString('hex')}`;
    const subscriptionsBefore = await engine.db.orm.em.fork().count(Subscription, { customerId });
    await dbProxy.down();
    try {
      expectUnavailable(await call('GET', `/v1/customers/${customerId}`), /database/);
      expectUnavailable(await call('GET', '/v1/customers'), /database/);
      expectUnavailable(
        await call('POST', '/v1/customers', { email, name: 'Outage' }, { 'idempotency-key': key }),
        /database/,
      );
      expectUnavailable(await call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }), /database/);
      expectUnavailable(await call('POST', `/v1/subscriptions/${subscriptionId}/cancel`, {}), /database/);
      const health = await call('GET', '/health');
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({
        status: 'degraded',
        database: { ok: false, error: expect.any(String) },
        temporal: { ok: true },
      });
      expect(
        logLines.filter((l) => l.msg === 'dependency unavailable' && l.dependency === 'database').length,
      ).toBeGreaterThanOrEqual(5);
      expect(logLines.filter((l) => l.msg === 'unhandled error')).toEqual([]);
      // Nothing was written (read directly, not through the proxy).
      const em = engine.db.orm.em.fork();
      expect(await em.count(Customer, { email })).toBe(0);
      expect(await em.count(Subscription, { customerId })).toBe(subscriptionsBefore);
      expect((await em.findOneOrFail(Subscription, { id: subscriptionId })).status).not.toBe('canceled');
    } finally {
      await dbProxy.up();
    }
    // Back: health ok, and the same requests go through (the Idempotency-Key's retry creates it once).
    await until(
      () => call('GET', '/health'),
      (h) => h.status === 200,
      30_000,
    );
    expect((await call('GET', `/v1/customers/${customerId}`)).status).toBe(200);
    const retried = await call('POST', '/v1/customers', { email, name: 'Outage' }, { 'idempotency-key': key });
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect(await engine.db.orm.em.fork().count(Customer, { email })).toBe(1);
  });

  it(
    'PostgreSQL hangs (stopped, connections open, nothing answered): requests answer 503 within the timeouts instead of hanging; nothing lost once it resumes',
    { timeout: 60_000 },
    async () => {
      const email = `hung-${randomBytes(3).toString('hex')}@example.com`;
      const key = `hung-db-${randomBytes(4).toString('hex')}`;
      // A pooled connection exists, so the first request meets a statement that gets no answer (the read timeout), the next a connect that does not complete.
      expect((await call('GET', `/v1/customers/${customerId}`)).status).toBe(200);
      dbProxy.stall();
      try {
        for (const request of [
          () => call('GET', `/v1/customers/${customerId}`),
          () => call('POST', '/v1/customers', { email, name: 'Hung' }, { 'idempotency-key': key }),
          () => call('GET', '/v1/customers'),
        ]) {
          const asked = Date.now();
          expectUnavailable(await request(), /database/);
          // statement 2 s + read margin 1 s, or connect 1.5 s (and a pool wait of at most the same): well under 10 s on a loaded machine.
          expect(Date.now() - asked).toBeLessThan(10_000);
        }
        const health = await call('GET', '/health');
        expect(health.status).toBe(503);
        expect(health.body).toMatchObject({ status: 'degraded', database: { ok: false }, temporal: { ok: true } });
        expect(logLines.filter((l) => l.msg === 'unhandled error')).toEqual([]);
      } finally {
        dbProxy.resume();
      }
      await until(
        () => call('GET', '/health'),
        (h) => h.status === 200,
        30_000,
      );
      // The refused create, retried with its key, is made once.
      const retried = await call('POST', '/v1/customers', { email, name: 'Hung' }, { 'idempotency-key': key });
      expect(retried.status, JSON.stringify(retried.body)).toBe(201);
      expect(await engine.db.orm.em.fork().count(Customer, { email })).toBe(1);
    },
  );

  it(
    'Temporal down: a new subscription and a cancel answer 503 naming Temporal and change nothing; reads still work; health says temporal down; both go through once it is back',
    { timeout: 180_000 },
    async () => {
      const key = `outage-temporal-${randomBytes(4).toString('hex')}`;
      const em = () => engine.db.orm.em.fork();
      const subscriptionsBefore = await em().count(Subscription, { customerId });
      await temporalProxy.down();
      try {
        // The API's client retries UNAVAILABLE for about a second (not the SDK's 20 s) before it gives up.
        const asked = Date.now();
        const [created, canceled] = await Promise.all([
          call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }, { 'idempotency-key': key }),
          call('POST', `/v1/subscriptions/${subscriptionId}/cancel`, {}),
        ]);
        expectUnavailable(created, /Temporal/);
        expectUnavailable(canceled, /Temporal/);
        expect(Date.now() - asked).toBeLessThan(8_000);
        // What needs only the database still answers.
        expect((await call('GET', `/v1/customers/${customerId}`)).status).toBe(200);
        expect((await call('GET', `/v1/subscriptions/${subscriptionId}`)).body.status).not.toBe('canceled');
        const health = await call('GET', '/health');
        expect(health.status).toBe(503);
        expect(health.body).toMatchObject({
          status: 'degraded',
          database: { ok: true },
          temporal: { ok: false, error: expect.any(String) },
        });
        expect(
          logLines.filter((l) => l.msg === 'dependency unavailable' && l.dependency === 'temporal').length,
        ).toBeGreaterThanOrEqual(2);
        expect(logLines.filter((l) => l.msg === 'unhandled error')).toEqual([]);
        expect(await em().count(Subscription, { customerId })).toBe(subscriptionsBefore);
        expect((await em().findOneOrFail(Subscription, { id: subscriptionId })).status).not.toBe('canceled');
      } finally {
        await temporalProxy.up();
      }
      // Back (the gRPC channel reconnects after its backoff): health ok, and the same requests go through.
      await until(
        () => call('GET', '/health'),
        (h) => h.status === 200,
        90_000,
      );
      const created = await call(
        'POST',
        '/v1/subscriptions',
        { customer_id: customerId, plan: planId },
        { 'idempotency-key': key },
      );
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const canceled = await call('POST', `/v1/subscriptions/${subscriptionId}/cancel`, {});
      expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
      expect(canceled.body.status).toBe('canceled');
      expect(await em().count(Subscription, { customerId })).toBe(subscriptionsBefore + 1);
    },
  );
});
