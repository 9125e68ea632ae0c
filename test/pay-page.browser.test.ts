/**
 * The pay page in a real browser: Debian's chromium driven by playwright-core (no
 * browser is downloaded), against the real app served over real HTTP with
 * PUBLIC_URL pointing at it. Screenshots land in test-results/pay-page-*.png.
 */
import fs from 'node:fs';
import path from 'node:path';

import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { SandboxProcessorCharge } from '../db/entities/index.ts';
import { launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const screenshots = path.resolve('test-results');

describe('the pay page in chromium', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    fs.mkdirSync(screenshots, { recursive: true });
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await engine?.close();
  });

  /** The API over real HTTP, as the engine's owner. */
  async function callApi(method: string, apiPath: string, body?: unknown) {
    const response = await fetch(`${baseUrl}${apiPath}`, {
      method,
      headers: { ...engine.tenant.headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: (await response.json()) as any };
  }
  const requestPayment = (amount: number, reference: string) =>
    callApi('POST', '/v1/payments', {
      account_id: engine.tenant.accountId,
      amount,
      currency: 'USD',
      customer_email: 'grace@example.com',
      reference,
    });
  const processorCharges = (id: string) =>
    engine.db.orm.em.fork().count(SandboxProcessorCharge, { idempotencyKey: { $like: `${id}:%` } });
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(screenshots, `pay-page-${name}.png`), fullPage: true });

  it('opens payment_url, pays with a test card, and the API then reports succeeded (a double click charges once)', async () => {
    const created = await requestPayment(12_900, 'Invoice 2026-114');
    expect(created.status).toBe(201);
    expect(created.body.payment_url.startsWith(`${baseUrl}/pay/`)).toBe(true);
    const page = await browser.newPage({ viewport: { width: 900, height: 1000 } });
    const errors: string[] = [];
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
    const opened = await page.goto(created.body.payment_url);
    expect(opened?.status()).toBe(200);
    await expect(page.title()).resolves.toBe('Pay $129.00 to Acme');
    expect(await page.textContent('.amount')).toBe('$129.00');
    expect(await page.textContent('main')).toContain('Invoice 2026-114');
    await page.check('input[value="pm_card_visa"]');
    await shot(page, 'form');
    await page.dblclick('button[type="submit"]');
    await page.waitForSelector('text=Payment successful');
    await shot(page, 'success');
    expect(await page.textContent('main')).toContain('You paid $129.00 to Acme.');
    // No CSP violation or script error on the way.
    expect(errors).toEqual([]);
    const status = await callApi('GET', `/v1/payments/${created.body.id}/status`);
    expect(status.body).toMatchObject({ id: created.body.id, status: 'succeeded', amount: 12_900, currency: 'USD' });
    expect(await processorCharges(created.body.id)).toBe(1);
    // Opening the link again says it is paid.
    await page.goto(created.body.payment_url);
    expect(await page.textContent('h1')).toBe('This request has been paid');
    await page.close();
  });

  it('a declined card shows the reason and the form again; another card then pays', async () => {
    const created = await requestPayment(4_200, 'Order 7');
    const page = await browser.newPage({ viewport: { width: 900, height: 1000 } });
    await page.goto(created.body.payment_url);
    await page.check('input[value="pm_card_chargeDeclined"]');
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    expect(await page.textContent('[role="alert"]')).toContain('Your card was declined.');
    await shot(page, 'declined');
    expect((await callApi('GET', `/v1/payments/${created.body.id}`)).body).toMatchObject({
      status: 'pending',
      last_payment_error: { code: 'card_declined' },
    });
    await page.check('input[value="pm_card_visa"]');
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    expect(await page.textContent('h1')).toBe('Payment successful');
    expect((await callApi('GET', `/v1/payments/${created.body.id}/status`)).body.status).toBe('succeeded');
    expect(await processorCharges(created.body.id)).toBe(2);
    await page.close();
  });

  it('works with JavaScript turned off', async () => {
    const created = await requestPayment(1_000, 'no-js');
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(created.body.payment_url);
    await page.check('input[value="pm_card_mastercard"]');
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    expect(await page.textContent('h1')).toBe('Payment successful');
    expect((await callApi('GET', `/v1/payments/${created.body.id}/status`)).body.status).toBe('succeeded');
    await context.close();
  });

  it('a canceled or unknown link shows a clear page with its status', async () => {
    const created = await requestPayment(500, 'to cancel');
    await callApi('POST', `/v1/payments/${created.body.id}/cancel`);
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    const canceled = await page.goto(created.body.payment_url);
    expect(canceled?.status()).toBe(410);
    expect(await page.textContent('h1')).toBe('This payment request was canceled');
    await shot(page, 'canceled');
    const unknown = await page.goto(`${baseUrl}/pay/${'x'.repeat(43)}`);
    expect(unknown?.status()).toBe(404);
    expect(await page.textContent('h1')).toBe('Payment link not found');
    await page.close();
  });
});
