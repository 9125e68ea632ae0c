import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Transaction } from '../db/entities/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const errorShape = (code: string) => ({ error: code, message: expect.any(String) });

describe('transactions and the ledger', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  // In live mode only a platform admin may credit (docs/security.md): credits go through the admin, naming the account.
  let adminHeaders: Record<string, string>;
  beforeAll(async () => {
    adminHeaders = (await engine.admin()).headers;
  });
  const create = (tenant: Tenant, body: Record<string, unknown>) =>
    engine.call(
      'POST',
      '/v1/transactions',
      { account_id: tenant.accountId, currency: 'USD', ...body },
      body.type === 'credit' ? { ...adminHeaders, 'x-account-id': tenant.accountId } : tenant.headers,
    );
  /** The cached balance (available + pending), the sum of `available` and `pending` entries, and the sum of all entries (must be 0). */
  async function books(tenant: Tenant) {
    const sql = engine.db.orm.em.fork().getConnection();
    const [cached] = await sql.execute(
      `select coalesce(sum(available + pending), 0)::int as v from account_balances where account_id = ? and livemode = true`,
      [tenant.accountId],
    );
    const [available] = await sql.execute(
      `select coalesce(sum(amount), 0)::int as v from ledger_entries where account_id = ? and livemode = true and ledger_account in ('available', 'pending')`,
      [tenant.accountId],
    );
    const [all] = await sql.execute(
      `select coalesce(sum(amount), 0)::int as v from ledger_entries where account_id = ?`,
      [tenant.accountId],
    );
    return { cached: cached!.v as number, ledger: available!.v as number, imbalance: all!.v as number };
  }

  it('a credit adds to the balance, on two balanced entries', async () => {
    const tenant = await engine.signUp();
    const created = await create(tenant, {
      amount: 5000,
      type: 'credit',
      reference: 'top-up',
      metadata: { order: '42' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^txn_/),
      object: 'transaction',
      account_id: tenant.accountId,
      amount: 5000,
      currency: 'USD',
      type: 'credit',
      status: 'succeeded',
      reference: 'top-up',
      metadata: { order: '42' },
      risk_level: 'low',
      failure_code: null,
      failure_message: null,
      livemode: true,
      created_at: iso,
      updated_at: iso,
      canceled_at: null,
      invoice: null,
      subscription: null,
      payment_request: null,
      customer: null,
      processor_charge_id: null,
      source_transaction: null,
      amount_refunded: 0,
      refunded: false,
    });
    expect(await books(tenant)).toEqual({ cached: 5000, ledger: 5000, imbalance: 0 });
    expect((await engine.call('GET', `/v1/transactions/${created.body.id}`, undefined, tenant.headers)).body).toEqual(
      created.body,
    );
  });

  it('a refund needs the balance: insufficient_funds (402) writes nothing', async () => {
    const tenant = await engine.signUp();
    await create(tenant, { amount: 1000, type: 'credit' });
    const refused = await create(tenant, { amount: 1001, type: 'refund' });
    expect(refused.status).toBe(402);
    expect(refused.body).toEqual(errorShape('insufficient_funds'));
    expect(await engine.db.orm.em.fork().count(Transaction, { accountId: tenant.accountId })).toBe(1);
    const ok = await create(tenant, { amount: 1000, type: 'refund' });
    expect(ok.body).toMatchObject({ status: 'succeeded', type: 'refund' });
    expect(await books(tenant)).toEqual({ cached: 0, ledger: 0, imbalance: 0 });
  });

  it('a payment charges the sandbox method; a decline is a failed transaction with its reason and moves nothing', async () => {
    const tenant = await engine.signUp();
    const paid = await create(tenant, { amount: 2500, type: 'payment', payment_method: 'pm_card_visa' });
    expect(paid.body).toMatchObject({ status: 'succeeded', failure_code: null });
    const declined = await create(tenant, { amount: 900, type: 'payment', payment_method: 'pm_card_chargeDeclined' });
    expect(declined.status).toBe(201);
    expect(declined.body).toMatchObject({
      status: 'failed',
      failure_code: 'card_declined',
      failure_message: 'Your card was declined.',
    });
    expect(await books(tenant)).toEqual({ cached: 2500, ledger: 2500, imbalance: 0 });
    expect((await create(tenant, { amount: 100, type: 'payment' })).body).toEqual(errorShape('invalid_request'));
    expect((await create(tenant, { amount: 100, type: 'credit', payment_method: 'pm_card_visa' })).body).toEqual(
      errorShape('invalid_request'),
    );
  });

  it("refuses bad input with the spec's codes and writes nothing", async () => {
    const tenant = await engine.signUp();
    const other = await engine.signUp();
    expect((await create(tenant, { amount: 100, type: 'credit', currency: 'EUR' })).body).toEqual(
      errorShape('currency_mismatch'),
    );
    expect((await create(tenant, { amount: 100, type: 'credit', account_id: other.accountId })).status).toBe(404);
    expect((await create(tenant, { amount: 100, type: 'credit', account_id: 'acct_missing' })).body).toEqual(
      errorShape('not_found'),
    );
    for (const body of [
      { amount: 0 },
      { amount: -5 },
      { amount: 1.5 },
      { amount: '100' },
      { currency: 'XYZ' },
      { type: 'gift' },
      { metadata: { k: 1 } },
      { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) },
    ]) {
      const response = await create(tenant, { amount: 100, type: 'credit', ...body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body).toEqual(errorShape('invalid_request'));
    }
    expect(await engine.db.orm.em.fork().count(Transaction, { accountId: tenant.accountId })).toBe(0);
    expect(
      (
        await engine.call(
          'POST',
          '/v1/transactions',
          { account_id: tenant.accountId, amount: 1, currency: 'USD', type: 'credit' },
          { authorization: '' },
        )
      ).status,
    ).toBe(401);
  });

  it('PATCH changes reference and merges metadata; amount, currency or type is a conflict that changes nothing', async () => {
    const tenant = await engine.signUp();
    const { body: created } = await create(tenant, { amount: 700, type: 'credit', metadata: { a: '1', b: '2' } });
    const patched = await engine.call(
      'PATCH',
      `/v1/transactions/${created.id}`,
      { reference: 'INV-7', metadata: { b: '', c: '3' } },
      tenant.headers,
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ reference: 'INV-7', metadata: { a: '1', c: '3' }, amount: 700 });
    for (const body of [{ amount: 1 }, { currency: 'USD' }, { type: 'refund' }, { amount: 1, reference: 'x' }]) {
      const conflict = await engine.call('PATCH', `/v1/transactions/${created.id}`, body, tenant.headers);
      expect(conflict.status).toBe(409);
      expect(conflict.body).toEqual(errorShape('conflict'));
    }
    expect((await engine.call('GET', `/v1/transactions/${created.id}`, undefined, tenant.headers)).body).toMatchObject({
      reference: 'INV-7',
      amount: 700,
      type: 'credit',
    });
    expect(
      (await engine.call('PATCH', `/v1/transactions/${created.id}`, { status: 'failed' }, tenant.headers)).body,
    ).toEqual(errorShape('invalid_request'));
    expect(
      (
        await engine.call(
          'PATCH',
          '/v1/transactions/txn_01jd3x5k8q0m2v7c9r4t6y1w3e',
          { reference: 'x' },
          tenant.headers,
        )
      ).body,
    ).toEqual(errorShape('not_found'));
  });

  it('DELETE cancels only a pending transaction; the record stays visible', async () => {
    const tenant = await engine.signUp();
    const { body: done } = await create(tenant, { amount: 300, type: 'credit' });
    const refused = await engine.call('DELETE', `/v1/transactions/${done.id}`, undefined, tenant.headers);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(errorShape('not_cancellable'));
    // A pending payment (pending settlement arrives with payment requests; made here directly).
    const em = engine.db.orm.em.fork();
    const now = new Date();
    em.create(Transaction, {
      id: 'txn_01jd3x5k8q0m2v7c9r4t6y1w3p',
      accountId: tenant.accountId,
      livemode: true,
      amount: 100,
      currency: 'USD',
      type: 'payment',
      status: 'pending',
      metadata: {},
      riskLevel: 'low',
      riskScore: 0,
      createdAt: now,
      updatedAt: now,
    });
    await em.flush();
    const canceled = await engine.call(
      'DELETE',
      '/v1/transactions/txn_01jd3x5k8q0m2v7c9r4t6y1w3p',
      undefined,
      tenant.headers,
    );
    expect(canceled.body).toEqual({
      id: 'txn_01jd3x5k8q0m2v7c9r4t6y1w3p',
      status: 'canceled',
      canceled_at: iso,
      message: expect.any(String),
    });
    const read = await engine.call('GET', '/v1/transactions/txn_01jd3x5k8q0m2v7c9r4t6y1w3p', undefined, tenant.headers);
    expect(read.body).toMatchObject({ status: 'canceled', canceled_at: canceled.body.canceled_at });
    expect(
      (await engine.call('DELETE', '/v1/transactions/txn_01jd3x5k8q0m2v7c9r4t6y1w3p', undefined, tenant.headers)).body,
    ).toEqual(errorShape('not_cancellable'));
  });

  it('lists newest first with cursors that stay right while rows arrive, both ways, with filters', async () => {
    const tenant = await engine.signUp();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await create(tenant, { amount: 100 + i, type: 'credit' })).body.id);
    const list = (query: string) => engine.call('GET', `/v1/transactions?${query}`, undefined, tenant.headers);
    const first = await list('limit=3');
    expect(first.body).toMatchObject({ object: 'list', has_more: true });
    expect(first.body.data.map((t: { id: string }) => t.id)).toEqual([ids[6], ids[5], ids[4]]);
    // New rows arrive between pages: the next page is unaffected.
    await create(tenant, { amount: 999, type: 'credit' });
    const second = await list(`limit=3&starting_after=${ids[4]}`);
    expect(second.body.data.map((t: { id: string }) => t.id)).toEqual([ids[3], ids[2], ids[1]]);
    const third = await list(`limit=3&starting_after=${ids[1]}`);
    expect(third.body).toMatchObject({ has_more: false });
    expect(third.body.data.map((t: { id: string }) => t.id)).toEqual([ids[0]]);
    // And back again.
    const back = await list(`limit=3&ending_before=${ids[3]}`);
    expect(back.body.data.map((t: { id: string }) => t.id)).toEqual([ids[6], ids[5], ids[4]]);
    expect(back.body.has_more).toBe(true); // the row that arrived later is newer still
    expect((await list('')).body.data).toHaveLength(8);
    await create(tenant, { amount: 5, type: 'refund' });
    expect((await list('type=refund')).body.data).toHaveLength(1);
    expect((await list('status=failed')).body.data).toHaveLength(0);
    expect(
      (await list(`date_from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.data,
    ).toHaveLength(0);
    for (const query of [
      'limit=0',
      'limit=101',
      'starting_after=nope',
      `starting_after=${ids[0]}&ending_before=${ids[1]}`,
      'status=lost',
      'date_to=soon',
    ]) {
      expect((await list(query)).body, query).toEqual(errorShape('invalid_request'));
    }
  });

  it('50 concurrent refunds against a balance that covers 10 let exactly 10 through', async () => {
    const tenant = await engine.signUp();
    await create(tenant, { amount: 1000, type: 'credit' });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => create(tenant, { amount: 100, type: 'refund' })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    expect(await books(tenant)).toEqual({ cached: 0, ledger: 0, imbalance: 0 });
  });

  it(
    'property: random concurrent credits, payments, refunds and cancels never overdraw and keep the ledger balanced',
    { timeout: 120_000 },
    async () => {
      const operation = fc.oneof(
        fc.record({ type: fc.constant('credit' as const), amount: fc.integer({ min: 1, max: 5000 }) }),
        fc.record({ type: fc.constant('refund' as const), amount: fc.integer({ min: 1, max: 5000 }) }),
        fc.record({
          type: fc.constant('payment' as const),
          amount: fc.integer({ min: 1, max: 5000 }),
          payment_method: fc.constantFrom('pm_card_visa', 'pm_card_chargeDeclined'),
        }),
        fc.record({ type: fc.constant('cancel' as const), amount: fc.constant(0) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 25 }), async (operations) => {
          const tenant = await engine.signUp();
          const results = await Promise.all(
            operations.map(async (op) => {
              if (op.type === 'cancel') {
                const latest = await engine.call('GET', '/v1/transactions?limit=1', undefined, tenant.headers);
                const id = latest.body.data[0]?.id;
                return id
                  ? engine.call('DELETE', `/v1/transactions/${id}`, undefined, tenant.headers)
                  : { status: 409, body: {} };
              }
              return create(tenant, op);
            }),
          );
          for (const r of results) expect([200, 201, 402, 409]).toContain(r.status);
          const b = await books(tenant);
          expect(b.imbalance).toBe(0);
          expect(b.cached).toBe(b.ledger);
          expect(b.cached).toBeGreaterThanOrEqual(0);
          // The balance is exactly what the succeeded transactions say.
          const succeeded = await engine.db.orm.em
            .fork()
            .find(Transaction, { accountId: tenant.accountId, status: 'succeeded' });
          expect(succeeded.reduce((sum, t) => sum + (t.type === 'refund' ? -t.amount : t.amount), 0)).toBe(b.cached);
        }),
        { numRuns: 15 },
      );
    },
  );

  it('scores risk deterministically: large amounts and refunds on a new account rank higher', async () => {
    const tenant = await engine.signUp();
    await create(tenant, { amount: 2_000_000, type: 'credit' });
    expect((await create(tenant, { amount: 100, type: 'credit' })).body.risk_level).toBe('low');
    expect((await create(tenant, { amount: 150_000, type: 'credit' })).body.risk_level).toBe('medium');
    expect((await create(tenant, { amount: 1_500_000, type: 'refund' })).body.risk_level).toBe('high');
  });
});
