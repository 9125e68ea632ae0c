import { spawnSync } from 'node:child_process';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createApp } from '../api/app.ts';
import { ensureAdmin } from '../api/auth/bootstrap.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { User } from '../db/entities/index.ts';
import { createLogger } from '../logger.ts';
import { startTestEngine, type TestEngine, testPassword } from './helpers/engine.ts';

// Live mode on Stripe: production refuses a sandbox live mode (test/processors.test.ts).
const production = {
  NODE_ENV: 'production',
  AUTH_SECRET: 'x'.repeat(32),
  ADMIN_EMAIL: 'root@example.com',
  ADMIN_PASSWORD: 'Root!2345',
  LIVE_PROCESSOR: 'stripe',
  STRIPE_SECRET_KEY_LIVE: 'sk_live_x',
  STRIPE_WEBHOOK_SECRET_LIVE: 'whsec_x',
};

describe('configuration of identity', () => {
  it('production refuses to start without AUTH_SECRET, ADMIN_EMAIL or ADMIN_PASSWORD, or with a short secret', () => {
    expect(loadConfig(production).auth.adminEmail).toBe('root@example.com');
    for (const missing of ['AUTH_SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD']) {
      const env: Record<string, string> = { ...production };
      delete env[missing];
      expect(() => loadConfig(env)).toThrow(new RegExp(missing));
    }
    expect(() => loadConfig({ ...production, AUTH_SECRET: 'short' })).toThrow(ConfigError);
  });

  it('development has documented defaults', () => {
    const config = loadConfig({});
    expect(config.auth).toMatchObject({
      adminEmail: 'admin@example.com',
      adminPassword: 'Admin!2345',
      signupEnabled: true,
      accessTokenTtlSeconds: 900,
    });
  });

  it("TEST_CLOCK_WORKER_CACHE sizes the test clock Worker's cache: 300 unless set, a non-negative integer", () => {
    expect(loadConfig({}).clockWorkerCachedWorkflows).toBe(300);
    expect(loadConfig({ TEST_CLOCK_WORKER_CACHE: '250' }).clockWorkerCachedWorkflows).toBe(250);
    expect(() => loadConfig({ TEST_CLOCK_WORKER_CACHE: 'many' })).toThrow(/TEST_CLOCK_WORKER_CACHE/);
    expect(() => loadConfig({ TEST_CLOCK_WORKER_CACHE: '-1' })).toThrow(/TEST_CLOCK_WORKER_CACHE/);
  });

  it('the API process exits with a message, not a stack trace, when production secrets are missing', () => {
    const result = spawnSync(process.execPath, ['api/server.ts'], {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://x@127.0.0.1:1/x',
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        AUTH_SECRET: '',
        ADMIN_EMAIL: '',
        ADMIN_PASSWORD: '',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'Configuration: AUTH_SECRET, ADMIN_EMAIL, ADMIN_PASSWORD must be set when NODE_ENV=production.',
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  describe('with a database', () => {
    let engine: TestEngine;
    beforeAll(async () => {
      engine = await startTestEngine({ startWorker: false });
    });
    afterAll(() => engine?.close());

    it('refuses an admin password that fails the policy, and creates the admin once', async () => {
      await expect(
        ensureAdmin(engine.db.orm, {
          ...engine.config.auth,
          adminEmail: 'weak@example.com',
          adminPassword: 'password',
        }),
      ).rejects.toThrow(/ADMIN_PASSWORD fails the password policy/);
      expect(await engine.db.orm.em.fork().count(User, { email: 'weak@example.com' })).toBe(0);
      await ensureAdmin(engine.db.orm, engine.config.auth);
      expect(await engine.db.orm.em.fork().count(User, { role: 'admin' })).toBe(1);
    });

    it('public sign-up can be switched off; admins can still create accounts', async () => {
      const closed = { ...engine.config, auth: { ...engine.config.auth, signupEnabled: false } };
      const app = createApp({
        orm: engine.db.orm,
        temporal: engine.env.client,
        config: closed,
        logger: createLogger('silent'),
      });
      const body = JSON.stringify({
        email: 'late@example.com',
        name: 'Late',
        type: 'business',
        password: testPassword,
      });
      const anonymous = await app.request('/v1/accounts', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toEqual({
        error: 'unauthorized',
        message: expect.stringContaining('Sign-up is closed'),
      });
      const admin = await engine.admin();
      const byAdmin = await app.request('/v1/accounts', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...admin.headers },
        body,
      });
      expect(byAdmin.status).toBe(201);
    });
  });
});
