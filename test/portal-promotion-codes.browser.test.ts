/**
 * A promotion code in the customer portal, in a real browser (Debian's chromium through
 * playwright-core against the app over real HTTP): no code field until the account allows
 * promotion codes; then the customer types a code (any case), the subscription's card shows the
 * discount, and the API holds it as the subscription's discount; a refused code shows the
 * API's message and changes nothing. Screenshotted and checked with axe-core. Also: a metered
 * subscription's card shows the period's usage so far (none yet, then two events' sum).
 */
import fs from 'node:fs';
import path from 'node:path';

import AxeBuilder from '@axe-core/playwright';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const screenshots = path.resolve('test-results');

describe('promotion codes in the portal, in chromium', () => {
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

  const call = async (method: string, apiPath: string, body?: unknown) => {
    const answer = await engine.call(method, apiPath, body, { ...engine.tenant.headers, 'x-sandbox-mode': 'true' });
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
    return answer.body as any;
  };

  it('a customer applies a promotion code to a subscription once the account allows it', async () => {
    const plan = await call('POST', '/v1/plans', { name: 'Studio', amount: 4000, currency: 'USD', interval: 'month' });
    const customer = await call('POST', '/v1/customers', {
      email: 'promo@example.com',
      name: 'Pat',
      payment_method: 'pm_card_visa',
    });
    const sub = await call('POST', '/v1/subscriptions', { customer: customer.id, plan: plan.id });
    await call('POST', '/v1/coupons', {
      id: 'STUDIO25',
      name: 'Studio launch',
      percent_off: 25,
      duration: 'repeating',
      duration_in_months: 3,
    });
    const code = await call('POST', '/v1/promotion_codes', { coupon: 'STUDIO25', code: 'HELLO25' });
    await call('POST', '/v1/promotion_codes', {
      coupon: 'STUDIO25',
      code: 'OTHERS',
      customer: (await call('POST', '/v1/customers', { email: 'x@example.com' })).id,
    });
    const link = (await call('POST', `/v1/customers/${customer.id}/portal_link`, {})) as { url: string };
    const url = `${baseUrl}/dashboard/portal#${link.url.split('#')[1]}`;

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const portal = await context.newPage();
    const problems: string[] = [];
    portal.on('pageerror', (error) => problems.push(error.message));
    await portal.goto(url);
    const card = portal.getByRole('article', { name: 'Subscription to Studio' });
    await card.waitFor();
    expect(await card.getByRole('form', { name: 'Promotion code' }).count()).toBe(0);

    await call('PATCH', '/v1/settings/customer_portal', { promotion_codes: true });
    await portal.reload();
    await card.getByRole('form', { name: 'Promotion code' }).waitFor();

    // Another customer's code: the API's message, nothing applied.
    await card.getByRole('textbox', { name: 'Promotion code' }).fill('others');
    await card.getByRole('button', { name: 'Apply code' }).click();
    await card.getByRole('alert').filter({ hasText: 'another customer' }).waitFor();
    expect((await call('GET', `/v1/subscriptions/${sub.id}`)).discount).toBeNull();

    await card.getByRole('textbox', { name: 'Promotion code' }).fill('hello25');
    await card.getByRole('button', { name: 'Apply code' }).click();
    await card.getByRole('status').filter({ hasText: 'Applied: Studio launch: 25% off until' }).waitFor();
    await card
      .getByText(/^Studio launch: 25% off until/)
      .first()
      .waitFor();
    const discount = (await call('GET', `/v1/subscriptions/${sub.id}`)).discount;
    expect(discount).toMatchObject({ coupon: { id: 'STUDIO25' }, promotion_code: code.id, subscription: sub.id });

    await portal.waitForLoadState('networkidle');
    await portal.screenshot({ path: path.join(screenshots, 'portal-promotion-code-desktop.png'), fullPage: true });
    const result = await new AxeBuilder({ page: portal }).analyze();
    const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("a metered subscription's card shows the usage of the period so far", async () => {
    const meter = await call('POST', '/v1/meters', {
      display_name: 'API tokens',
      event_name: 'tokens',
      aggregation: 'sum',
      value_property: 'tokens',
    });
    const plan = await call('POST', '/v1/plans', {
      name: 'Tokens',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      amount: 1,
    });
    const customer = await call('POST', '/v1/customers', {
      email: 'usage@example.com',
      payment_method: 'pm_card_visa',
    });
    // A threshold far above the usage here: the card says what bills early, and nothing does.
    const sub = await call('POST', '/v1/subscriptions', {
      customer: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 50000 },
    });
    const link = (await call('POST', `/v1/customers/${customer.id}/portal_link`, {})) as { url: string };
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const portal = await context.newPage();
    await portal.goto(`${baseUrl}/dashboard/portal#${link.url.split('#')[1]}`);
    const card = portal.getByRole('article', { name: 'Subscription to Tokens' });
    await card.getByText(/^No API tokens used yet \(.+ – .+\)$/).waitFor();
    const timestamp = new Date(Math.max(Date.now() - 1000, Date.parse(sub.current_period_start))).toISOString();
    for (const [identifier, tokens] of [
      ['ev-1', 1000.25],
      ['ev-2', 250.25],
    ] as const) {
      await call('POST', '/v1/meter_events', {
        event_name: 'tokens',
        customer: customer.id,
        identifier,
        timestamp,
        payload: { tokens },
      });
    }
    await portal.reload();
    await card.getByText(/^1,250\.5 API tokens \(.+ – .+\)$/).waitFor();
    expect(await card.getByText('Usage this period').count()).toBe(1);
    await card.getByText(/^\$500\.00 of usage: an invoice is made as soon as/).waitFor();
    await context.close();
  });
});
