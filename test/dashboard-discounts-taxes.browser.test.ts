/**
 * Discounts, taxes, customer balances and credit notes in the dashboard, in a real browser
 * (Debian's chromium, playwright-core, the real app over real HTTP and the real invoice workflow):
 * coupons (an API refusal shown in the form, a repeating percent coupon, an amount coupon deleted)
 * and promotion codes (created, deactivated, activated; the portal setting that lets customers type them); tax rates (created, made the account
 * default, one deactivated); on a customer's page a tax id refused by its check digits and then
 * added and deleted, a discount applied by promotion code and by coupon and removed, and a credit
 * adjustment of the balance; a one-off invoice whose page shows subtotal, discount, total excluding
 * tax, tax per rate, total, the credit applied and the amount due; a credit note issued by line to
 * the balance and one by amount refunded, listed on the invoice; a promotion code applied to an open
 * one-off invoice from its page (a wrong code refused first). After each step the test asks the
 * API what it now holds. Screenshots test-results/dashboard-discounts-taxes-*-{desktop,390}.png,
 * axe-core at both widths, no sideways scroll, no unexpected failed request.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { checkPageLayout, launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const sandbox = { 'x-sandbox-mode': 'true' };

describe('discounts, taxes, balances and credit notes in the dashboard (chromium)', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  const problems: string[] = [];
  /** Failed API answers the test causes on purpose (the API's message shown in a form). */
  const expected = new Set<string>();

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of (400|401|404|409)/.test(message.text()))
        problems.push(message.text());
    });
    page.on('response', (response) => {
      const url = new URL(response.url());
      const key = `${response.request().method()} ${url.pathname} ${response.status()}`;
      if (
        response.status() < 400 ||
        (response.status() === 401 && url.pathname === '/v1/auth/browser_session') ||
        expected.has(key)
      )
        return;
      problems.push(key);
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('dialog', (dialog) => void dialog.accept());
  });
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail')
      console.log(
        'The page when the test failed:',
        page.url(),
        await page
          .locator('main')
          .innerText()
          .catch(() => ''),
        problems,
      );
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await engine?.close();
  });

  const callApi = async (method: string, apiPath: string, body?: unknown) =>
    (await engine.call(method, apiPath, body, { ...engine.tenant.headers, ...sandbox })).body as any;

  const check = (name: string) => checkPageLayout(page, 'dashboard-discounts-taxes', name);

  const go = async (label: string) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
  };
  /** Submits `form` expecting the API to refuse it (`request`: its method, path and status); answers the alert's text. */
  async function refused(form: ReturnType<Page['getByRole']>, button: string, request: string) {
    expected.add(request);
    await form.getByRole('button', { name: button }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    expected.delete(request);
    return (await alert.textContent())!;
  }
  const eventsOf = async (type: string) => (await callApi('GET', `/v1/events?type=${type}`)).data as any[];

  let customerId: string;
  let salesTaxId: string;

  it('creates coupons and promotion codes, deactivates a code and deletes a coupon', async () => {
    await page.goto(`${baseUrl}/dashboard`);
    await page.getByLabel('Email').fill(engine.tenant.email);
    await page.getByLabel('Password').fill(engine.tenant.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await go('Coupons');
    await page.getByRole('region', { name: 'Coupons table' }).getByText('No coupons yet.').waitFor();

    const form = page.getByRole('form', { name: 'New coupon' });
    await form.getByLabel('Coupon ID (optional)').fill('LAUNCH20');
    await form.getByLabel('Name').fill('Launch');
    await form.getByLabel('Percent off').fill('150');
    expect(await refused(form, 'Create coupon', 'POST /v1/coupons 400')).toMatch(
      /^percent_off: .*\(invalid_request\)$/,
    );
    expect((await callApi('GET', '/v1/coupons')).data).toEqual([]);

    await form.getByLabel('Percent off').fill('20');
    await form.getByLabel('Duration').selectOption('repeating');
    await form.getByLabel('Months').fill('3');
    await form.getByRole('button', { name: 'Create coupon', exact: true }).click();
    await page
      .getByRole('row')
      .filter({ hasText: 'LAUNCH20' })
      .getByRole('cell', { name: '20% off for 3 months' })
      .waitFor();
    expect(await callApi('GET', '/v1/coupons/LAUNCH20')).toMatchObject({
      id: 'LAUNCH20',
      name: 'Launch',
      percent_off: 20,
      duration: 'repeating',
      duration_in_months: 3,
      valid: true,
    });

    await form.getByLabel('Coupon ID (optional)').fill('FIVE');
    await form.getByLabel('Discount').selectOption('amount');
    await form.getByLabel('Amount off').fill('5.00');
    await form.getByRole('button', { name: 'Create coupon', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'FIVE' }).getByRole('cell', { name: '$5.00 off once' }).waitFor();
    expect(await callApi('GET', '/v1/coupons/FIVE')).toMatchObject({
      amount_off: 500,
      currency: 'USD',
      duration: 'once',
    });

    const codes = page.getByRole('form', { name: 'New promotion code' });
    await codes.getByLabel('Coupon').selectOption('LAUNCH20');
    await codes.getByLabel('Code (optional)').fill('SPRING20');
    await codes.getByLabel('Max redemptions').fill('50');
    await codes.getByRole('button', { name: 'Create promotion code', exact: true }).click();
    const row = page
      .getByRole('region', { name: 'Promotion codes table' })
      .getByRole('row')
      .filter({ hasText: 'SPRING20' });
    await row.getByRole('cell', { name: 'Launch: 20% off for 3 months' }).waitFor();
    const [code] = (await callApi('GET', '/v1/promotion_codes?code=SPRING20')).data;
    expect(code).toMatchObject({ code: 'SPRING20', active: true, max_redemptions: 50, coupon: { id: 'LAUNCH20' } });
    await row.getByRole('button', { name: 'Deactivate SPRING20', exact: true }).click();
    await row.getByRole('button', { name: 'Activate SPRING20', exact: true }).waitFor();
    expect((await callApi('GET', `/v1/promotion_codes/${code.id}`)).active).toBe(false);
    await check('coupons');
    await row.getByRole('button', { name: 'Activate SPRING20', exact: true }).click();
    await row.getByRole('button', { name: 'Deactivate SPRING20', exact: true }).waitFor();
    expect((await callApi('GET', `/v1/promotion_codes/${code.id}`)).active).toBe(true);

    await page.getByRole('button', { name: 'Delete FIVE', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'FIVE' }).waitFor({ state: 'detached' });
    expect((await callApi('GET', '/v1/coupons')).data.map((c: any) => c.id)).toEqual(['LAUNCH20']);

    // Customers may type promotion codes in the portal once the account allows it (off by default).
    expect((await callApi('GET', '/v1/settings/customer_portal')).promotion_codes).toBe(false);
    await go('Settings');
    const portal = page.getByRole('form', { name: 'Customer portal' });
    await portal.getByLabel('Customers may enter promotion codes').check();
    await portal.getByRole('button', { name: 'Save portal settings', exact: true }).click();
    await expect.poll(async () => (await callApi('GET', '/v1/settings/customer_portal')).promotion_codes).toBe(true);
    expect(await callApi('GET', '/v1/settings/customer_portal')).toMatchObject({
      cancellation: true,
      resume: true,
      plan_changes: false,
      quantity_changes: false,
    });
    expect(problems).toEqual([]);
  });

  it('creates tax rates, makes one the account default and deactivates another', async () => {
    await go('Tax rates');
    const form = page.getByRole('form', { name: 'New tax rate' });
    await form.getByLabel('Display name').fill('VAT');
    await form.getByLabel('Percentage').fill('19');
    await form.getByLabel('Country').fill('DE');
    await form.getByLabel('Tax type').selectOption('vat');
    await form.getByRole('button', { name: 'Create tax rate', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'VAT' }).getByRole('cell', { name: '19% exclusive' }).waitFor();
    await form.getByLabel('Display name').fill('Sales tax');
    await form.getByLabel('Percentage').fill('10');
    await form.getByRole('button', { name: 'Create tax rate', exact: true }).click();
    await page.getByRole('row').filter({ hasText: 'Sales tax' }).getByRole('cell', { name: '10% exclusive' }).waitFor();
    const rates = (await callApi('GET', '/v1/tax_rates')).data as any[];
    const vat = rates.find((r) => r.display_name === 'VAT');
    const sales = rates.find((r) => r.display_name === 'Sales tax');
    expect(vat).toMatchObject({ percentage: '19', inclusive: false, country: 'DE', tax_type: 'vat', active: true });
    expect(sales).toMatchObject({ percentage: '10', inclusive: false, country: null, active: true });
    salesTaxId = sales.id;

    await page.getByRole('button', { name: 'Make default Sales tax 10% (exclusive)', exact: true }).click();
    await page.getByRole('button', { name: 'Remove default Sales tax 10% (exclusive)', exact: true }).waitFor();
    expect((await callApi('GET', '/v1/settings/tax')).default_tax_rates).toEqual([sales.id]);
    await page.getByRole('button', { name: 'Deactivate VAT 19% (exclusive), DE', exact: true }).click();
    await page.getByRole('button', { name: 'Activate VAT 19% (exclusive), DE', exact: true }).waitFor();
    expect((await callApi('GET', `/v1/tax_rates/${vat.id}`)).active).toBe(false);
    await check('tax-rates');
    expect(problems).toEqual([]);
  });

  it("a customer's tax ids, discount and balance on the customer's page", async () => {
    customerId = (
      await callApi('POST', '/v1/customers', {
        email: 'lina@example.com',
        name: 'Lina',
        payment_method: 'pm_card_visa',
      })
    ).id;
    await page.goto(`${baseUrl}/dashboard/customers/${customerId}`);
    await page.getByRole('heading', { level: 1, name: 'Customer Lina' }).waitFor();

    // Tax details: a country the API does not know is refused with its message; then Germany.
    const details = page.getByRole('form', { name: 'Tax details' });
    await details.getByLabel('Country').fill('ZZ');
    expect(await refused(details, 'Save tax details', `PATCH /v1/customers/${customerId} 400`)).toMatch(
      /^address\.country: .*\(invalid_request\)$/,
    );
    expect((await callApi('GET', `/v1/customers/${customerId}`)).address).toBeNull();
    await details.getByLabel('Country').fill('de');
    await details.getByLabel('City').fill('Berlin');
    await details.getByRole('button', { name: 'Save tax details', exact: true }).click();
    await expect
      .poll(async () => (await callApi('GET', `/v1/customers/${customerId}`)).address)
      .toMatchObject({ country: 'DE', city: 'Berlin', line1: null });
    expect((await callApi('GET', `/v1/customers/${customerId}`)).tax_exempt).toBe('none');

    // A tax id with wrong check digits: the API's message, nothing stored; then a good one, then deleted.
    const taxIds = page.getByRole('form', { name: 'Add a tax ID' });
    await taxIds.getByLabel('Type').selectOption('eu_vat');
    await taxIds.getByLabel('Tax ID').fill('DE136695977');
    expect(await refused(taxIds, 'Add tax ID', `POST /v1/customers/${customerId}/tax_ids 400`)).toMatch(
      /\(invalid_request\)$/,
    );
    expect((await callApi('GET', `/v1/customers/${customerId}/tax_ids`)).data).toEqual([]);
    await taxIds.getByLabel('Tax ID').fill('DE 136 695 976');
    await taxIds.getByRole('button', { name: 'Add tax ID', exact: true }).click();
    await page
      .getByRole('region', { name: 'Tax IDs of the customer table' })
      .getByRole('cell', { name: 'DE136695976', exact: true })
      .waitFor();
    expect((await callApi('GET', `/v1/customers/${customerId}/tax_ids`)).data).toEqual([
      expect.objectContaining({ type: 'eu_vat', value: 'DE136695976', country: 'DE' }),
    ]);
    await page.getByRole('button', { name: 'Delete DE136695976', exact: true }).click();
    await page.getByRole('region', { name: 'Tax IDs of the customer table' }).getByText('No tax IDs.').waitFor();
    expect((await callApi('GET', `/v1/customers/${customerId}/tax_ids`)).data).toEqual([]);

    // A discount by promotion code, replaced by the coupon, removed, and applied again for the invoice below.
    const discount = page.getByRole('region', { name: 'Discount' });
    const apply = page.getByRole('form', { name: 'Apply a discount' });
    await apply.getByLabel('Apply').selectOption('promotion_code');
    await apply.getByLabel('Promotion code').fill('spring20');
    await apply.getByRole('button', { name: 'Apply discount', exact: true }).click();
    await discount.getByText('(code ').waitFor();
    expect(await eventsOf('customer.discount.created')).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({
          object: expect.objectContaining({
            customer: customerId,
            coupon: expect.objectContaining({ id: 'LAUNCH20' }),
          }),
        }),
      }),
    ]);
    expect((await callApi('GET', '/v1/promotion_codes?code=SPRING20')).data[0].times_redeemed).toBe(1);
    await discount.getByRole('button', { name: 'Remove discount', exact: true }).click();
    await discount.getByText('No discount.').waitFor();
    expect(await eventsOf('customer.discount.deleted')).toHaveLength(1);
    await apply.getByLabel('Apply').selectOption('coupon');
    await apply.getByLabel('Coupon').selectOption('LAUNCH20');
    await apply.getByRole('button', { name: 'Apply discount', exact: true }).click();
    await discount.getByText('Launch: 20% off for 3 months').waitFor();
    expect(await eventsOf('customer.discount.created')).toHaveLength(2);

    // A credit of 25.00 to the balance.
    const adjust = page.getByRole('form', { name: 'Adjust the balance' });
    await adjust.getByLabel('Amount').fill('25.00');
    await adjust.getByLabel('Description').fill('Goodwill credit');
    await adjust.getByRole('button', { name: 'Add adjustment', exact: true }).click();
    await page.getByTestId('customer-balance').filter({ hasText: '$25.00 credit' }).waitFor();
    await page
      .getByRole('region', { name: 'Balance transactions table' })
      .getByRole('cell', { name: 'Goodwill credit' })
      .waitFor();
    expect((await callApi('GET', `/v1/customers/${customerId}/balance_transactions`)).data).toEqual([
      expect.objectContaining({ type: 'adjustment', amount: -2500, currency: 'USD', ending_balance: -2500 }),
    ]);
    expect((await callApi('GET', `/v1/customers/${customerId}`)).balances).toEqual({ USD: -2500 });
    await check('customer');
    expect(problems).toEqual([]);
  });

  it('an invoice shows discount, tax per rate, the credit applied and the amount due; credit notes are issued from its page', async () => {
    const draft = await callApi('POST', '/v1/invoices', {
      customer: customerId,
      collection_method: 'charge_automatically',
      currency: 'USD',
    });
    await callApi('POST', '/v1/invoice_items', {
      customer: customerId,
      invoice: draft.id,
      unit_amount: 5000,
      quantity: 2,
      currency: 'USD',
      description: 'Workshop seats',
    });
    await page.goto(`${baseUrl}/dashboard/invoices/${draft.id}`);
    await page.getByRole('button', { name: 'Finalize and charge', exact: true }).click();
    await expect
      .poll(async () => (await callApi('GET', `/v1/invoices/${draft.id}`)).status, { timeout: 20_000 })
      .toBe('paid');
    const invoice = await callApi('GET', `/v1/invoices/${draft.id}`);
    // 100.00 − 20% = 80.00; 10% sales tax 8.00; total 88.00; 25.00 credit applied: 63.00 due.
    expect(invoice).toMatchObject({
      subtotal: 10000,
      total_excluding_tax: 8000,
      tax: 800,
      total: 8800,
      starting_balance: -2500,
      ending_balance: 0,
      amount_due: 6300,
      amount_paid: 6300,
    });
    expect(invoice.total_discount_amounts).toEqual([expect.objectContaining({ amount: 2000 })]);
    expect(invoice.total_tax_amounts).toEqual([
      expect.objectContaining({ tax_rate: salesTaxId, amount: 800, taxable_amount: 8000 }),
    ]);
    await page.getByRole('heading', { level: 1, name: `Invoice ${invoice.number}` }).waitFor();
    const totals = page.locator('dl[aria-label="Totals"]');
    await page.getByRole('region', { name: 'Invoice' }).getByText('paid', { exact: true }).waitFor();
    const pairs = await totals.evaluate((dl) =>
      [...dl.querySelectorAll('dt')].map((dt) => `${dt.textContent} = ${dt.nextElementSibling?.textContent}`),
    );
    expect(pairs).toEqual([
      'Subtotal = $100.00',
      'Discount = -$20.00',
      'Total excluding tax = $80.00',
      'Sales tax 10% on $80.00 = $8.00',
      'Total = $88.00',
      'Credit balance applied = -$25.00',
      'Amount due = $63.00',
      'Amount paid = $63.00',
      'Amount remaining = $0.00',
    ]);
    const notes = page.getByRole('region', { name: `Credit notes of ${invoice.number}` });
    await notes.getByText('No credit notes.').waitFor();
    await check('invoice');

    // By line, to the customer's balance.
    const form = page.getByRole('form', { name: 'Issue credit note' });
    await form.getByLabel('Credit on line 1: Workshop seats ($100.00)').fill('10.00');
    await form.getByLabel('Reason').selectOption('product_unsatisfactory');
    await form.getByLabel('Money goes').selectOption('credit');
    await form.getByLabel('Memo to the customer').fill('One seat unused');
    await form.getByRole('button', { name: 'Issue credit note', exact: true }).click();
    await notes.getByRole('cell', { name: '$10.00 to the balance' }).waitFor();
    const [byLine] = (await callApi('GET', `/v1/credit_notes?invoice=${draft.id}`)).data;
    expect(byLine).toMatchObject({
      total: 1000,
      credit_amount: 1000,
      refund_amount: 0,
      reason: 'product_unsatisfactory',
      memo: 'One seat unused',
      status: 'issued',
      lines: [expect.objectContaining({ type: 'invoice_line_item', invoice_line_index: 0, amount: 1000 })],
    });
    expect((await callApi('GET', `/v1/customers/${customerId}`)).balances).toEqual({ USD: -1000 });

    // One amount, refunded to the card.
    await form.getByLabel('Credit', { exact: true }).selectOption('amount');
    await form.getByLabel('Amount to credit').fill('5.00');
    await form.getByLabel('Money goes').selectOption('refund');
    await form.getByRole('button', { name: 'Issue credit note', exact: true }).click();
    await notes.getByRole('cell', { name: '$5.00 refunded' }).waitFor();
    const all = (await callApi('GET', `/v1/credit_notes?invoice=${draft.id}`)).data as any[];
    expect(all.find((n) => n.id !== byLine.id)).toMatchObject({
      total: 500,
      refund_amount: 500,
      credit_amount: 0,
      refund: expect.stringMatching(/^txn_/),
    });
    expect((await callApi('GET', `/v1/invoices/${draft.id}`)).amount_refunded).toBe(500);

    // The balance credit note is voided from the list: its credit is taken back.
    await notes.getByRole('button', { name: `Void ${byLine.number}`, exact: true }).click();
    await notes.getByRole('row').filter({ hasText: byLine.number }).getByText('void', { exact: true }).waitFor();
    expect((await callApi('GET', `/v1/credit_notes/${byLine.id}`)).status).toBe('void');
    expect((await callApi('GET', `/v1/customers/${customerId}`)).balances).toEqual({ USD: 0 });
    await check('credit-notes');
    expect(problems).toEqual([]);
  });

  it('a credit note on an open invoice lowers what is left to pay', async () => {
    const draft = await callApi('POST', '/v1/invoices', {
      customer: customerId,
      collection_method: 'send_invoice',
      days_until_due: 30,
      currency: 'USD',
    });
    await callApi('POST', '/v1/invoice_items', {
      customer: customerId,
      invoice: draft.id,
      amount: 5000,
      currency: 'USD',
      description: 'Report',
    });
    const open = await callApi('POST', `/v1/invoices/${draft.id}/finalize`);
    expect(open.status).toBe('open');
    await page.goto(`${baseUrl}/dashboard/invoices/${draft.id}`);
    await page.getByRole('heading', { level: 1, name: `Invoice ${open.number}` }).waitFor();
    const form = page.getByRole('form', { name: 'Issue credit note' });
    await form.getByText('the credit note lowers what is left to pay').waitFor();
    expect(await form.getByLabel('Money goes').count()).toBe(0);
    await form.getByLabel('Credit', { exact: true }).selectOption('amount');
    await form.getByLabel('Amount to credit').fill('20.00');
    await form.getByLabel('Reason').selectOption('order_change');
    await form.getByRole('button', { name: 'Issue credit note', exact: true }).click();
    await page
      .getByRole('region', { name: `Credit notes of ${open.number}` })
      .getByRole('cell', { name: 'lowered the amount due' })
      .waitFor();
    const [note] = (await callApi('GET', `/v1/credit_notes?invoice=${draft.id}`)).data;
    expect(note).toMatchObject({
      total: 2000,
      refund_amount: 0,
      credit_amount: 0,
      out_of_band_amount: 0,
      reason: 'order_change',
      status: 'issued',
    });
    // 50.00 less the customer's 20% and plus 10% sales tax is 44.00 due; 20.00 credited leaves 24.00.
    expect(open.amount_remaining).toBe(4400);
    await expect.poll(async () => (await callApi('GET', `/v1/invoices/${draft.id}`)).amount_remaining).toBe(2400);
    const totals = page.locator('dl[aria-label="Totals"]');
    await totals.getByText('Credit notes').waitFor();
    const pairs = await totals.evaluate((dl) =>
      [...dl.querySelectorAll('dt')].map((dt) => `${dt.textContent} = ${dt.nextElementSibling?.textContent}`),
    );
    expect(pairs.slice(-5)).toEqual([
      'Total = $44.00',
      'Credit notes = -$20.00',
      'Amount due = $24.00',
      'Amount paid = $0.00',
      'Amount remaining = $24.00',
    ]);
    expect(problems).toEqual([]);
  });

  it('a promotion code is applied to an open one-off invoice from its page; a wrong code is refused, nothing changed', async () => {
    // A customer of its own: the one above has a discount of its own, which its invoices carry already (one per invoice).
    const customer = await callApi('POST', '/v1/customers', {
      email: 'promo-invoice@example.com',
      name: 'Promo Invoice',
    });
    const draft = await callApi('POST', '/v1/invoices', {
      customer: customer.id,
      collection_method: 'send_invoice',
      days_until_due: 30,
      currency: 'USD',
    });
    await callApi('POST', '/v1/invoice_items', {
      customer: customer.id,
      invoice: draft.id,
      amount: 5000,
      currency: 'USD',
      description: 'Audit',
    });
    const open = await callApi('POST', `/v1/invoices/${draft.id}/finalize`);
    expect(open).toMatchObject({ status: 'open', total: 5500, discounts: [] });
    await page.goto(`${baseUrl}/dashboard/invoices/${draft.id}`);
    await page.getByRole('heading', { level: 1, name: `Invoice ${open.number}` }).waitFor();
    const form = page.getByRole('form', { name: 'Apply a promotion code' });
    await form.getByLabel('Promotion code').fill('SPRING2O');
    expect(await refused(form, 'Apply promotion code', `POST /v1/invoices/${draft.id}/discounts 404`)).toMatch(
      /No such promotion code: SPRING2O/,
    );
    expect(await callApi('GET', `/v1/invoices/${draft.id}`)).toMatchObject({
      discounts: [],
      total: 5500,
      amount_due: 5500,
    });

    await form.getByLabel('Promotion code').fill('spring20');
    await form.getByRole('button', { name: 'Apply promotion code', exact: true }).click();
    // 50.00 less 20% is 40.00; the account's 10% sales tax on it: 44.00 due. The form goes: one discount per invoice.
    await page.locator('dl[aria-label="Totals"]').getByText('-$10.00').waitFor();
    await form.waitFor({ state: 'detached' });
    const after = await callApi('GET', `/v1/invoices/${draft.id}`);
    expect(after).toMatchObject({
      status: 'open',
      total: 4400,
      amount_due: 4400,
      total_discount_amounts: [expect.objectContaining({ amount: 1000 })],
    });
    expect(after.discounts).toHaveLength(1);
    expect(problems).toEqual([]);
  });

  it("a subscription's own discount is applied and removed and its tax rate set on its page; the customer made reverse charge", async () => {
    const plan = await callApi('POST', '/v1/plans', { name: 'Team', amount: 3000, currency: 'USD', interval: 'month' });
    const subscription = await callApi('POST', '/v1/subscriptions', { customer_id: customerId, plan: plan.id });
    await page.goto(`${baseUrl}/dashboard/subscriptions/${subscription.id}`);
    await page.getByRole('heading', { level: 1, name: `Subscription ${subscription.id}` }).waitFor();
    const discount = page.getByRole('region', { name: 'Discount' });
    await discount.getByText('No discount.').waitFor();
    const apply = page.getByRole('form', { name: 'Apply a discount' });
    await apply.getByLabel('Apply').selectOption('promotion_code');
    await apply.getByLabel('Promotion code').fill('NOSUCHCODE');
    expect(await refused(apply, 'Apply discount', `POST /v1/subscriptions/${subscription.id}/discount 404`)).toMatch(
      /NOSUCHCODE/i,
    );
    expect((await callApi('GET', `/v1/subscriptions/${subscription.id}`)).discount).toBeNull();
    await apply.getByLabel('Promotion code').fill('SPRING20');
    await apply.getByRole('button', { name: 'Apply discount', exact: true }).click();
    await discount.getByText('Launch: 20% off for 3 months').waitFor();
    expect((await callApi('GET', `/v1/subscriptions/${subscription.id}`)).discount).toMatchObject({
      subscription: subscription.id,
      coupon: { id: 'LAUNCH20' },
    });
    await check('subscription');
    await discount.getByRole('button', { name: 'Remove discount', exact: true }).click();
    await discount.getByText('No discount.').waitFor();
    expect((await callApi('GET', `/v1/subscriptions/${subscription.id}`)).discount).toBeNull();

    // Its own default tax rates: only active rates are offered (VAT was deactivated).
    const rates = page.getByRole('form', { name: 'Tax rates of this subscription' });
    expect(await rates.getByRole('checkbox').count()).toBe(1);
    await rates.getByLabel('Sales tax 10% (exclusive)').check();
    await rates.getByRole('button', { name: 'Save tax rates', exact: true }).click();
    await expect
      .poll(async () => (await callApi('GET', `/v1/subscriptions/${subscription.id}/tax_rates`)).default_tax_rates)
      .toEqual([salesTaxId]);
    await expect.poll(() => rates.getByLabel('Sales tax 10% (exclusive)').isChecked()).toBe(true);

    // The customer made reverse charge from their page (their address kept).
    // The subscription's page names its customer (Lina) and links to their page.
    await page.getByRole('link', { name: 'Lina', exact: true }).click();
    const details = page.getByRole('form', { name: 'Tax details' });
    await details.getByLabel('Tax exempt').selectOption('reverse');
    await details.getByRole('button', { name: 'Save tax details', exact: true }).click();
    await expect.poll(async () => (await callApi('GET', `/v1/customers/${customerId}`)).tax_exempt).toBe('reverse');
    expect((await callApi('GET', `/v1/customers/${customerId}`)).address).toMatchObject({
      country: 'DE',
      city: 'Berlin',
    });
    expect(problems).toEqual([]);
  });
});
