import { it } from 'vitest';
import { startTestEngine, testPassword } from './helpers/engine.ts';
it('probe', { timeout: 120_000 }, async () => {
  const engine = await startTestEngine({ startWorker: false });
  const member = await engine.call('POST', '/v1/users', { email: 'm@example.com', password: testPassword, name: 'M', role: 'member' });
  const users = await engine.call('GET', '/v1/users');
  const own = users.body.data.find((u: any) => u.role === 'owner').id;
  const admin = await engine.admin();
  const A = admin.headers;
  const anon = { authorization: '' };
  const cases: [string, string, unknown, Record<string, string>?][] = [
    ['GET', '/v1/users/%00', undefined],
    ['GET', '/v1/users?search=%00', undefined],
    ['GET', '/v1/users?account_id=%00', undefined, A],
    ['POST', '/v1/auth/login', { email: '\u0000', password: 'x' }, anon],
    ['PATCH', '/v1/account', { name: 'a\u0000' }],
    ['PATCH', `/v1/users/${own}`, { name: 'a\u0000' }],
    ['POST', '/v1/api_keys', { name: 'a\u0000' }],
    ['POST', '/v1/accounts', { email: 'n1@example.com', name: 'a\u0000', type: 'business', password: testPassword }, anon],
    ['POST', '/v1/users', { email: 'n2@example.com', name: 'a\u0000', password: testPassword }],
    ['POST', '/v1/users', { email: 'n3@example.com', password: testPassword, account_id: '\u0000' }, A],
    ['DELETE', '/v1/auth/session', { session_id: '\u0000' }],
    ['DELETE', '/v1/api_keys/%00', undefined],
    ['DELETE', '/v1/users/%00', undefined],
    ['PATCH', '/v1/users/%00', { name: 'x' }],
    ['GET', '/v1/accounts?created_after=0000-01-01T00:00:00%2B23:59', undefined, A],
    ['GET', '/v1/accounts?created_after=0000-01-01T00:00:00Z', undefined, A],
    ['GET', '/v1/accounts?created_before=9999-12-31T23:59:59-23:59', undefined, A],
    ['POST', '/v1/auth/login', { email: 'İ'.repeat(254), password: 'x' }, anon],
    ['POST', '/v1/auth/login', { email: 'm@example.com', password: testPassword, device_fingerprint: 'f'.repeat(256) }, anon],
    ['POST', '/v1/auth/refresh', { refresh_token: engine.tenant.refreshToken + 'x' }, { authorization: `Bearer ${engine.tenant.refreshToken}x` }],
  ];
  for (const [m, p, b, h] of cases) {
    const r = await engine.call(m, p, b, h);
    console.log(m, p, JSON.stringify(b)?.slice(0, 80), '→', r.status, JSON.stringify(r.body).slice(0, 200));
  }
  await engine.close();
});
