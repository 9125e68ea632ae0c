import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Event, Export, Invoice, Payout, Transaction } from '../db/entities/index.ts';
import { exportFileSignature } from '../domain/export-links.ts';
import { newId } from '../domain/ids.ts';
import { csvCell, failExport, formatTime, pageSize, runExport } from '../services/exports/run.ts';
import { type ExportStorage, localExportStorage } from '../services/exports/storage.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

const references = ['=HYPERLINK("http://evil")', '+1+2', '-2+3', '@SUM(A1)', 'plain, with "quotes"'];

describe('exports', () => {
  let engine: TestEngine;
  let owner: Tenant;
  let other: Tenant;
  const liveIds: string[] = [];
  let sandboxId: string;

  beforeAll(async () => {
    engine = await startTestEngine();
    owner = engine.tenant;
    other = await engine.signUp();
    const em = engine.db.orm.em.fork();
    const row = (accountId: string, livemode: boolean, i: number) => {
      const id = newId('transaction');
      em.create(Transaction, {
        id,
        accountId,
        livemode,
        amount: 1000 * (i + 1) + 5,
        currency: 'USD',
        type: 'credit',
        status: 'succeeded',
        reference: references[i % references.length]!,
        metadata: { n: String(i) },
        riskLevel: 'low',
        riskScore: 0,
        createdAt: new Date(Date.UTC(2026, 10, 1 + i, 23, 30)),
        updatedAt: new Date(),
      });
      return id;
    };
    for (let i = 0; i < 5; i++) liveIds.push(row(owner.accountId, true, i));
    sandboxId = row(owner.accountId, false, 0);
    row(other.accountId, true, 0);
    await em.flush();
  });
  afterAll(() => engine?.close());

  async function finished(id: string, headers = owner.headers) {
    for (let i = 0; i < 200; i++) {
      const res = await engine.call('GET', `/v1/exports/${id}`, undefined, headers);
      if (res.body.status !== 'pending' && res.body.status !== 'running') return res.body;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`export ${id} did not finish`);
  }
  async function download(path: string, headers: Record<string, string>) {
    const response = await engine.app.request(path, { headers });
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
  }
  async function exportOf(body: Record<string, unknown>, headers = owner.headers) {
    const created = await engine.call('POST', '/v1/exports', body, headers);
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body).toMatchObject({
      object: 'export',
      status: 'pending',
      progress: { rows_written: 0 },
      file: null,
      url: null,
    });
    const done = await finished(created.body.id, headers);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const file = await download(`/v1/exports/${done.id}/file`, headers);
    expect(file.status).toBe(200);
    // The file object describes the bytes served.
    expect(done.file).toEqual({
      size: file.bytes.length,
      content_type: file.headers.get('content-type'),
      sha256: createHash('sha256').update(file.bytes).digest('hex'),
    });
    return { done, bytes: file.bytes };
  }

  it('csv: every row, amounts in minor units with currency and a formatted column, formulas neutralised, progress', async () => {
    const { done, bytes } = await exportOf({ resource: 'transactions', format: 'csv', time_zone: 'Europe/Paris' });
    expect(done).toMatchObject({
      progress: { rows_written: 5, rows_expected: 5 },
      row_count: 5,
      error: null,
      expires_at: expect.any(String),
    });
    const lines = bytes.toString('utf8').trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'id,created,type,status,amount,currency,amount_formatted,amount_refunded,reference,customer,invoice,subscription,risk_level,metadata',
    );
    expect(lines).toHaveLength(6);
    expect(lines.slice(1).map((l) => l.slice(0, 30))).toEqual(liveIds.map((id) => id));
    // Ascending ids; the first row: 23:30 UTC is 00:30 the next day in Paris.
    expect(lines[1]).toBe(
      `${liveIds[0]},2026-11-02T00:30:00+01:00,credit,succeeded,1005,USD,10.05,0,"'=HYPERLINK(""http://evil"")",,,,low,"{""n"":""0""}"`,
    );
    expect(lines[2]).toContain(",'+1+2,");
    expect(lines[3]).toContain(",'-2+3,");
    expect(lines[4]).toContain(",'@SUM(A1),");
    expect(lines[5]).toContain(',"plain, with ""quotes""",');
  });

  it('json, with chosen columns and a search query', async () => {
    const { done, bytes } = await exportOf({
      resource: 'transactions',
      format: 'json',
      columns: ['id', 'amount', 'amount_formatted', 'reference'],
      query: 'amount>=3000',
    });
    expect(done.row_count).toBe(3);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual(
      liveIds.slice(2).map((id, i) => ({
        id,
        amount: 1000 * (i + 3) + 5,
        amount_formatted: ['30.05', '40.05', '50.05'][i],
        reference: references[i + 2],
      })),
    );
  });

  it('xlsx, read back with exceljs', async () => {
    const { bytes } = await exportOf({
      resource: 'transactions',
      format: 'xlsx',
      columns: ['id', 'amount', 'currency', 'reference'],
    });
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(bytes as never);
    const sheet = workbook.worksheets[0]!;
    const values = sheet
      .getSheetValues()
      .slice(1)
      .map((r) => (r as unknown[]).slice(1));
    expect(values[0]).toEqual(['id', 'amount', 'currency', 'reference']);
    expect(values.slice(1)).toEqual(liveIds.map((id, i) => [id, 1000 * (i + 1) + 5, 'USD', references[i]]));
  });

  it('pdf lists the rows', async () => {
    const { bytes } = await exportOf({
      resource: 'transactions',
      format: 'pdf',
      columns: ['id', 'amount', 'currency'],
    });
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
    for (const id of liveIds) expect(text).toContain(id);
    expect(text).toContain('5005');
  });

  it('every other resource: balance_transactions, customers, invoices, subscriptions (empty but well-formed), payouts', async () => {
    const { done, bytes } = await exportOf({ resource: 'balance_transactions', format: 'json' });
    expect(done.row_count).toBe(0);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual([]);
    const customers = await exportOf({ resource: 'customers', format: 'csv' });
    expect(customers.bytes.toString('utf8').split('\r\n')[0]).toBe('id,created,email,name,currency,country,tax_exempt');
    const invoices = await exportOf({ resource: 'invoices', format: 'csv' });
    expect(invoices.bytes.toString('utf8')).toBe(
      'id,created,number,status,customer,customer_email,subscription,total,amount_paid,amount_due,currency,total_formatted,period_start,period_end,paid_at,lines,subtotal,discount,total_excluding_tax,tax,tax_by_rate,starting_balance,ending_balance,customer_tax_exempt,billing_reason\r\n',
    );
    const subscriptions = await exportOf({ resource: 'subscriptions', format: 'csv' });
    expect(subscriptions.bytes.toString('utf8')).toBe(
      'id,created,status,customer,plan,quantity,pending_plan,pending_quantity,currency,current_period_start,current_period_end,cancel_at_period_end,canceled_at\r\n',
    );
    const payoutId = newId('payout');
    const at = new Date(Date.UTC(2026, 10, 5, 12));
    await engine.db.orm.em.fork().insert(Payout, {
      id: payoutId,
      accountId: owner.accountId,
      livemode: true,
      amount: 123456,
      currency: 'USD',
      method: 'bank_transfer',
      status: 'paid',
      description: '-cmd',
      createdAt: at,
      updatedAt: at,
      paidAt: at,
    } as never);
    const payouts = await exportOf({
      resource: 'payouts',
      format: 'json',
      columns: ['id', 'amount_formatted', 'description', 'paid_at'],
    });
    expect(JSON.parse(payouts.bytes.toString('utf8'))).toEqual([
      { id: payoutId, amount_formatted: '1234.56', description: '-cmd', paid_at: '2026-11-05T12:00:00+00:00' },
    ]);
    expect(
      (await exportOf({ resource: 'payouts', format: 'csv', filters: { status: 'pending' } })).done.row_count,
    ).toBe(0);
    expect(
      (
        await exportOf({
          resource: 'payouts',
          format: 'csv',
          filters: { status: 'paid', method: 'bank_transfer', currency: 'USD' },
        })
      ).done.row_count,
    ).toBe(1);
  });

  it('coupons (a deleted one and its reused id too), promotion codes and tax rates', async () => {
    const ok = async (method: string, path: string, body?: Record<string, unknown>) => {
      const res = await engine.call(method, path, body);
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
      return res.body;
    };
    await ok('POST', '/v1/coupons', { id: 'EXPORT5', amount_off: 500, currency: 'USD', duration: 'once' });
    await ok('DELETE', '/v1/coupons/EXPORT5');
    await ok('POST', '/v1/coupons', { id: 'EXPORT5', percent_off: 5, duration: 'repeating', duration_in_months: 3 });
    const code = await ok('POST', '/v1/promotion_codes', { coupon: 'EXPORT5', code: 'SPRING' });
    const rate = await ok('POST', '/v1/tax_rates', {
      display_name: 'VAT',
      percentage: '19',
      inclusive: false,
      country: 'DE',
    });

    const coupons = JSON.parse(
      (
        await exportOf({
          resource: 'coupons',
          format: 'json',
          columns: ['id', 'percent_off', 'amount_off', 'amount_off_formatted', 'duration', 'deleted_at'],
        })
      ).bytes.toString('utf8'),
    );
    expect(coupons).toEqual([
      {
        id: 'EXPORT5',
        percent_off: null,
        amount_off: 500,
        amount_off_formatted: '5.00',
        duration: 'once',
        deleted_at: expect.any(String),
      },
      {
        id: 'EXPORT5',
        percent_off: '5',
        amount_off: null,
        amount_off_formatted: null,
        duration: 'repeating',
        deleted_at: null,
      },
    ]);
    expect((await exportOf({ resource: 'coupons', format: 'csv', filters: { deleted: 'false' } })).done.row_count).toBe(
      1,
    );
    const codes = JSON.parse(
      (
        await exportOf({
          resource: 'promotion_codes',
          format: 'json',
          columns: ['id', 'code', 'coupon', 'active'],
          filters: { coupon: 'EXPORT5' },
        })
      ).bytes.toString('utf8'),
    );
    expect(codes).toEqual([{ id: code.id, code: 'SPRING', coupon: 'EXPORT5', active: 'true' }]);
    const rates = (await exportOf({ resource: 'tax_rates', format: 'csv', filters: { country: 'DE' } })).bytes
      .toString('utf8')
      .trimEnd()
      .split('\r\n');
    expect(rates[0]).toBe(
      'id,created,display_name,description,percentage,inclusive,active,country,state,jurisdiction,tax_type,metadata',
    );
    expect(rates.slice(1).map((l) => l.split(',').slice(0, 1).concat(l.split(',').slice(2, 8)))).toEqual([
      [rate.id, 'VAT', '', '19', 'false', 'true', 'DE'],
    ]);
    // Another tenant's export sees none of them (a tenant of its own: `other` is checked for having no exports).
    expect(
      (await exportOf({ resource: 'coupons', format: 'csv' }, (await engine.signUp()).headers)).done.row_count,
    ).toBe(0);
  });

  it("invoices as pdf: a zip with each invoice's own PDF, read back", async () => {
    const tenant = await engine.signUp();
    const em = engine.db.orm.em.fork();
    const at = new Date(Date.UTC(2026, 10, 3, 9));
    const invoiceIds = ['ACME-0001', 'ACME-0002', 'ACME-0003'].map((number, i) => {
      const id = newId('invoice');
      em.create(Invoice, {
        id,
        number,
        billingKey: `zip-test-${id}`,
        subscriptionId: 'sub_zip',
        customerId: 'cus_zip',
        customerEmail: `buyer${i}@example.com`,
        customerName: `Buyer ${i}`,
        status: 'paid',
        currency: 'EUR',
        subtotal: 1000 * (i + 1),
        total: 1000 * (i + 1),
        amountDue: 1000 * (i + 1),
        amountPaid: 1000 * (i + 1),
        lines: [
          {
            description: `Pro plan ${i}`,
            quantity: 1,
            amount: 1000 * (i + 1),
            period_start: at.toISOString(),
            period_end: new Date(at.getTime() + 30 * 86_400_000).toISOString(),
          },
        ],
        periodStart: at,
        periodEnd: new Date(at.getTime() + 30 * 86_400_000),
        accountId: tenant.accountId,
        livemode: true,
        createdAt: new Date(at.getTime() + i * 1000),
        paidAt: at,
      } as never);
      return id;
    });
    await em.flush();
    const { done, bytes } = await exportOf({ resource: 'invoices', format: 'pdf' }, tenant.headers);
    expect(done).toMatchObject({ row_count: 3, file: { content_type: 'application/zip' } });
    const file = await engine.app.request(`/v1/exports/${done.id}/file`, { headers: tenant.headers });
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="invoices-${done.id}.zip"`);
    const zip = await JSZip.loadAsync(bytes);
    expect(Object.keys(zip.files).sort()).toEqual(['ACME-0001.pdf', 'ACME-0002.pdf', 'ACME-0003.pdf']);
    for (const [i, number] of ['ACME-0001', 'ACME-0002', 'ACME-0003'].entries()) {
      const pdf = await zip.file(`${number}.pdf`)!.async('uint8array');
      const { text } = await extractText(await getDocumentProxy(pdf), { mergePages: true });
      expect(text).toContain(number);
      expect(text).toContain(`Buyer ${i}`);
      expect(text).toContain(`Pro plan ${i}`);
      // Live mode on the sandbox processor moves no real money: the PDF says so.
      expect(text).toContain('TEST MODE');
    }
    // The list's filters choose the rows, on any resource.
    const paid = await exportOf(
      { resource: 'invoices', format: 'json', filters: { status: 'paid', customer: 'cus_zip' }, columns: ['id'] },
      tenant.headers,
    );
    expect(JSON.parse(paid.bytes.toString('utf8')).map((r: { id: string }) => r.id)).toEqual([...invoiceIds].sort());
    expect(paid.done.filters).toEqual({ status: 'paid', customer: 'cus_zip' });
    const none = await exportOf({ resource: 'invoices', format: 'pdf', filters: { status: 'void' } }, tenant.headers);
    expect(none.done.row_count).toBe(0);
    expect(Object.keys((await JSZip.loadAsync(none.bytes)).files)).toEqual([]);
    // Another account's zip holds none of them.
    const stranger = await engine.signUp();
    const others = await exportOf({ resource: 'invoices', format: 'pdf' }, stranger.headers);
    expect(Object.keys((await JSZip.loadAsync(others.bytes)).files)).toEqual([]);
  });

  it('the file of an unfinished or failed export is export_not_ready; a failed export has its error and event', async () => {
    const id = newId('export');
    const now = new Date();
    const em = engine.db.orm.em.fork();
    await em.insert(Export, {
      id,
      accountId: owner.accountId,
      livemode: true,
      resource: 'customers',
      format: 'csv',
      timeZone: 'UTC',
      status: 'running',
      rowsWritten: 0,
      createdAt: now,
      updatedAt: now,
    } as never);
    const notReady = await engine.call('GET', `/v1/exports/${id}/file`);
    expect(notReady.status).toBe(409);
    expect(notReady.body).toEqual({ error: 'export_not_ready', message: expect.stringContaining('running') });
    await failExport(engine.db.orm.em.fork(), id, 'disk full');
    expect((await engine.call('GET', `/v1/exports/${id}`)).body).toMatchObject({
      status: 'failed',
      error: 'disk full',
      file: null,
      url: null,
    });
    expect((await engine.call('GET', `/v1/exports/${id}/file`)).status).toBe(409);
    const events = await engine.db.orm.em.fork().find(Event, { accountId: owner.accountId, type: 'export.failed' });
    expect(events.map((e) => (e.data.object as { id: string; error: string }).error)).toEqual(['disk full']);
  });

  it('isolation across accounts and modes; an export.succeeded event', async () => {
    const sandbox = { ...owner.headers, 'x-sandbox-mode': 'true' };
    const { done, bytes } = await exportOf({ resource: 'transactions', format: 'json', columns: ['id'] }, sandbox);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual([{ id: sandboxId }]);
    expect((await engine.call('GET', `/v1/exports/${done.id}`, undefined, other.headers)).status).toBe(404);
    expect((await download(`/v1/exports/${done.id}/file`, other.headers)).status).toBe(404);
    expect((await download(`/v1/exports/${done.id}/file`, owner.headers)).status).toBe(404); // live credential, sandbox export
    const listed = await engine.call('GET', '/v1/exports', undefined, other.headers);
    expect(listed.body).toEqual({ object: 'list', data: [], has_more: false });
    const events = await engine.db.orm.em
      .fork()
      .find(Event, { accountId: owner.accountId, livemode: false, type: 'export.succeeded' });
    expect(events.map((e) => (e.data.object as { id: string }).id)).toEqual([done.id]);
  });

  it('signed link: opens without a token; tampered is 404; expired is 410', async () => {
    const { done, bytes } = await exportOf({ resource: 'transactions', format: 'csv' });
    const url = new URL(done.url);
    expect(url.pathname).toBe(`/exports/${done.id}/file`);
    const opened = await download(url.pathname + url.search, { authorization: '' });
    expect(opened.status).toBe(200);
    expect(opened.bytes.equals(bytes)).toBe(true);
    const expires = Number(url.searchParams.get('expires'));
    const tampered = await download(
      `/exports/${done.id}/file?expires=${expires + 1}&signature=${url.searchParams.get('signature')}`,
      { authorization: '' },
    );
    expect(tampered.status).toBe(404);
    const otherId = `/exports/${liveIds[0]!.replace('txn_', 'exp_')}/file${url.search}`;
    expect((await download(otherId, { authorization: '' })).status).toBe(404);
    const past = Math.floor(Date.now() / 1000) - 10;
    const expired = await engine.call(
      'GET',
      `/exports/${done.id}/file?expires=${past}&signature=${exportFileSignature(engine.config.auth.secret, done.id, past)}`,
      undefined,
      { authorization: '' },
    );
    expect(expired.status).toBe(410);
    expect(expired.body).toEqual({ error: 'link_expired', message: expect.any(String) });
    // An export past its expiry reads `expired` and serves no file.
    await engine.db.orm.em.fork().nativeUpdate(Export, { id: done.id }, { expiresAt: new Date(Date.now() - 1000) });
    expect((await engine.call('GET', `/v1/exports/${done.id}`)).body).toMatchObject({
      status: 'expired',
      url: null,
      file: null,
    });
    expect((await engine.call('GET', `/v1/exports/${done.id}/file`)).status).toBe(410);
  });

  it('bad requests: unknown columns, a bad query, a query on another resource', async () => {
    const bad = async (body: Record<string, unknown>, text: string) => {
      const res = await engine.call('POST', '/v1/exports', body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.stringContaining(text) });
    };
    await bad({ resource: 'transactions', format: 'csv', columns: ['id', 'secret'] }, 'secret');
    await bad({ resource: 'transactions', format: 'csv', query: 'status:nope' }, 'character 8');
    await bad(
      { resource: 'customers', format: 'csv', query: 'status:failed' },
      'character 1: expected a field (id, email, name, external_id, created, country, tax_exempt)',
    );
    await bad(
      { resource: 'payouts', format: 'csv', query: 'status:paid' },
      'only transactions, invoices, customers and credit_notes exports',
    );
    await bad({ resource: 'transactions', format: 'csv', time_zone: 'Mars/Olympus' }, 'time zone');
    await bad(
      { resource: 'customers', format: 'csv', filters: { status: 'paid' } },
      'customers exports take email; not status',
    );
    await bad(
      { resource: 'invoices', format: 'csv', filters: { status: 'settled' } },
      'filters.status: one of draft, open, paid, void, uncollectible',
    );
    await bad(
      { resource: 'payouts', format: 'csv', filters: { "method') or 1=1 --": 'x' } },
      'payouts exports take status, method, currency',
    );
  });

  it('customers and invoices exports take a search query in their own fields', async () => {
    const tenant = await engine.signUp();
    for (const email of ['ada@lovelace.example', 'grace@navy.example', 'alan@lovelace.example']) {
      const res = await engine.call('POST', '/v1/customers', { email, name: email.split('@')[0] }, tenant.headers);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const { done, bytes } = await exportOf(
      { resource: 'customers', format: 'csv', columns: ['email'], query: 'email~"LOVELACE" AND -name:alan' },
      tenant.headers,
    );
    expect(done.row_count).toBe(1);
    expect(bytes.toString('utf8')).toBe('email\r\nada@lovelace.example\r\n');
    const invoices = await exportOf(
      { resource: 'invoices', format: 'csv', query: 'status:paid AND amount_due>0' },
      tenant.headers,
    );
    expect(invoices.done.row_count).toBe(0);
  });

  it('pages by keyset with progress after each page; a writer that dies leaves no file and the retry starts over', async () => {
    const tenant = await engine.signUp();
    const em = engine.db.orm.em.fork();
    const total = pageSize * 2 + 37;
    const rows = Array.from({ length: total }, (_, i) => ({
      id: newId('transaction'),
      accountId: tenant.accountId,
      livemode: true,
      amount: i,
      currency: 'USD',
      type: 'credit',
      status: 'succeeded',
      reference: null,
      metadata: {},
      riskLevel: 'low',
      riskScore: 0,
      createdAt: new Date(),
      updatedAt: new Date(),
      amountRefunded: 0,
    }));
    await em.insertMany(Transaction, rows as never);
    const id = newId('export');
    const now = new Date();
    await em.insert(Export, {
      id,
      accountId: tenant.accountId,
      livemode: true,
      resource: 'transactions',
      format: 'csv',
      timeZone: 'UTC',
      status: 'pending',
      rowsWritten: 0,
      createdAt: now,
      updatedAt: now,
    } as never);
    const root = mkdtempSync(path.join(tmpdir(), 'exports-'));
    const storage = localExportStorage(root);
    // A storage whose stream breaks after the first page: the attempt fails and leaves nothing behind.
    const breaking: ExportStorage = {
      ...storage,
      create(key) {
        const file = storage.create(key);
        let bytes = 0;
        const write = file.stream.write.bind(file.stream);
        file.stream.write = ((chunk: string, ...rest: never[]) => {
          bytes += chunk.length;
          if (bytes > 20_000) throw new Error('disk gone');
          return write(chunk, ...rest);
        }) as never;
        return file;
      },
    };
    await expect(runExport(engine.db.orm.em.fork(), breaking, id)).rejects.toThrow('disk gone');
    expect(readdirSync(root)).toEqual([]);
    const progress: number[] = [];
    expect(await runExport(engine.db.orm.em.fork(), storage, id, (n) => progress.push(n))).toBe('succeeded');
    expect(progress).toEqual([pageSize, pageSize * 2, total]);
    expect(readdirSync(root)).toEqual([`${id}.csv`]);
    const lines = readFileSync(path.join(root, `${id}.csv`), 'utf8')
      .trimEnd()
      .split('\r\n');
    expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(rows.map((r) => r.id));
    const saved = await engine.db.orm.em.fork().findOneOrFail(Export, { id });
    expect(saved).toMatchObject({ status: 'succeeded', rowsWritten: total, rowsExpected: total, rowCount: total });
    // A finished export is left as it is by a late retry.
    expect(await runExport(engine.db.orm.em.fork(), storage, id)).toBe('succeeded');
    expect(readdirSync(root)).toEqual([`${id}.csv`]);
  });

  it('is documented in the OpenAPI document; the signed file route needs no credential', async () => {
    const doc = (await engine.call('GET', '/openapi.json', undefined, { authorization: '' })).body;
    for (const path of ['/v1/exports', '/v1/exports/{id}', '/v1/exports/{id}/file'])
      expect(doc.paths[path], path).toBeDefined();
    expect(doc.paths['/exports/{id}/file'].get.security).toEqual([]);
    expect(doc.components.schemas.Event.properties.type.enum).toEqual(
      expect.arrayContaining(['export.succeeded', 'export.failed']),
    );
  });

  it('csv cells and time zones (unit)', () => {
    expect(['=1', '+1', '-1', '@a', '\tx', 'ok', 'a,b'].map(csvCell)).toEqual([
      "'=1",
      "'+1",
      "'-1",
      "'@a",
      '"\'\tx"',
      'ok',
      '"a,b"',
    ]);
    expect(csvCell(-500)).toBe('-500');
    expect(formatTime(new Date(Date.UTC(2026, 6, 1, 12)), 'America/New_York')).toBe('2026-07-01T08:00:00-04:00');
    expect(formatTime(new Date(Date.UTC(2026, 6, 1, 12)), 'UTC')).toBe('2026-07-01T12:00:00+00:00');
  });
});
