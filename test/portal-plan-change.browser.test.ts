/**
 * A plan change in the customer portal, in chromium (playwright-core against the app over real
 * HTTP): the portal offers only the plans the account chose; choosing one shows its preview (the
 * upgrade's prorated invoice charged now and the next invoice, GET /v1/portal/subscriptions/{id}/change_plan)
 * and changes nothing until the customer confirms; the confirmation charges what the preview said.
 * The card reads "Visa •••• 4242", the billing-details page links back to the portal, a paused
 * subscription shows no next charge. checkPageLayout at 1280 and 390 px (no sideways scroll, axe).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { checkPageLayout, launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('a plan change in the portal, in chromium', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let baseUrl: string;

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await engine?.close();
  });

  const call = async (method: string, apiPath: string, body?: unknown) => {
    const answer = await engine.call(method, apiPath, body, { ...engine.tenant.headers, 'x-sandbox-mode': 'true' });
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    return answer.body as any;
  };

  it('previews the upgrade, charges it only once confirmed, and links back from the payment page', async () => {
    const basic = await call('POST', '/v1/plans', { name: 'Basic', amount: 2000, currency: 'USD', interval: 'month' });
    const premium = await call('POST', '/v1/plans', {
      name: 'Premium',
      amount: 5000,
      currency: 'USD',
      interval: 'month',
    });
    const hidden = await call('POST', '/v1/plans', {
      name: 'Enterprise',
      amount: 9000,
      currency: 'USD',
      interval: 'month',
    });
    const customer = await call('POST', '/v1/customers', {
      email: 'lin@example.com',
      name: 'Lin',
      payment_method: 'pm_card_visa',
    });
    const sub = await call('POST', '/v1/subscriptions', { customer: customer.id, plan: basic.id });
    await call('PATCH', '/v1/settings/customer_portal', { plan_changes: true, plans: [premium.id] });
    const link = (await call('POST', `/v1/customers/${customer.id}/portal_link`, {})) as { url: string };

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${baseUrl}/dashboard/portal#${link.url.split('#')[1]}`);
    const card = page.getByRole('article', { name: 'Subscription to Basic' });
    await card.waitFor();
    const payment = page.getByRole('region', { name: 'Payment method' });
    await payment.getByText('Visa •••• 4242').waitFor();
    expect(await page.getByText('pm_card_visa').count()).toBe(0);
    const choice = card.getByRole('combobox', { name: 'Change plan' });
    expect(await choice.locator('option').allTextContents()).toEqual([
      'Choose a plan',
      expect.stringMatching(/^Premium · \$50\.00/),
    ]);
    expect(hidden.id).not.toBe(premium.id);
    await checkPageLayout(page, 'portal-plan-change', 'portal');

    await choice.selectOption(premium.id);
    await card.getByRole('button', { name: 'Review change' }).click();
    const preview = card.getByRole('region', { name: 'Plan change preview' });
    await preview.waitFor();
    const now = preview.getByRole('region', { name: 'Charged now' });
    await now.getByText(/^Unused time on Basic/).waitFor();
    await now.getByText(/^Remaining time on Premium/).waitFor();
    await preview
      .getByRole('region', { name: /^Next invoice, / })
      .getByText('$50.00')
      .first()
      .waitFor();
    const confirm = preview.getByRole('button', { name: /^Confirm and pay \$\d+\.\d\d$/ });
    const shown = Math.round(Number((await confirm.textContent())!.replace(/^Confirm and pay \$/, '')) * 100);
    expect(shown).toBeGreaterThan(2000);
    expect(shown).toBeLessThanOrEqual(3000);
    await checkPageLayout(page, 'portal-plan-change', 'preview');
    // Nothing changed before the confirmation.
    expect((await call('GET', `/v1/subscriptions/${sub.id}`)).plan).toBe(basic.id);

    await confirm.click();
    await page
      .getByRole('status')
      .filter({ hasText: /^You are now on Premium; \$\d+\.\d\d was charged\.$/ })
      .waitFor();
    const changed = await call('GET', `/v1/subscriptions/${sub.id}`);
    expect(changed.plan).toBe(premium.id);
    const invoice = await call('GET', `/v1/invoices/${changed.latest_invoice}`);
    expect(invoice.status).toBe('paid');
    // Made a moment after the preview: at most a cent of rounding apart.
    expect(Math.abs(invoice.amount_due - shown)).toBeLessThanOrEqual(1);
    await page.getByRole('article', { name: 'Subscription to Premium' }).waitFor();

    // The payment page the portal opens links back to it.
    await page.getByRole('link', { name: 'Update payment method' }).click();
    await page.getByRole('heading', { name: 'Billing details' }).waitFor();
    await checkPageLayout(page, 'portal-plan-change', 'billing-details');
    await page.getByRole('link', { name: '← Back to your billing portal' }).click();
    await page.getByRole('article', { name: 'Subscription to Premium' }).waitFor();

    // Paused: no next charge shown.
    await call('POST', `/v1/subscriptions/${sub.id}/pause`, {});
    await page.reload();
    const paused = page.getByRole('article', { name: 'Subscription to Premium' });
    await paused.getByText('paused').first().waitFor();
    expect(await paused.getByText('Next charge').count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  });
});
