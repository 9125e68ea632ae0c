/**
 * API key authentication with coalesced lookups (api/auth/api-key-lookups.ts): the API key requests of one turn of
 * the event loop share one query, each still gets its own answer (its key's account and mode, or 401), and a key
 * revoked before a request arrived refuses it at once (nothing is cached).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { authenticate, principalOf } from '../api/auth/principal.ts';
import { sha256 } from '../api/auth/tokens.ts';
import { handleError } from '../api/errors.ts';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let db: TestDatabase;
let orm: MikroORM;
let app: Hono;

async function addAccount(id: string, keys: { id: string; secret: string; livemode: boolean }[]) {
  const connection = orm.em.getConnection();
  await connection.execute(
    `insert into accounts (id, email, name, type, status, settings, created_at, updated_at) values (?, ?, ?, 'business', 'active', ?, now(), now())`,
    [id, `${id}@example.com`, id, JSON.stringify({ note: id })],
  );
  for (const key of keys)
    await connection.execute(
      `insert into api_keys (id, account_id, livemode, secret_hash, last4, created_at) values (?, ?, ?, ?, ?, now())`,
      [key.id, id, key.livemode, sha256(key.secret), key.secret.slice(-4)],
    );
}

const call = (secret: string) =>
  app.request('/v1/whoami', { method: 'POST', headers: { authorization: `Bearer ${secret}` } });

beforeAll(async () => {
  db = await createTestDatabase();
  orm = db.orm;
  await addAccount('acct_lookup_a', [
    { id: 'key_a_test', secret: 'sk_test_lookup_a_0001', livemode: false },
    { id: 'key_a_live', secret: 'sk_live_lookup_a_0002', livemode: true },
  ]);
  await addAccount('acct_lookup_b', [{ id: 'key_b_test', secret: 'sk_test_lookup_b_0003', livemode: false }]);
  const logger = createLogger('silent');
  app = new Hono();
  app.use('/v1/*', authenticate(orm, loadConfig({ NODE_ENV: 'test' }).auth));
  app.post('/v1/whoami', (c) => {
    const principal = principalOf(c);
    const account = c.get('callerAccount')!;
    // A route changing its account object must not change another request's (requests of one key share a row).
    const settings = account.settings as unknown as Record<string, unknown>;
    const touchedBefore = 'touched' in settings;
    settings.touched = true;
    return c.json({ principal, account: account.id, touchedBefore });
  });
  app.onError((error, c) => handleError(error, c, logger));
});

afterAll(async () => {
  await db?.close();
});

describe('API key lookups', () => {
  it('answers concurrent requests of several keys, and unknown ones, each with its own principal, in one query', async () => {
    const connection = orm.em.getConnection();
    const execute = vi.spyOn(connection, 'execute');
    try {
      const secrets = [
        'sk_test_lookup_a_0001',
        'sk_live_lookup_a_0002',
        'sk_test_lookup_b_0003',
        'sk_test_unknown_0004',
        'sk_test_lookup_a_0001',
      ];
      const responses = await Promise.all(secrets.map((secret) => call(secret)));
      const bodies = (await Promise.all(responses.map((r) => r.json()))) as {
        principal?: { apiKeyId: string; accountId: string; livemode: boolean };
        touchedBefore?: boolean;
        error?: string;
      }[];
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 401, 200]);
      expect(bodies.map((b) => b.principal?.apiKeyId ?? b.error)).toEqual([
        'key_a_test',
        'key_a_live',
        'key_b_test',
        'unauthorized',
        'key_a_test',
      ]);
      expect(bodies.map((b) => b.principal?.livemode)).toEqual([false, true, false, undefined, false]);
      expect(bodies[2]!.principal!.accountId).toBe('acct_lookup_b');
      expect(bodies.map((b) => b.touchedBefore)).toEqual([false, false, false, undefined, false]);
      // The five requests started in one turn: one lookup statement.
      const lookups = execute.mock.calls.filter(([sql]) => String(sql).includes('from api_keys k'));
      expect(lookups).toHaveLength(1);
    } finally {
      execute.mockRestore();
    }
  });

  it('refuses a key revoked before the request, though other requests of its turn began earlier', async () => {
    expect((await call('sk_test_lookup_b_0003')).status).toBe(200);
    await orm.em.getConnection().execute(`update api_keys set revoked_at = now() where id = 'key_b_test'`);
    const [revoked, other] = await Promise.all([call('sk_test_lookup_b_0003'), call('sk_test_lookup_a_0001')]);
    expect(revoked.status).toBe(401);
    expect(other.status).toBe(200);
  });

  it('refuses every key of a closed account', async () => {
    await orm.em.getConnection().execute(`update accounts set status = 'closed' where id = 'acct_lookup_a'`);
    const responses = await Promise.all([call('sk_test_lookup_a_0001'), call('sk_live_lookup_a_0002')]);
    expect(responses.map((r) => r.status)).toEqual([401, 401]);
  });
});
