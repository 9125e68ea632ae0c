import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LedgerEntry, SandboxProcessorCharge, Transaction } from '../db/entities/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const errorShape = (code: string) => ({ error: code, message: expect.any(String) });
const day = 86_400_000;
let emailCounter = 0;
const customer = () => `customer${++emailCounter}-${Date.now()}@example.com`;

describe('payment requests', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const create = (
    body: Record<string, unknown> = {},
    tenant: Tenant = engine.tenant,
    headers: Record<string, string> = {},
  ) =>
    engine.call(
      'POST',
      '/v1/payments',
      { account_id: tenant.accountId, amount: 4250, currency: 'USD', customer_email: customer(), ...body },
      { ...tenant.headers, ...headers },
    );
  const get = async (id: string) => (await engine.call('GET', `/v1/payments/${id}`)).body;
  const pathOf = (url: string) => new URL(url).pathname;
  async function open(url: string) {
    const response = await engine.app.request(pathOf(url));
    return { status: response.status, html: await response.text(), headers: response.headers };
  }
  const attemptOf = (html: string) => /name="attempt" value="([^"]+)"/.exec(html)?.[1] ?? '';
  async function submit(url: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    const response = await engine.app.request(pathOf(url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: response.status, html: await response.text() };
  }
  /** Opens the link and pays with `method`, as a customer without JavaScript would. */
  async function pay(url: string, method: string) {
    const page = await open(url);
    return submit(url, { payment_method: method, attempt: attemptOf(page.html) });
  }
  const mailTo = (to: string, count = 1) =>
    eventually(
      async () => engine.mail.messages.filter((m) => m.envelopeTo.includes(to)),
      (list) => list.length >= count,
    );
  const processorCharges = (id: string) =>
    engine.db.orm.em.fork().count(SandboxProcessorCharge, { idempotencyKey: { $like: `${id}:%` } });
  const paymentsOf = (tenant: Tenant) =>
    engine.db.orm.em.fork().find(Transaction, { accountId: tenant.accountId, type: 'payment' });

  it('creates a pending request with an unguessable link; the GET right after reads the same', async () => {
    const email = customer();
    const created = await create({
      amount: 4250,
      customer_email: email,
      reference: 'INV-1001',
      metadata: { order: '42' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^pay_[0-9a-z]{26}$/),
      object: 'payment_request',
      account_id: engine.tenant.accountId,
      amount: 4250,
      currency: 'USD',
      status: 'pending',
      customer_email: email,
      reference: 'INV-1001',
      metadata: { order: '42' },
      payment_url: expect.stringMatching(new RegExp(`^${engine.config.publicUrl}/pay/[A-Za-z0-9_-]{43}$`)),
      expires_at: iso,
      transaction_id: null,
      paid_at: null,
      failure_reason: null,
      canceled_at: null,
      cancellation_reason: null,
      last_payment_error: null,
      attempts: 0,
      recurring_payment_request_id: null,
      livemode: true,
      created_at: iso,
      updated_at: iso,
    });
    // Default expiry: 7 days after creation.
    expect(Date.parse(created.body.expires_at) - Date.parse(created.body.created_at)).toBe(7 * day);
    expect(await get(created.body.id)).toEqual(created.body);
    const status = await engine.call('GET', `/v1/payments/${created.body.id}/status`);
    expect(status.body).toEqual({
      id: created.body.id,
      status: 'pending',
      amount: 4250,
      currency: 'USD',
      reference: 'INV-1001',
      updated_at: created.body.updated_at,
    });
    // Two requests never share a link.
    const other = await create();
    expect(other.body.payment_url).not.toBe(created.body.payment_url);
  });

  it('emails the customer who asks, how much, the reference and a working link', async () => {
    const email = customer();
    const created = await create({ amount: 123456, customer_email: email, reference: 'Order <77> & co' });
    const [message] = await mailTo(email);
    expect(message!.parsed.subject).toBe('[TEST] Acme requests $1,234.56');
    const text = message!.parsed.text!;
    expect(text).toContain('Acme requests a payment of $1,234.56.');
    expect(text).toContain('Reference: Order <77> & co');
    const link = /Pay here: (\S+)/.exec(text)![1]!;
    expect(link).toBe(created.body.payment_url);
    expect(message!.parsed.html).toContain('Order &lt;77&gt; &amp; co');
    const page = await open(link);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.html).toContain('$1,234.56');
    expect(page.html).toContain('Acme');
    // User text is escaped on the page too.
    expect(page.html).toContain('Order &lt;77&gt; &amp; co');
    expect(page.html).not.toContain('Order <77>');
    for (const method of [
      'pm_card_visa',
      'pm_card_mastercard',
      'pm_card_chargeDeclined',
      'pm_card_insufficientFunds',
      'pm_card_expired',
    ]) {
      expect(page.html).toContain(`value="${method}"`);
    }
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self'");
    expect(page.headers.get('cache-control')).toBe('no-store');
  });

  it('the pay page form charges once, records one payment on the ledger and sends a receipt', async () => {
    const tenant = await engine.signUp({ name: 'Globex' });
    const email = customer();
    const created = await create({ amount: 990, customer_email: email, reference: 'R-1' }, tenant);
    const paid = await pay(created.body.payment_url, 'pm_card_visa');
    expect(paid.status).toBe(200);
    expect(paid.html).toContain('Payment successful');
    expect(paid.html).toContain('$9.90');
    const after = (await engine.call('GET', `/v1/payments/${created.body.id}`, undefined, tenant.headers)).body;
    expect(after).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      transaction_id: expect.stringMatching(/^txn_/),
      paid_at: iso,
      last_payment_error: null,
    });
    const [transaction] = await paymentsOf(tenant);
    expect(transaction).toMatchObject({
      id: after.transaction_id,
      amount: 990,
      currency: 'USD',
      status: 'succeeded',
      reference: 'R-1',
      paymentMethod: 'pm_card_visa',
    });
    const entries = await engine.db.orm.em.fork().find(LedgerEntry, { transactionId: after.transaction_id });
    // The money arrives pending (available two days later, fundsAvailabilityWorkflow).
    expect(entries.map((e) => [e.ledgerAccount, e.amount]).sort()).toEqual([
      ['external', -990],
      ['pending', 990],
    ]);
    const txn = await engine.call('GET', `/v1/transactions/${after.transaction_id}`, undefined, tenant.headers);
    expect(txn.body).toMatchObject({ type: 'payment', amount: 990, status: 'succeeded' });
    expect(await processorCharges(created.body.id)).toBe(1);
    const mails = await mailTo(email, 2);
    expect(mails.map((m) => m.parsed.subject)).toEqual([
      '[TEST] Globex requests $9.90',
      '[TEST] Receipt: $9.90 paid to Globex',
    ]);
    // From the merchant's name; the receipt names the request's reference, not an internal id.
    expect(mails.map((m) => m.parsed.from!.value[0]!.name)).toEqual(['Globex', 'Globex']);
    expect(mails[1]!.parsed.text).toContain('Reference: R-1');
    expect(mails[1]!.parsed.text).not.toContain(created.body.id);
    // The link now says it is paid (200), and a new form post charges nothing.
    const again = await open(created.body.payment_url);
    expect(again.status).toBe(200);
    expect(again.html).toContain('This request has been paid');
    expect(
      (await submit(created.body.payment_url, { payment_method: 'pm_card_visa', attempt: 'x'.repeat(22) })).html,
    ).toContain('This request has been paid');
    expect(await processorCharges(created.body.id)).toBe(1);
    const status = await engine.call('GET', `/v1/payments/${created.body.id}/status`, undefined, tenant.headers);
    expect(status.body).toMatchObject({ status: 'succeeded', updated_at: after.updated_at });
  });
  it('a decline shows the reason on the page and leaves the request payable; then a card pays', async () => {
    const tenant = await engine.signUp();
    const created = await create({ amount: 2000 }, tenant);
    const declined = await pay(created.body.payment_url, 'pm_card_chargeDeclined');
    expect(declined.status).toBe(402);
    expect(declined.html).toContain('Your card was declined.');
    expect(declined.html).toContain('name="payment_method"');
    const pending = (await engine.call('GET', `/v1/payments/${created.body.id}`, undefined, tenant.headers)).body;
    expect(pending).toMatchObject({
      status: 'pending',
      attempts: 1,
      transaction_id: null,
      last_payment_error: {
        code: 'card_declined',
        message: 'Your card was declined.',
        payment_method: 'pm_card_chargeDeclined',
        created_at: iso,
      },
    });
    const poor = await pay(created.body.payment_url, 'pm_card_insufficientFunds');
    expect(poor.status).toBe(402);
    expect(poor.html).toContain('Your card has insufficient funds.');
    const expired = await pay(created.body.payment_url, 'pm_card_expired');
    expect(expired.html).toContain('Your card has expired.');
    // Every declined attempt is a failed payment transaction of the request, with its reason, and nothing succeeded.
    expect((await paymentsOf(tenant)).map((p) => [p.status, p.failureCode, p.paymentRequestId]).sort()).toEqual([
      ['failed', 'card_declined', created.body.id],
      ['failed', 'expired_card', created.body.id],
      ['failed', 'insufficient_funds', created.body.id],
    ]);
    const paid = await pay(created.body.payment_url, 'pm_card_mastercard');
    expect(paid.status).toBe(200);
    expect(paid.html).toContain('Payment successful');
    const after = (await engine.call('GET', `/v1/payments/${created.body.id}`, undefined, tenant.headers)).body;
    // The last decline stays on record after the success.
    expect(after).toMatchObject({ status: 'succeeded', attempts: 4, last_payment_error: { code: 'expired_card' } });
    expect(await processorCharges(created.body.id)).toBe(4);
    const payments = (await paymentsOf(tenant)).filter((p) => p.status === 'succeeded');
    expect(payments.map((p) => [p.id, p.amount, p.paymentRequestId])).toEqual([
      [after.transaction_id, 2000, created.body.id],
    ]);
  });

  it('ten parallel posts of the same form charge once; a replayed declined form is answered without a new charge', async () => {
    const tenant = await engine.signUp();
    const created = await create({ amount: 5000 }, tenant);
    const page = await open(created.body.payment_url);
    const form = { payment_method: 'pm_card_visa', attempt: attemptOf(page.html) };
    const answers = await Promise.all(Array.from({ length: 10 }, () => submit(created.body.payment_url, form)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    for (const answer of answers) expect(answer.html).toMatch(/Payment successful|This request has been paid/);
    expect(await processorCharges(created.body.id)).toBe(1);
    expect((await paymentsOf(tenant)).map((p) => p.amount)).toEqual([5000]);

    // Two tabs (two rendered forms) paying at once: still one charge.
    const second = await create({ amount: 700 }, tenant);
    const [tabA, tabB] = await Promise.all([open(second.body.payment_url), open(second.body.payment_url)]);
    expect(attemptOf(tabA.html)).not.toBe(attemptOf(tabB.html));
    const both = await Promise.all([
      ...Array.from({ length: 5 }, () =>
        submit(second.body.payment_url, { payment_method: 'pm_card_visa', attempt: attemptOf(tabA.html) }),
      ),
      ...Array.from({ length: 5 }, () =>
        submit(second.body.payment_url, { payment_method: 'pm_card_mastercard', attempt: attemptOf(tabB.html) }),
      ),
    ]);
    expect(both.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(await processorCharges(second.body.id)).toBe(1);
    expect((await paymentsOf(tenant)).map((p) => p.amount).sort()).toEqual([5000, 700].sort());

    // A declined form sent again (refresh, back button) gets the same answer and no new charge.
    const third = await create({ amount: 300 }, tenant);
    const thirdPage = await open(third.body.payment_url);
    const declinedForm = { payment_method: 'pm_card_chargeDeclined', attempt: attemptOf(thirdPage.html) };
    const declines = await Promise.all(Array.from({ length: 5 }, () => submit(third.body.payment_url, declinedForm)));
    expect(declines.map((a) => a.status)).toEqual(Array(5).fill(402));
    expect(await processorCharges(third.body.id)).toBe(1);
    expect((await engine.call('GET', `/v1/payments/${third.body.id}`, undefined, tenant.headers)).body.attempts).toBe(
      1,
    );
  });

  it('the page refuses bank debits, unknown methods, stale forms and posts from other sites, charging nothing', async () => {
    const created = await create();
    const { payment_url: url, id } = created.body;
    const attempt = attemptOf((await open(url)).html);
    const bank = await submit(url, { payment_method: 'pm_bank_pendingSettles', attempt });
    expect(bank.status).toBe(400);
    expect(bank.html).toContain('Bank debits are not accepted on this page');
    const unknown = await submit(url, { payment_method: 'pm_nope', attempt });
    expect(unknown.status).toBe(400);
    expect(unknown.html).toContain('not offered here');
    expect((await submit(url, { attempt })).status).toBe(400);
    const stale = await submit(url, { payment_method: 'pm_card_visa', attempt: 'short' });
    expect(stale.status).toBe(400);
    expect(stale.html).toContain('out of date');
    const forged = await submit(
      url,
      { payment_method: 'pm_card_visa', attempt },
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
    );
    expect(forged.status).toBe(403);
    const forgedOrigin = await submit(
      url,
      { payment_method: 'pm_card_visa', attempt },
      { origin: 'https://evil.example' },
    );
    expect(forgedOrigin.status).toBe(403);
    expect(await processorCharges(id)).toBe(0);
    expect((await get(id)).status).toBe('pending');
    // Same-origin posts from a browser are fine.
    const ok = await submit(
      url,
      { payment_method: 'pm_card_visa', attempt },
      { 'sec-fetch-site': 'same-origin', origin: 'null' },
    );
    expect(ok.status).toBe(200);
    expect(await processorCharges(id)).toBe(1);
  });

  it('unknown and malformed links show a human 404 page, never a stack trace', async () => {
    for (const path of [`/pay/${'A'.repeat(43)}`, '/pay/short', '/pay/%3Cscript%3E']) {
      const response = await engine.app.request(path);
      const body = await response.text();
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(body).toContain('Payment link not found');
      expect(body).not.toContain('<script>');
      const posted = await engine.app.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'payment_method=pm_card_visa',
      });
      expect(posted.status).toBe(404);
    }
  });

  it('cancel: canceled with its reason, the link says so (410), a second cancel or a paid request is invalid_state', async () => {
    const created = await create({ reference: 'to cancel' });
    const { id, payment_url: url } = created.body;
    const attempt = attemptOf((await open(url)).html);
    const canceled = await engine.call('POST', `/v1/payments/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id, status: 'canceled', canceled_at: iso, cancellation_reason: 'requested' });
    expect(await get(id)).toEqual(canceled.body);
    expect((await engine.call('GET', `/v1/payments/${id}/status`)).body.status).toBe('canceled');
    const page = await open(url);
    expect(page.status).toBe(410);
    expect(page.html).toContain('This payment request was canceled');
    // A form rendered before the cancel charges nothing.
    const late = await submit(url, { payment_method: 'pm_card_visa', attempt });
    expect(late.status).toBe(410);
    expect(await processorCharges(id)).toBe(0);
    const again = await engine.call('POST', `/v1/payments/${id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body).toEqual(errorShape('invalid_state'));

    const paid = await create();
    await pay(paid.body.payment_url, 'pm_card_visa');
    const refused = await engine.call('POST', `/v1/payments/${paid.body.id}/cancel`);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(errorShape('invalid_state'));
    expect((await get(paid.body.id)).status).toBe('succeeded');
    expect((await engine.call('POST', '/v1/payments/pay_01jd3x5k8q0m2v7c9r4t6y1w3e/cancel')).status).toBe(404);
    expect((await engine.call('POST', `/v1/payments/${paid.body.id}/cancel`, { reason: 'x' })).body).toEqual(
      errorShape('invalid_request'),
    );
  });

  it("refuses bad input with the spec's codes and writes nothing", async () => {
    const other = await engine.signUp();
    const count = () =>
      engine.db.orm.em
        .fork()
        .getConnection()
        .execute(`select count(*)::int as n from payment_requests`)
        .then((r) => r[0].n as number);
    const before = await count();
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: 0 }, 'invalid_request'],
      [{ amount: -5 }, 'invalid_request'],
      [{ amount: 1.5 }, 'invalid_request'],
      [{ amount: '100' }, 'invalid_request'],
      [{ amount: 100_000_000 }, 'invalid_request'],
      [{ customer_email: undefined }, 'invalid_request'],
      [{ customer_email: 'not-an-email' }, 'invalid_request'],
      [{ currency: 'XYZ' }, 'invalid_request'],
      [{ currency: undefined }, 'invalid_request'],
      [{ account_id: undefined }, 'invalid_request'],
      [{ colour: 'red' }, 'invalid_request'],
      [{ reference: 'x'.repeat(501) }, 'invalid_request'],
      [{ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'invalid_request'],
      [{ metadata: { nested: { no: 1 } } }, 'invalid_request'],
      [{ expires_at: new Date(Date.now() - 60_000).toISOString() }, 'invalid_request'],
      [{ expires_at: new Date(Date.now() + 10_000).toISOString() }, 'invalid_request'],
      [{ expires_at: new Date(Date.now() + 31 * day).toISOString() }, 'invalid_request'],
      [{ expires_at: 'tomorrow' }, 'invalid_request'],
      [{ expires_in: 59 }, 'invalid_request'],
      [{ expires_in: 30 * 86_400 + 1 }, 'invalid_request'],
      [{ expires_in: 3600, expires_at: new Date(Date.now() + day).toISOString() }, 'invalid_request'],
      [{ currency: 'EUR' }, 'currency_mismatch'],
      [{ account_id: 'acct_01jd3x5k8q0m2v7c9r4t6y1w3e' }, 'account_not_found'],
      [{ account_id: other.accountId }, 'account_not_found'],
    ];
    for (const [body, code] of cases) {
      const response = await create(body);
      expect({ body, response: response.body }).toEqual({ body, response: errorShape(code) });
      expect(response.status).toBe(code === 'account_not_found' ? 404 : 400);
    }
    expect((await engine.call('POST', '/v1/payments', 'not json')).status).toBe(400);
    const anonymous = await engine.call(
      'POST',
      '/v1/payments',
      { account_id: engine.tenant.accountId, amount: 100, currency: 'USD', customer_email: 'a@example.com' },
      { authorization: '' },
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(errorShape('unauthorized'));
    expect(await count()).toBe(before);
  });

  it('an exact expires_at and expires_in are honoured', async () => {
    const at = new Date(Date.now() + 3 * day);
    at.setUTCMilliseconds(0);
    const exact = await create({ expires_at: at.toISOString() });
    expect(exact.status).toBe(201);
    expect(exact.body.expires_at).toBe(at.toISOString());
    const relative = await create({ expires_in: 3600 });
    expect(Date.parse(relative.body.expires_at) - Date.parse(relative.body.created_at)).toBe(3_600_000);
    await engine.call('POST', `/v1/payments/${exact.body.id}/cancel`);
    await engine.call('POST', `/v1/payments/${relative.body.id}/cancel`);
  });

  it('reads are scoped: unknown ids, another tenant and the other mode answer not_found; no token is unauthorized', async () => {
    const other = await engine.signUp();
    const mine = await create();
    const theirs = await create({}, other);
    const sandbox = await create({}, engine.tenant, { 'x-sandbox-mode': 'true' });
    expect(sandbox.status).toBe(201);
    expect(sandbox.body.livemode).toBe(false);
    for (const path of [
      `/v1/payments/${theirs.body.id}`,
      `/v1/payments/${theirs.body.id}/status`,
      `/v1/payments/${sandbox.body.id}`,
      '/v1/payments/pay_01jd3x5k8q0m2v7c9r4t6y1w3e',
      '/v1/payments/pay_01jd3x5k8q0m2v7c9r4t6y1w3e/status',
    ]) {
      const response = await engine.call('GET', path);
      expect({ path, status: response.status, body: response.body }).toEqual({
        path,
        status: 404,
        body: errorShape('not_found'),
      });
    }
    expect((await engine.call('POST', `/v1/payments/${theirs.body.id}/cancel`)).status).toBe(404);
    expect((await get(theirs.body.id)).error).toBe('not_found');
    const inSandbox = await engine.call('GET', `/v1/payments/${sandbox.body.id}`, undefined, {
      'x-sandbox-mode': 'true',
    });
    expect(inSandbox.body.id).toBe(sandbox.body.id);
    expect(
      (await engine.call('GET', `/v1/payments/${mine.body.id}`, undefined, { 'x-sandbox-mode': 'true' })).status,
    ).toBe(404);
    const liveList = (await engine.call('GET', '/v1/payments?limit=100')).body.data.map((r: { id: string }) => r.id);
    expect(liveList).toContain(mine.body.id);
    expect(liveList).not.toContain(sandbox.body.id);
    expect(liveList).not.toContain(theirs.body.id);
    const sandboxList = (
      await engine.call('GET', '/v1/payments?limit=100', undefined, { 'x-sandbox-mode': 'true' })
    ).body.data.map((r: { id: string }) => r.id);
    expect(sandboxList).toEqual([sandbox.body.id]);
    for (const path of [`/v1/payments/${mine.body.id}`, `/v1/payments/${mine.body.id}/status`, '/v1/payments']) {
      const response = await engine.call('GET', path, undefined, { authorization: '' });
      expect(response.status).toBe(401);
      expect(response.body).toEqual(errorShape('unauthorized'));
    }
    // A test-mode API key sees the sandbox request only.
    const key = await engine.call('POST', '/v1/api_keys', { mode: 'test' });
    const keyHeaders = { authorization: `Bearer ${key.body.secret}` };
    expect((await engine.call('GET', `/v1/payments/${sandbox.body.id}`, undefined, keyHeaders)).status).toBe(200);
    expect((await engine.call('GET', `/v1/payments/${mine.body.id}`, undefined, keyHeaders)).status).toBe(404);
    for (const r of [mine, theirs])
      await engine.call('POST', `/v1/payments/${r.body.id}/cancel`, undefined, r === theirs ? other.headers : {});
    await engine.call('POST', `/v1/payments/${sandbox.body.id}/cancel`, undefined, { 'x-sandbox-mode': 'true' });
  });

  it('lists newest first with cursors both ways, rows arriving between calls, and a status filter', async () => {
    const tenant = await engine.signUp();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create({ amount: 100 + i }, tenant)).body.id);
    const list = (query: string) => engine.call('GET', `/v1/payments${query}`, undefined, tenant.headers);
    const first = await list('?limit=2');
    expect(first.body).toMatchObject({ object: 'list', has_more: true });
    expect(first.body.data.map((r: { id: string }) => r.id)).toEqual([ids[4], ids[3]]);
    ids.push((await create({ amount: 200 }, tenant)).body.id); // arrives between pages
    const second = await list(`?limit=2&starting_after=${ids[3]}`);
    expect(second.body.data.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    expect(second.body.has_more).toBe(true);
    const third = await list(`?limit=2&starting_after=${ids[1]}`);
    expect(third.body.data.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    expect(third.body.has_more).toBe(false);
    const back = await list(`?limit=2&ending_before=${ids[2]}`);
    expect(back.body.data.map((r: { id: string }) => r.id)).toEqual([ids[4], ids[3]]);
    expect(back.body.has_more).toBe(true);
    const newest = await list(`?limit=2&ending_before=${ids[4]}`);
    expect(newest.body.data.map((r: { id: string }) => r.id)).toEqual([ids[5]]);
    expect(newest.body.has_more).toBe(false);
    expect((await list('')).body.data).toHaveLength(6);

    await engine.call('POST', `/v1/payments/${ids[1]}/cancel`, undefined, tenant.headers);
    const canceled = await list('?status=canceled');
    expect(canceled.body.data.map((r: { id: string }) => r.id)).toEqual([ids[1]]);
    expect((await list('?status=pending')).body.data).toHaveLength(5);
    for (const query of [
      '?limit=0',
      '?limit=101',
      '?status=paid',
      '?starting_after=txn_01jd3x5k8q0m2v7c9r4t6y1w3e',
      `?starting_after=${ids[0]}&ending_before=${ids[1]}`,
      '?colour=red',
    ]) {
      expect((await list(query)).body).toEqual(errorShape('invalid_request'));
    }
    for (const id of ids) await engine.call('POST', `/v1/payments/${id}/cancel`, undefined, tenant.headers);
  });

  it('Idempotency-Key: a retried create answers the first response and starts nothing new', async () => {
    const tenant = await engine.signUp();
    const body = { account_id: tenant.accountId, amount: 1500, currency: 'USD', customer_email: customer() };
    const headers = { ...tenant.headers, 'idempotency-key': 'create-once' };
    const first = await engine.call('POST', '/v1/payments', body, headers);
    const second = await engine.call('POST', '/v1/payments', body, headers);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect((await engine.call('GET', '/v1/payments', undefined, tenant.headers)).body.data).toHaveLength(1);
    const reused = await engine.call('POST', '/v1/payments', { ...body, amount: 1600 }, headers);
    expect(reused.body).toEqual(errorShape('idempotency_key_reused'));
    await engine.call('POST', `/v1/payments/${first.body.id}/cancel`, undefined, tenant.headers);
  });

  it('POST /api/v1/payment-requests with type one_time behaves as /v1/payments', async () => {
    const tenant = await engine.signUp();
    const email = customer();
    const created = await engine.call(
      'POST',
      '/api/v1/payment-requests',
      { type: 'one_time', amount: 3300, currency: 'USD', customer_email: email, reference: 'api' },
      tenant.headers,
    );
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'payment_request',
      account_id: tenant.accountId,
      amount: 3300,
      status: 'pending',
      reference: 'api',
      recurring_payment_request_id: null,
    });
    expect((await engine.call('GET', `/v1/payments/${created.body.id}`, undefined, tenant.headers)).body).toEqual(
      created.body,
    );
    expect(
      (await engine.call('GET', `/api/v1/payment-requests/${created.body.id}`, undefined, tenant.headers)).body,
    ).toEqual(created.body);
    await mailTo(email);
    const withAccount = await engine.call(
      'POST',
      '/api/v1/payment-requests',
      { type: 'one_time', account_id: tenant.accountId, amount: 100, currency: 'USD', customer_email: email },
      tenant.headers,
    );
    expect(withAccount.status).toBe(201);
    // A form body, as everywhere in the API.
    const form = await engine.call(
      'POST',
      '/api/v1/payment-requests',
      `type=one_time&amount=250&currency=USD&customer_email=${encodeURIComponent(email)}&metadata[order]=9`,
      {
        ...tenant.headers,
        'content-type': 'application/x-www-form-urlencoded',
      },
    );
    expect(form.status).toBe(201);
    expect(form.body).toMatchObject({ amount: 250, metadata: { order: '9' }, status: 'pending' });
    await engine.call('POST', `/api/v1/payment-requests/${form.body.id}/cancel`, undefined, tenant.headers);
    const cases: [Record<string, unknown>, string, number][] = [
      [{ amount: 100, currency: 'USD', customer_email: email }, 'invalid_request', 400],
      [{ type: 'weekly', amount: 100, currency: 'USD', customer_email: email }, 'invalid_request', 400],
      [
        { type: 'one_time', amount: 100, currency: 'USD', customer_email: email, interval: 'month' },
        'invalid_request',
        400,
      ],
      [{ type: 'recurring', amount: 100, currency: 'USD', customer_email: email }, 'invalid_request', 400],
      [
        { type: 'recurring', amount: 100, currency: 'USD', customer_email: email, interval: 'fortnight' },
        'invalid_request',
        400,
      ],
      [
        {
          type: 'recurring',
          amount: 100,
          currency: 'USD',
          customer_email: email,
          interval: 'month',
          interval_count: 0,
        },
        'invalid_request',
        400,
      ],
      [
        {
          type: 'recurring',
          amount: 100,
          currency: 'USD',
          customer_email: email,
          interval: 'month',
          expires_at: new Date(Date.now() + day).toISOString(),
        },
        'invalid_request',
        400,
      ],
      [{ type: 'one_time', amount: 100, currency: 'GBP', customer_email: email }, 'currency_mismatch', 400],
      [
        {
          type: 'recurring',
          amount: 100,
          currency: 'USD',
          customer_email: email,
          interval: 'month',
          account_id: engine.tenant.accountId,
        },
        'account_not_found',
        404,
      ],
    ];
    for (const [body, code, status] of cases) {
      const response = await engine.call('POST', '/api/v1/payment-requests', body, tenant.headers);
      expect({ body, status: response.status, response: response.body }).toEqual({
        body,
        status,
        response: errorShape(code),
      });
    }
    const anonymous = await engine.call(
      'POST',
      '/api/v1/payment-requests',
      { type: 'one_time', amount: 100, currency: 'USD', customer_email: email },
      { authorization: '' },
    );
    expect(anonymous.status).toBe(401);
    expect((await engine.call('GET', `/api/v1/payment-requests/${created.body.id}`)).status).toBe(404);
    const canceled = await engine.call(
      'POST',
      `/api/v1/payment-requests/${created.body.id}/cancel`,
      undefined,
      tenant.headers,
    );
    expect(canceled.body).toMatchObject({ status: 'canceled' });
    await engine.call('POST', `/api/v1/payment-requests/${withAccount.body.id}/cancel`, undefined, tenant.headers);
  });

  it('closing the account cancels its pending and recurring requests; their links say so', async () => {
    const tenant = await engine.signUp();
    const pending = await create({}, tenant);
    const paid = await create({}, tenant);
    await pay(paid.body.payment_url, 'pm_card_visa');
    const recurring = await engine.call(
      'POST',
      '/api/v1/payment-requests',
      { type: 'recurring', amount: 100, currency: 'USD', customer_email: customer(), interval: 'month' },
      tenant.headers,
    );
    expect(recurring.status).toBe(201);
    const closed = await engine.call('DELETE', '/v1/account', undefined, tenant.headers);
    expect(closed.status).toBe(200);
    const rows = engine.db.orm.em.fork().getConnection();
    const [p] = await rows.execute(`select status, cancellation_reason from payment_requests where id = ?`, [
      pending.body.id,
    ]);
    expect(p).toEqual({ status: 'canceled', cancellation_reason: 'account_closed' });
    const [child] = await rows.execute(`select status, cancellation_reason from payment_requests where id = ?`, [
      recurring.body.latest_payment_request_id,
    ]);
    expect(child).toEqual({ status: 'canceled', cancellation_reason: 'account_closed' });
    const [r] = await rows.execute(`select status, cancellation_reason from recurring_payment_requests where id = ?`, [
      recurring.body.id,
    ]);
    expect(r).toEqual({ status: 'canceled', cancellation_reason: 'account_closed' });
    const [stillPaid] = await rows.execute(`select status from payment_requests where id = ?`, [paid.body.id]);
    expect(stillPaid.status).toBe('succeeded');
    expect((await open(pending.body.payment_url)).status).toBe(410);
    expect((await open(paid.body.payment_url)).status).toBe(200);
  });

  // Time-skipping tests last: skipped time would expire the requests of the tests above.

  it('expires in skipped time: failed with reason expired, and the link says so (410)', async () => {
    const created = await create({ expires_in: 3600 });
    const attempt = attemptOf((await open(created.body.payment_url)).html);
    await engine.env.sleep(30 * 60_000);
    expect((await get(created.body.id)).status).toBe('pending');
    await engine.env.sleep(31 * 60_000);
    const expired = await eventually(
      () => get(created.body.id),
      (r) => r.status !== 'pending',
    );
    expect(expired).toMatchObject({ status: 'failed', failure_reason: 'expired', transaction_id: null });
    expect((await engine.call('GET', `/v1/payments/${created.body.id}/status`)).body.status).toBe('failed');
    const page = await open(created.body.payment_url);
    expect(page.status).toBe(410);
    expect(page.html).toContain('This payment link has expired');
    expect((await submit(created.body.payment_url, { payment_method: 'pm_card_visa', attempt })).status).toBe(410);
    expect(await processorCharges(created.body.id)).toBe(0);
    expect((await engine.call('POST', `/v1/payments/${created.body.id}/cancel`)).status).toBe(409);

    // The default: payable for 7 days, then failed.
    const defaulted = await create();
    await engine.env.sleep(7 * day - 60_000);
    expect((await get(defaulted.body.id)).status).toBe('pending');
    await engine.env.sleep(2 * 60_000);
    await eventually(
      () => get(defaulted.body.id),
      (r) => r.status === 'failed',
    );
  });

  it('recurring: one workflow issues a new pending request and email every period until canceled', async () => {
    const tenant = await engine.signUp({ name: 'Initech' });
    const email = customer();
    const created = await engine.call(
      'POST',
      '/api/v1/payment-requests',
      {
        type: 'recurring',
        amount: 1200,
        currency: 'USD',
        customer_email: email,
        interval: 'day',
        interval_count: 2,
        reference: 'rent',
        expires_in: 86_400,
      },
      tenant.headers,
    );
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^preq_[0-9a-z]{26}$/),
      object: 'recurring_payment_request',
      type: 'recurring',
      account_id: tenant.accountId,
      amount: 1200,
      currency: 'USD',
      customer_email: email,
      reference: 'rent',
      metadata: {},
      interval: 'day',
      interval_count: 2,
      expires_in: 86_400,
      status: 'active',
      periods_issued: 1,
      latest_payment_request_id: expect.stringMatching(/^pay_/),
      next_payment_request_at: iso,
      canceled_at: null,
      cancellation_reason: null,
      livemode: true,
      created_at: iso,
      updated_at: iso,
    });
    const id = created.body.id;
    expect(Date.parse(created.body.next_payment_request_at) - Date.parse(created.body.created_at)).toBe(2 * day);
    expect((await engine.call('GET', `/api/v1/payment-requests/${id}`, undefined, tenant.headers)).body).toEqual(
      created.body,
    );
    const children = async () =>
      (await engine.call('GET', `/v1/payments?recurring_payment_request_id=${id}`, undefined, tenant.headers)).body
        .data as any[];
    const firstChild = await eventually(children, (list) => list.length === 1);
    expect(firstChild[0]).toMatchObject({
      id: created.body.latest_payment_request_id,
      status: 'pending',
      amount: 1200,
      reference: 'rent',
      recurring_payment_request_id: id,
    });
    expect((await mailTo(email, 1))[0]!.parsed.subject).toBe('[TEST] Initech requests $12.00');

    // Period 1 and 2, two days apart each, each with its own request and email.
    await engine.env.sleep(2 * day + 60_000);
    await eventually(children, (list) => list.length === 2);
    await mailTo(email, 2);
    await engine.env.sleep(2 * day);
    const three = await eventually(children, (list) => list.length === 3);
    await mailTo(email, 3);
    expect(new Set(three.map((r) => r.payment_url)).size).toBe(3);
    const now = (await engine.call('GET', `/api/v1/payment-requests/${id}`, undefined, tenant.headers)).body;
    expect(now).toMatchObject({ status: 'active', periods_issued: 3, latest_payment_request_id: three[0].id });
    expect(Date.parse(now.next_payment_request_at) - Date.parse(created.body.created_at)).toBe(6 * day);
    // Earlier ones expired after their day; the newest is payable.
    expect(three.map((r) => r.status)).toEqual(['pending', 'failed', 'failed']);
    const paid = await pay(three[0].payment_url, 'pm_card_visa');
    expect(paid.status).toBe(200);

    const canceled = await engine.call('POST', `/api/v1/payment-requests/${id}/cancel`, undefined, tenant.headers);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({
      status: 'canceled',
      canceled_at: iso,
      cancellation_reason: 'requested',
      next_payment_request_at: null,
      periods_issued: 3,
    });
    expect(
      (await engine.call('POST', `/api/v1/payment-requests/${id}/cancel`, undefined, tenant.headers)).body,
    ).toEqual(errorShape('invalid_state'));
    await engine.env.sleep(6 * day);
    await new Promise((r) => setTimeout(r, 500));
    expect(await children()).toHaveLength(3);
    expect(engine.mail.messages.filter((m) => m.envelopeTo.includes(email))).toHaveLength(4); // three requests and one receipt
    expect(await engine.env.client.workflow.getHandle(id).result()).toMatchObject({ status: 'canceled' });
    const other = await engine.signUp();
    expect((await engine.call('GET', `/api/v1/payment-requests/${id}`, undefined, other.headers)).status).toBe(404);
    expect((await engine.call('POST', `/api/v1/payment-requests/${id}/cancel`, undefined, other.headers)).status).toBe(
      404,
    );
  });
});
