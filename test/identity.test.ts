import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LoginAttempt, Session, User } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine, testPassword } from './helpers/engine.ts';

const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const errorShape = (code: string) => ({ error: code, message: expect.any(String) });

describe('identity and access', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  describe('POST /v1/accounts', () => {
    it('signs up: the account with default settings, and an owner login that works at once', async () => {
      const created = await engine.call(
        'POST',
        '/v1/accounts',
        { email: 'Founder@Example.com', name: 'Founder Co', type: 'business', password: 'Found!er1' },
        { authorization: '' },
      );
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^acct_/),
        object: 'account',
        email: 'founder@example.com',
        name: 'Founder Co',
        type: 'business',
        status: 'active',
        created_at: iso,
        updated_at: iso,
        settings: { currency: 'USD', timezone: 'UTC', language: 'en' },
      });
      const login = await engine.call(
        'POST',
        '/v1/auth/login',
        { email: 'founder@example.com', password: 'Found!er1' },
        { authorization: '' },
      );
      expect(login.status).toBe(200);
    });

    it('takes settings, validated', async () => {
      const ok = await engine.call(
        'POST',
        '/v1/accounts',
        {
          email: 's1@example.com',
          name: 'S',
          type: 'individual',
          password: testPassword,
          settings: { currency: 'eur', timezone: 'Europe/Paris', language: 'fr-FR' },
        },
        { authorization: '' },
      );
      expect(ok.body.settings).toEqual({ currency: 'EUR', timezone: 'Europe/Paris', language: 'fr-FR' });
      for (const settings of [
        { currency: 'EURO' },
        { timezone: 'Mars/Olympus' },
        { language: 'not a tag!' },
        { colour: 'red' },
      ]) {
        const bad = await engine.call(
          'POST',
          '/v1/accounts',
          { email: 's2@example.com', name: 'S', type: 'individual', password: testPassword, settings },
          { authorization: '' },
        );
        expect(bad.status, JSON.stringify(settings)).toBe(400);
        expect(bad.body).toEqual(errorShape('invalid_request'));
      }
    });

    it('refuses a taken email (email_exists), a weak password, a bad type, and a non-admin token', async () => {
      const taken = await engine.call(
        'POST',
        '/v1/accounts',
        { email: engine.tenant.email, name: 'X', type: 'business', password: testPassword },
        { authorization: '' },
      );
      expect(taken.status).toBe(409);
      expect(taken.body).toEqual(errorShape('email_exists'));
      for (const password of ['short1!', 'alllowercase1!', 'NoNumber!!', 'NoSymbol123']) {
        const weak = await engine.call(
          'POST',
          '/v1/accounts',
          { email: 'weak@example.com', name: 'W', type: 'business', password },
          { authorization: '' },
        );
        expect(weak.status).toBe(400);
        expect(weak.body.error).toBe('invalid_request');
        expect(weak.body.message).toMatch(/password/);
      }
      const badType = await engine.call(
        'POST',
        '/v1/accounts',
        { email: 'bt@example.com', name: 'B', type: 'corporation', password: testPassword },
        { authorization: '' },
      );
      expect(badType.body).toEqual(errorShape('invalid_request'));
      const asOwner = await engine.call('POST', '/v1/accounts', {
        email: 'o@example.com',
        name: 'O',
        type: 'business',
        password: testPassword,
      });
      expect(asOwner.status).toBe(401);
      expect(asOwner.body).toEqual(errorShape('unauthorized'));
    });

    it('lets an admin create accounts', async () => {
      const admin = await engine.admin();
      const created = await engine.call(
        'POST',
        '/v1/accounts',
        { email: 'made-by-admin@example.com', name: 'M', type: 'individual', password: testPassword },
        admin.headers,
      );
      expect(created.status).toBe(201);
    });
  });

  describe('POST /v1/auth/login', () => {
    it('returns tokens, the user and a session', async () => {
      const login = await engine.call(
        'POST',
        '/v1/auth/login',
        { email: engine.tenant.email.toUpperCase(), password: testPassword },
        { authorization: '', 'x-device-fingerprint': 'fp-123', 'user-agent': 'vitest' },
      );
      expect(login.status).toBe(200);
      expect(login.body).toEqual({
        access_token: expect.any(String),
        refresh_token: expect.stringMatching(/^rt_/),
        token_type: 'Bearer',
        expires_in: 900,
        session_id: expect.stringMatching(/^ses_/),
        user: { id: expect.stringMatching(/^usr_/), email: engine.tenant.email, name: 'Acme' },
      });
      const session = await engine.db.orm.em.fork().findOneOrFail(Session, { id: login.body.session_id });
      expect(session).toMatchObject({ deviceFingerprint: 'fp-123', userAgent: 'vitest' });
      const withBodyFingerprint = await engine.call(
        'POST',
        '/v1/auth/login',
        { email: engine.tenant.email, password: testPassword, device_fingerprint: 'fp-body' },
        { authorization: '' },
      );
      expect(
        (await engine.db.orm.em.fork().findOneOrFail(Session, { id: withBodyFingerprint.body.session_id }))
          .deviceFingerprint,
      ).toBe('fp-body');
    });

    it('answers unknown email and wrong password the same way, in about the same time', async () => {
      const time = async (email: string) => {
        const started = performance.now();
        const response = await engine.call(
          'POST',
          '/v1/auth/login',
          { email, password: 'Wrong!pass1' },
          { authorization: '' },
        );
        return { response, ms: performance.now() - started };
      };
      const wrongPassword = await time(engine.tenant.email);
      const unknownEmail = await time('nobody-here@example.com');
      expect(wrongPassword.response.status).toBe(401);
      expect(unknownEmail.response.status).toBe(401);
      expect(wrongPassword.response.body).toEqual({
        error: 'invalid_credentials',
        message: 'Wrong email or password.',
      });
      expect(unknownEmail.response.body).toEqual(wrongPassword.response.body);
      // Both verify an argon2id hash; neither returns early.
      expect(Math.abs(wrongPassword.ms - unknownEmail.ms)).toBeLessThan(
        Math.max(wrongPassword.ms, unknownEmail.ms) * 0.75 + 15,
      );
    });

    it('a suspended user with the right password is unauthorized, and their open sessions end', async () => {
      const email = `suspended-${Date.now()}@example.com`;
      const created = await engine.call('POST', '/v1/users', { email, password: testPassword });
      const session = await engine.login(email, testPassword);
      await engine.call('PATCH', `/v1/users/${created.body.id}`, { status: 'suspended' });
      const login = await engine.call(
        'POST',
        '/v1/auth/login',
        { email, password: testPassword },
        { authorization: '' },
      );
      expect(login.status).toBe(401);
      expect(login.body).toEqual(errorShape('unauthorized'));
      expect((await engine.call('GET', '/v1/account', undefined, session.headers)).status).toBe(401);
      await engine.call('PATCH', `/v1/users/${created.body.id}`, { status: 'active' });
      expect(
        (await engine.call('POST', '/v1/auth/login', { email, password: testPassword }, { authorization: '' })).status,
      ).toBe(200);
    });

    it('missing fields are invalid_request', async () => {
      const response = await engine.call('POST', '/v1/auth/login', { email: 'a@example.com' }, { authorization: '' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual(errorShape('invalid_request'));
    });

    it('throttles repeated failures for one email with 429 and Retry-After', async () => {
      const target = await engine.signUp({ name: 'Throttled' });
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < engine.config.auth.maxFailedLoginsPerEmail + 1; i++) {
        last = await engine.call(
          'POST',
          '/v1/auth/login',
          { email: target.email, password: 'Wrong!pass1' },
          { authorization: '' },
        );
        statuses.push(last.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
      expect(last!.body).toEqual(errorShape('rate_limited'));
      const retryAfter = Number(last!.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(engine.config.auth.loginThrottleWindowSeconds);
      // Even the right password waits now.
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/login',
            { email: target.email, password: testPassword },
            { authorization: '' },
          )
        ).status,
      ).toBe(429);
      // Once the window has passed, logins work again.
      await engine.db.orm.em
        .fork()
        .nativeUpdate(LoginAttempt, { email: target.email }, { createdAt: new Date(Date.now() - 16 * 60_000) });
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/login',
            { email: target.email, password: testPassword },
            { authorization: '' },
          )
        ).status,
      ).toBe(200);
    });
  });

  describe('POST /v1/auth/refresh', () => {
    it('rotates: a new pair each time, the old refresh token no longer works', async () => {
      const session = await engine.login(engine.tenant.email, testPassword);
      const refreshed = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: session.refreshToken },
        { authorization: `Bearer ${session.refreshToken}` },
      );
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toEqual({
        access_token: expect.any(String),
        refresh_token: expect.stringMatching(/^rt_/),
        token_type: 'Bearer',
        expires_in: 900,
        session_id: session.sessionId,
      });
      expect(refreshed.body.refresh_token).not.toBe(session.refreshToken);
      const works = await engine.call('GET', '/v1/account', undefined, {
        authorization: `Bearer ${refreshed.body.access_token}`,
      });
      expect(works.status).toBe(200);
    });

    it('a reused refresh token revokes the whole session (theft) and answers invalid_grant', async () => {
      const session = await engine.login(engine.tenant.email, testPassword);
      const first = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: session.refreshToken },
        { authorization: `Bearer ${session.refreshToken}` },
      );
      expect(first.status).toBe(200);
      const replay = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: session.refreshToken },
        { authorization: `Bearer ${session.refreshToken}` },
      );
      expect(replay.status).toBe(400);
      expect(replay.body).toEqual(errorShape('invalid_grant'));
      // The thief's replay killed the legitimate holder's tokens too.
      const newest = first.body.refresh_token;
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/refresh',
            { refresh_token: newest },
            { authorization: `Bearer ${newest}` },
          )
        ).body.error,
      ).toBe('invalid_grant');
      expect(
        (await engine.call('GET', '/v1/account', undefined, { authorization: `Bearer ${first.body.access_token}` }))
          .status,
      ).toBe(401);
    });

    it('needs the token in the header and the body, matching', async () => {
      const session = await engine.login(engine.tenant.email, testPassword);
      const noHeader = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: session.refreshToken },
        { authorization: '' },
      );
      expect(noHeader.status).toBe(401);
      expect(noHeader.body).toEqual(errorShape('unauthorized'));
      const mismatch = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: session.refreshToken },
        { authorization: 'Bearer rt_other' },
      );
      expect(mismatch.status).toBe(400);
      expect(mismatch.body).toEqual(errorShape('invalid_request'));
      const unknown = await engine.call(
        'POST',
        '/v1/auth/refresh',
        { refresh_token: 'rt_unknown' },
        { authorization: 'Bearer rt_unknown' },
      );
      expect(unknown.body).toEqual(errorShape('invalid_grant'));
      const missing = await engine.call('POST', '/v1/auth/refresh', {}, { authorization: 'Bearer rt_unknown' });
      expect(missing.body).toEqual(errorShape('invalid_request'));
    });
  });

  describe('DELETE /v1/auth/session', () => {
    it('revocation is immediate: the token works, the session is deleted, the next call is 401', async () => {
      const session = await engine.login(engine.tenant.email, testPassword);
      expect((await engine.call('GET', '/v1/account', undefined, session.headers)).status).toBe(200);
      const ended = await engine.call('DELETE', '/v1/auth/session', undefined, session.headers);
      expect(ended.status).toBe(200);
      expect(ended.body).toEqual({ message: expect.any(String), session_id: session.sessionId });
      const after = await engine.call('GET', '/v1/account', undefined, session.headers);
      expect(after.status).toBe(401);
      expect(after.body).toEqual(errorShape('unauthorized'));
      // Its refresh token died with it.
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/refresh',
            { refresh_token: session.refreshToken },
            { authorization: `Bearer ${session.refreshToken}` },
          )
        ).body.error,
      ).toBe('invalid_grant');
    });

    it('ends another session of the same user by id; an unknown or ended one is invalid_session', async () => {
      const a = await engine.login(engine.tenant.email, testPassword);
      const b = await engine.login(engine.tenant.email, testPassword);
      const ended = await engine.call('DELETE', '/v1/auth/session', { session_id: b.sessionId }, a.headers);
      expect(ended.body.session_id).toBe(b.sessionId);
      expect((await engine.call('GET', '/v1/account', undefined, b.headers)).status).toBe(401);
      expect((await engine.call('GET', '/v1/account', undefined, a.headers)).status).toBe(200);
      const again = await engine.call('DELETE', '/v1/auth/session', { session_id: b.sessionId }, a.headers);
      expect(again.status).toBe(404);
      expect(again.body).toEqual(errorShape('invalid_session'));
      const other = await engine.signUp();
      const foreign = await engine.call('DELETE', '/v1/auth/session', { session_id: other.sessionId }, a.headers);
      expect(foreign.body).toEqual(errorShape('invalid_session'));
      expect((await engine.call('GET', '/v1/account', undefined, other.headers)).status).toBe(200);
      expect((await engine.call('DELETE', '/v1/auth/session', undefined, { authorization: '' })).body).toEqual(
        errorShape('unauthorized'),
      );
    });
  });

  describe('users', () => {
    it('POST creates an active user; GET, PATCH partially, DELETE permanently; a second delete is not_found', async () => {
      const created = await engine.call('POST', '/v1/users', {
        email: 'Member1@Example.com',
        password: testPassword,
        name: 'Mem Ber',
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^usr_/),
        object: 'user',
        email: 'member1@example.com',
        name: 'Mem Ber',
        role: 'member',
        status: 'active',
        account_id: engine.tenant.accountId,
        created_at: iso,
        updated_at: iso,
      });
      const id = created.body.id;
      expect((await engine.call('GET', `/v1/users/${id}`)).body).toEqual(created.body);
      const patched = await engine.call('PATCH', `/v1/users/${id}`, { status: 'suspended' });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ name: 'Mem Ber', status: 'suspended' });
      const renamed = await engine.call('PATCH', `/v1/users/${id}`, { name: 'Renamed' });
      expect(renamed.body).toMatchObject({ name: 'Renamed', status: 'suspended' });
      expect((await engine.call('PATCH', `/v1/users/${id}`, { status: 'sleeping' })).body).toEqual(
        errorShape('invalid_request'),
      );
      expect((await engine.call('PATCH', `/v1/users/${id}`, { password: 'weak' })).body).toEqual(
        errorShape('invalid_request'),
      );
      expect((await engine.call('PATCH', `/v1/users/${id}`, '{"name":')).body).toEqual(errorShape('invalid_request'));
      const deleted = await engine.call('DELETE', `/v1/users/${id}`);
      expect(deleted.body).toEqual({ message: expect.any(String), id });
      const again = await engine.call('DELETE', `/v1/users/${id}`);
      expect(again.status).toBe(404);
      expect(again.body).toEqual(errorShape('not_found'));
      expect((await engine.call('GET', `/v1/users/${id}`)).body).toEqual(errorShape('not_found'));
      expect(await engine.db.orm.em.fork().count(User, { id })).toBe(0);
    });

    it('refuses a duplicate email and a weak password', async () => {
      expect(
        (await engine.call('POST', '/v1/users', { email: engine.tenant.email, password: testPassword })).body,
      ).toEqual(errorShape('email_exists'));
      expect((await engine.call('POST', '/v1/users', { email: 'dup@example.com', password: 'password' })).body).toEqual(
        errorShape('invalid_request'),
      );
      expect((await engine.call('POST', '/v1/users', { password: testPassword })).body).toEqual(
        errorShape('invalid_request'),
      );
    });

    it('lists with page, limit, status and case-insensitive search, and refuses out-of-range values', async () => {
      const tenant = await engine.signUp({ name: 'Lister' });
      for (let i = 1; i <= 4; i++) {
        await engine.call(
          'POST',
          '/v1/users',
          {
            email: `list${i}-${tenant.accountId}@example.com`,
            password: testPassword,
            name: i % 2 ? `Odd Person ${i}` : `Even Person ${i}`,
          },
          tenant.headers,
        );
      }
      const page = await engine.call('GET', '/v1/users?page=2&limit=2', undefined, tenant.headers);
      expect(page.status).toBe(200);
      expect(page.body.pagination).toEqual({ page: 2, limit: 2, total_pages: 3, total_records: 5 });
      expect(page.body.data).toHaveLength(2);
      const defaults = await engine.call('GET', '/v1/users', undefined, tenant.headers);
      expect(defaults.body.pagination).toEqual({ page: 1, limit: 25, total_pages: 1, total_records: 5 });
      const search = await engine.call('GET', '/v1/users?search=oDD%20pErSoN', undefined, tenant.headers);
      expect(search.body.data.map((u: { name: string }) => u.name).sort()).toEqual(['Odd Person 1', 'Odd Person 3']);
      const byEmail = await engine.call('GET', `/v1/users?search=LIST2-`, undefined, tenant.headers);
      expect(byEmail.body.pagination.total_records).toBe(1);
      const suspendedId = page.body.data[0].id;
      await engine.call('PATCH', `/v1/users/${suspendedId}`, { status: 'suspended' }, tenant.headers);
      const suspended = await engine.call('GET', '/v1/users?status=suspended', undefined, tenant.headers);
      expect(suspended.body.data.map((u: { id: string }) => u.id)).toEqual([suspendedId]);
      for (const query of ['limit=101', 'limit=0', 'page=0', 'page=-1', 'limit=abc', 'status=gone', 'colour=red']) {
        const bad = await engine.call('GET', `/v1/users?${query}`, undefined, tenant.headers);
        expect(bad.status, query).toBe(400);
        expect(bad.body).toEqual(errorShape('invalid_request'));
      }
    });

    it("a password change ends the user's other sessions", async () => {
      const tenant = await engine.signUp();
      const other = await engine.login(tenant.email, tenant.password);
      const me = (await engine.call('GET', '/v1/users', undefined, tenant.headers)).body.data[0].id;
      expect(
        (
          await engine.call(
            'PATCH',
            `/v1/users/${me}`,
            { password: 'Changed!pass2', current_password: tenant.password },
            tenant.headers,
          )
        ).status,
      ).toBe(200);
      expect((await engine.call('GET', '/v1/account', undefined, other.headers)).status).toBe(401);
      expect((await engine.call('GET', '/v1/account', undefined, tenant.headers)).status).toBe(200);
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/login',
            { email: tenant.email, password: 'Changed!pass2' },
            { authorization: '' },
          )
        ).status,
      ).toBe(200);
    });
  });

  describe('account', () => {
    it("GET returns the token's account; PATCH is partial and merges settings key by key", async () => {
      const tenant = await engine.signUp({ name: 'Patchable' });
      const read = await engine.call('GET', '/v1/account', undefined, tenant.headers);
      expect(read.body).toMatchObject({
        id: tenant.accountId,
        name: 'Patchable',
        settings: { currency: 'USD', timezone: 'UTC', language: 'en' },
      });
      // The owner's read comes from the credential query, the admin's from the ORM: the same document.
      const admin = await engine.admin();
      expect(
        (await engine.call('GET', '/v1/account', undefined, { ...admin.headers, 'x-account-id': tenant.accountId }))
          .body,
      ).toEqual(read.body);
      const key = await engine.call('POST', '/v1/api_keys', {}, tenant.headers);
      expect(
        (await engine.call('GET', '/v1/account', undefined, { authorization: `Bearer ${key.body.secret}` })).body,
      ).toEqual(read.body);
      const patched = await engine.call(
        'PATCH',
        '/v1/account',
        { settings: { timezone: 'America/New_York' } },
        tenant.headers,
      );
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({
        name: 'Patchable',
        email: tenant.email,
        settings: { currency: 'USD', timezone: 'America/New_York', language: 'en' },
      });
      const renamed = await engine.call(
        'PATCH',
        '/v1/account',
        { name: 'Renamed Co', email: `billing-${tenant.accountId}@example.com`, current_password: tenant.password },
        tenant.headers,
      );
      expect(renamed.body).toMatchObject({
        name: 'Renamed Co',
        email: `billing-${tenant.accountId}@example.com`,
        settings: { timezone: 'America/New_York' },
      });
      for (const body of [
        { settings: { currency: 'XXXX' } },
        { settings: { timezone: 'Nowhere/Land' } },
        { settings: { language: '12' } },
        { email: 'nope' },
        { name: '' },
        { plan: 'x' },
      ]) {
        const bad = await engine.call('PATCH', '/v1/account', body, tenant.headers);
        expect(bad.status, JSON.stringify(body)).toBe(400);
        expect(bad.body).toEqual(errorShape('invalid_request'));
      }
      const taken = await engine.call(
        'PATCH',
        '/v1/account',
        { email: engine.tenant.email, current_password: tenant.password },
        tenant.headers,
      );
      expect(taken.status).toBe(409);
      expect(taken.body).toEqual(errorShape('email_exists'));
      expect((await engine.call('GET', '/v1/account', undefined, tenant.headers)).body.name).toBe('Renamed Co');
    });

    it('DELETE refuses while a subscription is trialing, active or past due; otherwise closes for good', async () => {
      const tenant = await engine.signUp();
      const em = engine.db.orm.em.fork();
      const now = new Date();
      await em.getConnection().execute(
        `insert into subscriptions (id, account_id, customer_id, plan_id, status, billing_cycle, livemode, version, created_at, updated_at)
         values ('sub_blocking', ?, 'cus_x', 'plan_x', 'past_due', 0, true, 1, ?, ?)`,
        [tenant.accountId, now, now],
      );
      const refused = await engine.call('DELETE', '/v1/account', undefined, tenant.headers);
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual(errorShape('active_subscriptions'));
      await em.getConnection().execute(`update subscriptions set status = 'canceled' where id = 'sub_blocking'`);

      const key = await engine.call('POST', '/v1/api_keys', { name: 'ci' }, tenant.headers);
      const member = await engine.call(
        'POST',
        '/v1/users',
        { email: `m-${tenant.accountId}@example.com`, password: testPassword },
        tenant.headers,
      );
      const memberSession = await engine.login(member.body.email, testPassword);
      const closed = await engine.call('DELETE', '/v1/account', undefined, tenant.headers);
      expect(closed.status).toBe(200);
      expect(closed.body).toEqual({
        id: tenant.accountId,
        status: 'closed',
        closed_at: iso,
        message: expect.any(String),
      });
      for (const headers of [tenant.headers, memberSession.headers, { authorization: `Bearer ${key.body.secret}` }]) {
        expect((await engine.call('GET', '/v1/account', undefined, headers)).status).toBe(401);
      }
      expect(
        (
          await engine.call(
            'POST',
            '/v1/auth/login',
            { email: tenant.email, password: tenant.password },
            { authorization: '' },
          )
        ).status,
      ).toBe(401);
      const admin = await engine.admin();
      const seen = await engine.call('GET', '/v1/account', undefined, {
        ...admin.headers,
        'x-account-id': tenant.accountId,
      });
      expect(seen.body).toMatchObject({ status: 'closed', closed_at: iso });
    });
  });

  describe('accounts list (admin)', () => {
    it('pages with page/limit/total/has_next, filters, and omits settings', async () => {
      const admin = await engine.admin();
      const all = await engine.call('GET', '/v1/accounts?limit=2', undefined, admin.headers);
      expect(all.status).toBe(200);
      expect(all.body.pagination).toMatchObject({ page: 1, limit: 2, has_next: true });
      expect(all.body.data[0]).not.toHaveProperty('settings');
      expect(Object.keys(all.body.data[0]).sort()).toEqual([
        'created_at',
        'email',
        'id',
        'name',
        'object',
        'status',
        'type',
        'updated_at',
      ]);
      const total = all.body.pagination.total;
      const last = await engine.call(
        'GET',
        `/v1/accounts?limit=2&page=${Math.ceil(total / 2)}`,
        undefined,
        admin.headers,
      );
      expect(last.body.pagination.has_next).toBe(false);
      const individuals = await engine.call('GET', '/v1/accounts?type=individual&limit=100', undefined, admin.headers);
      expect(individuals.body.data.every((a: { type: string }) => a.type === 'individual')).toBe(true);
      const closed = await engine.call('GET', '/v1/accounts?status=closed', undefined, admin.headers);
      expect(closed.body.data.every((a: { status: string }) => a.status === 'closed')).toBe(true);
      const future = await engine.call(
        'GET',
        `/v1/accounts?created_after=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
        undefined,
        admin.headers,
      );
      expect(future.body).toMatchObject({ data: [], pagination: { total: 0, has_next: false } });
      const past = await engine.call(
        'GET',
        `/v1/accounts?created_before=2000-01-01T00:00:00Z`,
        undefined,
        admin.headers,
      );
      expect(past.body.pagination.total).toBe(0);
      for (const query of ['limit=101', 'page=0', 'status=pending-ish', 'type=corp', 'created_after=yesterday']) {
        const bad = await engine.call('GET', `/v1/accounts?${query}`, undefined, admin.headers);
        expect(bad.status, query).toBe(400);
        expect(bad.body).toEqual(errorShape('invalid_request'));
      }
      const asOwner = await engine.call('GET', '/v1/accounts');
      expect(asOwner.status).toBe(403);
      expect(asOwner.body).toEqual(errorShape('forbidden'));
    });
  });

  describe('API keys', () => {
    it('issues the secret once, lists masked, revokes; test keys see sandbox data only', async () => {
      const issued = await engine.call('POST', '/v1/api_keys', { name: 'server', mode: 'test' });
      expect(issued.status).toBe(201);
      expect(issued.body).toEqual({
        id: expect.stringMatching(/^key_/),
        object: 'api_key',
        type: 'secret',
        name: 'server',
        livemode: false,
        redacted_secret: expect.stringMatching(/^sk_test_….{4}$/),
        created_at: iso,
        last_used_at: null,
        secret: expect.stringMatching(/^sk_test_[A-Za-z0-9_-]{43}$/),
      });
      const list = await engine.call('GET', '/v1/api_keys');
      const listed = list.body.data.find((k: { id: string }) => k.id === issued.body.id);
      expect(listed).not.toHaveProperty('secret');
      expect(JSON.stringify(list.body)).not.toContain(issued.body.secret);
      expect(listed.redacted_secret).toBe(`sk_test_…${issued.body.secret.slice(-4)}`);

      const key = { authorization: `Bearer ${issued.body.secret}` };
      const sandboxCustomer = await engine.call('POST', '/v1/customers', { email: 'sandbox@example.com' }, key);
      expect(sandboxCustomer.body.livemode).toBe(false);
      const liveCustomer = await engine.call('POST', '/v1/customers', { email: 'live@example.com' });
      expect(liveCustomer.body.livemode).toBe(true);
      expect((await engine.call('GET', `/v1/customers/${liveCustomer.body.id}`, undefined, key)).status).toBe(404);
      expect((await engine.call('GET', `/v1/customers/${sandboxCustomer.body.id}`)).status).toBe(404);
      expect(
        (await engine.call('GET', `/v1/customers/${sandboxCustomer.body.id}`, undefined, { 'x-sandbox-mode': 'true' }))
          .status,
      ).toBe(200);

      const live = await engine.call('POST', '/v1/api_keys', {}, {});
      expect(live.body.secret).toMatch(/^sk_live_/);
      const sandboxByHeader = await engine.call('POST', '/v1/api_keys', {}, { 'x-sandbox-mode': 'true' });
      expect(sandboxByHeader.body.secret).toMatch(/^sk_test_/);

      const revoked = await engine.call('DELETE', `/v1/api_keys/${issued.body.id}`);
      expect(revoked.body).toEqual({ id: issued.body.id, object: 'api_key', revoked: true });
      expect((await engine.call('GET', '/v1/account', undefined, key)).status).toBe(401);
      expect((await engine.call('DELETE', `/v1/api_keys/${issued.body.id}`)).body).toEqual(errorShape('not_found'));
    });
  });
});
