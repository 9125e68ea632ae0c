/**
 * Branding, the home charts and undoing a cancel in a real browser (Debian's chromium via
 * playwright-core, the real app over real HTTP): an owner sets the business name, colour and
 * logo on the settings page; the home charts draw the API's reports (GET /v1/reports/*); a
 * customer sees the colour and logo in the portal and clicks "Resume" on a subscription set to
 * cancel at period end. Screenshots at desktop and 390 px (test-results/dashboard-*.png), axe
 * with no serious or critical violation, no CSP violation, no failed request.
 */
import fs from 'node:fs';
import path from 'node:path';

import AxeBuilder from '@axe-core/playwright';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { solidPng } from './helpers/png.ts';

const screenshots = path.resolve('test-results');
const sandbox = { 'x-sandbox-mode': 'true' };

describe('branding, charts and resume in chromium', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let baseUrl: string;
  const problems: string[] = [];

  const watch = (on: Page) => {
    on.on('console', (message) => {
      if (message.type() === 'error' && !/status of 401/.test(message.text())) problems.push(message.text());
    });
    on.on('response', (response) => {
      const url = new URL(response.url());
      if (response.status() < 400 || (response.status() === 401 && url.pathname === '/v1/auth/browser_session')) return;
      problems.push(`${response.request().method()} ${url.pathname} answered ${response.status()}`);
    });
    on.on('pageerror', (error) => problems.push(error.message));
    on.on('dialog', (dialog) => void dialog.accept());
  };

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watch(page);
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await engine?.close();
  });

  const callApi = async (method: string, apiPath: string, body?: unknown) =>
    (await engine.call(method, apiPath, body, { ...engine.tenant.headers, ...sandbox })).body as any;

  async function check(name: string, on: Page) {
    await on.waitForLoadState('networkidle');
    await on.screenshot({ path: path.join(screenshots, `dashboard-${name}-desktop.png`), fullPage: true });
    await on.setViewportSize({ width: 390, height: 844 });
    await on.screenshot({ path: path.join(screenshots, `dashboard-${name}-390.png`), fullPage: true });
    expect(
      await on.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
      `${name} scrolls sideways at 390 px`,
    ).toBeLessThanOrEqual(1);
    await on.setViewportSize({ width: 1280, height: 900 });
    const result = await new AxeBuilder({ page: on }).analyze();
    const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(
      serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
      name,
    ).toEqual([]);
  }

  it('an owner sets the business name, colour and logo on the settings page', async () => {
    await page.goto(`${baseUrl}/dashboard`);
    await page.getByLabel('Email').fill(engine.tenant.email);
    await page.getByLabel('Password').fill(engine.tenant.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings', exact: true }).click();
    const form = page.getByRole('form', { name: 'Branding' });
    await form.waitFor();
    await form.getByLabel('Business name').fill('Rocket Supply Co');
    await form.getByLabel('Brand colour').fill('#0f766e');
    await form
      .getByLabel(/^Logo/)
      .setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: solidPng(96, 32, [15, 118, 110]) });
    await form.getByRole('button', { name: 'Save branding' }).click();
    await form.getByText('Branding saved.').waitFor();
    await form.getByRole('img', { name: 'Current logo' }).waitFor();
    expect(
      await form.getByRole('img', { name: 'Current logo' }).evaluate((img: any) => img.complete && img.naturalWidth),
    ).toBe(96);
    const saved = await callApi('GET', '/v1/settings/branding');
    expect(saved).toMatchObject({
      business_name: 'Rocket Supply Co',
      brand_color: '#0f766e',
      logo_url: expect.stringContaining('/branding/'),
    });
    await check('settings-branding', page);
  });

  it("the home charts draw the API's reports: today's net revenue and the MRR", async () => {
    const paid = await callApi('POST', '/v1/transactions', {
      account_id: engine.tenant.accountId,
      amount: 4200,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_card_visa',
    });
    expect(paid.status).toBe('succeeded');
    const customer = await callApi('POST', '/v1/customers', {
      email: 'ada@example.com',
      name: 'Ada',
      payment_method: 'pm_card_visa',
    });
    const plan = await callApi('POST', '/v1/plans', { name: 'Pro', amount: 2000, currency: 'USD', interval: 'month' });
    const subscription = await callApi('POST', '/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(subscription.status).toBe('active');
    // The subscription's created_at is its workflow's clock: here the time-skipping test server this
    // file shares with earlier ones, which may have skipped years ahead (in production it is the wall
    // clock). The page asks for MRR up to the wall clock's now, so the row is dated now.
    await engine.db.orm.em
      .getConnection()
      .execute('update subscriptions set created_at = now() where id = ?', [subscription.id]);
    await expect
      .poll(async () => (await callApi('GET', '/v1/reports/mrr')).data[0]?.points.at(-1)?.mrr, { timeout: 20_000 })
      .toBe(2000);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Home', exact: true }).click();
    const revenue = page.getByRole('figure', { name: 'Net revenue per day' });
    // 42.00 paid, then 20.00 for the subscription's first invoice: 62 today, in major units.
    await expect.poll(() => revenue.getAttribute('data-points'), { timeout: 20_000 }).toMatch(/(^|,)62$/);
    await expect
      .poll(() => page.getByRole('figure', { name: 'Monthly recurring revenue' }).getAttribute('data-points'), {
        timeout: 20_000,
      })
      .toMatch(/(^|,)20$/);
    await page.getByLabel('Per', { exact: true }).selectOption('month');
    await page.getByRole('figure', { name: 'Net revenue per month' }).waitFor();
    await expect
      .poll(() => page.getByRole('figure', { name: 'Net revenue per month' }).getAttribute('data-points'), {
        timeout: 20_000,
      })
      .toMatch(/(^|,)62$/);
    await check('home-reports', page);
  });

  it('a customer sees the brand in the portal and clicks Resume on a subscription set to cancel at period end', async () => {
    const customer = await callApi('POST', '/v1/customers', {
      email: 'grace@example.com',
      name: 'Grace',
      payment_method: 'pm_card_visa',
    });
    const plan = await callApi('POST', '/v1/plans', { name: 'Team', amount: 5000, currency: 'USD', interval: 'month' });
    const subscription = await callApi('POST', '/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(
      (await callApi('POST', `/v1/subscriptions/${subscription.id}/cancel`, { at_period_end: true }))
        .cancel_at_period_end,
    ).toBe(true);
    const link = await callApi('POST', `/v1/customers/${customer.id}/portal_link`, {});
    const customerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const portal = await customerContext.newPage();
    watch(portal);
    await portal.goto(link.url.replace(engine.config.publicUrl, baseUrl));
    await portal.getByRole('heading', { name: 'Rocket Supply Co billing' }).waitFor();
    const header = portal.locator('header.portal-brand');
    expect(await header.getAttribute('data-brand-color')).toBe('#0f766e');
    expect(await header.evaluate((el: any) => (globalThis as any).getComputedStyle(el).backgroundColor)).toBe(
      'rgb(15, 118, 110)',
    );
    const logo = portal.getByRole('img', { name: 'Rocket Supply Co logo' });
    await logo.waitFor();
    expect(await logo.evaluate((img: any) => img.complete && img.naturalWidth)).toBe(96);

    const card = portal.getByRole('article', { name: 'Subscription to Team' });
    await card.getByText('Ends on').waitFor();
    await check('portal-branded', portal);
    await card.getByRole('button', { name: 'Resume' }).click();
    await card.getByText('Next charge').waitFor();
    await card.getByRole('button', { name: 'Cancel at period end' }).waitFor();
    expect((await callApi('GET', `/v1/subscriptions/${subscription.id}`)).cancel_at_period_end).toBe(false);
    await customerContext.close();
    expect(problems).toEqual([]);
  });

  it("an owner takes a cancel back on the subscription's page", async () => {
    const customer = await callApi('POST', '/v1/customers', {
      email: 'lin@example.com',
      payment_method: 'pm_card_visa',
    });
    const plan = await callApi('POST', '/v1/plans', { name: 'Solo', amount: 900, currency: 'USD', interval: 'month' });
    const subscription = await callApi('POST', '/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    await page.goto(`${baseUrl}/dashboard/subscriptions/${subscription.id}`);
    await page.getByRole('button', { name: 'Cancel at period end' }).click();
    await page.getByText('(cancels at period end)').waitFor();
    await page.getByRole('button', { name: 'Keep subscription (undo cancel)' }).click();
    await page.getByRole('button', { name: 'Cancel at period end' }).waitFor();
    expect(await page.getByText('(cancels at period end)').count()).toBe(0);
    expect((await callApi('GET', `/v1/subscriptions/${subscription.id}`)).cancel_at_period_end).toBe(false);
    expect(problems).toEqual([]);
  });
});
