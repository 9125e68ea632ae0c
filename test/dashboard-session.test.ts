/**
 * The dashboard's cookie session (api/auth/browser-session.ts) and how the engine serves
 * the SPA: sign-in sets an httpOnly SameSite=Strict cookie and a readable CSRF cookie;
 * reads work with the cookie alone; a write without the CSRF header (what a cross-site
 * form post sends) is refused and changes nothing; Bearer credentials keep working;
 * /dashboard answers the built SPA with a CSP that allows no inline script.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('dashboard cookie session and CSRF', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(async () => engine?.close());

  async function signIn(email = engine.tenant.email, password = engine.tenant.password) {
    const response = await engine.app.request('/v1/auth/browser_session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const setCookies = response.headers.getSetCookie();
    const cookie = setCookies.map((c) => c.split(';')[0]).join('; ');
    return { response, body: (await response.json()) as any, setCookies, cookie };
  }
  const customers = async () =>
    (
      await engine.call('GET', '/v1/customers?limit=100', undefined, {
        ...engine.tenant.headers,
        'x-sandbox-mode': 'true',
      })
    ).body.data.length;

  it('signs in with the login and sets httpOnly SameSite=Strict session and CSRF cookies, no token in the body', async () => {
    const { response, body, setCookies } = await signIn();
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(body).toMatchObject({
      user: { email: engine.tenant.email, role: 'owner' },
      account: { id: engine.tenant.accountId },
      csrf_token: expect.any(String),
    });
    expect(JSON.stringify(body)).not.toMatch(/access_token|refresh_token/);
    const session = setCookies.find((c) => c.startsWith('billing_session='))!;
    const csrf = setCookies.find((c) => c.startsWith('billing_csrf='))!;
    expect(session).toMatch(/HttpOnly/i);
    expect(session).toMatch(/SameSite=Strict/i);
    expect(csrf).not.toMatch(/HttpOnly/i);
    expect(csrf).toMatch(/SameSite=Strict/i);
    expect(csrf.split(';')[0]).toBe(`billing_csrf=${body.csrf_token}`);
    const wrong = await engine.app.request('/v1/auth/browser_session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: engine.tenant.email, password: 'wrong-password' }),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.getSetCookie()).toEqual([]);
  });

  it('reads with the cookie; a cross-site POST without the CSRF token is refused and creates nothing; with it, it works', async () => {
    const { cookie, body } = await signIn();
    const read = await engine.app.request('/v1/auth/browser_session', { headers: { cookie } });
    expect(read.status).toBe(200);
    expect(((await read.json()) as any).csrf_token).toBe(body.csrf_token);
    const before = await customers();
    const post = (headers: Record<string, string>) =>
      engine.app.request('/v1/customers', {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', 'x-sandbox-mode': 'true', ...headers },
        body: JSON.stringify({ email: 'csrf@example.com' }),
      });
    // What a form on another site sends: the browser would attach the cookie (if SameSite allowed it), never our header.
    const forged = await post({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' });
    expect(forged.status).toBe(403);
    expect(await forged.json()).toMatchObject({ error: 'forbidden' });
    const wrongToken = await post({ 'x-csrf-token': 'not-the-token' });
    expect(wrongToken.status).toBe(403);
    const crossSiteWithToken = await post({ 'x-csrf-token': body.csrf_token, 'sec-fetch-site': 'cross-site' });
    expect(crossSiteWithToken.status).toBe(403);
    expect(await customers()).toBe(before);
    const ok = await post({ 'x-csrf-token': body.csrf_token, 'sec-fetch-site': 'same-origin' });
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as any).livemode).toBe(false);
    expect(await customers()).toBe(before + 1);
  });

  it('Bearer keeps working beside it, and signing out revokes the cookie session', async () => {
    const { cookie, body } = await signIn();
    expect((await engine.call('GET', '/v1/customers', undefined, engine.tenant.headers)).status).toBe(200);
    const out = await engine.app.request('/v1/auth/browser_session', {
      method: 'DELETE',
      headers: { cookie, 'x-csrf-token': body.csrf_token },
    });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie().join('\n')).toMatch(/billing_session=;/);
    const after = await engine.app.request('/v1/customers', { headers: { cookie } });
    expect(after.status).toBe(401);
    expect((await engine.call('GET', '/v1/customers', undefined, engine.tenant.headers)).status).toBe(200);
  });

  it('serves the SPA at /dashboard with a CSP and no inline script; / redirects browsers there', async () => {
    const root = await engine.app.request('/', { headers: { accept: 'text/html' } });
    expect(root.headers.get('location')).toBe('/dashboard');
    for (const path of ['/dashboard', '/dashboard/', '/dashboard/subscriptions/sub_x']) {
      const page = await engine.app.request(path);
      expect(page.status).toBe(200);
      const csp = page.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      const html = await page.text();
      expect(html).toMatch(/<script type="module" crossorigin src="\/dashboard\/assets\/index-[\w-]+\.js"><\/script>/);
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
    const html = await (await engine.app.request('/dashboard')).text();
    const asset = /src="(\/dashboard\/assets\/[^"]+)"/.exec(html)![1]!;
    const js = await engine.app.request(asset);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect((await engine.app.request('/dashboard/assets/..%2F..%2Fpackage.json')).status).toBe(404);
  });
});
