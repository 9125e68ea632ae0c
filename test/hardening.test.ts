/**
 * Issue #12: security findings and rough edges, each pinned by a test that failed
 * before the fix. See docs/security.md.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createApp } from '../api/app.ts';
import { secretKey } from '../api/auth/tokens.ts';
import { LoginAttempt, Transaction } from '../db/entities/index.ts';
import { devTemporalTarget } from '../dev/temporal-cli.ts';
import { createLogger } from '../logger.ts';
import { createTestDatabase } from './helpers/db.ts';
import { startTestEngine, type Tenant, type TestEngine, testPassword } from './helpers/engine.ts';

const errorShape = (code: string) => ({ error: code, message: expect.any(String) });

describe('hardening', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  async function member(tenant: Tenant, role: 'member' | 'owner' = 'member') {
    const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
    const created = await engine.call('POST', '/v1/users', { email, password: testPassword, role }, tenant.headers);
    expect(created.status).toBe(201);
    const session = await engine.login(email, testPassword);
    return { id: created.body.id as string, email, ...session };
  }

  describe('login throttle', () => {
    it('20 concurrent wrong guesses: at most 5 reach the password check, the rest answer 429 with Retry-After', async () => {
      const tenant = await engine.signUp();
      const guesses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          engine.call(
            'POST',
            '/v1/auth/login',
            { email: tenant.email, password: `Wrong!guess${i}` },
            { authorization: '' },
          ),
        ),
      );
      const statuses = guesses.map((g) => g.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(engine.config.auth.maxFailedLoginsPerEmail);
      expect(statuses.filter((s) => s !== 401).every((s) => s === 429)).toBe(true);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(
        20 - engine.config.auth.maxFailedLoginsPerEmail,
      );
      for (const g of guesses.filter((g) => g.status === 429)) {
        expect(g.body).toEqual(errorShape('rate_limited'));
        expect(Number(g.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // Only the reserved attempts were verified and recorded.
      expect(
        await engine.db.orm.em.fork().count(LoginAttempt, { email: tenant.email, succeeded: false }),
      ).toBeLessThanOrEqual(engine.config.auth.maxFailedLoginsPerEmail);
      // Even the right password waits now.
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/login',
            { email: tenant.email, password: tenant.password },
            { authorization: '' },
          )
        ).status,
      ).toBe(429);
    });

    it('a successful login is not counted as a failure', async () => {
      const tenant = await engine.signUp();
      for (let i = 0; i < engine.config.auth.maxFailedLoginsPerEmail + 2; i++)
        await engine.login(tenant.email, tenant.password);
      expect(await engine.db.orm.em.fork().count(LoginAttempt, { email: tenant.email, succeeded: false })).toBe(0);
    });
  });

  describe('re-authentication for credentials', () => {
    it("changing one's own password needs current_password", async () => {
      const tenant = await engine.signUp();
      const me = (await engine.call('GET', '/v1/users', undefined, tenant.headers)).body.data[0].id;
      const missing = await engine.call('PATCH', `/v1/users/${me}`, { password: 'Changed!pass2' }, tenant.headers);
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual(errorShape('invalid_request'));
      expect(missing.body.message).toContain('current_password');
      const wrong = await engine.call(
        'PATCH',
        `/v1/users/${me}`,
        { password: 'Changed!pass2', current_password: 'Not!thepass1' },
        tenant.headers,
      );
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual(errorShape('invalid_credentials'));
      // Nothing changed: the old password still logs in.
      await engine.login(tenant.email, tenant.password);
      const ok = await engine.call(
        'PATCH',
        `/v1/users/${me}`,
        { password: 'Changed!pass2', current_password: tenant.password },
        tenant.headers,
      );
      expect(ok.status).toBe(200);
      await engine.login(tenant.email, 'Changed!pass2');
      // A member too.
      const m = await member(tenant);
      expect((await engine.call('PATCH', `/v1/users/${m.id}`, { password: 'Member!pass2' }, m.headers)).status).toBe(
        400,
      );
      expect(
        (
          await engine.call(
            'PATCH',
            `/v1/users/${m.id}`,
            { password: 'Member!pass2', current_password: testPassword },
            m.headers,
          )
        ).status,
      ).toBe(200);
    });

    it('an owner changing the account email needs current_password; the name alone does not', async () => {
      const tenant = await engine.signUp();
      const email = `new-${tenant.accountId}@example.com`;
      expect((await engine.call('PATCH', '/v1/account', { email }, tenant.headers)).body).toEqual(
        errorShape('invalid_request'),
      );
      expect(
        (await engine.call('PATCH', '/v1/account', { email, current_password: 'Not!thepass1' }, tenant.headers)).body,
      ).toEqual(errorShape('invalid_credentials'));
      expect((await engine.call('GET', '/v1/account', undefined, tenant.headers)).body.email).toBe(tenant.email);
      expect((await engine.call('PATCH', '/v1/account', { name: 'Renamed' }, tenant.headers)).status).toBe(200);
      const ok = await engine.call(
        'PATCH',
        '/v1/account',
        { email, current_password: tenant.password },
        tenant.headers,
      );
      expect(ok.status).toBe(200);
      expect(ok.body.email).toBe(email);
      // The platform admin acts on the account without the owner's password.
      const admin = await engine.admin();
      const byAdmin = await engine.call(
        'PATCH',
        '/v1/account',
        { email: `admin-set-${tenant.accountId}@example.com` },
        { ...admin.headers, 'x-account-id': tenant.accountId },
      );
      expect(byAdmin.status).toBe(200);
    });

    it("a co-owner cannot set another owner's password or suspend them; a platform admin can; owners still manage members", async () => {
      const tenant = await engine.signUp();
      const coOwner = await member(tenant, 'owner');
      const ownerId = (await engine.call('GET', '/v1/users', undefined, tenant.headers)).body.data.find(
        (u: { email: string }) => u.email === tenant.email,
      ).id;
      const takeover = await engine.call('PATCH', `/v1/users/${ownerId}`, { password: 'Takeover!1x' }, coOwner.headers);
      expect(takeover.status).toBe(403);
      expect(takeover.body).toEqual(errorShape('forbidden'));
      const suspend = await engine.call('PATCH', `/v1/users/${ownerId}`, { status: 'suspended' }, coOwner.headers);
      expect(suspend.status).toBe(403);
      // The owner is untouched and still works.
      expect((await engine.call('GET', '/v1/account', undefined, tenant.headers)).status).toBe(200);
      await engine.login(tenant.email, tenant.password);
      // A co-owner may still rename another owner, and manage members.
      expect((await engine.call('PATCH', `/v1/users/${ownerId}`, { name: 'Boss' }, coOwner.headers)).status).toBe(200);
      const m = await member(tenant);
      expect((await engine.call('PATCH', `/v1/users/${m.id}`, { status: 'suspended' }, coOwner.headers)).status).toBe(
        200,
      );
      // The platform admin can reset an owner's password (no current_password: it is not theirs).
      const admin = await engine.admin();
      expect(
        (await engine.call('PATCH', `/v1/users/${ownerId}`, { password: 'Reset!pass9' }, admin.headers)).status,
      ).toBe(200);
      await engine.login(tenant.email, 'Reset!pass9');
    });
  });

  describe('live credits', () => {
    let tenant: Tenant;
    let adminHeaders: Record<string, string>;
    beforeAll(async () => {
      tenant = await engine.signUp();
      adminHeaders = { ...(await engine.admin()).headers, 'x-account-id': tenant.accountId };
    });
    const create = (type: string, headers: Record<string, string>, amount = 500) =>
      engine.call('POST', '/v1/transactions', { account_id: tenant.accountId, amount, currency: 'USD', type }, headers);
    const count = () => engine.db.orm.em.fork().count(Transaction, { accountId: tenant.accountId });

    it('an owner, a member or a live API key cannot credit in live mode: 403 forbidden, nothing written', async () => {
      const liveKey = (await engine.call('POST', '/v1/api_keys', { mode: 'live' }, tenant.headers)).body.secret;
      const m = await member(tenant);
      for (const headers of [tenant.headers, m.headers, { authorization: `Bearer ${liveKey}` }]) {
        const refused = await create('credit', headers);
        expect(refused.status).toBe(403);
        expect(refused.body).toEqual(errorShape('forbidden'));
        expect(refused.body.message).toMatch(/live mode only a platform admin/);
      }
      expect(await count()).toBe(0);
    });

    it('the platform admin credits in live mode; members cannot refund live; owners can', async () => {
      expect((await create('credit', adminHeaders, 2000)).status).toBe(201);
      const m = await member(tenant);
      const refused = await create('refund', m.headers, 100);
      expect(refused.status).toBe(403);
      expect(refused.body.message).toMatch(/Members cannot refund in live mode/);
      expect((await create('refund', tenant.headers, 100)).status).toBe(201);
    });

    it('sandbox credits and refunds stay open to owners, members and test keys', async () => {
      const testKey = (await engine.call('POST', '/v1/api_keys', { mode: 'test' }, tenant.headers)).body.secret;
      const m = await member(tenant);
      const sandbox = { 'x-sandbox-mode': 'true' };
      expect((await create('credit', { ...tenant.headers, ...sandbox })).status).toBe(201);
      expect((await create('credit', { ...m.headers, ...sandbox })).status).toBe(201);
      expect((await create('credit', { authorization: `Bearer ${testKey}` })).status).toBe(201);
      expect((await create('refund', { ...m.headers, ...sandbox }, 100)).status).toBe(201);
    });
  });

  describe('bad input answers 400, not 500', () => {
    it('a NUL in the query string outside /v1', async () => {
      for (const path of ['/invoices?customer=%00', '/invoices?status=a%00b', '/pay/x%00', '/health?x=%00']) {
        const response = await engine.call('GET', path);
        expect(response.status, path).toBe(400);
        expect(response.body, path).toEqual(errorShape('invalid_request'));
      }
    });

    it('lone UTF-16 surrogates in JSON bodies, in values and in keys', async () => {
      for (const body of [
        '{"name":"\\ud800"}',
        '{"name":"a\\udc00b"}',
        '{"email":"x@example.com","metadata":{"\\udbff":"v"}}',
        '{"name":"\\udc00\\ud800"}',
      ]) {
        const response = await engine.call('POST', '/v1/customers', body);
        expect(response.status, body).toBe(400);
        expect(response.body, body).toEqual(errorShape('invalid_request'));
      }
      // A well-formed pair (an emoji) is fine.
      const ok = await engine.call('POST', '/v1/customers', '{"email":"emoji@example.com","name":"\\ud83d\\ude00"}');
      expect(ok.status).toBe(201);
      expect(ok.body.name).toBe('😀');
    });
  });

  describe('secrets, docs, sign-up, shutdown', () => {
    it('answers that carry secrets are Cache-Control: no-store', async () => {
      const tenant = await engine.signUp();
      const login = await engine.call(
        'POST',
        '/v1/auth/login',
        { email: tenant.email, password: tenant.password },
        { authorization: '' },
      );
      expect(login.headers.get('cache-control')).toBe('no-store');
      const refreshed = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: login.body.refresh_token },
        { authorization: `Bearer ${login.body.refresh_token}` },
      );
      expect(refreshed.status).toBe(200);
      expect(refreshed.headers.get('cache-control')).toBe('no-store');
      const key = await engine.call('POST', '/v1/api_keys', { mode: 'test' }, tenant.headers);
      expect(key.status).toBe(201);
      expect(key.headers.get('cache-control')).toBe('no-store');
      const endpoint = await engine.call(
        'POST',
        '/v1/webhooks',
        { url: 'https://93.184.215.14/hook', events: ['*'], enabled: false },
        tenant.headers,
      );
      expect(endpoint.status).toBe(201);
      expect(endpoint.headers.get('cache-control')).toBe('no-store');
      const rotated = await engine.call(
        'POST',
        `/v1/webhooks/${endpoint.body.id}/rotate_secret`,
        undefined,
        tenant.headers,
      );
      expect(rotated.status).toBe(200);
      expect(rotated.headers.get('cache-control')).toBe('no-store');
      // An ordinary read is not marked.
      expect(
        (await engine.call('GET', '/v1/account', undefined, tenant.headers)).headers.get('cache-control'),
      ).toBeNull();
    });

    it('/docs has a Content-Security-Policy that allows exactly what the page loads', async () => {
      const page = await engine.app.request('/docs');
      expect(page.status).toBe(200);
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
      expect(csp).toContain("style-src 'self' 'unsafe-inline'");
      expect(csp).toContain("frame-ancestors 'none'");
      const html = await page.text();
      // No inline script (the policy would block it); every script and stylesheet is local and loads.
      expect(html).not.toMatch(/<script>(?!<)/);
      const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      expect(assets.sort()).toEqual([
        '/docs/assets/init.js',
        '/docs/assets/swagger-ui-bundle.js',
        '/docs/assets/swagger-ui.css',
      ]);
      for (const asset of assets) {
        const response = await engine.app.request(asset);
        expect(response.status, asset).toBe(200);
        expect((await response.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
      }
      expect(await (await engine.app.request('/docs/assets/init.js')).text()).toContain('SwaggerUIBundle');
    });

    it('unauthenticated sign-up is limited per client IP: 429 with Retry-After', async () => {
      const config = { ...engine.config, signupsPerIpPerHour: 3, auth: { ...engine.config.auth, trustProxy: true } };
      const app = createApp({
        orm: engine.db.orm,
        temporal: engine.env.client,
        config,
        logger: createLogger('silent'),
      });
      const signUp = (ip: string, n: number) =>
        app.request('/v1/accounts', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
          body: JSON.stringify({
            email: `signup-${ip}-${n}-${Date.now()}@example.com`,
            name: 'S',
            type: 'business',
            password: testPassword,
          }),
        });
      for (let n = 0; n < 3; n++) expect((await signUp('203.0.113.7', n)).status).toBe(201);
      const limited = await signUp('203.0.113.7', 3);
      expect(limited.status).toBe(429);
      expect(((await limited.json()) as { error: string }).error).toBe('rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // Another address is not affected; an admin-created account is not counted.
      expect((await signUp('203.0.113.8', 0)).status).toBe(201);
      const admin = await engine.admin();
      const byAdmin = await app.request('/v1/accounts', {
        method: 'POST',
        headers: { ...admin.headers, 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' },
        body: JSON.stringify({
          email: `admin-made-${Date.now()}@example.com`,
          name: 'A',
          type: 'business',
          password: testPassword,
        }),
      });
      expect(byAdmin.status).toBe(201);
    });

    it(
      'SIGTERM while a request is in flight: the request is answered and the API exits 0 without an uncaught error',
      { timeout: 60_000 },
      async () => {
        const db = await createTestDatabase();
        const child = spawn(process.execPath, ['api/server.ts'], {
          env: {
            ...process.env,
            NODE_ENV: 'test',
            DATABASE_URL: db.url,
            TEMPORAL_ADDRESS: engine.env.address,
            PORT: '0',
            LOG_LEVEL: 'info',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
        try {
          const port = await new Promise<number>((resolve, reject) => {
            child.stdout.on('data', (chunk: Buffer) => {
              stdout += chunk.toString();
              const match = /"port":(\d+)[^\n]*api listening/.exec(stdout);
              if (match) resolve(Number(match[1]));
            });
            void exited.then(() => reject(new Error(`api exited early: ${stdout}${stderr}`)));
          });
          // A request whose body is still arriving when the signal comes.
          const body = JSON.stringify({ email: 'nobody@example.com', password: 'Wrong!pass1' });
          const answered = new Promise<number>((resolve, reject) => {
            const request = http.request(
              {
                host: '127.0.0.1',
                port,
                method: 'POST',
                path: '/v1/auth/login',
                headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
              },
              (response) => {
                response.resume();
                response.on('end', () => resolve(response.statusCode!));
              },
            );
            request.on('error', reject);
            request.write(body.slice(0, 10));
            setTimeout(() => {
              child.kill('SIGTERM');
              // A second signal (a supervisor repeating itself) must not cut the request off either.
              setTimeout(() => child.kill('SIGTERM'), 100);
              setTimeout(() => request.end(body.slice(10)), 300);
            }, 200);
          });
          expect(await answered).toBe(401);
          const answeredAt = Date.now();
          expect(await exited).toBe(0);
          // The finished keep-alive connection does not hold the process open until its idle timeout.
          expect(Date.now() - answeredAt).toBeLessThan(3000);
          expect(stderr).not.toContain('Uncaught');
          expect(stdout + stderr).not.toMatch(/"level":(50|60)/);
          expect(stdout).toContain('api stopped');
        } finally {
          if (child.exitCode === null) child.kill('SIGKILL');
          await db.close();
        }
      },
    );
  });

  describe('rough edges', () => {
    it('GET / in a browser redirects to the dashboard', async () => {
      const browser = await engine.app.request('/', {
        headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      });
      expect(browser.status).toBe(302);
      expect(browser.headers.get('location')).toBe('/dashboard');
      const api = await engine.call('GET', '/', undefined, { authorization: '' });
      expect(api.status).toBe(200);
      expect(api.body).toMatchObject({ dashboard: '/dashboard', docs: '/docs', openapi: '/openapi.json' });
    });

    it('an expired access token says to refresh with POST /v1/auth/refresh', async () => {
      const tenant = await engine.signUp();
      const [, payload] = tenant.accessToken.split('.');
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as { sub: string; sid: string };
      const past = Math.floor(Date.now() / 1000) - 3600;
      const expired = await new SignJWT({ sid: claims.sid, typ: 'access' })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(claims.sub)
        .setIssuer('billing-engine')
        .setIssuedAt(past - 900)
        .setExpirationTime(past)
        .sign(secretKey(engine.config.auth.secret));
      const response = await engine.call('GET', '/v1/account', undefined, { authorization: `Bearer ${expired}` });
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('unauthorized');
      expect(response.body.message).toContain('POST /v1/auth/refresh');
      // A forged one does not get that hint.
      const forged = await engine.call('GET', '/v1/account', undefined, {
        authorization: `Bearer ${expired.slice(0, -4)}AAAA`,
      });
      expect(forged.body.message).not.toContain('refresh');
    });

    it("an id from the other mode says so; another account's id still looks unknown", async () => {
      const tenant = await engine.signUp();
      const testKey = (await engine.call('POST', '/v1/api_keys', { mode: 'test' }, tenant.headers)).body
        .secret as string;
      const liveCustomer = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'live@example.com', payment_method: 'pm_card_visa' },
        tenant.headers,
      );
      const admin = { ...(await engine.admin()).headers, 'x-account-id': tenant.accountId };
      const transaction = await engine.call(
        'POST',
        '/v1/transactions',
        { account_id: tenant.accountId, amount: 100, currency: 'USD', type: 'credit' },
        admin,
      );
      const sandboxCustomer = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'sb@example.com' },
        { authorization: `Bearer ${testKey}` },
      );
      const test = { authorization: `Bearer ${testKey}` };
      for (const path of [`/v1/customers/${liveCustomer.body.id}`, `/v1/transactions/${transaction.body.id}`]) {
        const response = await engine.call('GET', path, undefined, test);
        expect(response.status, path).toBe(404);
        expect(response.body.error).toBe('not_found');
        expect(response.body.message, path).toMatch(/exists in live mode; you are using a sandbox credential\.$/);
      }
      const fromLive = await engine.call('GET', `/v1/customers/${sandboxCustomer.body.id}`, undefined, tenant.headers);
      expect(fromLive.body.message).toMatch(/exists in sandbox mode; you are using a live credential\.$/);
      // Another account learns nothing.
      const other = await engine.signUp();
      const foreign = await engine.call('GET', `/v1/customers/${liveCustomer.body.id}`, undefined, {
        ...other.headers,
        'x-sandbox-mode': 'true',
      });
      expect(foreign.body).toEqual({ error: 'not_found', message: 'No such customer.' });
    });

    it('HTTP Basic with an API key as the user name and an empty password authenticates (curl -u sk_test_...:)', async () => {
      const tenant = await engine.signUp();
      const key = (await engine.call('POST', '/v1/api_keys', { mode: 'test' }, tenant.headers)).body.secret as string;
      const basic = (credentials: string) => ({
        authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
      });
      const account = await engine.call('GET', '/v1/account', undefined, basic(`${key}:`));
      expect(account.status).toBe(200);
      expect(account.body.id).toBe(tenant.accountId);
      expect(
        (await engine.call('POST', '/v1/customers', { email: 'basic@example.com' }, basic(`${key}:`))).body.livemode,
      ).toBe(false);
      for (const credentials of [`${key}:secret`, `${tenant.email}:${tenant.password}`, 'sk_test_nope:']) {
        const refused = await engine.call('GET', '/v1/account', undefined, basic(credentials));
        expect(refused.status, credentials).toBe(401);
        expect(refused.body.error).toBe('unauthorized');
      }
    });

    it('npm run temporal runs the resolved Temporal CLI against the dev server address', () => {
      expect(devTemporalTarget({})).toEqual({ address: '127.0.0.1:7233', namespace: 'default' });
      expect(devTemporalTarget({ TEMPORAL_PORT: '7300', TEMPORAL_NAMESPACE: 'billing' })).toEqual({
        address: '127.0.0.1:7300',
        namespace: 'billing',
      });
      expect(devTemporalTarget({ TEMPORAL_ADDRESS: 'temporal.internal:7233' }).address).toBe('temporal.internal:7233');
      const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
      expect(pkg.scripts.temporal).toBe('node dev/temporal-cli.ts');
      // A stand-in CLI (TEMPORAL_CLI_PATH) shows what the real one receives: the arguments and the address.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cli-'));
      const fake = path.join(dir, 'temporal');
      fs.writeFileSync(
        fake,
        '#!/bin/sh\necho "args=$* address=$TEMPORAL_ADDRESS namespace=$TEMPORAL_NAMESPACE"\nexit 3\n',
        { mode: 0o755 },
      );
      const run = spawnSync(process.execPath, ['dev/temporal-cli.ts', 'workflow', 'list'], {
        env: { ...process.env, TEMPORAL_CLI_PATH: fake, TEMPORAL_ADDRESS: '', TEMPORAL_PORT: '7444' },
        encoding: 'utf8',
      });
      expect(run.stdout.trim()).toBe('args=workflow list address=127.0.0.1:7444 namespace=default');
      expect(run.status).toBe(3);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('the OpenAPI document: mode, account and idempotency headers, public operations, a realistic subscription example', async () => {
      const doc = (await engine.call('GET', '/openapi.json', undefined, { authorization: '' })).body;
      expect(doc.components.securitySchemes.sandboxMode).toMatchObject({
        type: 'apiKey',
        in: 'header',
        name: 'x-sandbox-mode',
      });
      expect(doc.components.securitySchemes.accountId).toMatchObject({
        type: 'apiKey',
        in: 'header',
        name: 'x-account-id',
      });
      expect(doc.components.parameters.IdempotencyKey).toMatchObject({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
      });
      const idempotency = { $ref: '#/components/parameters/IdempotencyKey' };
      expect(doc.paths['/v1/customers'].post.parameters).toContainEqual(idempotency);
      expect(doc.paths['/v1/transactions'].post.parameters).toContainEqual(idempotency);
      expect(doc.paths['/v1/auth/login'].post.parameters ?? []).not.toContainEqual(idempotency);
      expect(doc.paths['/v1/customers'].get.parameters ?? []).not.toContainEqual(idempotency);
      for (const [path, method] of [
        ['/v1/auth/login', 'post'],
        ['/v1/accounts', 'post'],
        ['/health', 'get'],
      ] as const) {
        expect(doc.paths[path][method].security, path).toEqual([]);
      }
      expect(doc.paths['/v1/customers'].get.security).toBeUndefined();
      const example =
        doc.paths['/v1/subscriptions'].post.requestBody.content['application/json'].schema.example ??
        doc.components.schemas;
      // A plain monthly subscription billed now (issue #24): no trial, no paused start.
      expect(Object.keys(example).sort()).toEqual(['customer_id', 'plan']);
      expect(JSON.stringify(example)).not.toContain('pause_until');
    });
  });
});
