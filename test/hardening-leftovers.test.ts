import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { serve, type ServerType } from '@hono/node-server';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Customer } from '../db/entities/index.ts';
import { formatHumanDate } from '../domain/locale.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * Issue #24, "Left open from the hardening issue": the API edges an outside check still saw.
 * Each block fails on the code before the fix: customer_id on the invoice lists, the PDF link
 * of a payment request's receipt, human dates on an upgrade's proration lines, 405 for a
 * method a path does not take, GET /v1/cli/whoami against its schema, and PATCH without a body.
 */

const isoInstant = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

async function pdfText(bytes: Uint8Array): Promise<string> {
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  return text.replace(/\s+/g, ' ');
}

describe('issue #24: left open from hardening', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const expectError = (response: { status: number; body: any }, status: number, code: string) => {
    expect(response.status).toBe(status);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body.error).toBe(code);
  };

  /** A customer with a card and a subscription billed at once (so it has an invoice). */
  async function subscribedCustomer(email: string, planId: string) {
    const customer = await engine.call('POST', '/v1/customers', {
      email,
      name: email.split('@')[0],
      payment_method: 'pm_card_visa',
    });
    expect(customer.status).toBe(201);
    const subscription = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      plan: planId,
    });
    expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
    return { customerId: customer.body.id as string, subscriptionId: subscription.body.id as string };
  }

  describe('lists that filter by customer take customer and customer_id', () => {
    let plan: string;
    let ada: { customerId: string; subscriptionId: string };
    let bob: { customerId: string; subscriptionId: string };
    beforeAll(async () => {
      const created = await engine.call('POST', '/v1/plans', {
        name: 'Filter plan',
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      plan = created.body.id;
      ada = await subscribedCustomer('ada.filter@example.com', plan);
      bob = await subscribedCustomer('bob.filter@example.com', plan);
      // Each has its first invoice.
      await eventually(
        async () => (await engine.call('GET', '/v1/invoices?limit=100')).body.data ?? [],
        (data: any[]) =>
          data.filter((i) => i.subscription_id === ada.subscriptionId || i.subscription_id === bob.subscriptionId)
            .length >= 2,
      );
      // And an invoice item waiting for the next one; a credit note of the first invoice; a promotion code only for them.
      const coupon = await engine.call('POST', '/v1/coupons', { percent_off: 10, duration: 'once' });
      expect(coupon.status, JSON.stringify(coupon.body)).toBe(201);
      const invoices = (await engine.call('GET', '/v1/invoices?limit=100')).body.data;
      for (const customer of [ada.customerId, bob.customerId]) {
        expect(
          (
            await engine.call('POST', '/v1/invoice_items', {
              customer,
              amount: 500,
              currency: 'USD',
              description: 'Extra seat setup',
            })
          ).status,
        ).toBe(201);
        const first = invoices.find((i: any) => i.customer_id === customer);
        expect(
          (await engine.call('POST', '/v1/credit_notes', { invoice: first.id, amount: 100, out_of_band_amount: 100 }))
            .status,
        ).toBe(201);
        expect((await engine.call('POST', '/v1/promotion_codes', { coupon: coupon.body.id, customer })).status).toBe(
          201,
        );
      }
    });

    // Every list whose OpenAPI query takes a customer filter (checked against the document below).
    const lists = [
      '/v1/invoices',
      '/invoices',
      '/v1/subscriptions',
      '/v1/invoice_items',
      '/v1/credit_notes',
      '/v1/promotion_codes',
    ];
    /** A row's customer: `customer_id` on invoices and subscriptions, `customer` on invoice items, credit notes and promotion codes (Stripe's name). */
    const customerOf = (row: any) => row.customer_id ?? row.customer;

    it('the OpenAPI document lists both names on exactly these lists', async () => {
      const doc = (await engine.call('GET', '/openapi.json')).body;
      const withCustomer = Object.entries<any>(doc.paths)
        // A filter (optional); a meter's event_summaries names its one customer (required), as Stripe's does.
        .filter(([, item]) =>
          (item.get?.parameters ?? []).some((p: any) => p.in === 'query' && p.name === 'customer' && !p.required),
        )
        .map(([path]) => path)
        .sort();
      expect(withCustomer).toEqual([...lists].sort());
      for (const path of lists) {
        const names = doc.paths[path].get.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name);
        expect(names, path).toEqual(expect.arrayContaining(['customer', 'customer_id']));
      }
    });

    for (const path of lists) {
      it(`${path}?customer_id= is the same filter as ?customer=`, async () => {
        const byId = await engine.call('GET', `${path}?customer_id=${ada.customerId}`);
        expect(byId.status).toBe(200);
        const byName = await engine.call('GET', `${path}?customer=${ada.customerId}`);
        expect(byName.status).toBe(200);
        expect(byId.body.data.length).toBeGreaterThan(0);
        expect(byId.body.data.map((row: any) => row.id)).toEqual(byName.body.data.map((row: any) => row.id));
        expect(new Set(byId.body.data.map(customerOf))).toEqual(new Set([ada.customerId]));
        const other = await engine.call('GET', `${path}?customer_id=${bob.customerId}`);
        expect(new Set(other.body.data.map(customerOf))).toEqual(new Set([bob.customerId]));
      });

      it(`${path} with customer and customer_id naming different customers is 400`, async () => {
        const both = await engine.call('GET', `${path}?customer=${ada.customerId}&customer_id=${bob.customerId}`);
        expectError(both, 400, 'invalid_request');
        expect(both.body.message).toMatch(/customer and customer_id/);
      });
    }
  });

  describe("a payment request's receipt email links its PDF", () => {
    const pathOf = (url: string) => new URL(url).pathname;
    it('the receipt (real SMTP) links a PDF of the receipt; the pay page links it too; an unpaid request has none', async () => {
      const tenant = await engine.signUp({ name: 'Initech' });
      const email = `receipt-pdf-${Date.now()}@example.com`;
      const created = await engine.call(
        'POST',
        '/v1/payments',
        { account_id: tenant.accountId, amount: 4250, currency: 'USD', customer_email: email, reference: 'ORDER-77' },
        tenant.headers,
      );
      expect(created.status).toBe(201);
      const url = created.body.payment_url as string;

      // Before it is paid there is no receipt.
      const early = await engine.app.request(`${pathOf(url)}/receipt.pdf`);
      expect(early.status).toBe(404);

      const page = await (await engine.app.request(pathOf(url))).text();
      const attempt = /name="attempt" value="([^"]+)"/.exec(page)![1]!;
      const paid = await engine.app.request(pathOf(url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ payment_method: 'pm_card_visa', attempt }).toString(),
      });
      const paidHtml = await paid.text();
      expect(paid.status).toBe(200);
      expect(paidHtml).toContain(`href="${pathOf(url)}/receipt.pdf"`);

      const mails = await eventually(
        async () => engine.mail.messages.filter((m) => m.envelopeTo.includes(email)),
        (list) => list.some((m) => m.parsed.subject?.includes('Receipt')),
      );
      const receipt = mails.find((m) => m.parsed.subject?.includes('Receipt'))!;
      expect(receipt.parsed.subject).toBe('[TEST] Receipt: $42.50 paid to Initech');
      const link = /Your receipt as a PDF: (\S+)/.exec(receipt.parsed.text ?? '')?.[1];
      expect(link).toBe(`${url}/receipt.pdf`);
      expect(receipt.parsed.html).toContain('Download the receipt (PDF)');
      expect(receipt.parsed.html).toContain(`href="${link}"`);

      const pdf = await engine.app.request(pathOf(link!));
      expect(pdf.status).toBe(200);
      expect(pdf.headers.get('content-type')).toBe('application/pdf');
      const bytes = new Uint8Array(await pdf.arrayBuffer());
      expect(Buffer.from(bytes.subarray(0, 5)).toString()).toBe('%PDF-');
      const text = await pdfText(bytes);
      expect(text).toContain('Receipt');
      expect(text).toContain('$42.50');
      expect(text).toContain('ORDER-77');
      expect(text).toContain(email);
      expect(text).toContain('Initech');
      expect(text).toContain('TEST MODE');

      // A token that names no request has no receipt.
      expect((await engine.app.request(`/pay/${'x'.repeat(43)}/receipt.pdf`)).status).toBe(404);
    });
  });

  describe("an upgrade's proration lines read as people read them", () => {
    it("the lines name the plans and write the instant as a date in the account's language and time zone (API, PDF)", async () => {
      const tenant = await engine.signUp({ name: 'Proration SARL' });
      const settings = await engine.call(
        'PATCH',
        '/v1/account',
        { settings: { language: 'fr', timezone: 'Europe/Paris' } },
        tenant.headers,
      );
      expect(settings.status).toBe(200);
      const customer = await engine.call(
        'POST',
        '/v1/customers',
        { email: 'upgrade@example.com', name: 'Up', payment_method: 'pm_card_visa' },
        tenant.headers,
      );
      const pro = await engine.call(
        'POST',
        '/v1/plans',
        { name: 'Pro', amount: 2000, currency: 'USD', interval: 'month' },
        tenant.headers,
      );
      const max = await engine.call(
        'POST',
        '/v1/plans',
        { name: 'Max', amount: 5000, currency: 'USD', interval: 'month' },
        tenant.headers,
      );
      const subscription = await engine.call(
        'POST',
        '/v1/subscriptions',
        { customer_id: customer.body.id, plan: pro.body.id },
        tenant.headers,
      );
      expect(subscription.status).toBe(201);
      await eventually(
        async () =>
          (await engine.call('GET', `/v1/subscriptions/${subscription.body.id}`, undefined, tenant.headers)).body,
        (s) => s.status === 'active',
      );

      const upgraded = await engine.call(
        'POST',
        `/v1/subscriptions/${subscription.body.id}/update`,
        { plan: max.body.id },
        tenant.headers,
      );
      expect(upgraded.status).toBe(200);
      const invoice = (
        await engine.call('GET', `/v1/invoices/${upgraded.body.latest_invoice}`, undefined, tenant.headers)
      ).body;
      const [unused, remaining] = invoice.lines;
      expect(unused.proration).toBe(true);
      const at = new Date(unused.period_start);
      const date = formatHumanDate(at, { locale: 'fr', timeZone: 'Europe/Paris' });
      expect(date).not.toMatch(isoInstant);
      expect(unused.description).toBe(`Unused time on Pro after ${date}`);
      expect(remaining.description).toBe(`Remaining time on Max after ${date}`);
      // The exact instants stay in period_start / period_end.
      expect(unused.period_start).toMatch(isoInstant);
      for (const line of invoice.lines) expect(line.description).not.toMatch(isoInstant);

      // The PDF shows the same line.
      const pdf = await engine.app.request(new URL(invoice.pdf).pathname + new URL(invoice.pdf).search);
      expect(pdf.status).toBe(200);
      const text = await pdfText(new Uint8Array(await pdf.arrayBuffer()));
      expect(text).toContain(`Unused time on Pro after ${date}`);
      expect(text).not.toMatch(isoInstant);
    });
  });

  describe('HTTP edges', () => {
    let server: ServerType;
    let port: number;
    beforeAll(async () => {
      server = await new Promise<ServerType>((resolve) => {
        const s = serve({ fetch: engine.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
      });
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** A raw HTTP request (fetch refuses TRACE), over the real Node server. */
    function raw(method: string, path: string, headers: Record<string, string> = {}) {
      return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
        const request = http.request({ host: '127.0.0.1', port, method, path, headers }, (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk) => (text += chunk));
          response.on('end', () => {
            let body: unknown = text;
            try {
              body = JSON.parse(text);
            } catch {
              // not JSON
            }
            resolve({ status: response.statusCode!, headers: response.headers, body });
          });
        });
        request.on('error', reject);
        request.end();
      });
    }

    it('a method a known path does not take is 405 with Allow, in the error shape; an unknown path stays 404', async () => {
      const trace = await raw('TRACE', '/v1/customers', engine.tenant.headers);
      expectError(trace, 405, 'method_not_allowed');
      expect(trace.headers.allow).toBe('GET, HEAD, POST');
      const byId = await raw('TRACE', '/v1/customers/cus_01jd3x5k8q0m2v7c9r4t6y1w3e', engine.tenant.headers);
      expectError(byId, 405, 'method_not_allowed');
      expect(byId.headers.allow).toBe('GET, HEAD, POST, PATCH');
      const put = await raw('PUT', '/v1/invoices', engine.tenant.headers);
      expectError(put, 405, 'method_not_allowed');
      expect(put.headers.allow).toBe('GET, HEAD, POST');
      expect((await raw('TRACE', '/health')).headers.allow).toBe('GET, HEAD');
      expectError(await raw('TRACE', '/v1/nothing-here', engine.tenant.headers), 404, 'not_found');
      // In-process too, for methods fetch can send.
      const del = await engine.call('DELETE', '/v1/customers');
      expectError(del, 405, 'method_not_allowed');
      expect(del.headers.get('allow')).toBe('GET, HEAD, POST');
    });

    it('GET /v1/cli/whoami answers what its documented schema says, with a CLI key and without one', async () => {
      const doc = (await engine.call('GET', '/openapi.json')).body;
      const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
      ajv.addSchema(doc, 'openapi.json');
      const validate = ajv.compile({
        $ref: 'openapi.json#/paths/~1v1~1cli~1whoami/get/responses/200/content/application~1json/schema',
      });

      const asUser = await engine.call('GET', '/v1/cli/whoami');
      expect(asUser.status).toBe(200);
      expect(asUser.body.key).toBeNull();
      expect(validate(asUser.body), ajv.errorsText(validate.errors)).toBe(true);

      const minted = await engine.call('POST', '/v1/cli_keys', { name: 'whoami check', mode: 'test' });
      expect(minted.status).toBe(201);
      const asKey = await engine.call('GET', '/v1/cli/whoami', undefined, {
        authorization: '',
        'x-cli-key': minted.body.secret,
      });
      expect(asKey.status).toBe(200);
      expect(asKey.body.key).toMatchObject({ id: minted.body.id, type: 'cli' });
      expect(validate(asKey.body), ajv.errorsText(validate.errors)).toBe(true);
    });

    it('a PATCH without a body is 400 and changes nothing; an empty object is still an empty update', async () => {
      const customer = await engine.call('POST', '/v1/customers', { email: 'patch-body@example.com', name: 'Kept' });
      const path = `/v1/customers/${customer.body.id}`;
      const before = await engine.db.orm.em.fork().findOneOrFail(Customer, { id: customer.body.id });
      for (const headers of [
        {},
        { 'content-type': 'application/json' },
        { 'content-type': 'application/x-www-form-urlencoded' },
      ]) {
        const response = await engine.app.request(path, {
          method: 'PATCH',
          headers: { ...engine.tenant.headers, ...headers },
        });
        expect(response.status).toBe(400);
        const body = await response.json();
        expect(body).toEqual({ error: 'invalid_request', message: expect.stringMatching(/PATCH has no body/) });
      }
      const settings = await engine.app.request('/v1/settings', { method: 'PATCH', headers: engine.tenant.headers });
      expect(settings.status).toBe(400);
      const after = await engine.db.orm.em.fork().findOneOrFail(Customer, { id: customer.body.id });
      expect(after.name).toBe('Kept');
      expect(after.updatedAt.getTime()).toBe(before.updatedAt.getTime());
      expect((await engine.call('PATCH', path, {})).status).toBe(200);
      expect((await engine.call('PATCH', path, { name: 'Changed' })).body.name).toBe('Changed');
    });
  });
});
