import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../api/auth/tokens.ts';
import { IdempotencyKey, Transaction } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('Idempotency-Key', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  const credit = (key: string, amount = 100, headers: Record<string, string> = {}, accountId = engine.tenant.accountId) =>
    engine.call('POST', '/v1/transactions', { account_id: accountId, amount, currency: 'USD', type: 'credit' }, { 'idempotency-key': key, 'x-sandbox-mode': 'true', ...headers });
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
    em.create(IdempotencyKey, { scope: `${engine.tenant.accountId}:false`, key: 'k-running', requestHash: 'x', state: 'in_progress', createdAt: now, expiresAt: new Date(now.getTime() + 3_600_000) });
    await em.flush();
    const response = await credit('k-running');
    // The hash is compared first: this stored row was for another body.
    expect(response.status).toBe(422);
    await em.nativeUpdate(IdempotencyKey, { key: 'k-running' }, { requestHash: sha256(`POST /v1/transactions\n${JSON.stringify({ account_id: engine.tenant.accountId, amount: 100, currency: 'USD', type: 'credit' })}`) });
    const running = await credit('k-running');
    expect(running.status).toBe(409);
    expect(running.body.error).toBe('idempotency_in_progress');
  });

  it('keeps refusals too: a 402 replays as a 402', async () => {
    const first = await engine.call('POST', '/v1/transactions', { account_id: engine.tenant.accountId, amount: 10_000_000, currency: 'USD', type: 'refund' }, { 'idempotency-key': 'k-402' });
    const retry = await engine.call('POST', '/v1/transactions', { account_id: engine.tenant.accountId, amount: 10_000_000, currency: 'USD', type: 'refund' }, { 'idempotency-key': 'k-402' });
    expect(first.status).toBe(402);
    expect(retry.status).toBe(402);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
  });

  it('keys belong to one account and mode, and expire after 24 hours', async () => {
    const other = await engine.signUp();
    const mine = await credit('k-shared');
    const theirs = await credit('k-shared', 100, other.headers, other.accountId);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
    await engine.db.orm.em.fork().nativeUpdate(IdempotencyKey, { key: 'k-shared' }, { expiresAt: new Date(Date.now() - 1000) });
    const later = await credit('k-shared');
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(mine.body.id);
    expect((await credit('', 100)).body.error).toBe('invalid_request');
  });
});
