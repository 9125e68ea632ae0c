/**
 * Invoice items and one-off invoices in the dashboard, in a real browser (Debian's chromium,
 * playwright-core, the real app over real HTTP, the real invoice workflow): a customer's pending
 * items created by amount and by plan × quantity (an API refusal shown in the form, nothing
 * created), one deleted; a one-off draft made from the customer's page that takes the pending item,
 * an item added to and removed from the draft, a draft without items refused at finalize with the
 * API's message; finalize and charge (numbered, paid); a send_invoice invoice finalized (due date)
 * then voided; another marked uncollectible then paid out of band. The buttons follow the status.
 * After each step the test asks the API what it now holds. Screenshots
 * test-results/dashboard-invoicing-*-{desktop,390}.png, axe-core at both widths, no sideways
 * scroll, no unexpected failed request.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { checkPageLayout, launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const sandbox = { 'x-sandbox-mode': 'true' };

describe('invoice items and one-off invoices in the dashboard (chromium)', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  const problems: string[] = [];
  /** Failed API answers the test causes on purpose (the API's message shown in a form). */
  const expected = new Set<string>();
  const dialogs: string[] = [];

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of (400|401|409)/.test(message.text())) problems.push(message.text());
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
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
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

  const check = (name: string) => checkPageLayout(page, 'dashboard-invoicing', name);

  const go = async (label: string) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
  };
  const actions = () => page.getByRole('region', { name: 'Invoice' }).getByRole('button');
  const pending = async (customer: string) =>
    (await callApi('GET', `/v1/invoice_items?customer=${customer}&pending=true`)).data as any[];

  let customerId: string;
  let planId: string;

  it("creates and deletes a customer's pending invoice items on the customer's page", async () => {
    customerId = (
      await callApi('POST', '/v1/customers', {
        email: 'grace@example.com',
        name: 'Grace',
        payment_method: 'pm_card_visa',
      })
    ).id;
    planId = (
      await callApi('POST', '/v1/plans', { name: 'Audit day', amount: 40000, currency: 'USD', interval: 'month' })
    ).id;

    await page.goto(`${baseUrl}/dashboard`);
    await page.getByLabel('Email').fill(engine.tenant.email);
    await page.getByLabel('Password').fill(engine.tenant.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await go('Customers');
    await page.getByRole('link', { name: 'grace@example.com' }).click();
    await page.getByRole('heading', { level: 1, name: 'Customer Grace' }).waitFor();
    const items = page.getByRole('region', { name: 'Pending invoice items of the customer' });
    await items.getByText('No pending invoice items.').waitFor();

    const form = page.getByRole('form', { name: 'New invoice item' });
    // An amount: the whole line.
    await form.getByLabel('Amount').fill('150.00');
    await form.getByLabel('Description').fill('Onboarding workshop');
    await form.getByRole('button', { name: 'Create invoice item' }).click();
    await items
      .getByRole('row')
      .filter({ hasText: 'Onboarding workshop' })
      .getByRole('cell', { name: '$150.00', exact: true })
      .waitFor();
    expect(await pending(customerId)).toEqual([
      expect.objectContaining({
        description: 'Onboarding workshop',
        amount: 15000,
        currency: 'USD',
        quantity: 1,
        plan: null,
        invoice: null,
      }),
    ]);

    // The API's refusal is shown in the form, and nothing is created.
    await form.getByLabel('Amount').fill('10');
    await form.getByLabel('Currency').fill('ZZZ');
    await form.getByLabel('Description').fill('Nothing');
    expected.add('POST /v1/invoice_items 400');
    await form.getByRole('button', { name: 'Create invoice item' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/^currency: .*\(invalid_request\)$/);
    expected.delete('POST /v1/invoice_items 400');
    expect(await pending(customerId)).toHaveLength(1);
    await form.getByLabel('Currency').fill('USD');

    // A plan × quantity, priced by the plan.
    await form.getByLabel('Price by').selectOption('plan');
    await form.getByLabel('Plan').selectOption(planId);
    await form.getByLabel('Quantity').fill('3');
    await form.getByLabel('Description').fill('');
    await form.getByRole('button', { name: 'Create invoice item' }).click();
    await items
      .getByRole('row')
      .filter({ hasText: 'Audit day' })
      .getByRole('cell', { name: '3 × $400.00 = $1,200.00' })
      .waitFor();
    const audit = (await pending(customerId)).find((item) => item.plan === planId);
    expect(audit).toMatchObject({ quantity: 3, unit_amount: 40000, amount: 120000, description: 'Audit day' });
    await check('customer-items');

    await items.getByRole('button', { name: 'Delete Audit day' }).click();
    await items.getByRole('row').filter({ hasText: 'Audit day' }).waitFor({ state: 'detached' });
    expect(dialogs.at(-1)).toBe('Delete the pending item "Audit day"?');
    expect((await pending(customerId)).map((item) => item.description)).toEqual(['Onboarding workshop']);
    expect((await callApi('GET', `/v1/invoice_items/${audit.id}`)).error).toBe('not_found');
    expect(problems).toEqual([]);
  });

  it('makes a one-off draft from the customer page, edits its items, finalizes and charges it', async () => {
    const form = page.getByRole('form', { name: 'New one-off invoice' });
    await form.getByLabel('Note to the customer').fill('Onboarding, November');
    await form.getByRole('button', { name: 'Create draft invoice' }).click();
    await page.getByRole('heading', { level: 1, name: /^Draft invoice inv_/ }).waitFor();
    const invoiceId = page.url().split('/').at(-1)!;
    const onDraft = page.getByRole('region', { name: 'Items on this draft' });
    await onDraft.getByRole('row').filter({ hasText: 'Onboarding workshop' }).waitFor();
    expect(await actions().allTextContents()).toEqual(['Finalize and charge', 'Delete draft']);

    // Add an item to the draft (in its currency), then take it off again: pending once more.
    const add = page.getByRole('form', { name: 'Add an item to this invoice' });
    await add.getByLabel('Amount').fill('25.50');
    await add.getByLabel('Description').fill('Travel');
    await add.getByRole('button', { name: 'Add item' }).click();
    await onDraft.getByRole('row').filter({ hasText: 'Travel' }).waitFor();
    await page.getByRole('region', { name: 'Totals' }).getByText('$175.50').first().waitFor();
    expect(await callApi('GET', `/v1/invoices/${invoiceId}`)).toMatchObject({
      status: 'draft',
      number: null,
      total: 17550,
      lines: [
        expect.objectContaining({ amount: 15000 }),
        expect.objectContaining({ description: 'Travel', amount: 2550, quantity: 1 }),
      ],
    });
    await onDraft.getByRole('button', { name: 'Remove Travel' }).click();
    await page
      .getByRole('region', { name: 'Pending items to add' })
      .getByRole('button', { name: 'Add Travel' })
      .waitFor();
    expect((await pending(customerId)).map((item) => item.description)).toEqual(['Travel']);
    expect((await callApi('GET', `/v1/invoices/${invoiceId}`)).total).toBe(15000);
    await page
      .getByRole('region', { name: 'Pending items to add' })
      .getByRole('button', { name: 'Add Travel' })
      .click();
    await onDraft.getByRole('row').filter({ hasText: 'Travel' }).waitFor();
    expect(await pending(customerId)).toEqual([]);
    await check('draft');

    await page.getByRole('button', { name: 'Finalize and charge' }).click();
    const paid = await expect
      .poll(async () => await callApi('GET', `/v1/invoices/${invoiceId}`), { timeout: 20_000 })
      .toMatchObject({ status: 'paid', amount_paid: 17550 });
    void paid;
    const invoice = await callApi('GET', `/v1/invoices/${invoiceId}`);
    expect(invoice.number).toMatch(/\S/);
    await page.getByRole('heading', { level: 1, name: `Invoice ${invoice.number}` }).waitFor();
    await page.getByRole('region', { name: 'Invoice' }).getByText('paid', { exact: true }).waitFor();
    expect(await actions().count()).toBe(0);
    await page.getByRole('link', { name: `PDF of ${invoice.number}` }).waitFor();
    // Every line with its quantity, unit amount and period.
    const lines = page.getByRole('region', { name: `Lines of ${invoice.number}` });
    expect(await lines.getByRole('row').filter({ hasText: 'Travel' }).getByRole('cell').allTextContents()).toEqual([
      expect.stringMatching(/^Travel.*On [A-Z][a-z]{2} \d{1,2}, \d{4}/),
      '1',
      '$25.50',
      '$25.50',
    ]);
    await check('paid');
    expect(problems).toEqual([]);
  });

  it('refuses to finalize a draft without items with the API message; a send_invoice invoice is finalized and voided', async () => {
    await go('Invoices');
    const form = page.getByRole('form', { name: 'New one-off invoice' });
    await form.getByLabel('Customer', { exact: true }).selectOption(customerId);
    await form.getByLabel('Collection').selectOption('send_invoice');
    await form.getByLabel('Days until due').fill('14');
    await form.getByLabel('Currency').fill('USD');
    await form.getByRole('button', { name: 'Create draft invoice' }).click();
    await page.getByRole('heading', { level: 1, name: /^Draft invoice inv_/ }).waitFor();
    const invoiceId = page.url().split('/').at(-1)!;
    await page
      .getByRole('region', { name: 'Items on this draft' })
      .getByText(/^No items yet/)
      .waitFor();
    expected.add(`POST /v1/invoices/${invoiceId}/finalize 409`);
    await page.getByRole('button', { name: 'Finalize and send' }).click();
    const refusal = page.getByRole('region', { name: 'Invoice' }).getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/item.*\(invalid_state\)$/);
    expected.delete(`POST /v1/invoices/${invoiceId}/finalize 409`);
    expect((await callApi('GET', `/v1/invoices/${invoiceId}`)).status).toBe('draft');

    const add = page.getByRole('form', { name: 'Add an item to this invoice' });
    await add.getByLabel('Price by').selectOption('unit_amount');
    await add.getByLabel('Unit amount').fill('90');
    await add.getByLabel('Quantity').fill('4');
    await add.getByLabel('Description').fill('Consulting hours');
    await add.getByRole('button', { name: 'Add item' }).click();
    await page
      .getByRole('region', { name: 'Items on this draft' })
      .getByRole('cell', { name: '4 × $90.00 = $360.00' })
      .waitFor();
    await page.getByRole('button', { name: 'Finalize and send' }).click();
    await page.getByRole('heading', { level: 1, name: /^Invoice (?!inv_)/ }).waitFor();
    const open = await callApi('GET', `/v1/invoices/${invoiceId}`);
    expect(open).toMatchObject({
      status: 'open',
      collection_method: 'send_invoice',
      days_until_due: 14,
      total: 36000,
      amount_due: 36000,
    });
    expect(open.due_date).not.toBeNull();
    await page.getByRole('definition').filter({ hasText: "the customer's pay link is in the invoice email" }).waitFor();
    expect(await actions().allTextContents()).toEqual([
      'Charge now',
      'Mark paid out of band',
      'Void',
      'Mark uncollectible',
    ]);
    await check('open');

    await page.getByRole('button', { name: 'Void' }).click();
    await page.getByRole('region', { name: 'Invoice' }).getByText('void', { exact: true }).waitFor();
    expect(dialogs.at(-1)).toBe('Void this invoice? Nothing will be due.');
    expect(await callApi('GET', `/v1/invoices/${invoiceId}`)).toMatchObject({ status: 'void', amount_remaining: 0 });
    await expect.poll(() => actions().count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('marks an invoice uncollectible, then paid out of band; the list shows lines and filters by status', async () => {
    const draft = await callApi('POST', '/v1/invoices', {
      customer: customerId,
      collection_method: 'send_invoice',
      days_until_due: 7,
      currency: 'USD',
    });
    await callApi('POST', '/v1/invoice_items', {
      customer: customerId,
      invoice: draft.id,
      amount: 9900,
      currency: 'USD',
      description: 'Support retainer',
    });
    await go('Invoices');
    await page.getByLabel('Status').selectOption('draft');
    const row = page.getByRole('row').filter({ hasText: `Draft ${draft.id}` });
    await row.getByRole('button', { name: `Finalize and send draft ${draft.id}` }).click();
    await expect.poll(async () => (await callApi('GET', `/v1/invoices/${draft.id}`)).status).toBe('open');
    await page.getByLabel('Status').selectOption('draft');
    await page.getByRole('region', { name: 'Invoices table' }).getByText('No draft invoices.').waitFor();
    await page.getByLabel('Status').selectOption('open');
    const number = (await callApi('GET', `/v1/invoices/${draft.id}`)).number as string;
    const open = page.getByRole('row').filter({ hasText: number }).first();
    await open.getByText('1 line').click();
    await open
      .getByRole('region', { name: `Lines of ${number}` })
      .getByRole('cell', { name: '$99.00' })
      .first()
      .waitFor();
    await open.getByRole('button', { name: `Mark uncollectible ${number}` }).click();
    await expect.poll(async () => (await callApi('GET', `/v1/invoices/${draft.id}`)).status).toBe('uncollectible');
    await page.getByRole('link', { name: number, exact: true }).first().waitFor({ state: 'detached' });
    await page.getByLabel('Status').selectOption('uncollectible');
    await page.getByRole('link', { name: number, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: `Invoice ${number}` }).waitFor();
    expect(await actions().allTextContents()).toEqual(['Charge now', 'Mark paid out of band', 'Void']);
    await page.getByRole('button', { name: 'Mark paid out of band' }).click();
    await page.getByRole('region', { name: 'Invoice' }).getByText('paid', { exact: true }).waitFor();
    // Paid out of band: marked paid, nothing charged.
    expect(await callApi('GET', `/v1/invoices/${draft.id}`)).toMatchObject({
      status: 'paid',
      transaction: null,
      attempt_count: 0,
    });
    expect(dialogs.at(-1)).toBe('Mark this invoice paid? Nothing is charged (the customer paid outside the engine).');
    await check('invoice-list');
    expect(problems).toEqual([]);
  });

  it("shows and edits the customer's currency", async () => {
    await page.getByRole('link', { name: 'grace@example.com' }).click();
    await page.getByRole('heading', { level: 1, name: 'Customer Grace' }).waitFor();
    await page.getByRole('definition').filter({ hasText: 'not set' }).waitFor();
    const form = page.getByRole('form', { name: 'Edit customer' });
    await form.getByLabel('Currency').fill('EURO');
    expected.add(`PATCH /v1/customers/${customerId} 400`);
    await form.getByRole('button', { name: 'Save customer' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(/^currency: .*\(invalid_request\)$/);
    expected.delete(`PATCH /v1/customers/${customerId} 400`);
    expect((await callApi('GET', `/v1/customers/${customerId}`)).currency).toBeNull();
    await form.getByLabel('Currency').fill('eur');
    await form.getByRole('button', { name: 'Save customer' }).click();
    await page.getByRole('region', { name: 'Customer' }).getByRole('definition').filter({ hasText: /^EUR$/ }).waitFor();
    expect(await callApi('GET', `/v1/customers/${customerId}`)).toMatchObject({
      currency: 'EUR',
      email: 'grace@example.com',
      name: 'Grace',
    });
    // The customer's currency is what a new invoice item starts in.
    expect(await page.getByRole('form', { name: 'New invoice item' }).getByLabel('Currency').inputValue()).toBe('EUR');

    // A customer made with a currency on the Customers page; the list shows each one's.
    await go('Customers');
    const create = page.getByRole('form', { name: 'New customer' });
    await create.getByLabel('Email').fill('kenji@example.com');
    await create.getByLabel('Currency (optional)').fill('jpy');
    await create.getByRole('button', { name: 'Create customer' }).click();
    await page
      .getByRole('row')
      .filter({ hasText: 'kenji@example.com' })
      .getByRole('cell', { name: 'JPY', exact: true })
      .waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: 'grace@example.com' })
      .getByRole('cell', { name: 'EUR', exact: true })
      .waitFor();
    expect((await callApi('GET', '/v1/customers?email=kenji@example.com')).data).toEqual([
      expect.objectContaining({ currency: 'JPY' }),
    ]);
    await check('customers');
    expect(problems).toEqual([]);
  });
});
