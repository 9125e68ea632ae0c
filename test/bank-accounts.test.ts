import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BankAccount, Event } from '../db/entities/index.ts';
import { createSecretBox } from '../domain/secret-box.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

/**
 * /v1/bank_accounts over the real app and PostgreSQL: every rail, every refusal
 * with the check it names (nothing written), the number sealed and never shown,
 * fingerprints, defaults per currency, PATCH, DELETE and its refusals, events,
 * roles, tenants and modes.
 */
describe('bank accounts', () => {
  let engine: TestEngine;
  let tenant: Tenant;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    tenant = engine.tenant;
  });
  afterAll(() => engine?.close());
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    engine.call(method, path, body, headers);
  const ach = {
    type: 'us_ach',
    account_holder_name: 'Ada Lovelace',
    currency: 'USD',
    routing_number: '110000000',
    account_number: '000123456789',
  };
  const sepa = {
    type: 'sepa',
    account_holder_name: 'Ada GmbH',
    account_holder_type: 'company',
    currency: 'EUR',
    iban: 'DE89 3704 0044 0532 0130 00',
    bic: 'COBADEFFXXX',
  };
  const uk = {
    type: 'uk',
    account_holder_name: 'Ada Ltd',
    currency: 'GBP',
    sort_code: '10-88-00',
    account_number: '00012345',
  };
  const rows = () => engine.db.orm.em.fork().count(BankAccount, {});
  const events = (type: string) => engine.db.orm.em.fork().count(Event, { type });

  it('refuses invalid numbers, naming the check, and writes nothing', async () => {
    const cases: [unknown, string][] = [
      [{ ...ach, routing_number: '110000001' }, 'routing_number: the ABA checksum (3-7-1) fails for 110000001'],
      [{ ...ach, routing_number: '1100000' }, 'routing_number: must be exactly 9 digits (got "1100000")'],
      [{ ...ach, account_number: '12' }, 'account_number: a US account number has 4 to 17 digits'],
      [
        { ...ach, currency: 'EUR' },
        'currency: a us_ach destination takes USD, not EUR (EUR requires an IBAN: use sepa, or wire with an iban)',
      ],
      [{ ...sepa, iban: 'DE89370400440532013001' }, 'iban: the IBAN check digits (ISO 7064 mod 97-10) do not match'],
      [{ ...sepa, iban: 'FR142004101005050001302606' }, 'iban: an IBAN of FR has 27 characters, not 26'],
      [
        { ...sepa, bic: 'COBA' },
        'bic: must be 8 or 11 characters: 4 letters (bank), 2 letters (country), 2 letters or digits (location), optionally 3 more (branch); got "COBA"',
      ],
      [{ ...uk, sort_code: '1088' }, 'sort_code: must be 6 digits (got "1088")'],
      [{ ...uk, account_number: '123' }, 'account_number: a UK account number has 8 digits (got 3)'],
      [
        { type: 'wire', account_holder_name: 'A', currency: 'EUR', bic: 'DEUTDEFF' },
        'iban: required: EUR payouts go to an IBAN',
      ],
      [
        { type: 'paypal', account_holder_name: 'A', currency: 'USD', email: 'nope' },
        'email: not an email address: "nope"',
      ],
      [{ ...ach, currency: 'JPY' }, 'currency: a us_ach destination takes USD, not JPY'],
    ];
    for (const [body, message] of cases) {
      const response = await call('POST', '/v1/bank_accounts', body);
      expect(response.status, message).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', message });
    }
    expect((await call('POST', '/v1/bank_accounts', { ...ach, type: 'cheque' })).status).toBe(400);
    expect((await call('POST', '/v1/bank_accounts', { ...ach, extra: 1 })).status).toBe(400);
    expect(await rows()).toBe(0);
    expect(await events('bank_account.created')).toBe(0);
  });

  it('creates each rail: number sealed, last4 and fingerprint shown, first of a currency is its default', async () => {
    const a = await call('POST', '/v1/bank_accounts', ach);
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({
      object: 'bank_account',
      account_id: tenant.accountId,
      type: 'us_ach',
      payout_method: 'bank_transfer',
      account_holder_name: 'Ada Lovelace',
      account_holder_type: 'individual',
      country: 'US',
      currency: 'USD',
      last4: '6789',
      routing_number: '110000000',
      default_for_currency: true,
      status: 'new',
      livemode: true,
    });
    expect(a.body.id).toMatch(/^ba_/);
    expect(JSON.stringify(a.body)).not.toContain('000123456789');
    const row = await engine.db.orm.em.fork().findOneOrFail(BankAccount, { id: a.body.id });
    expect(row.secret).not.toContain('123456789');
    expect(createSecretBox(engine.config.auth.secret, 'bank-accounts').open(row.secret)).toBe('000123456789');

    const s = await call('POST', '/v1/bank_accounts', sepa);
    expect(s.body).toMatchObject({
      type: 'sepa',
      country: 'DE',
      currency: 'EUR',
      last4: '3000',
      bic: 'COBADEFFXXX',
      default_for_currency: true,
      account_holder_type: 'company',
    });
    const u = await call('POST', '/v1/bank_accounts', uk);
    expect(u.body).toMatchObject({ type: 'uk', country: 'GB', sort_code: '108800', last4: '2345' });
    const w = await call('POST', '/v1/bank_accounts', {
      type: 'wire',
      account_holder_name: 'Ada',
      currency: 'USD',
      bic: 'CHASUS33',
      account_number: '987654321',
    });
    expect(w.body).toMatchObject({
      type: 'wire',
      payout_method: 'wire',
      country: 'US',
      default_for_currency: false,
      last4: '4321',
    });
    const p = await call('POST', '/v1/bank_accounts', {
      type: 'paypal',
      account_holder_name: 'Ada',
      currency: 'GBP',
      email: 'ada@example.com',
    });
    expect(p.body).toMatchObject({
      object: 'paypal_account',
      payout_method: 'paypal',
      email: 'a***@example.com',
      default_for_currency: false,
    });
    expect(JSON.stringify(p.body)).not.toContain('ada@example.com');
    expect(await events('bank_account.created')).toBe(5);

    // The same account twice is found by its fingerprint.
    const again = await call('POST', '/v1/bank_accounts', { ...ach, account_holder_name: 'Someone else' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: 'conflict',
      message: `This account is already a destination: ${a.body.id} (same fingerprint ${a.body.fingerprint}).`,
    });
    // The same number in the sandbox is its own destination, with the same fingerprint.
    const sandbox = await call('POST', '/v1/bank_accounts', ach, { 'x-sandbox-mode': 'true' });
    expect(sandbox.status).toBe(201);
    expect(sandbox.body.fingerprint).toBe(a.body.fingerprint);
    expect(sandbox.body.livemode).toBe(false);

    // List, filters, get.
    const list = await call('GET', '/v1/bank_accounts');
    expect(list.body.data.map((b: { id: string }) => b.id)).toEqual([
      p.body.id,
      w.body.id,
      u.body.id,
      s.body.id,
      a.body.id,
    ]);
    expect((await call('GET', '/v1/bank_accounts?currency=usd')).body.data.map((b: { id: string }) => b.id)).toEqual([
      w.body.id,
      a.body.id,
    ]);
    expect(
      (await call('GET', '/v1/bank_accounts?currency=USD&default_for_currency=true')).body.data.map(
        (b: { id: string }) => b.id,
      ),
    ).toEqual([a.body.id]);
    expect((await call('GET', '/v1/bank_accounts?limit=2')).body).toMatchObject({ has_more: true });
    expect((await call('GET', `/v1/bank_accounts/${a.body.id}`)).body).toEqual(a.body);

    // PATCH: a new default takes over; the old one stops being it.
    const patched = await call('PATCH', `/v1/bank_accounts/${w.body.id}`, {
      default_for_currency: true,
      account_holder_name: 'Ada L.',
      metadata: { ref: 'x' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      default_for_currency: true,
      account_holder_name: 'Ada L.',
      metadata: { ref: 'x' },
    });
    expect((await call('GET', `/v1/bank_accounts/${a.body.id}`)).body.default_for_currency).toBe(false);
    const off = await call('PATCH', `/v1/bank_accounts/${w.body.id}`, { default_for_currency: false });
    expect(off.status).toBe(400);
    expect(off.body.message).toContain('make another destination the default instead');
    expect((await call('PATCH', `/v1/bank_accounts/${w.body.id}`, { account_number: '1' })).status).toBe(400);
    expect(await events('bank_account.updated')).toBe(1);

    // DELETE: not the default while others of its currency exist.
    const refused = await call('DELETE', `/v1/bank_accounts/${w.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe(
      `${w.body.id} is the default for USD; make another USD destination the default first.`,
    );
    const deleted = await call('DELETE', `/v1/bank_accounts/${a.body.id}`);
    expect(deleted.body).toEqual({ id: a.body.id, object: 'bank_account', deleted: true });
    expect((await call('GET', `/v1/bank_accounts/${a.body.id}`)).status).toBe(404);
    expect((await call('DELETE', `/v1/bank_accounts/${a.body.id}`)).status).toBe(404);
    expect((await call('DELETE', `/v1/bank_accounts/${w.body.id}`)).status).toBe(200);
    expect(await events('bank_account.deleted')).toBe(2);
    // Deleted, the same number can be added again.
    expect((await call('POST', '/v1/bank_accounts', ach)).status).toBe(201);
  });

  it('isolates accounts and modes; members read but do not write; admins act with x-account-id', async () => {
    const mine = await call('POST', '/v1/bank_accounts', {
      type: 'paypal',
      account_holder_name: 'Iso',
      currency: 'USD',
      email: 'iso@example.com',
    });
    const other = await engine.signUp();
    expect((await call('GET', `/v1/bank_accounts/${mine.body.id}`, undefined, other.headers)).status).toBe(404);
    expect(
      (await call('PATCH', `/v1/bank_accounts/${mine.body.id}`, { account_holder_name: 'x' }, other.headers)).status,
    ).toBe(404);
    expect((await call('DELETE', `/v1/bank_accounts/${mine.body.id}`, undefined, other.headers)).status).toBe(404);
    expect((await call('GET', '/v1/bank_accounts', undefined, other.headers)).body.data).toEqual([]);
    const sandboxed = await call('GET', `/v1/bank_accounts/${mine.body.id}`, undefined, { 'x-sandbox-mode': 'true' });
    expect(sandboxed.status).toBe(404);
    expect(sandboxed.body.message).toContain('exists in live mode');
    // Another tenant may add the same number: same fingerprint, its own destination.
    const theirs = await call('POST', '/v1/bank_accounts', ach, other.headers);
    expect(theirs.status).toBe(201);

    const member = await call('POST', '/v1/users', {
      email: `m-${Date.now()}@example.com`,
      password: 'Member!pass1',
      name: 'M',
    });
    const session = await engine.login(member.body.email, 'Member!pass1');
    expect((await call('POST', '/v1/bank_accounts', uk, session.headers)).status).toBe(403);
    expect((await call('GET', '/v1/bank_accounts', undefined, session.headers)).status).toBe(200);
    expect((await call('POST', '/v1/bank_accounts', uk, { authorization: '' })).status).toBe(401);

    const admin = { ...(await engine.admin()).headers, 'x-account-id': other.accountId };
    const byAdmin = await call('POST', '/v1/bank_accounts', uk, admin);
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body.account_id).toBe(other.accountId);
  });

  it('honours Idempotency-Key', async () => {
    const body = {
      type: 'uk',
      account_holder_name: 'Idem',
      currency: 'GBP',
      sort_code: '200000',
      account_number: '55779911',
    };
    const first = await call('POST', '/v1/bank_accounts', body, { 'idempotency-key': 'ba-1' });
    const second = await call('POST', '/v1/bank_accounts', body, { 'idempotency-key': 'ba-1' });
    expect(first.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });
});
