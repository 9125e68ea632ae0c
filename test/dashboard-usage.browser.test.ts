/**
 * Usage (#28) in the dashboard, in a real browser (Debian's chromium, playwright-core, the real app
 * over real HTTP): the Meters page (empty, a meter created with its aggregation, value property and
 * group-by, another deactivated and reactivated, each checked in the API), and on a customer's page
 * the usage of the month per meter: "no usage yet" before any event, a bar chart per day once events
 * arrived (the month's value as the meter aggregates it), and the upcoming invoices of the customer's
 * subscriptions (a metered one's carries the usage so far). Screenshots test-results/dashboard-usage-*-{desktop,390}.png, axe-core at both
 * widths, no sideways scroll, no failed request.
 */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { checkPageLayout, launchChromium, servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const sandbox = { 'x-sandbox-mode': 'true' };

describe('meters and customer usage in the dashboard (chromium)', () => {
  let engine: TestEngine;
  let api: RunningApi;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  const problems: string[] = [];

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of 401/.test(message.text())) problems.push(message.text());
    });
    page.on('response', (response) => {
      const url = new URL(response.url());
      if (response.status() < 400 || (response.status() === 401 && url.pathname === '/v1/auth/browser_session')) return;
      problems.push(`${response.request().method()} ${url.pathname} ${response.status()}`);
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

  const callApi = async (method: string, apiPath: string, body?: unknown) => {
    const answer = await engine.call(method, apiPath, body, { ...engine.tenant.headers, ...sandbox });
    expect(answer.status, `${method} ${apiPath}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    return answer.body as any;
  };
  const meterByEvent = async (eventName: string) =>
    ((await callApi('GET', `/v1/meters?event_name=${eventName}`)).data as any[])[0];

  it('creates a meter, deactivates and reactivates another', { timeout: 60_000 }, async () => {
    await page.goto(`${baseUrl}/dashboard`);
    await page.getByLabel('Email').fill(engine.tenant.email);
    await page.getByLabel('Password').fill(engine.tenant.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Meters', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Meters' }).waitFor();
    const table = page.getByRole('region', { name: 'Meters table' });
    await table.getByText('No meters yet.').waitFor();

    const form = page.getByRole('form', { name: 'New meter' });
    await form.getByLabel('Display name').fill('API tokens');
    await form.getByLabel('Event name').fill('api_tokens');
    await form.getByLabel('Aggregation').selectOption('sum');
    await form.getByLabel('Value property').fill('tokens');
    await form.getByLabel('Group by (comma-separated, up to 3)').fill('model, region');
    await form.getByRole('button', { name: 'Create meter' }).click();
    await table.getByText('sum of tokens by model, region').waitFor();
    expect(await meterByEvent('api_tokens')).toMatchObject({
      display_name: 'API tokens',
      aggregation: 'sum',
      value_property: 'tokens',
      group_by: ['model', 'region'],
      status: 'active',
      livemode: false,
    });

    // A count meter takes no value property.
    await form.getByLabel('Aggregation').selectOption('count');
    expect(await form.getByLabel('Value property').count()).toBe(0);
    await form.getByLabel('Display name').fill('Calls');
    await form.getByLabel('Event name').fill('calls');
    await form.getByRole('button', { name: 'Create meter' }).click();
    await table.getByRole('button', { name: 'Deactivate calls' }).click();
    await table.getByRole('button', { name: 'Reactivate calls' }).waitFor();
    expect((await meterByEvent('calls')).status).toBe('inactive');
    await table.getByRole('button', { name: 'Reactivate calls' }).click();
    await table.getByRole('button', { name: 'Deactivate calls' }).waitFor();
    expect(await meterByEvent('calls')).toMatchObject({ aggregation: 'count', status: 'active' });
    await checkPageLayout(page, 'dashboard-usage', 'meters');
    expect(problems).toEqual([]);
  });

  it(
    "charts a customer's usage of the month per meter, says when there is none, and shows the upcoming invoice",
    { timeout: 60_000 },
    async () => {
      const customer = await callApi('POST', '/v1/customers', {
        email: 'usage@example.com',
        name: 'Usage Co',
        payment_method: 'pm_card_visa',
      });
      const plan = await callApi('POST', '/v1/plans', {
        name: 'Base',
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const subscription = await callApi('POST', '/v1/subscriptions', {
        customer_id: customer.id,
        plan: plan.id,
        trial_period_days: 0,
      });
      // A metered plan at 1 cent a token on the meter made in the page: its upcoming invoice carries the usage so far.
      const metered = await callApi('POST', '/v1/plans', {
        name: 'Tokens',
        amount: 1,
        currency: 'USD',
        interval: 'month',
        usage_type: 'metered',
        meter: (await meterByEvent('api_tokens')).id,
      });
      const usageSubscription = await callApi('POST', '/v1/subscriptions', {
        customer_id: customer.id,
        plan: metered.id,
        trial_period_days: 0,
      });

      await page.goto(`${baseUrl}/dashboard/customers/${customer.id}`);
      const usage = page.getByRole('region', { name: 'Usage' });
      const tokens = usage.getByRole('figure', { name: 'Usage of API tokens' });
      await tokens.getByText(/^No usage yet in /).waitFor();
      await usage
        .getByRole('figure', { name: 'Usage of Calls' })
        .getByText(/^No usage yet in /)
        .waitFor();

      // Stamped in the second the period began, before its millisecond: a period's usage is counted on whole seconds
      // (docs/usage.md#timestamps), so the upcoming invoice carries them.
      const now = Math.floor(Date.parse(usageSubscription.current_period_start) / 1000);
      const sent = await callApi('POST', '/v1/meter_events/batch', {
        events: [
          {
            event_name: 'api_tokens',
            customer: customer.id,
            identifier: 'u-1',
            timestamp: now,
            payload: { tokens: '1000.5', model: 'small' },
          },
          {
            event_name: 'api_tokens',
            customer: customer.id,
            identifier: 'u-2',
            timestamp: now,
            payload: { tokens: 250, model: 'large' },
          },
        ],
      });
      expect(sent.accepted).toBe(2);
      await page.reload();
      await tokens.locator('.recharts-bar-rectangle').first().waitFor();
      expect(await tokens.locator('figcaption').innerText()).toMatch(/: 1250\.5 in .+ \(2 events\)$/);
      // One point per day of the month; today's holds the two events.
      const points = (await tokens.getAttribute('data-points'))!.split(',').map(Number);
      const today = new Date();
      expect(points).toHaveLength(new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 0)).getUTCDate());
      expect(points[today.getUTCDate() - 1]).toBe(1250.5);
      expect(points.reduce((a, b) => a + b, 0)).toBe(1250.5);
      await usage
        .getByRole('figure', { name: 'Usage of Calls' })
        .getByText(/^No usage yet in /)
        .waitFor();

      const upcoming = page.getByRole('region', { name: 'Upcoming invoices' });
      await upcoming.getByRole('heading', { name: /^Next invoice of Base: \$15\.00 on / }).waitFor();
      await upcoming
        .getByRole('region', { name: `Upcoming invoice of ${subscription.id}` })
        .getByText('$15.00')
        .first()
        .waitFor();
      // The metered subscription's next invoice has its usage line: the events sent so far (1250.5 tokens at 1¢, $12.505 rounded half away from zero).
      await upcoming.getByRole('heading', { name: /^Next invoice of Tokens: \$12\.51 on / }).waitFor();
      const usageLine = upcoming
        .getByRole('region', { name: `Upcoming invoice of ${usageSubscription.id}` })
        .getByRole('row')
        .nth(1);
      expect(await usageLine.getByRole('cell').allInnerTexts()).toEqual([
        expect.stringMatching(/^Tokens: usage /),
        '1250.5',
        expect.any(String),
        '$12.51',
      ]);
      await checkPageLayout(page, 'dashboard-usage', 'customer');
      expect(problems).toEqual([]);
    },
  );
});
