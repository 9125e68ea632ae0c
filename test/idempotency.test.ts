import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { sha256 } from '../api/auth/tokens.ts';
import { IdempotencyKey, Transaction } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine, testPassword } from './helpers/engine.ts';

describe('Idempotency-Key', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  const credit = (
    key: string,
    amount = 100,
    headers: Record<string, string> = {},
    accountId = engine.tenant.accountId,
  ) =>
    engine.call(
      'POST',
      '/v1/transactions',
      { account_id: accountId, amount, currency: 'USD', type: 'credit' },
      { 'idempotency-key': key, 'x-sandbox-mode': 'true', ...headers },
    );
  let members = 0;
  async function newMember() {
    const email = `member-${++members}-${Date.now()}@example.com`;
    const created = await engine.call('POST', '/v1/users', {
      email,
      password: testPassword,
      account_id: engine.tenant.accountId,
    });
    expect(created.status).toBe(201);
    return engine.login(email, testPassword);
  }
  const count = () => engine.db.orm.em.fork().count(Transaction, { accountId: engine.tenant.accountId });

  it('a retry with the same key and body replays the first response and moves no money', async () => {
    const before = await count();
    const first = await credit('k-replay');
    const retry = await credit('k-replay');
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await count()).toBe(before + 1);
  });

  it('the same key with another body is refused, and runs nothing', async () => {
    await credit('k-other', 100);
    const before = await count();
    const other = await credit('k-other', 200);
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ error: 'idempotency_key_reused', message: expect.any(String) });
    expect(await count()).toBe(before);
  });

  it('concurrent requests with one key make one transaction', async () => {
    const before = await count();
    const results = await Promise.all(Array.from({ length: 10 }, () => credit('k-race', 300)));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
    for (const r of results.filter((r) => r.status !== 201)) expect(r.body.error).toBe('idempotency_in_progress');
    expect(await count()).toBe(before + 1);
  });

  it('a request still running answers idempotency_in_progress (409)', async () => {
    const em = engine.db.orm.em.fork();
    const now = new Date();
    await credit('k-scope-probe');
    const { scope } = await em.findOneOrFail(IdempotencyKey, { key: 'k-scope-probe' });
    em.create(IdempotencyKey, {
      scope,
      key: 'k-running',
      requestHash: 'x',
      state: 'in_progress',
      lockedUntil: new Date(now.getTime() + 30_000),
      createdAt: now,
      expiresAt: new Date(now.getTime() + 3_600_000),
    });
    await em.flush();
    const response = await credit('k-running');
    // The hash is compared first: this stored row was for another body.
    expect(response.status).toBe(422);
    await em.nativeUpdate(
      IdempotencyKey,
      { key: 'k-running' },
      {
        requestHash: sha256(
          `POST /v1/transactions\n${JSON.stringify({ account_id: engine.tenant.accountId, amount: 100, currency: 'USD', type: 'credit' })}`,
        ),
      },
    );
    const running = await credit('k-running');
    expect(running.status).toBe(409);
    expect(running.body.error).toBe('idempotency_in_progress');
  });

  it('keeps refusals too: a 402 replays as a 402', async () => {
    const first = await engine.call(
      'POST',
      '/v1/transactions',
      { account_id: engine.tenant.accountId, amount: 10_000_000, currency: 'USD', type: 'refund' },
      { 'idempotency-key': 'k-402' },
    );
    const retry = await engine.call(
      'POST',
      '/v1/transactions',
      { account_id: engine.tenant.accountId, amount: 10_000_000, currency: 'USD', type: 'refund' },
      { 'idempotency-key': 'k-402' },
    );
    expect(first.status).toBe(402);
    expect(retry.status).toBe(402);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
  });

  it("a member replaying an owner's key and body is authorized afresh (403), never handed the owner's secret", async () => {
    const member = await newMember();
    const owner = await engine.call('POST', '/v1/api_keys', { name: 'ci' }, { 'idempotency-key': 'k-secret' });
    expect(owner.status).toBe(201);
    expect(owner.body.secret).toMatch(/^sk_live_/);
    const replay = await engine.call(
      'POST',
      '/v1/api_keys',
      { name: 'ci' },
      { 'idempotency-key': 'k-secret', ...member.headers },
    );
    expect(replay.status).toBe(403);
    expect(replay.body.error).toBe('forbidden');
    expect(JSON.stringify(replay.body)).not.toContain(owner.body.secret);
    // The owner still gets the replay.
    const again = await engine.call('POST', '/v1/api_keys', { name: 'ci' }, { 'idempotency-key': 'k-secret' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.secret).toBe(owner.body.secret);
  });

  it('two users of one account using the same key each get their own result', async () => {
    const member = await newMember();
    const body = { email: 'same@example.com', name: 'Same' };
    const mine = await engine.call('POST', '/v1/customers', body, { 'idempotency-key': 'k-users' });
    const theirs = await engine.call('POST', '/v1/customers', body, {
      'idempotency-key': 'k-users',
      ...member.headers,
    });
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.id).not.toBe(mine.body.id);
  });

  it('a key whose lease lapsed (its process died) is taken over at once and reaches what the first try recorded', async () => {
    const first = await credit('k-crashed', 700);
    expect(first.status).toBe(201);
    const before = await count();
    // As if the process had died after recording the transaction, before storing the answer.
    const em = engine.db.orm.em.fork();
    await em.nativeUpdate(
      IdempotencyKey,
      { key: 'k-crashed' },
      { state: 'in_progress', responseStatus: null, responseBody: null, lockedUntil: new Date(Date.now() + 60_000) },
    );
    expect((await credit('k-crashed', 700)).body.error).toBe('idempotency_in_progress');
    await em.nativeUpdate(IdempotencyKey, { key: 'k-crashed' }, { lockedUntil: new Date(Date.now() - 1) });
    const retry = await credit('k-crashed', 700);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(await count()).toBe(before);
    // A lapsed key with another body is still refused.
    await em.nativeUpdate(
      IdempotencyKey,
      { key: 'k-crashed' },
      { state: 'in_progress', lockedUntil: new Date(Date.now() - 1) },
    );
    expect((await credit('k-crashed', 800)).body.error).toBe('idempotency_key_reused');
  });

  it('an unauthenticated caller with no known address cannot use a key (no shared anonymous scope)', async () => {
    const signUp = await engine.call(
      'POST',
      '/v1/accounts',
      { email: 'anon-idem@example.com', name: 'A', type: 'business', password: 'Test!pass1' },
      { authorization: '', 'idempotency-key': 'k-anon' },
    );
    expect(signUp.status).toBe(400);
    expect(signUp.body.error).toBe('invalid_request');
  });

  it('keys belong to one account and mode, and expire after 24 hours', async () => {
    const other = await engine.signUp();
    const mine = await credit('k-shared');
    const theirs = await credit('k-shared', 100, other.headers, other.accountId);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
    await engine.db.orm.em
      .fork()
      .nativeUpdate(IdempotencyKey, { key: 'k-shared' }, { expiresAt: new Date(Date.now() - 1000) });
    const later = await credit('k-shared');
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(mine.body.id);
    expect((await credit('', 100)).body.error).toBe('invalid_request');
  });
});
