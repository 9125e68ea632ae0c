import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, Event, Payout } from '../db/entities/index.ts';
import { ibanOf } from '../domain/bank-accounts.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

/**
 * Payouts over the real app, PostgreSQL and a time-skipping Temporal: every
 * endpoint and error code; states pending → in_transit → paid | failed |
 * canceled in skipped time; the sandbox rail's test numbers (each failure code,
 * slow); money back with its own balance transaction; USD, EUR and GBP side by
 * side; Idempotency-Key; tenants and modes apart.
 */
describe('payouts', () => {
  let engine: TestEngine;
  let tenant: Tenant;
  const sandbox = { 'x-sandbox-mode': 'true' };
  beforeAll(async () => {
    engine = await startTestEngine();
    tenant = engine.tenant;
  });
  afterAll(() => engine?.close());
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    engine.call(method, path, body, headers);
  const test = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(method, path, body, { ...sandbox, ...headers });
  /** Money on the sandbox balance of `currency` (the account's currency is switched for the credit, then back to USD). */
  async function fund(currency: string, amount: number, who: Tenant = tenant) {
    const h = { ...who.headers, ...sandbox };
    if (currency !== 'USD')
      expect((await call('PATCH', '/v1/account', { settings: { currency } }, who.headers)).status).toBe(200);
    const credit = await call(
      'POST',
      '/v1/transactions',
      { account_id: who.accountId, amount, currency, type: 'credit' },
      h,
    );
    expect(credit.status, JSON.stringify(credit.body)).toBe(201);
    if (currency !== 'USD') await call('PATCH', '/v1/account', { settings: { currency: 'USD' } }, who.headers);
  }
  async function available(currency: string, headers: Record<string, string> = sandbox) {
    const balance = (await call('GET', '/v1/balance', undefined, headers)).body;
    return balance.available.find((m: { currency: string }) => m.currency === currency)?.amount ?? 0;
  }
  const skip = (ms: number) => engine.env.sleep(ms);
  const eventTypesOf = async (payoutId: string) =>
    (
      await engine.db.orm.em
        .fork()
        .find(Event, { data: { object: { id: payoutId } } } as never, { orderBy: { id: 'asc' } })
    ).map((e) => e.type);
  async function destination(body: Record<string, unknown>, headers: Record<string, string> = sandbox) {
    const response = await call('POST', '/v1/bank_accounts', { account_holder_name: 'Ada', ...body }, headers);
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body as { id: string; fingerprint: string };
  }
  const achAccount = (account: string) => ({
    type: 'us_ach',
    currency: 'USD',
    routing_number: '110000000',
    account_number: account,
  });

  it('refuses bad payouts with their codes and writes nothing', async () => {
    const before = await engine.db.orm.em.fork().count(Payout, {});
    const none = await test('POST', '/v1/payouts', { amount: 100, currency: 'USD' });
    expect(none.body).toEqual({
      error: 'invalid_request',
      message: 'destination: there is no default destination for USD; add one with POST /v1/bank_accounts or name one.',
    });
    const usd = await destination(achAccount('000123456789'));
    const eur = await destination({ type: 'sepa', currency: 'EUR', iban: 'DE89370400440532013000' });
    expect((await test('POST', '/v1/payouts', { amount: 100, currency: 'USD' })).body.error).toBe('insufficient_funds');
    expect((await test('POST', '/v1/payouts', { amount: 100, currency: 'USD' })).status).toBe(402);
    const mismatch = await test('POST', '/v1/payouts', { amount: 100, currency: 'USD', destination: eur.id });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toEqual({ error: 'currency_mismatch', message: `${eur.id} takes EUR, not USD.` });
    expect((await test('POST', '/v1/payouts', { amount: 100, currency: 'JPY' })).body).toEqual({
      error: 'invalid_request',
      message: 'currency: Payouts go out in USD, EUR, GBP only, not JPY.',
    });
    const unknown = await test('POST', '/v1/payouts', { amount: 100, currency: 'USD', destination: 'ba_nope' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'not_found', message: 'No such destination: ba_nope.' });
    // The live destination is not the sandbox's.
    const live = await destination(achAccount('000123456789'), tenant.headers);
    expect((await test('POST', '/v1/payouts', { amount: 100, currency: 'USD', destination: live.id })).status).toBe(
      404,
    );
    for (const bad of [
      { amount: 0, currency: 'USD' },
      { amount: 1.5, currency: 'USD' },
      { amount: 100 },
      { amount: 100, currency: 'USD', method: 'wire' },
    ]) {
      expect((await test('POST', '/v1/payouts', bad)).status).toBe(400);
    }
    expect(await engine.db.orm.em.fork().count(Payout, {})).toBe(before);
    expect(usd.id).toMatch(/^ba_/);
  });

  it('pending → in_transit → paid in skipped time, with its events, balance transaction and email; the destination becomes verified', async () => {
    await fund('USD', 10_000);
    const created = await test('POST', '/v1/payouts', { amount: 4000, currency: 'USD', description: 'Nov' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'payout',
      status: 'pending',
      amount: 4000,
      currency: 'USD',
      method: 'bank_transfer',
      arrival_date: null,
      automatic: false,
      hold: null,
      livemode: false,
    });
    expect(created.body.destination).toMatch(/^ba_/);
    expect(await available('USD')).toBe(6000);
    // The workflow's clock is the test server's (ahead of the wall clock once earlier files on the same server skipped time).
    const sentAround = (await engine.env.currentTimeMs()) + 61_000;
    await skip(61_000);
    const inTransit = await eventually(
      async () => (await test('GET', `/v1/payouts/${created.body.id}`)).body,
      (p) => p.status === 'in_transit',
    );
    const arrival = new Date(inTransit.arrival_date).getTime();
    expect(arrival - sentAround).toBeGreaterThan(day - 5 * 60_000);
    expect(arrival - sentAround).toBeLessThan(day + 5 * 60_000);
    // Too late to cancel.
    const late = await test('POST', `/v1/payouts/${created.body.id}/cancel`);
    expect(late.status).toBe(409);
    expect(late.body).toEqual({
      error: 'not_cancellable',
      message: 'The payout is in_transit; only a pending payout can be canceled.',
    });
    await skip(day);
    expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('paid');
    const paid = (await test('GET', `/v1/payouts/${created.body.id}`)).body;
    expect(paid).toMatchObject({ status: 'paid', failure_code: null });
    expect(await available('USD')).toBe(6000);
    expect(await eventTypesOf(created.body.id)).toEqual(['payout.created', 'payout.updated', 'payout.paid']);
    expect((await test('GET', `/v1/bank_accounts/${created.body.destination}`)).body.status).toBe('verified');
    const [mail] = await eventually(
      async () =>
        engine.mail.messages.filter(
          (m) => m.envelopeTo.includes(tenant.email) && m.parsed.subject?.includes('Payout of $40.00 paid'),
        ),
      (m) => m.length >= 1,
    );
    expect(mail!.parsed.text).toContain(created.body.id);
  });

  it('cancel while pending: the money returns with a payout_cancel balance transaction, once', async () => {
    const created = await test('POST', '/v1/payouts', { amount: 1000, currency: 'USD' });
    expect(await available('USD')).toBe(5000);
    const canceled = await test('POST', `/v1/payouts/${created.body.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ status: 'canceled', canceled_at: expect.any(String) });
    expect(canceled.body.failure_balance_transaction).toMatch(/^btxn_/);
    expect(await available('USD')).toBe(6000);
    expect((await test('POST', `/v1/payouts/${created.body.id}/cancel`)).body.error).toBe('not_cancellable');
    expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('canceled');
    const btxns = await engine.db.orm.em
      .fork()
      .find(BalanceTransaction, { source: created.body.id }, { orderBy: { id: 'asc' } });
    expect(btxns.map((b) => [b.type, Number(b.amount)])).toEqual([
      ['payout', -1000],
      ['payout_cancel', 1000],
    ]);
    const events = await engine.db.orm.em
      .fork()
      .find(Event, { type: 'payout.canceled', transactionId: canceled.body.failure_balance_transaction });
    expect(events).toHaveLength(1);
    expect((await test('POST', '/v1/payouts/po_unknown/cancel')).status).toBe(404);
    expect((await call('POST', `/v1/payouts/${created.body.id}/cancel`)).status).toBe(404);
  });

  it('each sandbox failure code by its test account number: failed, money back, email, destination errored', async () => {
    const codes: [string, string, string][] = [
      ['000111111116', 'no_account', 'errored'],
      ['000111111113', 'account_closed', 'errored'],
      ['000555555559', 'could_not_process', 'new'],
    ];
    for (const [account, code, status] of codes) {
      const dest = await destination(achAccount(account));
      const before = await available('USD');
      const created = await test('POST', '/v1/payouts', { amount: 700, currency: 'USD', destination: dest.id });
      expect(created.status).toBe(201);
      expect(await available('USD')).toBe(before - 700);
      await skip(61_000 + day);
      expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('failed');
      const failed = (await test('GET', `/v1/payouts/${created.body.id}`)).body;
      expect(failed).toMatchObject({ status: 'failed', failure_code: code, failure_message: expect.any(String) });
      expect(await available('USD')).toBe(before);
      expect(await eventTypesOf(created.body.id)).toEqual(['payout.created', 'payout.updated', 'payout.failed']);
      const failedEvent = await engine.db.orm.em
        .fork()
        .findOneOrFail(Event, { type: 'payout.failed', transactionId: failed.failure_balance_transaction });
      expect(failedEvent.accountId).toBe(tenant.accountId);
      expect((await test('GET', `/v1/bank_accounts/${dest.id}`)).body.status).toBe(status);
    }
    const mails = await eventually(
      async () => engine.mail.messages.filter((m) => m.parsed.subject?.includes('Payout of $7.00 failed')),
      (m) => m.length >= 3,
    );
    expect(mails[0]!.parsed.text).toContain('no_account');
    // The same numbers pay in live mode.
    expect((await call('GET', '/v1/bank_accounts')).status).toBe(200);
  });

  it('the slow test account arrives after 4 days', async () => {
    const dest = await destination(achAccount('000000007777'));
    const created = await test('POST', '/v1/payouts', { amount: 100, currency: 'USD', destination: dest.id });
    await skip(61_000 + 2 * day);
    expect((await test('GET', `/v1/payouts/${created.body.id}`)).body.status).toBe('in_transit');
    await skip(2 * day + 1000);
    expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('paid');
  });

  it('USD, EUR and GBP balances and payouts side by side, each to its own default', async () => {
    await destination({ type: 'uk', currency: 'GBP', sort_code: '108800', account_number: '00012345' });
    await destination({ type: 'paypal', currency: 'GBP', email: 'gbp@example.com' });
    await fund('EUR', 5000);
    await fund('GBP', 3000);
    const usdBefore = await available('USD');
    const eur = await test('POST', '/v1/payouts', { amount: 5000, currency: 'EUR' });
    const gbp = await test('POST', '/v1/payouts', { amount: 2500, currency: 'GBP' });
    expect(eur.body).toMatchObject({ status: 'pending', currency: 'EUR', method: 'bank_transfer' });
    expect(gbp.body).toMatchObject({ status: 'pending', currency: 'GBP' });
    expect((await test('POST', '/v1/payouts', { amount: 501, currency: 'GBP' })).status).toBe(402);
    expect(await available('EUR')).toBe(0);
    expect(await available('GBP')).toBe(500);
    expect(await available('USD')).toBe(usdBefore);
    const list = await test('GET', '/v1/payouts?currency=gbp');
    expect(list.body.data.map((p: { id: string }) => p.id)).toEqual([gbp.body.id]);
    expect(
      (await test('GET', `/v1/payouts?destination=${eur.body.destination}`)).body.data.map((p: { id: string }) => p.id),
    ).toEqual([eur.body.id]);
    expect((await test('GET', '/v1/payouts?status=canceled')).body.data).toHaveLength(1);
  });

  it('Idempotency-Key: one payout, one debit', async () => {
    const before = await available('GBP');
    const headers = { 'idempotency-key': 'payout-once' };
    const [a, b] = await Promise.all([
      test('POST', '/v1/payouts', { amount: 100, currency: 'GBP' }, headers),
      test('POST', '/v1/payouts', { amount: 100, currency: 'GBP' }, headers),
    ]);
    const statuses = [a.status, b.status].sort();
    expect(statuses[0]).toBe(201);
    const replay = await test('POST', '/v1/payouts', { amount: 100, currency: 'GBP' }, headers);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await available('GBP')).toBe(before - 100);
    expect((await test('POST', '/v1/payouts', { amount: 200, currency: 'GBP' }, headers)).body.error).toBe(
      'idempotency_key_reused',
    );
  });

  it('tenants and modes apart; members read but may not pay out or cancel', async () => {
    const other = await engine.signUp();
    const mine = (await test('GET', '/v1/payouts')).body.data[0];
    expect((await call('GET', `/v1/payouts/${mine.id}`, undefined, { ...other.headers, ...sandbox })).status).toBe(404);
    expect(
      (await call('POST', `/v1/payouts/${mine.id}/cancel`, undefined, { ...other.headers, ...sandbox })).status,
    ).toBe(404);
    expect((await call('GET', '/v1/payouts', undefined, { ...other.headers, ...sandbox })).body.data).toEqual([]);
    const live = await call('GET', `/v1/payouts/${mine.id}`);
    expect(live.status).toBe(404);
    expect(live.body.message).toContain('exists in sandbox mode');
    const member = await call('POST', '/v1/users', {
      email: `pm-${Date.now()}@example.com`,
      password: 'Member!pass1',
      name: 'M',
    });
    const session = await engine.login(member.body.email, 'Member!pass1');
    expect(
      (await call('POST', '/v1/payouts', { amount: 1, currency: 'USD' }, { ...session.headers, ...sandbox })).status,
    ).toBe(403);
    expect(
      (await call('POST', `/v1/payouts/${mine.id}/cancel`, undefined, { ...session.headers, ...sandbox })).status,
    ).toBe(403);
    expect((await call('GET', '/v1/payouts', undefined, { ...session.headers, ...sandbox })).status).toBe(200);
    // A test IBAN that fails is documented: its check digits are right.
    expect(ibanOf('DE', '370400440000001116')).toMatch(/^DE\d{2}370400440000001116$/);
  });
});
