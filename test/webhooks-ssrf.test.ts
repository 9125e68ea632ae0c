/**
 * Where webhooks may go (SSRF rules), checked at registration through the API
 * and before every attempt with injected DNS answers (a name that resolved to a
 * public address at registration and to a private one at delivery: DNS
 * rebinding); and the HTTP client's limits (no redirects, timeout, 1 KB kept),
 * against real local servers. No traffic leaves 127.0.0.1.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postWebhook } from '../services/webhook-http.ts';
import { attemptWebhookDelivery } from '../services/webhooks.ts';
import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../db/entities/index.ts';
import { createSecretBox } from '../domain/secret-box.ts';
import { addressRefusal, checkWebhookUrl, classifyAddress, UrlNotAllowedError, type Resolver } from '../domain/webhook-url.ts';
import { attemptOffsets, deliveryId, disableAfterMs, newWebhookSecret, retrySchedules } from '../domain/webhooks.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const resolvesTo = (...addresses: string[]): Resolver => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('address rules', () => {
  it('classifies every special range, IPv4 inside IPv6 included', () => {
    const table: [string, ReturnType<typeof classifyAddress>][] = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['172.32.0.1', null],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['100.128.0.1', null],
      ['169.254.169.254', 'link-local'],
      ['0.0.0.0', 'unspecified'],
      ['224.0.0.1', 'multicast'],
      ['255.255.255.255', 'reserved'],
      ['192.0.2.10', 'reserved'],
      ['8.8.8.8', null],
      ['93.184.215.14', null],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fe80::1', 'link-local'],
      ['fd12:3456::1', 'private'],
      ['fc00::1', 'private'],
      ['ff02::1', 'multicast'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:169.254.169.254', 'link-local'],
      ['64:ff9b::10.0.0.1', 'private'],
      ['::10.0.0.1', 'private'],
      ['2001:db8::1', 'reserved'],
      ['2606:4700:4700::1111', null],
      ['::ffff:8.8.8.8', null],
    ];
    for (const [ip, kind] of table) expect(classifyAddress(ip), ip).toBe(kind);
    expect(addressRefusal('127.0.0.1', true)).toBe('127.0.0.1 is a loopback address');
    expect(addressRefusal('127.0.0.1', false)).toBeNull();
    expect(addressRefusal('10.1.2.3', false)).toBeNull();
    expect(addressRefusal('169.254.169.254', false)).toBe('169.254.169.254 is a link-local address');
  });

  it('checks urls on every address a name resolves to, with the resolver it is given', async () => {
    const refused = async (url: string, livemode: boolean, resolver?: Resolver) => {
      const error = await checkWebhookUrl(url, livemode, resolver).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, url).toBeInstanceOf(UrlNotAllowedError);
      return (error as Error).message;
    };
    expect(await refused('http://hooks.example.com/x', true, resolvesTo('93.184.215.14'))).toBe('live mode webhook urls must use https');
    expect(await refused('https://rebind.example/x', true, resolvesTo('10.0.0.7'))).toBe('rebind.example resolves to 10.0.0.7: 10.0.0.7 is a private address, which live mode webhooks may not target');
    // One bad address among good ones is enough.
    expect(await refused('https://mixed.example/x', true, resolvesTo('93.184.215.14', '::1'))).toContain('resolves to ::1');
    expect(await refused('https://nowhere.example/x', true, async () => Promise.reject(Object.assign(new Error('nx'), { code: 'ENOTFOUND' })))).toBe('nowhere.example does not resolve (ENOTFOUND)');
    expect(await refused('https://[::ffff:127.0.0.1]/x', true)).toContain('loopback');
    expect(await refused('https://user:pw@93.184.215.14/x', true)).toBe('url may not contain a user name or password');
    expect(await refused('ftp://93.184.215.14/x', false)).toBe('url must be http or https');
    expect(await refused('http://metadata.internal/x', false, resolvesTo('169.254.169.254'))).toContain('link-local');
    const ok = await checkWebhookUrl('https://hooks.example.com:8443/in?x=1', true, resolvesTo('93.184.215.14', '2606:4700:4700::1111'));
    expect(ok.hostname).toBe('hooks.example.com');
    expect(ok.addresses.map((a) => a.address)).toEqual(['93.184.215.14', '2606:4700:4700::1111']);
    expect((await checkWebhookUrl('http://localhost:9/x', false)).addresses.every((a) => classifyAddress(a.address) === 'loopback')).toBe(true);
  });

  it('retry schedules end at the disable windows: 3 days live, 1 hour in the sandbox', () => {
    expect(attemptOffsets(true).at(-1)).toBe(disableAfterMs.live);
    expect(attemptOffsets(true).at(-1)).toBe(72 * 3_600_000);
    expect(attemptOffsets(true)).toHaveLength(13);
    expect(retrySchedules.live.slice(0, 6)).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000]);
    expect(attemptOffsets(false)).toEqual([0, 5, 65, 365, 1265, 3065, 3600].map((s) => s * 1000));
    expect(disableAfterMs.sandbox).toBe(3_600_000);
  });
});

describe('the HTTP client', () => {
  let server: http.Server;
  let port = 0;
  const hits: string[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(`${req.url} host=${req.headers.host}`);
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/target` });
        res.end('moved');
      } else if (req.url === '/big') {
        res.writeHead(200);
        res.end('x'.repeat(5000));
      } else if (req.url === '/slow') {
        // never answers
      } else {
        res.writeHead(204);
        res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const target = (path: string) => checkWebhookUrl(`http://127.0.0.1:${port}${path}`, false);

  it('does not follow redirects, keeps 1 KB of the body, and times out', async () => {
    const redirect = await postWebhook(await target('/redirect'), {}, '{}');
    expect(redirect).toMatchObject({ statusCode: 302, body: 'moved', error: null });
    expect(hits.filter((h) => h.startsWith('/target'))).toEqual([]);
    const big = await postWebhook(await target('/big'), {}, '{}');
    expect(big.statusCode).toBe(200);
    expect(big.body).toBe('x'.repeat(1024));
    const started = Date.now();
    const slow = await postWebhook(await target('/slow'), {}, '{}', { timeoutMs: 300 });
    expect(slow).toMatchObject({ statusCode: null, body: null, error: 'timed out after 300 ms' });
    expect(Date.now() - started).toBeLessThan(2_000);
    const refused = await postWebhook(await checkWebhookUrl('http://127.0.0.1:1/x', false), {}, '{}');
    expect(refused.statusCode).toBeNull();
    expect(refused.error).toContain('ECONNREFUSED');
  });

  it('connects to the address that was checked, never resolving the name again', async () => {
    // rebind.test resolves nowhere on this machine: only the checked answer can have reached the server.
    const checked = await checkWebhookUrl(`http://rebind.test:${port}/pinned`, false, resolvesTo('127.0.0.1'));
    const response = await postWebhook(checked, {}, '{}');
    expect(response.statusCode).toBe(204);
    expect(hits).toContain(`/pinned host=rebind.test:${port}`);
  });
});

describe('through the engine', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    // No worker: these checks call the delivery code directly.
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(async () => {
    await engine?.close();
  });

  it('refuses live endpoints on loopback, private, link-local and metadata addresses, and plain http', async () => {
    const urls = [
      'https://127.0.0.1/hook',
      'https://10.0.0.1/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'https://[fd00::1]/hook',
      'https://localhost/hook',
      'https://100.64.1.1/hook',
      'https://0.0.0.0/hook',
      'http://93.184.215.14/hook',
    ];
    for (const url of urls) {
      const response = await engine.call('POST', '/v1/webhooks', { url, events: ['*'] });
      expect(response.status, url).toBe(400);
      expect(response.body.error, url).toBe('url_not_allowed');
      expect(response.body.message, url).toMatch(/^url: /);
    }
    const localhost = await engine.call('POST', '/v1/webhooks', { url: 'https://localhost/hook', events: ['*'] });
    expect(localhost.body.message).toMatch(/^url: localhost resolves to (127\.0\.0\.1|::1): .* is a loopback address, which live mode webhooks may not target\.$/);
    // A public address is accepted (left disabled: this test sends nothing anywhere).
    const accepted = await engine.call('POST', '/v1/webhooks', { url: 'https://93.184.215.14/hook', events: ['*'], enabled: false });
    expect(accepted.status).toBe(201);
    const moved = await engine.call('PATCH', `/v1/webhooks/${accepted.body.id}`, { url: 'https://192.168.0.10/hook' });
    expect(moved.status).toBe(400);
    expect(moved.body.error).toBe('url_not_allowed');
    expect((await engine.call('GET', `/v1/webhooks/${accepted.body.id}`)).body.url).toBe('https://93.184.215.14/hook');
    expect((await engine.call('GET', '/v1/webhooks')).body.data).toHaveLength(1);

    // The sandbox may target this machine, but not link-local or unspecified addresses.
    const sandbox = { 'x-sandbox-mode': 'true' };
    for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://10.0.0.1/hook']) {
      const ok = await engine.call('POST', '/v1/webhooks', { url, events: ['*'], enabled: false }, sandbox);
      expect(ok.status, url).toBe(201);
    }
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://0.0.0.0:9/hook', 'http://[fe80::1]/hook']) {
      const refused = await engine.call('POST', '/v1/webhooks', { url, events: ['*'] }, sandbox);
      expect(refused.status, url).toBe(400);
      expect(refused.body.error).toBe('url_not_allowed');
    }
  });

  it('checks again at delivery: a name that now resolves to a private address is refused without a connection', async () => {
    const em = engine.db.orm.em.fork();
    const box = createSecretBox(engine.config.auth.secret);
    const now = new Date();
    const endpoint = em.create(WebhookEndpoint, {
      id: 'we_01jd3x5k8q0m2v7c9r4t6y1w3e',
      accountId: engine.tenant.accountId,
      livemode: true,
      url: 'https://rebind.example/hook',
      description: null,
      events: ['*'],
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      secret: box.seal(newWebhookSecret()),
      previousSecret: null,
      previousSecretExpiresAt: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    });
    const event = em.create(Event, {
      id: 'evt_01jd3x5k8q0m2v7c9r4t6y1w3e',
      accountId: engine.tenant.accountId,
      livemode: true,
      type: 'customer.created',
      transactionId: null,
      data: { object: { id: 'cus_x' } },
      createdAt: now,
      dispatchedAt: now,
    });
    const id = deliveryId(event.id, endpoint.id);
    em.create(WebhookDelivery, { id, accountId: event.accountId, livemode: true, endpointId: endpoint.id, eventId: event.id, eventType: event.type, redelivery: false, status: 'pending', attemptCount: 0, lastAttemptAt: null, nextAttemptAt: now, completedAt: null, createdAt: now });
    await em.flush();
    let lookups = 0;
    const rebinding: Resolver = async () => {
      lookups++;
      return [{ address: '10.0.0.7', family: 4 }];
    };
    const outcome = await attemptWebhookDelivery(engine.db.orm.em.fork(), { secretBox: box, resolver: rebinding }, { deliveryId: id, attempt: 1, attemptedAt: now.toISOString(), nextAttemptAt: new Date(now.getTime() + 5000).toISOString() });
    expect(outcome).toEqual({ outcome: 'failed' });
    expect(lookups).toBe(1);
    const [attempt] = await engine.db.orm.em.fork().find(WebhookAttempt, { deliveryId: id });
    expect(attempt).toMatchObject({
      attempt: 1,
      succeeded: false,
      statusCode: null,
      latencyMs: 0,
      error: 'url not allowed: rebind.example resolves to 10.0.0.7: 10.0.0.7 is a private address, which live mode webhooks may not target',
    });
    expect(await engine.db.orm.em.fork().findOneOrFail(WebhookDelivery, { id })).toMatchObject({ status: 'pending', attemptCount: 1 });

    // A secret sealed under another AUTH_SECRET cannot be opened: the attempt records why, and sends nothing.
    await engine.db.orm.em.fork().nativeUpdate(WebhookEndpoint, { id: endpoint.id }, { secret: createSecretBox('another-auth-secret').seal(newWebhookSecret()) });
    const second = await attemptWebhookDelivery(engine.db.orm.em.fork(), { secretBox: box, resolver: rebinding }, { deliveryId: id, attempt: 2, attemptedAt: new Date(now.getTime() + 5000).toISOString(), nextAttemptAt: null });
    expect(second).toEqual({ outcome: 'failed' });
    expect(lookups).toBe(1);
    const attempts = await engine.db.orm.em.fork().find(WebhookAttempt, { deliveryId: id }, { orderBy: { attempt: 'asc' } });
    expect(attempts[1]).toMatchObject({ attempt: 2, statusCode: null, error: 'the signing secret cannot be opened (was AUTH_SECRET changed?); rotate the secret' });
    expect(await engine.db.orm.em.fork().findOneOrFail(WebhookDelivery, { id })).toMatchObject({ status: 'failed', attemptCount: 2, nextAttemptAt: null });
  });
});
