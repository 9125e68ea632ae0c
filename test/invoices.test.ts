import { mkdirSync, writeFileSync } from 'node:fs';

import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Invoice, InvoiceNumberCounter } from '../db/entities/index.ts';
import { formatInvoiceNumber, invoicePrefix } from '../domain/invoice-number.ts';
import { invoicePdfUrl } from '../objects/invoice.ts';
import { openInvoice, type OpenInvoiceInput, settleInvoice } from '../services/invoices/cycle-invoices.ts';
import { oneMonthAfter } from './helpers/calendar.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;
/** What the invoice activities need to show an invoice in its events (the signed PDF link). */
const linksOf = (engine: TestEngine) => ({ invoicePdfUrl: (id: string) => invoicePdfUrl(engine.config, id) });

/** A customer (Ada) and a plan in the tenant and mode the headers name, through the API. */
async function seed(engine: TestEngine, headers: Record<string, string> = {}, plan: Record<string, unknown> = {}) {
  const customer = await engine.call(
    'POST',
    '/v1/customers',
    { email: 'ada@example.com', name: 'Ada Lovelace', payment_method: 'pm_card_visa' },
    headers,
  );
  const created = await engine.call(
    'POST',
    '/v1/plans',
    { name: 'Pro', amount: 2000, currency: 'USD', interval: 'month', trial_period_days: 0, ...plan },
    headers,
  );
  expect([customer.status, created.status]).toEqual([201, 201]);
  return { customerId: customer.body.id as string, planId: created.body.id as string };
}

async function subscribe(engine: TestEngine, customerId: string, planId: string, headers: Record<string, string> = {}) {
  const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }, headers);
  expect(created.status).toBe(201);
  return created.body.id as string;
}

/** The raw response, for binary bodies (engine.call decodes text). */
async function fetchRaw(engine: TestEngine, path: string, headers: Record<string, string> = {}) {
  const response = await engine.app.request(path, { headers });
  return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) };
}

async function pdfText(bytes: Uint8Array): Promise<string> {
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  return text.replace(/\s+/g, ' ');
}

const pathOf = (url: string) => url.replace(/^https?:\/\/[^/]+/, '');

describe('invoices', () => {
  let engine: TestEngine;
  /** Acme's live invoices, newest first, once the renewals have run. */
  let acme: any[] = [];
  let acmeCustomers: string[] = [];
  let acmeSubscriptions: string[] = [];

  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('prefixes come from the account name, else its id', () => {
    expect(invoicePrefix('Acme', 'acct_x')).toBe('ACME');
    expect(invoicePrefix('Acme Inc.', 'acct_x')).toBe('ACME');
    expect(invoicePrefix('Tenant 7', 'acct_x')).toBe('TENANT');
    expect(invoicePrefix('Zürich Öl AG', 'acct_x')).toBe('ZURICH');
    expect(invoicePrefix('X Corp', 'acct_x')).toBe('XCORP');
    expect(invoicePrefix('株式会社', 'acct_01jd3x5k8q0m2v7c9r4t6y1w3e')).toBe('6Y1W3E');
    expect(formatInvoiceNumber('ACME', 7)).toBe('ACME-0007');
    expect(formatInvoiceNumber('ACME', 12345)).toBe('ACME-12345');
  });

  it('subscriptions issue invoices numbered ACME-0001 on, one per charge, with their lines and totals', async () => {
    const wallStart = Date.now();
    const first = await seed(engine);
    const second = await seed(engine);
    acmeCustomers = [first.customerId, second.customerId];
    acmeSubscriptions = [await subscribe(engine, first.customerId, first.planId)];
    acmeSubscriptions.push(await subscribe(engine, second.customerId, second.planId));

    // No trial: each subscription is charged at once. Then two renewals each.
    const afterStart = await engine.call('GET', '/v1/invoices');
    expect(afterStart.status).toBe(200);
    expect(afterStart.body.data.map((i: any) => i.number)).toEqual(['ACME-0002', 'ACME-0001']);
    await engine.env.sleep(62 * day);
    await eventually(
      () => engine.db.orm.em.fork().count(Invoice, { accountId: engine.tenant.accountId }),
      (n) => n === 6,
    );
    await eventually(
      () => engine.db.orm.em.fork().count(Invoice, { accountId: engine.tenant.accountId, status: 'paid' }),
      (n) => n === 6,
    );

    const list = await engine.call('GET', '/v1/invoices');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.has_more).toBe(false);
    acme = list.body.data;
    expect(acme.map((i) => i.number)).toEqual([
      'ACME-0006',
      'ACME-0005',
      'ACME-0004',
      'ACME-0003',
      'ACME-0002',
      'ACME-0001',
    ]);
    // Two subscriptions renewing in turn: their invoices alternate.
    expect(acme.map((i) => i.subscription_id)).toEqual([1, 0, 1, 0, 1, 0].map((n) => acmeSubscriptions[n]));

    const oldest = acme[5];
    const issued = oldest.created_at;
    expect(oldest).toEqual({
      id: expect.stringMatching(/^inv_[0-9a-z]{26}$/),
      object: 'invoice',
      number: 'ACME-0001',
      account_id: engine.tenant.accountId,
      customer_id: first.customerId,
      customer_email: 'ada@example.com',
      customer_name: 'Ada Lovelace',
      subscription_id: acmeSubscriptions[0],
      billing_reason: 'subscription_create',
      status: 'paid',
      currency: 'USD',
      lines: [
        {
          object: 'line_item',
          description: expect.any(String),
          plan: first.planId,
          quantity: 1,
          unit_amount: 2000,
          amount: 2000,
          breakdown: null,
          period_start: oldest.period_start,
          period_end: oldest.period_end,
          proration: false,
          discount_amounts: [],
          tax_amounts: [],
        },
      ],
      subtotal: 2000,
      // No discount, no tax rate, no balance (docs/discounts-and-taxes.md).
      discounts: [],
      total_discount_amounts: [],
      total_excluding_tax: 2000,
      tax: 0,
      total_tax_amounts: [],
      total: 2000,
      starting_balance: 0,
      ending_balance: 0,
      customer_tax_exempt: 'none',
      customer_tax_ids: [],
      customer_address: { country: null, state: null },
      amount_due: 2000,
      amount_paid: 2000,
      amount_remaining: 0,
      attempt_count: 1,
      transaction: expect.stringMatching(/^txn_[0-9a-z]{26}$/),
      amount_refunded: 0,
      period_start: issued,
      period_end: expect.any(String),
      created_at: issued,
      paid_at: expect.any(String),
      voided_at: null,
      marked_uncollectible_at: null,
      pdf: expect.stringMatching(
        new RegExp(`^${engine.config.publicUrl}/invoices/${oldest.id}/pdf\\?token=[A-Za-z0-9_-]{43}$`),
      ),
      // A subscription's invoice is charged at once, open when issued (one-off invoices: test/one-off-invoices.test.ts).
      collection_method: 'charge_automatically',
      days_until_due: null,
      due_date: null,
      description: null,
      finalized_at: null,
      livemode: true,
    });
    expect(Date.parse(oldest.paid_at)).toBeGreaterThanOrEqual(Date.parse(issued));
    // Monthly periods, back to back: the renewal's period starts where the first ended.
    const renewal = acme.find((i) => i.number === 'ACME-0003');
    expect(renewal.subscription_id).toBe(acmeSubscriptions[0]);
    expect(renewal.period_start).toBe(oldest.period_end);
    expect(oldest.period_end).toBe(oneMonthAfter(oldest.period_start).toISOString());

    const one = await engine.call('GET', `/v1/invoices/${oldest.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(oldest);
    // The subscription points at its latest invoice.
    const subscription = await engine.call('GET', `/v1/subscriptions/${acmeSubscriptions[0]}`);
    expect(subscription.body.latest_invoice).toBe(acme.find((i) => i.number === 'ACME-0005').id);
    expect(Date.now() - wallStart).toBeLessThan(20_000);
  });

  it("GET /invoices (SPEC.md's name) is the same list with the same authentication", async () => {
    const alias = await engine.call('GET', '/invoices');
    expect(alias.status).toBe(200);
    expect(alias.body).toEqual({ object: 'list', data: acme, has_more: false });
    const filtered = await engine.call('GET', `/invoices?customer=${acmeCustomers[1]}&limit=1`);
    expect(filtered.body.data.map((i: any) => i.number)).toEqual(['ACME-0006']);
    expect(filtered.body.has_more).toBe(true);
    const anonymous = await engine.call('GET', '/invoices', undefined, { authorization: '' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('unauthorized');
    const forged = await engine.call('GET', '/invoices', undefined, { authorization: 'Bearer not-a-token' });
    expect(forged.status).toBe(401);
  });

  it('filters by customer, subscription and status', async () => {
    const numbers = async (query: string) => {
      const response = await engine.call('GET', `/v1/invoices?${query}`);
      expect(response.status).toBe(200);
      return response.body.data.map((i: any) => i.number);
    };
    expect(await numbers(`customer=${acmeCustomers[0]}`)).toEqual(['ACME-0005', 'ACME-0003', 'ACME-0001']);
    expect(await numbers(`subscription=${acmeSubscriptions[1]}`)).toEqual(['ACME-0006', 'ACME-0004', 'ACME-0002']);
    expect(await numbers(`subscription=${acmeSubscriptions[1]}&customer=${acmeCustomers[0]}`)).toEqual([]);
    expect(await numbers('status=paid')).toHaveLength(6);
    expect(await numbers('status=open')).toEqual([]);
    expect(await numbers('customer=cus_unknown')).toEqual([]);
  });

  it('pages both ways with starting_after and ending_before', async () => {
    const ids = acme.map((i) => i.id);
    const page = async (query: string) => {
      const response = await engine.call('GET', `/v1/invoices?${query}`);
      expect(response.status).toBe(200);
      return { ids: response.body.data.map((i: any) => i.id), hasMore: response.body.has_more };
    };
    expect(await page('limit=2')).toEqual({ ids: ids.slice(0, 2), hasMore: true });
    expect(await page(`limit=2&starting_after=${ids[1]}`)).toEqual({ ids: ids.slice(2, 4), hasMore: true });
    expect(await page(`limit=2&starting_after=${ids[3]}`)).toEqual({ ids: ids.slice(4, 6), hasMore: false });
    expect(await page(`limit=2&ending_before=${ids[4]}`)).toEqual({ ids: ids.slice(2, 4), hasMore: true });
    expect(await page(`limit=2&ending_before=${ids[2]}`)).toEqual({ ids: ids.slice(0, 2), hasMore: false });
    expect(await page(`limit=100&starting_after=${ids[5]}`)).toEqual({ ids: [], hasMore: false });
    expect((await page('')).ids).toHaveLength(6);
    for (const query of [
      'limit=0',
      'limit=101',
      'limit=two',
      'starting_after=nope',
      `starting_after=${ids[0]}&ending_before=${ids[1]}`,
      'status=pending',
      'sort=asc',
    ]) {
      const response = await engine.call('GET', `/v1/invoices?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.error).toBe('invalid_request');
    }
  });

  it("numbers per account and per mode; another tenant's invoice is not_found", async () => {
    const globex: Tenant = await engine.signUp({ name: 'Globex Corporation' });
    const { customerId, planId } = await seed(engine, globex.headers);
    const subscriptionId = await subscribe(engine, customerId, planId, globex.headers);
    const theirs = await engine.call('GET', '/v1/invoices', undefined, globex.headers);
    expect(theirs.body.data.map((i: any) => [i.number, i.subscription_id])).toEqual([['GLOBEX-0001', subscriptionId]]);
    const theirId = theirs.body.data[0].id;

    // Across the tenant boundary, both ways and on every invoice endpoint: not_found.
    for (const [path, headers] of [
      [`/v1/invoices/${acme[0].id}`, globex.headers],
      [`/v1/invoices/${theirId}`, {}],
    ] as const) {
      const response = await engine.call('GET', path, undefined, headers);
      expect(response.status).toBe(404);
      expect(response.body.error).toBe('not_found');
      expect((await fetchRaw(engine, `${path}/pdf`, { ...engine.tenant.headers, ...headers })).status).toBe(404);
      const voided = await engine.call('POST', `${path}/void`, undefined, headers);
      expect(voided.status).toBe(404);
    }
    expect((await engine.call('GET', `/v1/invoices/${theirId}`, undefined, globex.headers)).body.status).toBe('paid');
    expect((await engine.call('GET', `/v1/invoices?customer=${customerId}`)).body.data).toEqual([]);

    // Acme's sandbox has its own sequence, and sees none of the live invoices.
    const sandbox = { 'x-sandbox-mode': 'true' };
    expect((await engine.call('GET', '/v1/invoices', undefined, sandbox)).body.data).toEqual([]);
    expect((await engine.call('GET', `/v1/invoices/${acme[0].id}`, undefined, sandbox)).status).toBe(404);
    const test = await seed(engine, sandbox);
    await subscribe(engine, test.customerId, test.planId, sandbox);
    const sandboxList = await engine.call('GET', '/v1/invoices', undefined, sandbox);
    expect(sandboxList.body.data.map((i: any) => [i.number, i.livemode])).toEqual([['ACME-0001', false]]);
  });

  describe('numbering under concurrency (the openInvoice activity)', () => {
    let tenant: Tenant;
    const input = (billingKey: string): OpenInvoiceInput => ({
      billingKey,
      subscriptionId: 'sub_concurrency',
      accountId: tenant.accountId,
      customerId: 'cus_concurrency',
      currency: 'USD',
      lines: [
        {
          description: 'Pro',
          amount: 1500,
          quantity: 2,
          period_start: '2026-01-31T00:00:00.000Z',
          period_end: '2026-02-28T00:00:00.000Z',
        },
      ],
      periodStart: '2026-01-31T00:00:00.000Z',
      periodEnd: '2026-02-28T00:00:00.000Z',
      issuedAt: '2026-01-31T00:00:00.000Z',
      livemode: true,
    });
    const open = (billingKey: string) => openInvoice(engine.db.orm.em.fork(), linksOf(engine), input(billingKey));

    beforeAll(async () => {
      tenant = await engine.signUp({ name: 'Initech' });
    });

    it('twelve concurrent invoices of one account get twelve consecutive numbers', async () => {
      const opened = await Promise.all(Array.from({ length: 12 }, (_, n) => open(`concurrent:${n}`)));
      expect(opened.map((o) => o.number).sort()).toEqual(
        Array.from({ length: 12 }, (_, n) => formatInvoiceNumber('INITEC', n + 1)),
      );
      expect(new Set(opened.map((o) => o.invoiceId)).size).toBe(12);
      expect(opened.every((o) => o.amountDue === 3000)).toBe(true);
    });

    it('a repeated billing key (an activity retry), even concurrent, returns the same invoice and uses no number', async () => {
      const again = await Promise.all(Array.from({ length: 6 }, () => open('concurrent:3')));
      expect(new Set(again.map((o) => `${o.invoiceId} ${o.number}`)).size).toBe(1);
      const racing = await Promise.all([...Array.from({ length: 6 }, () => open('retry:a')), open('retry:b')]);
      expect(new Set(racing.slice(0, 6).map((o) => o.number)).size).toBe(1);
      expect([racing[0]!.number, racing[6]!.number].sort()).toEqual(['INITEC-0013', 'INITEC-0014']);
      expect((await open('after')).number).toBe('INITEC-0015');
      const em = engine.db.orm.em.fork();
      expect(await em.count(Invoice, { accountId: tenant.accountId })).toBe(15);
      expect(
        await em.findOneOrFail(InvoiceNumberCounter, { accountId: tenant.accountId, livemode: true }),
      ).toMatchObject({ prefix: 'INITEC', lastNumber: 15 });
    });

    it('void and mark_uncollectible move an open invoice once; anything else is 409 invalid_state', async () => {
      const headers = tenant.headers;
      const [a, b, c] = await Promise.all(['transition:a', 'transition:b', 'transition:c'].map(open));
      const post = (id: string, action: string, body?: unknown) =>
        engine.call('POST', `/v1/invoices/${id}/${action}`, body, headers);

      const marked = await post(a!.invoiceId, 'mark_uncollectible');
      expect(marked.status).toBe(200);
      expect(marked.body).toMatchObject({
        id: a!.invoiceId,
        status: 'uncollectible',
        amount_due: 3000,
        amount_remaining: 3000,
        voided_at: null,
      });
      expect(Date.parse(marked.body.marked_uncollectible_at)).toBeGreaterThan(Date.now() - 60_000);
      const twice = await post(a!.invoiceId, 'mark_uncollectible');
      expect(twice.status).toBe(409);
      expect(twice.body).toEqual({
        error: 'invalid_state',
        message: `Invoice ${a!.number} is uncollectible and cannot be marked uncollectible.`,
      });
      const voided = await post(a!.invoiceId, 'void');
      expect(voided.status).toBe(200);
      expect(voided.body).toMatchObject({
        status: 'void',
        amount_remaining: 0,
        marked_uncollectible_at: marked.body.marked_uncollectible_at,
      });
      expect(voided.body.voided_at).not.toBeNull();
      for (const action of ['void', 'mark_uncollectible']) {
        const refused = await post(a!.invoiceId, action);
        expect(refused.status).toBe(409);
        expect(refused.body.error).toBe('invalid_state');
      }
      // A late payment does not revive a void invoice.
      await settleInvoice(engine.db.orm.em.fork(), linksOf(engine), a!.invoiceId, {
        status: 'succeeded',
        chargeId: 'ch_late',
      });
      expect((await engine.call('GET', `/v1/invoices/${a!.invoiceId}`, undefined, headers)).body.status).toBe('void');

      // An uncollectible invoice that gets paid after all is paid; a paid one cannot be voided.
      expect((await post(b!.invoiceId, 'mark_uncollectible')).status).toBe(200);
      await settleInvoice(
        engine.db.orm.em.fork(),
        linksOf(engine),
        b!.invoiceId,
        { status: 'succeeded', chargeId: 'ch_recovered' },
        '2026-02-03T00:00:00.000Z',
      );
      const paid = await engine.call('GET', `/v1/invoices/${b!.invoiceId}`, undefined, headers);
      expect(paid.body).toMatchObject({
        status: 'paid',
        amount_paid: 3000,
        amount_remaining: 0,
        paid_at: '2026-02-03T00:00:00.000Z',
      });
      for (const action of ['void', 'mark_uncollectible']) {
        const refused = await post(b!.invoiceId, action);
        expect(refused.status).toBe(409);
        expect(refused.body).toEqual({ error: 'invalid_state', message: expect.stringContaining('is paid') });
      }
      expect((await post(acme[0].id, 'void', undefined)).status).toBe(404); // Acme's, from Initech

      // Bad input changes nothing.
      const unknownField = await post(c!.invoiceId, 'void', { reason: 'typo' });
      expect(unknownField.status).toBe(400);
      expect(unknownField.body.error).toBe('invalid_request');
      expect((await post('inv_does_not_exist', 'void')).status).toBe(404);
      expect((await engine.call('GET', `/v1/invoices/${c!.invoiceId}`, undefined, headers)).body.status).toBe('open');
      const voidedC = await engine.call('POST', `/v1/invoices/${c!.invoiceId}/void`, '', {
        ...headers,
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(voidedC.status).toBe(200);
      expect(voidedC.body.status).toBe('void');
      const statuses = await engine.call('GET', '/v1/invoices?status=void', undefined, headers);
      expect(statuses.body.data.map((i: any) => i.id).sort()).toEqual([a!.invoiceId, c!.invoiceId].sort());
    });

    it('numbers past 9999 grow a digit; the number is in the invoice, its invoice.created event and the API, never the placeholder', async () => {
      // The number is taken last, in SQL (services/invoices/cycle-invoices.ts numberInvoice): it must read as formatInvoiceNumber writes it.
      const em = engine.db.orm.em.fork();
      await em.nativeUpdate(
        InvoiceNumberCounter,
        { accountId: tenant.accountId, livemode: true },
        { lastNumber: 9998 },
      );
      const [first, second] = [await open('digits:a'), await open('digits:b')];
      expect([first.number, second.number]).toEqual([
        formatInvoiceNumber('INITEC', 9999),
        formatInvoiceNumber('INITEC', 10000),
      ]);
      for (const opened of [first, second]) {
        expect((await em.fork().findOneOrFail(Invoice, { id: opened.invoiceId })).number).toBe(opened.number);
        const [event] = await em
          .getConnection()
          .execute<
            { number: string }[]
          >(`select data->'object'->>'number' as number from events where type = 'invoice.created' and data->'object'->>'id' = ?`, [opened.invoiceId]);
        expect(event?.number).toBe(opened.number);
        expect(
          (await engine.call('GET', `/v1/invoices/${opened.invoiceId}`, undefined, tenant.headers)).body.number,
        ).toBe(opened.number);
      }
      // The EntityManager it was given does not keep the placeholder in its identity map.
      const shared = engine.db.orm.em.fork();
      const third = await openInvoice(shared, linksOf(engine), input('digits:c'));
      expect((await shared.findOneOrFail(Invoice, { id: third.invoiceId })).number).toBe(
        formatInvoiceNumber('INITEC', 10001),
      );
    });
  });

  describe('the PDF', () => {
    it('opens by its signed link without a key, and at /v1/invoices/{id}/pdf with one, as an invoice a person can read', async () => {
      const invoice = acme[5]; // ACME-0001, paid
      const signed = await fetchRaw(engine, pathOf(invoice.pdf));
      expect(signed.status).toBe(200);
      expect(signed.headers.get('content-type')).toBe('application/pdf');
      expect(signed.headers.get('content-disposition')).toBe('inline; filename="ACME-0001.pdf"');
      expect(Buffer.from(signed.bytes.subarray(0, 5)).toString()).toBe('%PDF-');
      mkdirSync('test-results', { recursive: true });
      writeFileSync('test-results/invoice-ACME-0001.pdf', signed.bytes);

      const text = await pdfText(signed.bytes);
      const account = await engine.call('GET', '/v1/account');
      const date = (iso: string) =>
        new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(iso));
      for (const expected of [
        'Invoice',
        'PAID',
        'Invoice number ACME-0001',
        `Date of issue ${date(invoice.created_at)}`,
        `Date due ${date(invoice.created_at)}`,
        `Date paid ${date(invoice.paid_at)}`,
        'Status Paid',
        'FROM',
        account.body.name,
        account.body.email,
        'BILL TO',
        'Ada Lovelace',
        'ada@example.com',
        `$20.00 paid on ${date(invoice.paid_at)}`,
        'DESCRIPTION',
        'PERIOD',
        'QTY',
        'UNIT PRICE',
        'AMOUNT',
        'Subtotal $20.00',
        'Total $20.00',
        'Amount paid $20.00',
        'Amount due $0.00',
        'Page 1 of 1',
        'Amounts in USD',
      ]) {
        expect(text, expected).toContain(expected);
      }
      // Live mode here runs on the sandbox processor (the test default): its invoices say TEST too (test/processors.test.ts).
      expect(text).toContain('TEST MODE');
      // A long description wraps inside its cell: compare without the line breaks.
      expect(text.replace(/\s/g, '')).toContain(invoice.lines[0].description.replace(/\s/g, ''));

      const authenticated = await fetchRaw(engine, `/v1/invoices/${invoice.id}/pdf`, engine.tenant.headers);
      expect(authenticated.status).toBe(200);
      expect(authenticated.headers.get('content-type')).toBe('application/pdf');
      expect(await pdfText(authenticated.bytes)).toBe(text);
      expect((await fetchRaw(engine, `/v1/invoices/${invoice.id}/pdf`)).status).toBe(401);
    });

    it('a wrong, missing or borrowed token answers 404 like an unknown invoice', async () => {
      const [newest, oldest] = [acme[0], acme[5]];
      const token = new URL(oldest.pdf).searchParams.get('token')!;
      const flipped = (token[0] === 'A' ? 'B' : 'A') + token.slice(1);
      for (const path of [
        `/invoices/${oldest.id}/pdf?token=${flipped}`,
        `/invoices/${oldest.id}/pdf?token=${token.slice(0, 20)}`,
        `/invoices/${oldest.id}/pdf`,
        `/invoices/${newest.id}/pdf?token=${token}`,
        `/invoices/inv_01jd3x5k8q0m2v7c9r4t6y1w3e/pdf?token=${token}`,
      ]) {
        const response = await engine.call('GET', path, undefined, { authorization: '' });
        expect(response.status, path).toBe(404);
        expect(response.body.error).toBe('not_found');
      }
      // The link is the credential: an API token does not replace it.
      expect((await engine.call('GET', `/invoices/${oldest.id}/pdf`)).status).toBe(404);
    });

    it("writes amounts in the currency's minor units (JPY has none) and marks test-mode and void invoices", async () => {
      const hooli = await engine.signUp({ name: 'Hooli' });
      const sandbox = { ...hooli.headers, 'x-sandbox-mode': 'true' };
      const customer = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'gavin@example.jp', name: 'Gavin Belson', payment_method: 'pm_card_visa' },
        sandbox,
      );
      const opened = await openInvoice(engine.db.orm.em.fork(), linksOf(engine), {
        billingKey: 'jpy:1',
        subscriptionId: 'sub_jpy',
        accountId: hooli.accountId,
        customerId: customer.body.id,
        currency: 'JPY',
        lines: [
          {
            description: 'Team plan',
            amount: 12000,
            quantity: 3,
            period_start: '2026-03-01T00:00:00.000Z',
            period_end: '2026-04-01T00:00:00.000Z',
          },
          {
            description: 'Unused time on Starter',
            amount: -1500,
            quantity: 1,
            period_start: '2026-03-15T00:00:00.000Z',
            period_end: '2026-04-01T00:00:00.000Z',
            proration: true,
          },
        ],
        periodStart: '2026-03-01T00:00:00.000Z',
        periodEnd: '2026-04-01T00:00:00.000Z',
        issuedAt: '2026-03-01T00:00:00.000Z',
        livemode: false,
      });
      expect(opened).toMatchObject({ number: 'HOOLI-0001', amountDue: 34500 });
      const invoice = (await engine.call('GET', `/v1/invoices/${opened.invoiceId}`, undefined, sandbox)).body;
      expect(invoice.lines.map((l: any) => [l.amount, l.proration])).toEqual([
        [36000, false],
        [-1500, true],
      ]);
      expect(invoice).toMatchObject({
        subtotal: 34500,
        total: 34500,
        amount_due: 34500,
        amount_paid: 0,
        amount_remaining: 34500,
        status: 'open',
        livemode: false,
      });

      const text = await pdfText((await fetchRaw(engine, pathOf(invoice.pdf))).bytes);
      for (const expected of [
        'OPEN',
        'TEST MODE',
        'HOOLI-0001',
        'Gavin Belson',
        '¥34,500 due March 1, 2026',
        '¥12,000 ¥36,000',
        '-¥1,500',
        'Proration',
        'Subtotal ¥34,500',
        'Amount paid ¥0',
        'Amount due ¥34,500',
        'Amounts in JPY',
      ]) {
        expect(text, expected).toContain(expected);
      }
      expect(text).not.toMatch(/¥\d[\d,]*\.\d/);

      await engine.call('POST', `/v1/invoices/${opened.invoiceId}/void`, undefined, sandbox);
      const voided = await pdfText((await fetchRaw(engine, pathOf(invoice.pdf))).bytes);
      expect(voided).toContain('VOID');
      expect(voided).toContain('This invoice was voided on');
      expect(voided).toContain('Amount due ¥0');
    });
  });

  it('the OpenAPI document lists the invoice endpoints', async () => {
    const doc = await engine.call('GET', '/openapi.json', undefined, { authorization: '' });
    expect(
      Object.keys(doc.body.paths)
        .filter((p) => p.includes('invoices'))
        .sort(),
    ).toEqual([
      '/invoices',
      '/invoices/{id}/pdf',
      '/v1/invoices',
      '/v1/invoices/search',
      // A subscription's next invoice, previewed (docs/pricing.md#the-upcoming-invoice).
      '/v1/invoices/upcoming',
      '/v1/invoices/{id}',
      // A promotion code or coupon on an open one-off invoice (docs/discounts-and-taxes.md).
      '/v1/invoices/{id}/discounts',
      '/v1/invoices/{id}/finalize',
      '/v1/invoices/{id}/mark_uncollectible',
      '/v1/invoices/{id}/pay',
      '/v1/invoices/{id}/pdf',
      '/v1/invoices/{id}/void',
      // The customer portal's own list (its link's customer only: test/customer-portal.test.ts).
      '/v1/portal/invoices',
    ]);
    expect(doc.body.components.schemas.Invoice.properties.pdf).toBeDefined();
  });
});
