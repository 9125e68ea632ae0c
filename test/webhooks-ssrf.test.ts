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

import { createApp } from '../api/app.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint } from '../db/entities/index.ts';
import { createSecretBox } from '../domain/secret-box.ts';
import {
  addressRefusal,
  classifyAddress,
  type Resolver,
  strictUrlPolicy,
  UrlNotAllowedError,
} from '../domain/webhook-url.ts';
import { attemptOffsets, deliveryId, disableAfterMs, newWebhookSecret, retrySchedules } from '../domain/webhooks.ts';
import { createLogger } from '../logger.ts';
import { attemptWebhookDelivery } from '../services/webhooks/delivery.ts';
import { postWebhook } from '../services/webhooks/http-post.ts';
import { checkWebhookUrl } from '../services/webhooks/url-check.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const resolvesTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

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
    expect(await refused('http://hooks.example.com/x', true, resolvesTo('93.184.215.14'))).toBe(
      'live mode webhook urls must use https',
    );
    // What a name resolves to is never told (it would map the internal network).
    expect(await refused('https://rebind.example/x', true, resolvesTo('10.0.0.7'))).toBe(
      'rebind.example resolves to an address live mode webhooks may not target (loopback, private, link-local or reserved)',
    );
    // One bad address among good ones is enough.
    const mixed = await refused('https://mixed.example/x', true, resolvesTo('93.184.215.14', '::1'));
    expect(mixed).toContain('mixed.example resolves to an address live mode webhooks may not target');
    expect(mixed).not.toContain('::1');
    expect(
      await refused('https://nowhere.example/x', true, async () =>
        Promise.reject(Object.assign(new Error('nx'), { code: 'ENOTFOUND' })),
      ),
    ).toBe('nowhere.example does not resolve (ENOTFOUND)');
    expect(await refused('https://[::ffff:127.0.0.1]/x', true)).toContain('loopback');
    expect(await refused('https://user:pw@93.184.215.14/x', true)).toBe('url may not contain a user name or password');
    expect(await refused('ftp://93.184.215.14/x', false)).toBe('url must be http or https');
    const metadata = await refused('http://metadata.internal/x', false, resolvesTo('169.254.169.254'));
    expect(metadata).toBe(
      'metadata.internal resolves to an address sandbox webhooks may not target (loopback, private, link-local or reserved)',
    );
    expect(metadata).not.toContain('169.254');
    const ok = await checkWebhookUrl(
      'https://hooks.example.com:8443/in?x=1',
      true,
      resolvesTo('93.184.215.14', '2606:4700:4700::1111'),
    );
    expect(ok.hostname).toBe('hooks.example.com');
    expect(ok.addresses.map((a) => a.address)).toEqual(['93.184.215.14', '2606:4700:4700::1111']);
    expect(
      (await checkWebhookUrl('http://localhost:9/x', false)).addresses.every(
        (a) => classifyAddress(a.address) === 'loopback',
      ),
    ).toBe(true);
  });

  it('judges NAT64 local-use, every IPv4-mapped spelling and 6to4 with a private IPv4 inside', () => {
    const table: [string, ReturnType<typeof classifyAddress>][] = [
      ['64:ff9b:1::a00:1', 'reserved'],
      ['64:ff9b:1::808:808', 'reserved'],
      ['64:ff9b:1:ffff::1', 'reserved'],
      ['0:0:0:0:0:ffff:a00:1', 'private'],
      ['::ffff:0a00:0001', 'private'],
      ['::FFFF:7F00:1', 'loopback'],
      ['::ffff:0:7f00:1', 'loopback'],
      ['::ffff:0:a9fe:a9fe', 'link-local'],
      ['2002:7f00:1::1', 'loopback'],
      ['2002:a00:1::', 'private'],
      ['2002:a9fe:a9fe::1', 'link-local'],
      ['2002:c0a8:101:1::2', 'private'],
      ['2002:808:808::1', null],
    ];
    for (const [ip, kind] of table) expect(classifyAddress(ip), ip).toBe(kind);
  });

  it("in production sandbox follows live's address rules, except the hosts and CIDRs the operator allows", async () => {
    const outcome = (
      url: string,
      livemode: boolean,
      policy: Parameters<typeof checkWebhookUrl>[3],
      resolver?: Resolver,
    ) =>
      checkWebhookUrl(url, livemode, resolver, policy).then(
        () => 'ok',
        (e: Error) => e.message,
      );
    expect(await outcome('http://127.0.0.1:9/x', false, strictUrlPolicy)).toBe(
      '127.0.0.1 is a loopback address, which sandbox webhooks may not target',
    );
    expect(await outcome('http://hooks.internal/x', false, strictUrlPolicy, resolvesTo('10.1.2.3'))).toBe(
      'hooks.internal resolves to an address sandbox webhooks may not target (loopback, private, link-local or reserved)',
    );
    const allowed = {
      sandboxPrivateNetworks: false,
      allowedPrivateHosts: ['hooks.internal', '10.9.0.0/16', '127.0.0.1', 'fd00::/8', '169.254.0.0/16'],
    };
    expect(await outcome('http://HOOKS.internal/x', false, allowed, resolvesTo('10.1.2.3'))).toBe('ok');
    expect(await outcome('http://other.internal/x', false, allowed, resolvesTo('10.9.8.7'))).toBe('ok');
    expect(await outcome('http://other.internal/x', false, allowed, resolvesTo('10.10.0.1'))).not.toBe('ok');
    expect(await outcome('http://127.0.0.1:9/x', false, allowed)).toBe('ok');
    expect(await outcome('http://127.0.0.2:9/x', false, allowed)).not.toBe('ok');
    expect(await outcome('http://[fd00::5]/x', false, allowed)).toBe('ok');
    // Never link-local (cloud metadata), even when listed; never in live mode.
    expect(await outcome('http://169.254.169.254/x', false, allowed)).not.toBe('ok');
    expect(await outcome('https://hooks.internal/x', true, allowed, resolvesTo('10.1.2.3'))).not.toBe('ok');

    const production = {
      NODE_ENV: 'production',
      AUTH_SECRET: 'x'.repeat(32),
      ADMIN_EMAIL: 'a@example.com',
      ADMIN_PASSWORD: 'Admin!2345',
      ALLOW_SANDBOX_LIVE: 'true',
    };
    expect(loadConfig(production).webhookUrlPolicy).toEqual({ sandboxPrivateNetworks: false, allowedPrivateHosts: [] });
    expect(
      loadConfig({ ...production, WEBHOOK_ALLOWED_PRIVATE_HOSTS: ' hooks.internal, 10.0.0.0/8 ' }).webhookUrlPolicy,
    ).toEqual({
      sandboxPrivateNetworks: false,
      allowedPrivateHosts: ['hooks.internal', '10.0.0.0/8'],
    });
    expect(loadConfig({}).webhookUrlPolicy.sandboxPrivateNetworks).toBe(true);
    for (const bad of ['10.0.0.0/33', 'http://x', 'a b', '10.0.0.0/8/1']) {
      expect(() => loadConfig({ WEBHOOK_ALLOWED_PRIVATE_HOSTS: bad }), bad).toThrow(ConfigError);
    }
  });

  it('refuses control characters in urls instead of letting the parser drop them', async () => {
    for (const url of [
      'https://93.184.215.14/ho\r\nok',
      'https://93.184.215.14/a\tb',
      'https://93.184.215.14/\u0000',
    ]) {
      await expect(checkWebhookUrl(url, true), JSON.stringify(url)).rejects.toThrow(
        'url may not contain control characters',
      );
    }
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
    // The code and a phrase, never the system's message with the address and port.
    expect(refused.error).toBe('connection refused (ECONNREFUSED)');
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
    expect(localhost.body.message).toBe(
      'url: localhost resolves to an address live mode webhooks may not target (loopback, private, link-local or reserved).',
    );
    // A public address is accepted (left disabled: this test sends nothing anywhere).
    const accepted = await engine.call('POST', '/v1/webhooks', {
      url: 'https://93.184.215.14/hook',
      events: ['*'],
      enabled: false,
    });
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
    em.create(WebhookDelivery, {
      id,
      accountId: event.accountId,
      livemode: true,
      endpointId: endpoint.id,
      eventId: event.id,
      eventType: event.type,
      redelivery: false,
      status: 'pending',
      attemptCount: 0,
      lastAttemptAt: null,
      nextAttemptAt: now,
      completedAt: null,
      createdAt: now,
    });
    await em.flush();
    let lookups = 0;
    const rebinding: Resolver = async () => {
      lookups++;
      return [{ address: '10.0.0.7', family: 4 }];
    };
    const outcome = await attemptWebhookDelivery(
      engine.db.orm.em.fork(),
      { secretBox: box, resolver: rebinding },
      {
        deliveryId: id,
        attempt: 1,
        attemptedAt: now.toISOString(),
        nextAttemptAt: new Date(now.getTime() + 5000).toISOString(),
      },
    );
    expect(outcome).toEqual({ outcome: 'failed' });
    expect(lookups).toBe(1);
    const [attempt] = await engine.db.orm.em.fork().find(WebhookAttempt, { deliveryId: id });
    expect(attempt).toMatchObject({
      attempt: 1,
      succeeded: false,
      statusCode: null,
      latencyMs: 0,
      error:
        'url not allowed: rebind.example resolves to an address live mode webhooks may not target (loopback, private, link-local or reserved)',
    });
    expect(await engine.db.orm.em.fork().findOneOrFail(WebhookDelivery, { id })).toMatchObject({
      status: 'pending',
      attemptCount: 1,
    });

    // A secret sealed under another AUTH_SECRET cannot be opened: the attempt records why, and sends nothing.
    await engine.db.orm.em
      .fork()
      .nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id },
        { secret: createSecretBox('another-auth-secret').seal(newWebhookSecret()) },
      );
    const second = await attemptWebhookDelivery(
      engine.db.orm.em.fork(),
      { secretBox: box, resolver: rebinding },
      { deliveryId: id, attempt: 2, attemptedAt: new Date(now.getTime() + 5000).toISOString(), nextAttemptAt: null },
    );
    expect(second).toEqual({ outcome: 'failed' });
    expect(lookups).toBe(1);
    const attempts = await engine.db.orm.em
      .fork()
      .find(WebhookAttempt, { deliveryId: id }, { orderBy: { attempt: 'asc' } });
    expect(attempts[1]).toMatchObject({
      attempt: 2,
      statusCode: null,
      error: 'the signing secret cannot be opened (was AUTH_SECRET changed?); rotate the secret',
    });
    expect(await engine.db.orm.em.fork().findOneOrFail(WebhookDelivery, { id })).toMatchObject({
      status: 'failed',
      attemptCount: 2,
      nextAttemptAt: null,
    });
  });
  it('stores the checked, normalized url, and refuses one with CR or LF', async () => {
    const created = await engine.call('POST', '/v1/webhooks', {
      url: 'HTTPS://93.184.215.14:443/a/../hook',
      events: ['*'],
      enabled: false,
    });
    expect(created.status).toBe(201);
    expect(created.body.url).toBe('https://93.184.215.14/hook');
    expect((await engine.call('GET', `/v1/webhooks/${created.body.id}`)).body.url).toBe('https://93.184.215.14/hook');
    for (const url of ['https://93.184.215.14/x\r\nX-Injected: 1', 'https://93.184.215.14/x\n']) {
      const refused = await engine.call('POST', '/v1/webhooks', { url, events: ['*'] });
      expect(refused.status, url).toBe(400);
      expect(refused.body.error).toBe('url_not_allowed');
    }
    const patched = await engine.call('PATCH', `/v1/webhooks/${created.body.id}`, {
      url: 'https://93.184.215.14/other\r',
    });
    expect(patched.body.error).toBe('url_not_allowed');
    await engine.call('DELETE', `/v1/webhooks/${created.body.id}`);
  });

  it('with NODE_ENV=production rules, the sandbox may not register or deliver to this machine unless allowed', async () => {
    const app = (allowedPrivateHosts: string[]) =>
      createApp({
        orm: engine.db.orm,
        temporal: engine.env.client,
        config: { ...engine.config, webhookUrlPolicy: { sandboxPrivateNetworks: false, allowedPrivateHosts } },
        logger: createLogger('silent'),
      });
    const post = (a: ReturnType<typeof app>, url: string) =>
      a.request('/v1/webhooks', {
        method: 'POST',
        headers: { ...engine.tenant.headers, 'x-sandbox-mode': 'true', 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['*'], enabled: false }),
      });
    const strict = app([]);
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://localhost:9/hook',
      'http://10.0.0.1/hook',
      'http://[::ffff:127.0.0.1]:9/hook',
    ]) {
      const response = await post(strict, url);
      expect(response.status, url).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe('url_not_allowed');
    }
    const listed = app(['127.0.0.1']);
    expect((await post(listed, 'http://127.0.0.1:9/hook')).status).toBe(201);
    expect((await post(listed, 'http://10.0.0.1/hook')).status).toBe(400);

    // Delivery checks again under the worker's policy: a sandbox endpoint on loopback is refused without a connection,
    // and the attempt's log names no address.
    const em = engine.db.orm.em.fork();
    const box = createSecretBox(engine.config.auth.secret);
    const now = new Date();
    const endpoint = em.create(WebhookEndpoint, {
      id: 'we_01jd3x5k8q0m2v7c9r4t6y1w3f',
      accountId: engine.tenant.accountId,
      livemode: false,
      url: 'http://receiver.local:9/hook',
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
      id: 'evt_01jd3x5k8q0m2v7c9r4t6y1w3f',
      accountId: engine.tenant.accountId,
      livemode: false,
      type: 'customer.created',
      transactionId: null,
      data: { object: { id: 'cus_y' } },
      createdAt: now,
      dispatchedAt: now,
    });
    const id = deliveryId(event.id, endpoint.id);
    em.create(WebhookDelivery, {
      id,
      accountId: event.accountId,
      livemode: false,
      endpointId: endpoint.id,
      eventId: event.id,
      eventType: event.type,
      redelivery: false,
      status: 'pending',
      attemptCount: 0,
      lastAttemptAt: null,
      nextAttemptAt: now,
      completedAt: null,
      createdAt: now,
    });
    await em.flush();
    const loopback = resolvesTo('127.0.0.1');
    const input = (attempt: number) => ({
      deliveryId: id,
      attempt,
      attemptedAt: new Date(now.getTime() + attempt).toISOString(),
      nextAttemptAt: new Date(now.getTime() + 60_000).toISOString(),
    });
    expect(
      await attemptWebhookDelivery(
        engine.db.orm.em.fork(),
        { secretBox: box, resolver: loopback, urlPolicy: strictUrlPolicy },
        input(1),
      ),
    ).toEqual({ outcome: 'failed' });
    // Allowed by name: it connects (nothing listens on port 9), and the error names neither address nor port.
    expect(
      await attemptWebhookDelivery(
        engine.db.orm.em.fork(),
        {
          secretBox: box,
          resolver: loopback,
          urlPolicy: { sandboxPrivateNetworks: false, allowedPrivateHosts: ['receiver.local'] },
        },
        input(2),
      ),
    ).toEqual({ outcome: 'failed' });
    const attempts = await engine.db.orm.em
      .fork()
      .find(WebhookAttempt, { deliveryId: id }, { orderBy: { attempt: 'asc' } });
    expect(attempts.map((a) => [a.statusCode, a.responseBody, a.error])).toEqual([
      [
        null,
        null,
        'url not allowed: receiver.local resolves to an address sandbox webhooks may not target (loopback, private, link-local or reserved)',
      ],
      [null, null, 'connection refused (ECONNREFUSED)'],
    ]);
  });
});
