/**
 * The dashboard's Payouts page in a real browser (Debian's chromium via playwright-core,
 * the same setup as dashboard.browser.test.ts): an owner adds a US bank account (a
 * wrong ABA routing number first, whose refusal the page shows), a second one made the
 * default and the first deleted, changes the USD schedule, creates a payout to a chosen
 * destination, holds it and cancels it, places and releases an account hold; a member
 * reads it all without a form. Screenshots at desktop and 390 px
 * (test-results/dashboard-payouts-*.png) and axe-core: no serious or critical violation.
 */
import fs from 'node:fs';
import path from 'node:path';

import AxeBuilder from '@axe-core/playwright';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const screenshots = path.resolve('test-results');
const sandbox = { 'x-sandbox-mode': 'true' };

describe('the Payouts page in chromium', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  const problems: string[] = [];
  /** The API answers the page is expected to get: the refused routing number. */
  const expectedRefusals: string[] = [];
  /** What each confirmation dialog asked (all are accepted). */
  const dialogs: string[] = [];

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
    page = await watched(await browser.newContext({ viewport: { width: 1280, height: 900 } }).then((c) => c.newPage()));
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await engine?.close();
  });

  async function watched(view: Page) {
    view.on('console', (message) => {
      if (message.type() === 'error' && !/status of (400|401)/.test(message.text())) problems.push(message.text());
    });
    view.on('response', (response) => {
      const url = new URL(response.url());
      if (response.status() < 400 || (response.status() === 401 && url.pathname === '/v1/auth/browser_session')) return;
      const line = `${response.request().method()} ${url.pathname} answered ${response.status()}`;
      const expected = expectedRefusals.indexOf(line);
      if (expected >= 0) expectedRefusals.splice(expected, 1);
      else problems.push(line);
    });
    view.on('pageerror', (error) => problems.push(error.message));
    view.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    return view;
  }
  const callApi = async (method: string, apiPath: string, body?: unknown) =>
    (await engine.call(method, apiPath, body, { ...engine.tenant.headers, ...sandbox })).body as any;

  /** A screenshot at desktop width and at 390 px (no sideways scroll), and axe-core with no serious or critical violation. */
  async function check(name: string, view: Page = page) {
    await view.waitForLoadState('networkidle');
    await view.screenshot({ path: path.join(screenshots, `dashboard-${name}-desktop.png`), fullPage: true });
    await view.setViewportSize({ width: 390, height: 844 });
    await view.screenshot({ path: path.join(screenshots, `dashboard-${name}-390.png`), fullPage: true });
    const overflow = await view.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow, `${name} scrolls sideways at 390 px`).toBeLessThanOrEqual(1);
    await view.setViewportSize({ width: 1280, height: 900 });
    const result = await new AxeBuilder({ page: view }).analyze();
    const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(
      serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
      name,
    ).toEqual([]);
  }
  async function signIn(view: Page, email: string, password: string) {
    await view.goto(`${baseUrl}/dashboard`);
    await view.getByLabel('Email').fill(email);
    await view.getByLabel('Password').fill(password);
    await view.getByRole('button', { name: 'Sign in' }).click();
    await view.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await view.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Payouts', exact: true }).click();
    await view.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();
  }

  let firstId: string;
  let secondId: string;

  it('adds a US bank account: a wrong ABA routing number shows the API refusal, a right one is listed as the USD default', async () => {
    await signIn(page, engine.tenant.email, engine.tenant.password);
    const form = page.getByRole('form', { name: 'Add bank account' });
    await form.getByLabel('Rail').selectOption('us_ach');
    await form.getByLabel('Holder name').fill('Ada Lovelace');
    await form.getByLabel('Routing number').fill('110000001');
    await form.getByLabel('Account number').fill('000123456789');
    expectedRefusals.push('POST /v1/bank_accounts answered 400');
    await form.getByRole('button', { name: 'Add bank account' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: 'routing_number: the ABA checksum (3-7-1) fails for 110000001' })
      .waitFor();
    expect((await callApi('GET', '/v1/bank_accounts')).data).toEqual([]);
    // The form keeps what was typed: correct the routing number only.
    await form.getByLabel('Routing number').fill('110000000');
    await form.getByRole('button', { name: 'Add bank account' }).click();
    const table = page.getByRole('region', { name: 'Bank accounts table' });
    await table.getByText('Ada Lovelace •••• 6789').waitFor();
    await table.getByText('Default for USD').waitFor();
    const [first] = (await callApi('GET', '/v1/bank_accounts')).data;
    expect(first).toMatchObject({
      type: 'us_ach',
      routing_number: '110000000',
      last4: '6789',
      currency: 'USD',
      default_for_currency: true,
      status: 'new',
    });
    firstId = first.id;

    // A second one (the slow test account) is made the default; the first is deleted after the confirmation.
    await form.getByLabel('Holder name').fill('Ada Ltd');
    await form.getByLabel('Holder type').selectOption('company');
    await form.getByLabel('Routing number').fill('110000000');
    await form.getByLabel('Account number').fill('000000007777');
    await form.getByRole('button', { name: 'Add bank account' }).click();
    await table.getByText('Ada Ltd •••• 7777').waitFor();
    // By keyboard: the button takes focus and Enter presses it.
    await page.getByRole('button', { name: 'Make •••• 7777 the USD default' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Make •••• 6789 the USD default' }).waitFor();
    const accounts = (await callApi('GET', '/v1/bank_accounts')).data as any[];
    secondId = accounts.find((a) => a.last4 === '7777').id;
    expect(accounts.find((a) => a.id === secondId).default_for_currency).toBe(true);
    expect(accounts.find((a) => a.id === firstId).default_for_currency).toBe(false);
    await page.getByRole('button', { name: 'Delete •••• 6789' }).click();
    await table.getByText('Ada Lovelace •••• 6789').waitFor({ state: 'detached' });
    expect(dialogs).toEqual(['Delete the USD destination •••• 6789? Payouts keep naming it.']);
    expect((await callApi('GET', '/v1/bank_accounts')).data.map((a: any) => a.id)).toEqual([secondId]);

    // The rail decides the fields: SEPA asks for an IBAN (and BIC) and takes EUR only; a wrong check digit is refused with the API's words.
    await form.getByLabel('Rail').selectOption('sepa');
    expect(await form.getByLabel('Currency', { exact: true }).locator('option').allTextContents()).toEqual(['EUR']);
    expect(await form.getByLabel('Routing number').count()).toBe(0);
    await form.getByLabel('Holder name').fill('Ada GmbH');
    await form.getByLabel('IBAN').fill('DE89 3704 0044 0532 0130 01');
    await form.getByLabel('BIC (optional)').fill('COBADEFFXXX');
    expectedRefusals.push('POST /v1/bank_accounts answered 400');
    await form.getByRole('button', { name: 'Add bank account' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: 'iban: the IBAN check digits (ISO 7064 mod 97-10) do not match' })
      .waitFor();
    await form.getByLabel('IBAN').fill('DE95370400440000006789');
    await form.getByRole('button', { name: 'Add bank account' }).click();
    await table.getByText('Ada GmbH •••• 6789').waitFor();
    await table.getByText('Default for EUR').waitFor();

    // PayPal: an email, in GBP; the list shows it masked.
    await form.getByLabel('Rail').selectOption('paypal');
    await form.getByLabel('Currency', { exact: true }).selectOption('GBP');
    await form.getByLabel('Holder name').fill('Ada');
    await form.getByLabel('PayPal email').fill('ada@example.com');
    await form.getByRole('button', { name: 'Add bank account' }).click();
    await table.getByText('Ada a***@example.com').waitFor();
    const byCurrency = Object.fromEntries(
      ((await callApi('GET', '/v1/bank_accounts')).data as any[]).map((a) => [a.currency, a.type]),
    );
    expect(byCurrency).toEqual({ USD: 'us_ach', EUR: 'sepa', GBP: 'paypal' });
    await form.getByLabel('Rail').selectOption('us_ach');
  });

  it('changes the USD schedule to weekly on Friday with a minimum, and shows the next payout', async () => {
    const schedule = page.getByRole('form', { name: 'USD schedule' });
    await schedule.getByText('Manual: payouts only when you make them').waitFor();
    await schedule.getByLabel('USD interval').selectOption('weekly');
    await schedule.getByLabel('USD weekday').selectOption('friday');
    await schedule.getByLabel('USD delay (days)').fill('2');
    await schedule.getByLabel('USD minimum').fill('50');
    await schedule.getByRole('button', { name: 'Save USD schedule' }).click();
    await page
      .getByRole('form', { name: 'USD schedule' })
      .getByText(/^Next payout .+, 00:00 UTC$/)
      .waitFor();
    const usd = (await callApi('GET', '/v1/payout_settings')).schedules.find((s: any) => s.currency === 'USD');
    expect(usd).toMatchObject({ interval: 'weekly', weekly_anchor: 'friday', delay_days: 2, minimum_amount: 5000 });
    expect(new Date(usd.next_payout_at).getUTCDay()).toBe(5);
  });

  it('creates a payout to a chosen destination, holds it, cancels it while pending, and releases an account hold', async () => {
    const credit = await engine.call(
      'POST',
      '/v1/transactions',
      { account_id: engine.tenant.accountId, amount: 10_000, currency: 'USD', type: 'credit' },
      { ...engine.tenant.headers, ...sandbox },
    );
    expect(credit.status, JSON.stringify(credit.body)).toBe(201);
    const form = page.getByRole('form', { name: 'New payout' });
    await form.getByLabel('Payout amount').fill('40');
    await form.getByLabel('Payout currency').selectOption('USD');
    await form.getByLabel('Destination').selectOption(secondId);
    await form.getByLabel('Payout description').fill('November');
    await form.getByRole('button', { name: 'Create payout' }).click();
    const cancel = page.getByRole('button', { name: 'Cancel payout of $40.00' });
    await cancel.waitFor();
    const [payout] = (await callApi('GET', '/v1/payouts')).data;
    expect(payout).toMatchObject({
      amount: 4000,
      currency: 'USD',
      destination: secondId,
      description: 'November',
      status: 'pending',
    });

    // A hold on this payout keeps it pending (it would leave after 60 s otherwise).
    const holdForm = page.getByRole('form', { name: 'New hold' });
    await holdForm.getByLabel('Hold reason').fill('Check this one');
    await holdForm.getByLabel(/^Payout ID/).fill(payout.id);
    await holdForm.getByRole('button', { name: 'Place hold' }).click();
    // The payout shows the hold once its minute is over; the hold list names the payout at once.
    await page.getByRole('region', { name: 'Holds table' }).getByText(payout.id).waitFor();
    await page.getByRole('button', { name: 'Release hold: Check this one' }).waitFor();
    await check('payouts-owner');

    await page.getByRole('button', { name: 'Cancel payout of $40.00' }).click();
    await page.getByRole('region', { name: 'Payouts table' }).getByText('canceled').waitFor();
    expect((await callApi('GET', `/v1/payouts/${payout.id}`)).status).toBe('canceled');
    const balance = await callApi('GET', '/v1/balance');
    expect(balance.available.find((m: any) => m.currency === 'USD').amount).toBe(10_000);

    await holdForm.getByLabel('Hold reason').fill('KYC review');
    await holdForm.getByRole('button', { name: 'Place hold' }).click();
    const release = page.getByRole('button', { name: 'Release hold: KYC review' });
    await release.waitFor();
    expect((await callApi('GET', '/v1/payout_holds?active=true')).data.map((h: any) => h.reason)).toContain(
      'KYC review',
    );
    await release.click();
    await release.waitFor({ state: 'detached' });
    expect((await callApi('GET', '/v1/payout_holds?active=true')).data.map((h: any) => h.reason)).not.toContain(
      'KYC review',
    );
    expect(problems).toEqual([]);
    expect(expectedRefusals).toEqual([]);
  });

  it('a member reads destinations, schedule, payouts and holds, and gets no form or action', async () => {
    const member = await engine.call(
      'POST',
      '/v1/users',
      { email: 'payout-member@example.com', password: 'Member!2345-secret', role: 'member' },
      engine.tenant.headers,
    );
    expect(member.status).toBe(201);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const view = await watched(await context.newPage());
    await signIn(view, 'payout-member@example.com', 'Member!2345-secret');
    await view
      .getByText('Members can read payouts, destinations, schedules and holds; an owner or admin changes them.')
      .waitFor();
    await view.getByRole('region', { name: 'Bank accounts table' }).getByText('Ada Ltd •••• 7777').waitFor();
    await view.getByRole('region', { name: 'USD schedule' }).getByText('friday').waitFor();
    await view.getByRole('region', { name: 'Holds table' }).getByText('KYC review').waitFor();
    expect(await view.getByRole('form').count()).toBe(0);
    expect(await view.getByRole('button', { name: /^(Delete|Make|Cancel payout|Release)/ }).count()).toBe(0);
    await check('payouts-member', view);
    await context.close();
    expect(problems).toEqual([]);
  });
});
