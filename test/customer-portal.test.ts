/**
 * The customer portal's API (api/routes/customer-portal.ts): a signed link per customer
 * (emailed on request), every call scoped to that customer, actions gated by the
 * account's portal setting, and cancel at period end / resume / plan change going to
 * the subscription's workflow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('customer portal', () => {
  let engine: TestEngine;
  let customerId: string;
  let planId: string;
  let subscriptionId: string;
  let token: string;
  beforeAll(async () => {
    engine = await startTestEngine();
    ({ customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 }));
    const subscription = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(subscription.status).toBe(201);
    subscriptionId = subscription.body.id;
  });
  afterAll(async () => engine?.close());

  const portal = (method: string, path: string, body?: unknown, portalToken = token) =>
    engine.call(method, path, body, { authorization: '', 'x-portal-token': portalToken });

  it('an owner makes a signed 7-day link and can have it emailed to the customer', async () => {
    const link = await engine.call('POST', `/v1/customers/${customerId}/portal_link`, { send_email: true });
    expect(link.status).toBe(201);
    expect(link.body.url).toMatch(/\/dashboard\/portal#ey/);
    expect(new Date(link.body.expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    token = link.body.url.split('#')[1];
    await expect.poll(() => engine.mail.messages.some((m) => m.parsed.subject?.startsWith('Manage your'))).toBe(true);
    const mail = engine.mail.messages.find((m) => m.parsed.subject?.startsWith('Manage your'));
    expect(mail!.envelopeTo).toEqual(['ada@example.com']);
    expect(mail!.parsed.text).toContain(link.body.url);
    expect((await engine.call('POST', '/v1/customers/cus_01jd3x5k8q0m2v7c9r4t6y1w3e/portal_link', {})).status).toBe(
      404,
    );
  });

  it("the token is the credential: missing, forged or another purpose's token is refused", async () => {
    expect((await portal('GET', '/v1/portal', undefined, '')).status).toBe(401);
    expect((await portal('GET', '/v1/portal', undefined, `${token.slice(0, -3)}abc`)).status).toBe(401);
    // An owner's access token is not a portal token.
    expect((await portal('GET', '/v1/portal', undefined, engine.tenant.accessToken)).status).toBe(401);
    const read = await portal('GET', '/v1/portal');
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      customer: { id: customerId, email: 'ada@example.com', payment_method: 'pm_card_visa' },
      permissions: { plan_changes: false, cancellation: true, resume: true, quantity_changes: false },
      plans: [],
      subscriptions: [{ id: subscriptionId, plan_details: { id: planId, price: expect.stringContaining('20.00') } }],
    });
    expect(read.body.payment_method_url).toMatch(/\/billing\//);
    const invoices = await portal('GET', '/v1/portal/invoices');
    expect(invoices.status).toBe(200);
    expect(invoices.body.data[0]).toMatchObject({ status: 'paid', pdf: expect.stringContaining('/invoices/') });
    expect((await fetchPdf(invoices.body.data[0].pdf)).status).toBe(200);
  });

  async function fetchPdf(url: string) {
    return engine.app.request(url.replace(engine.config.publicUrl, ''));
  }

  it("another customer's subscription is not reachable with this token", async () => {
    const other = await engine.call('POST', '/v1/customers', {
      email: 'grace@example.com',
      payment_method: 'pm_card_visa',
    });
    const theirs = await engine.call('POST', '/v1/subscriptions', { customer_id: other.body.id, plan: planId });
    const attempt = await portal('POST', `/v1/portal/subscriptions/${theirs.body.id}/cancel`);
    expect(attempt.status).toBe(404);
    expect((await engine.call('GET', `/v1/subscriptions/${theirs.body.id}`)).body.cancel_at_period_end).toBe(false);
  });

  it('resumes a paused subscription and cancels at period end; plan changes only once the account allows them', async () => {
    expect((await engine.call('POST', `/v1/subscriptions/${subscriptionId}/pause`, {})).body.status).toBe('paused');
    const resumed = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe('active');

    const premium = await engine.call('POST', '/v1/plans', {
      name: 'Premium',
      amount: 5000,
      currency: 'USD',
      interval: 'month',
    });
    const refused = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/change_plan`, {
      plan: premium.body.id,
    });
    expect(refused.status).toBe(403);
    const setting = await engine.call('PATCH', '/v1/settings/customer_portal', {
      plan_changes: true,
      cancellation: false,
    });
    expect(setting.body).toEqual({
      plan_changes: true,
      cancellation: false,
      resume: true,
      quantity_changes: false,
      promotion_codes: false,
      plans: null,
    });
    expect((await portal('GET', '/v1/portal')).body.plans.map((p: { id: string }) => p.id)).toContain(premium.body.id);

    // The account chooses the plans the portal offers: a bad list is refused and changes nothing; another plan is then 403.
    const other = await engine.call('POST', '/v1/plans', {
      name: 'Other',
      amount: 9000,
      currency: 'USD',
      interval: 'month',
    });
    const fee = await engine.call('POST', '/v1/plans', {
      name: 'Setup',
      amount: 900,
      currency: 'USD',
      type: 'one_time',
    });
    expect(fee.status).toBe(201);
    const badList = await engine.call('PATCH', '/v1/settings/customer_portal', {
      plans: [premium.body.id, fee.body.id],
      cancellation: true,
    });
    expect(badList.status).toBe(400);
    expect(badList.body.message).toContain(`plans: ${fee.body.id} is a one_time plan`);
    expect(
      (await engine.call('PATCH', '/v1/settings/customer_portal', { plans: ['plan_01jd3x5k8q0m2v7c9r4t6y1w3e'] }))
        .status,
    ).toBe(400);
    expect((await engine.call('GET', '/v1/settings/customer_portal')).body).toMatchObject({
      cancellation: false,
      plans: null,
    });
    const listed = await engine.call('PATCH', '/v1/settings/customer_portal', {
      plans: [premium.body.id, premium.body.id],
    });
    expect(listed.body.plans).toEqual([premium.body.id]);
    expect((await portal('GET', '/v1/portal')).body.plans.map((p: { id: string }) => p.id)).toEqual([premium.body.id]);
    expect(
      (await portal('GET', `/v1/portal/subscriptions/${subscriptionId}/change_plan?plan=${other.body.id}`)).status,
    ).toBe(403);
    expect(
      (await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/change_plan`, { plan: other.body.id })).status,
    ).toBe(403);

    // The preview: the upgrade's proration charged now, then the next renewal at the new price; nothing changes.
    const preview = await portal(
      'GET',
      `/v1/portal/subscriptions/${subscriptionId}/change_plan?plan=${premium.body.id}`,
    );
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body).toMatchObject({
      object: 'plan_change_preview',
      kind: 'upgrade',
      next_invoice: { total: 5000, lines: [{ amount: 5000 }] },
    });
    const [unused, remaining] = preview.body.due_now.lines;
    expect(unused.amount).toBeLessThan(0);
    expect(unused.amount).toBeGreaterThanOrEqual(-2000);
    expect(remaining.amount).toBeGreaterThan(0);
    expect(preview.body.due_now.amount_due).toBe(unused.amount + remaining.amount);
    expect((await engine.call('GET', `/v1/subscriptions/${subscriptionId}`)).body.plan).toBe(planId);

    const changed = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/change_plan`, {
      plan: premium.body.id,
    });
    expect(changed.status).toBe(200);
    expect(changed.body.plan).toBe(premium.body.id);
    const charged = await engine.call('GET', `/v1/invoices/${changed.body.latest_invoice}`);
    expect(charged.body.status).toBe('paid');
    // Made a moment after the preview: the proration may differ by the rounding of that moment, a cent at most.
    expect(Math.abs(charged.body.amount_due - preview.body.due_now.amount_due)).toBeLessThanOrEqual(1);
    await engine.call('PATCH', '/v1/settings/customer_portal', { plans: null });
    expect((await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/cancel`)).status).toBe(403);
    await engine.call('PATCH', '/v1/settings/customer_portal', { cancellation: true });
    const canceled = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ cancel_at_period_end: true, status: 'active' });
    expect((await engine.call('GET', `/v1/subscriptions/${subscriptionId}`)).body.cancel_at_period_end).toBe(true);
  });

  it("a metered subscription's portal answer carries the period's usage so far, sent through /v1/meter_events", async () => {
    const make = async (path: string, body: unknown) => {
      const answer = await engine.call('POST', path, body);
      expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
      return answer.body;
    };
    const customer = await make('/v1/customers', { email: 'lin@example.com', payment_method: 'pm_card_visa' });
    const meter = await make('/v1/meters', {
      display_name: 'API tokens',
      event_name: 'tokens',
      aggregation: 'sum',
      value_property: 'tokens',
    });
    const plan = await make('/v1/plans', {
      name: 'Tokens',
      currency: 'USD',
      interval: 'month',
      usage_type: 'metered',
      meter: meter.id,
      amount: 1,
    });
    const sub = await make('/v1/subscriptions', {
      customer_id: customer.id,
      plan: plan.id,
      billing_thresholds: { amount_gte: 50000 },
    });
    const token = (await make(`/v1/customers/${customer.id}/portal_link`, {})).url.split('#')[1];
    const read = async () =>
      (await engine.call('GET', '/v1/portal', undefined, { authorization: '', 'x-portal-token': token })).body
        .subscriptions[0];
    const usage = {
      meter: meter.id,
      meter_name: 'API tokens',
      period_start: sub.current_period_start,
      period_end: sub.current_period_end,
    };
    // Nothing sent yet: the item shows zero (the page's empty state).
    expect((await read()).items).toEqual([
      expect.objectContaining({ plan: plan.id, usage: { ...usage, quantity: '0' } }),
    ]);
    // Inside the period: it started when the subscription was made, just before.
    const timestamp = new Date(Math.max(Date.now() - 1000, Date.parse(sub.current_period_start))).toISOString();
    await make('/v1/meter_events', {
      event_name: 'tokens',
      customer: customer.id,
      identifier: 'ev-1',
      timestamp,
      payload: { tokens: 1000.25 },
    });
    await make('/v1/meter_events', {
      event_name: 'tokens',
      customer: customer.id,
      identifier: 'ev-2',
      timestamp,
      payload: { tokens: 250.25 },
    });
    expect((await read()).items).toEqual([
      expect.objectContaining({ plan: plan.id, usage: { ...usage, quantity: '1250.5' } }),
    ]);
    // What bills early (docs/usage.md#in-the-portal): far above this usage, so nothing did.
    expect((await read()).billing_thresholds).toEqual({ amount_gte: 50000, reset_billing_cycle_anchor: false });
  }, 60_000);
});
