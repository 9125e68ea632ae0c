/**
 * Issue #12: security findings and rough edges, each pinned by a test that failed
 * before the fix. See docs/security.md.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginAttempt, Transaction } from '../db/entities/index.ts';
import { startTestEngine, testPassword, type Tenant, type TestEngine } from './helpers/engine.ts';

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
        Array.from({ length: 20 }, (_, i) => engine.call('POST', '/v1/auth/login', { email: tenant.email, password: `Wrong!guess${i}` }, { authorization: '' })),
      );
      const statuses = guesses.map((g) => g.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(engine.config.auth.maxFailedLoginsPerEmail);
      expect(statuses.filter((s) => s !== 401).every((s) => s === 429)).toBe(true);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(20 - engine.config.auth.maxFailedLoginsPerEmail);
      for (const g of guesses.filter((g) => g.status === 429)) {
        expect(g.body).toEqual(errorShape('rate_limited'));
        expect(Number(g.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // Only the reserved attempts were verified and recorded.
      expect(await engine.db.orm.em.fork().count(LoginAttempt, { email: tenant.email, succeeded: false })).toBeLessThanOrEqual(engine.config.auth.maxFailedLoginsPerEmail);
      // Even the right password waits now.
      expect((await engine.call('POST', '/v1/auth/login', { email: tenant.email, password: tenant.password }, { authorization: '' })).status).toBe(429);
    });

    it('a successful login is not counted as a failure', async () => {
      const tenant = await engine.signUp();
      for (let i = 0; i < engine.config.auth.maxFailedLoginsPerEmail + 2; i++) await engine.login(tenant.email, tenant.password);
      expect(await engine.db.orm.em.fork().count(LoginAttempt, { email: tenant.email, succeeded: false })).toBe(0);
    });
  });

  describe('re-authentication for credentials', () => {
    it('changing one\'s own password needs current_password', async () => {
      const tenant = await engine.signUp();
      const me = (await engine.call('GET', '/v1/users', undefined, tenant.headers)).body.data[0].id;
      const missing = await engine.call('PATCH', `/v1/users/${me}`, { password: 'Changed!pass2' }, tenant.headers);
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual(errorShape('invalid_request'));
      expect(missing.body.message).toContain('current_password');
      const wrong = await engine.call('PATCH', `/v1/users/${me}`, { password: 'Changed!pass2', current_password: 'Not!thepass1' }, tenant.headers);
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual(errorShape('invalid_credentials'));
      // Nothing changed: the old password still logs in.
      await engine.login(tenant.email, tenant.password);
      const ok = await engine.call('PATCH', `/v1/users/${me}`, { password: 'Changed!pass2', current_password: tenant.password }, tenant.headers);
      expect(ok.status).toBe(200);
      await engine.login(tenant.email, 'Changed!pass2');
      // A member too.
      const m = await member(tenant);
      expect((await engine.call('PATCH', `/v1/users/${m.id}`, { password: 'Member!pass2' }, m.headers)).status).toBe(400);
      expect((await engine.call('PATCH', `/v1/users/${m.id}`, { password: 'Member!pass2', current_password: testPassword }, m.headers)).status).toBe(200);
    });

    it('an owner changing the account email needs current_password; the name alone does not', async () => {
      const tenant = await engine.signUp();
      const email = `new-${tenant.accountId}@example.com`;
      expect((await engine.call('PATCH', '/v1/account', { email }, tenant.headers)).body).toEqual(errorShape('invalid_request'));
      expect((await engine.call('PATCH', '/v1/account', { email, current_password: 'Not!thepass1' }, tenant.headers)).body).toEqual(errorShape('invalid_credentials'));
      expect((await engine.call('GET', '/v1/account', undefined, tenant.headers)).body.email).toBe(tenant.email);
      expect((await engine.call('PATCH', '/v1/account', { name: 'Renamed' }, tenant.headers)).status).toBe(200);
      const ok = await engine.call('PATCH', '/v1/account', { email, current_password: tenant.password }, tenant.headers);
      expect(ok.status).toBe(200);
      expect(ok.body.email).toBe(email);
      // The platform admin acts on the account without the owner's password.
      const admin = await engine.admin();
      const byAdmin = await engine.call('PATCH', '/v1/account', { email: `admin-set-${tenant.accountId}@example.com` }, { ...admin.headers, 'x-account-id': tenant.accountId });
      expect(byAdmin.status).toBe(200);
    });

    it('a co-owner cannot set another owner\'s password or suspend them; a platform admin can; owners still manage members', async () => {
      const tenant = await engine.signUp();
      const coOwner = await member(tenant, 'owner');
      const ownerId = (await engine.call('GET', '/v1/users', undefined, tenant.headers)).body.data.find((u: { email: string }) => u.email === tenant.email).id;
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
      expect((await engine.call('PATCH', `/v1/users/${m.id}`, { status: 'suspended' }, coOwner.headers)).status).toBe(200);
      // The platform admin can reset an owner's password (no current_password: it is not theirs).
      const admin = await engine.admin();
      expect((await engine.call('PATCH', `/v1/users/${ownerId}`, { password: 'Reset!pass9' }, admin.headers)).status).toBe(200);
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
      for (const body of ['{"name":"\\ud800"}', '{"name":"a\\udc00b"}', '{"email":"x@example.com","metadata":{"\\udbff":"v"}}', '{"name":"\\udc00\\ud800"}']) {
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
});
