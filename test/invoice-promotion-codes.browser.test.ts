/**
 * A promotion code on an open one-off invoice (issue #27, docs/discounts-and-taxes.md "On an open
 * one-off invoice"): typed on the hosted pay page in chromium (playwright-core, real HTTP) it lowers
 * the amount, which is then paid; through POST /v1/invoices/{id}/discounts every refusal answers in
 * the error shape and changes nothing (amount due, times redeemed); a 100% code pays the invoice
 * without a charge. Both through the invoice's workflow (workflows/invoice.ts discountOneOffInvoiceUpdate).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { Event, PromotionCode } from '../db/entities/index.ts';
import { invoicePayToken } from '../domain/invoice-links.ts';
import { checkPageLayout, launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('promotion codes on one-off invoices', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
    await call('PATCH', '/v1/settings/customer_portal', { promotion_codes: true });
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await engine?.close();
  });

  async function call(method: string, path: string, body?: unknown) {
    const answer = await engine.call(method, path, body);
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    return answer.body as any;
  }
  const expectError = (response: { status: number; body: any }, status: number, code: string, words: string) => {
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body).toMatchObject({ error: code });
    expect(response.body.message).toContain(words);
  };
  let customers = 0;
  const customer = async () =>
    (
      await call('POST', '/v1/customers', {
        email: `buyer${++customers}@example.com`,
        name: 'Grace',
        payment_method: 'pm_card_visa',
      })
    ).id as string;

  /** An open send_invoice invoice of 2 × 150.00 consulting + 100.00 workshop = 400.00. */
  async function openInvoice(cus: string, finalize = true) {
    await call('POST', '/v1/invoice_items', {
      customer: cus,
      unit_amount: 15000,
      quantity: 2,
      currency: 'USD',
      description: 'Consulting hours',
    });
    await call('POST', '/v1/invoice_items', { customer: cus, amount: 10000, currency: 'USD', description: 'Workshop' });
    const draft = await call('POST', '/v1/invoices', {
      customer: cus,
      collection_method: 'send_invoice',
      days_until_due: 14,
    });
    return finalize ? call('POST', `/v1/invoices/${draft.id}/finalize`) : draft;
  }
  const discountTypes = async (invoiceId: string) =>
    (await engine.db.orm.em.fork().find(Event, { accountId: engine.tenant.accountId }, { orderBy: { id: 'asc' } }))
      .filter(
        (e) =>
          (e.data.object as { id?: string; invoice?: string }).id === invoiceId ||
          (e.data.object as { invoice?: string }).invoice === invoiceId,
      )
      .map((e) => e.type);

  it('a code typed on the pay page lowers the amount due, which is then paid', async () => {
    await call('POST', '/v1/coupons', {
      id: 'WELCOME25',
      name: 'Welcome 25%',
      percent_off: 25,
      duration: 'repeating',
      duration_in_months: 3,
    });
    const code = await call('POST', '/v1/promotion_codes', { coupon: 'WELCOME25', code: 'HELLO25' });
    const invoice = await openInvoice(await customer());
    expect(invoice).toMatchObject({ status: 'open', amount_due: 40000 });

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(
      `${baseUrl}/invoices/${invoice.id}/pay?token=${invoicePayToken(engine.config.auth.secret, invoice.id)}`,
    );
    await page.getByText('$400.00').first().waitFor();

    // A code that does not exist: said plainly, nothing changed.
    await page.getByLabel('Promotion code').fill('nope');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('alert').filter({ hasText: 'nope is not a valid promotion code' }).waitFor();
    expect((await call('GET', `/v1/invoices/${invoice.id}`)).amount_due).toBe(40000);

    await page.getByLabel('Promotion code').fill('hello25');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('status').filter({ hasText: 'Promotion code hello25 applied: $100.00 off.' }).waitFor();
    await page.getByRole('button', { name: 'Pay $300.00' }).waitFor();
    await page.getByText('Welcome 25%').waitFor();
    // One discount per invoice: the field is gone.
    expect(await page.getByLabel('Promotion code').count()).toBe(0);
    await checkPageLayout(page, 'invoice-pay-page', 'promotion-code');

    const discounted = await call('GET', `/v1/invoices/${invoice.id}`);
    expect(discounted).toMatchObject({
      status: 'open',
      subtotal: 40000,
      total_discount_amounts: [{ amount: 10000 }],
      total: 30000,
      amount_due: 30000,
    });
    expect(discounted.lines.map((l: any) => l.discount_amounts[0].amount)).toEqual([7500, 2500]);
    const [discountId] = discounted.discounts;
    expect((await call('GET', '/v1/coupons/WELCOME25')).times_redeemed).toBe(1);
    expect((await call('GET', `/v1/promotion_codes/${code.id}`)).times_redeemed).toBe(1);

    await page.getByRole('radio', { name: /Visa/ }).first().check();
    await page.getByRole('button', { name: 'Pay $300.00' }).click();
    await page.getByText(`Invoice ${invoice.number} is paid`).waitFor();
    expect(await call('GET', `/v1/invoices/${invoice.id}`)).toMatchObject({ status: 'paid', amount_paid: 30000 });
    const created = (
      await engine.db.orm.em
        .fork()
        .find(Event, { accountId: engine.tenant.accountId, type: 'customer.discount.created' })
    ).map((e) => e.data.object as any);
    expect(created.find((d) => d.id === discountId)).toMatchObject({
      invoice: invoice.id,
      coupon: { id: 'WELCOME25' },
      promotion_code: code.id,
      end: null,
    });
    expect(await discountTypes(invoice.id)).toEqual(
      expect.arrayContaining(['invoice.finalized', 'customer.discount.created', 'invoice.updated', 'invoice.paid']),
    );
    expect(problems).toEqual([]);
  });

  it('refusals through POST /v1/invoices/{id}/discounts change nothing; a 100% code pays without a charge', async () => {
    await call('POST', '/v1/coupons', { id: 'TENOFF', percent_off: 10, duration: 'once' });
    const once = await call('POST', '/v1/promotion_codes', { coupon: 'TENOFF', code: 'ONCEONLY', max_redemptions: 1 });
    const off = await call('POST', '/v1/promotion_codes', { coupon: 'TENOFF', code: 'SWITCHEDOFF' });
    await call('PATCH', `/v1/promotion_codes/${off.id}`, { active: false });
    const expired = await call('POST', '/v1/promotion_codes', {
      coupon: 'TENOFF',
      code: 'BYGONE',
      expires_at: '2099-01-01T00:00:00Z',
    });
    await engine.db.orm.em
      .fork()
      .nativeUpdate(PromotionCode, { id: expired.id }, { expiresAt: new Date('2026-01-01T00:00:00Z') });
    await call('POST', '/v1/promotion_codes', {
      coupon: 'TENOFF',
      code: 'BIGSPEND',
      restrictions: { minimum_amount: 50000, minimum_amount_currency: 'USD' },
    });
    const cus = await customer();
    await call('POST', '/v1/promotion_codes', { coupon: 'TENOFF', code: 'NOTYOURS', customer: await customer() });
    const invoice = await openInvoice(cus);
    const apply = (id: string, body: unknown) => engine.call('POST', `/v1/invoices/${id}/discounts`, body);

    expectError(await apply(invoice.id, { promotion_code: 'NOSUCH' }), 404, 'not_found', 'NOSUCH');
    expectError(await apply(invoice.id, { promotion_code: 'switchedoff' }), 400, 'invalid_request', 'is not active');
    expectError(await apply(invoice.id, { promotion_code: 'BYGONE' }), 400, 'invalid_request', 'expired');
    expectError(
      await apply(invoice.id, { promotion_code: 'BIGSPEND' }),
      400,
      'invalid_request',
      'at least $500.00; this one is $400.00',
    );
    expectError(
      await apply(invoice.id, { promotion_code: 'NOTYOURS' }),
      400,
      'invalid_request',
      'for another customer',
    );
    expectError(
      await apply(invoice.id, { promotion_code: 'X', coupon: 'TENOFF' }),
      400,
      'invalid_request',
      'one of them',
    );
    expect(await call('GET', `/v1/invoices/${invoice.id}`)).toMatchObject({ amount_due: 40000, discounts: [] });
    expect((await call('GET', '/v1/coupons/TENOFF')).times_redeemed).toBe(0);

    // Applied once (by the code's id); then the invoice is discounted and the code used up.
    const applied = await apply(invoice.id, { promotion_code: once.id });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body).toMatchObject({ status: 'open', total: 36000, amount_due: 36000 });
    expectError(await apply(invoice.id, { coupon: 'TENOFF' }), 400, 'invalid_request', 'already has a discount');
    const second = await openInvoice(cus);
    expectError(await apply(second.id, { promotion_code: 'onceonly' }), 400, 'invalid_request', 'maximum of 1');
    const draft = await openInvoice(cus, false);
    expectError(await apply(draft.id, { coupon: 'TENOFF' }), 409, 'invalid_state', 'draft');
    await call('POST', `/v1/invoices/${second.id}/void`);
    expectError(await apply(second.id, { coupon: 'TENOFF' }), 409, 'invalid_state', 'void');
    expect((await call('GET', '/v1/coupons/TENOFF')).times_redeemed).toBe(1);

    // A 100% coupon (by id, the merchant's API): nothing due, paid without a charge.
    await call('POST', '/v1/coupons', { id: 'ONTHEHOUSE', percent_off: 100 });
    const third = await openInvoice(cus);
    expect((await apply(third.id, { coupon: 'ONTHEHOUSE' })).body).toMatchObject({ total: 0 });
    await eventually(
      () => call('GET', `/v1/invoices/${third.id}`),
      (i) => i.status === 'paid',
    );
    expect(await call('GET', `/v1/invoices/${third.id}`)).toMatchObject({
      status: 'paid',
      amount_paid: 0,
      amount_due: 0,
    });

    // A customer's credit the invoice used: discounted below it, what is not needed goes back to the balance.
    const holder = await customer();
    await call('POST', `/v1/customers/${holder}/balance_transactions`, {
      amount: -38000,
      currency: 'USD',
      description: 'Goodwill',
    });
    const credited = await openInvoice(holder);
    expect(credited).toMatchObject({ starting_balance: -38000, ending_balance: 0, amount_due: 2000 });
    const fourth = await call('POST', '/v1/promotion_codes', { coupon: 'TENOFF', code: 'CREDITED' });
    expect((await apply(credited.id, { promotion_code: fourth.code })).body).toMatchObject({
      total: 36000,
      starting_balance: -38000,
      ending_balance: -2000,
      amount_due: 0,
      status: 'paid',
    });
    expect((await call('GET', `/v1/customers/${holder}`)).balances).toEqual({ USD: -2000 });
  });

  it('the pay page offers no code field when the account does not allow codes', async () => {
    await call('PATCH', '/v1/settings/customer_portal', { promotion_codes: false });
    const invoice = await openInvoice(await customer());
    const path = `/invoices/${invoice.id}/pay?token=${invoicePayToken(engine.config.auth.secret, invoice.id)}`;
    expect(await (await engine.app.request(path)).text()).not.toContain('Promotion code');
    const post = await engine.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: engine.config.publicUrl },
      body: 'action=promotion_code&promotion_code=HELLO25',
    });
    expect(post.status).toBe(403);
    expect((await call('GET', `/v1/invoices/${invoice.id}`)).amount_due).toBe(40000);
  });
});
