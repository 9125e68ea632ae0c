/**
 * The customer portal and phase-1 pricing (issue #26, "Everywhere it shows"): a tiered
 * plan's price reads as its tiers (not its one-unit amount), a subscription shows what its
 * quantity costs in its currency, and the customer changes the quantity only where the
 * account's customer_portal setting has quantity_changes (off by default): more now,
 * prorated and charged; fewer at the renewal; the same again refused; a 403 changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('portal quantity changes and tiered prices', () => {
  let engine: TestEngine;
  let token: string;
  let planId: string;
  let subscriptionId: string;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(async () => engine?.close());

  const portal = (method: string, path: string, body?: unknown, portalToken = token) =>
    engine.call(method, path, body, { authorization: '', 'x-portal-token': portalToken });

  it('shows a graduated plan by its tiers, and a subscription of 12 by what 12 cost in its currency', async () => {
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Seats',
      currency: 'USD',
      interval: 'month',
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 10, unit_amount: 1000 },
        { up_to: 'inf', unit_amount: 800 },
      ],
      currency_options: {
        EUR: {
          tiers: [
            { up_to: 10, unit_amount: 900 },
            { up_to: 'inf', unit_amount_decimal: '700.5' },
          ],
        },
      },
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);
    planId = plan.body.id;
    const customer = await engine.call('POST', '/v1/customers', {
      email: 'ada@example.com',
      payment_method: 'pm_card_visa',
    });
    const subscription = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      plan: planId,
      quantity: 12,
    });
    expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
    subscriptionId = subscription.body.id;
    const euro = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      plan: planId,
      quantity: 11,
      currency: 'EUR',
    });
    expect(euro.status, JSON.stringify(euro.body)).toBe(201);
    token = (await engine.call('POST', `/v1/customers/${customer.body.id}/portal_link`, {})).body.url.split('#')[1];

    const read = await portal('GET', '/v1/portal');
    expect(read.status).toBe(200);
    expect(read.body.permissions).toEqual({
      plan_changes: false,
      cancellation: true,
      resume: true,
      quantity_changes: false,
      promotion_codes: false,
      plans: null,
    });
    const byId = Object.fromEntries(read.body.subscriptions.map((s: any) => [s.id, s]));
    expect(byId[subscriptionId]).toMatchObject({
      quantity: 12,
      plan_details: {
        id: planId,
        pricing_scheme: 'tiered',
        currency: 'USD',
        price: 'Graduated: 1–10 at $10.00, 11+ at $8.00, every month',
        amount_at_quantity: 10 * 1000 + 2 * 800,
      },
    });
    // In EUR: the plan's EUR tiers, sub-minor digits kept; 10 × 9.00 + 7.005 = 97.005, billed 97.01 (rounded once).
    expect(byId[euro.body.id]).toMatchObject({
      quantity: 11,
      currency: 'EUR',
      plan_details: {
        currency: 'EUR',
        price: 'Graduated: 1–10 at €9.00, 11+ at €7.005, every month',
        amount_at_quantity: 9701,
      },
    });

    // The plan list (with plan changes allowed) says the tiers too, never the one-unit amount alone.
    await engine.call('PATCH', '/v1/settings/customer_portal', { plan_changes: true });
    const listed = (await portal('GET', '/v1/portal')).body.plans.find((p: any) => p.id === planId);
    expect(listed.price).toBe('Graduated: 1–10 at $10.00, 11+ at $8.00, every month');
    expect(listed.price).not.toBe('$10.00 every month');
  });

  it('refuses a quantity change until the account allows it, and the refusal changes nothing', async () => {
    const refused = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/quantity`, { quantity: 15 });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      error: 'forbidden',
      message: 'This account does not let customers change quantities in the portal.',
    });
    expect((await engine.call('GET', `/v1/subscriptions/${subscriptionId}`)).body).toMatchObject({
      quantity: 12,
      pending_quantity: null,
    });

    const setting = await engine.call('PATCH', '/v1/settings/customer_portal', { quantity_changes: true });
    expect(setting.status).toBe(200);
    expect(setting.body).toEqual({
      plan_changes: true,
      cancellation: true,
      resume: true,
      quantity_changes: true,
      promotion_codes: false,
      plans: null,
    });
    expect((await engine.call('GET', '/v1/settings/customer_portal')).body.quantity_changes).toBe(true);
    expect((await portal('GET', '/v1/portal')).body.permissions.quantity_changes).toBe(true);
  });

  it('more seats now (prorated at the tiers, charged), fewer at the renewal, the same again refused; bad bodies are 400', async () => {
    await engine.env.sleep(10 * day);
    const more = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/quantity`, { quantity: 15 });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect(more.body).toMatchObject({
      plan: planId,
      quantity: 15,
      pending_quantity: null,
      items: [{ plan: planId, quantity: 15 }],
    });
    // The change's invoice: the unused time of 12 seats credited, the rest of the period at 15 charged (both at the tiers).
    const invoices = await eventually(
      () => engine.invoices(subscriptionId),
      (list) => list.length === 2 && list.every((i) => i.status === 'paid'),
    );
    expect(invoices.length).toBe(2);
    const listed = await engine.call('GET', `/v1/invoices?subscription=${subscriptionId}`);
    const change = listed.body.data[0];
    const [credit, charge] = change.lines;
    expect([credit.quantity, charge.quantity, credit.plan, charge.plan]).toEqual([12, 15, planId, planId]);
    const fraction =
      (Date.parse(credit.period_end) - Date.parse(credit.period_start)) /
      (Date.parse(more.body.current_period_end) - Date.parse(more.body.current_period_start));
    expect(Math.abs(credit.amount + 11600 * fraction)).toBeLessThanOrEqual(0.5);
    expect(Math.abs(charge.amount - 14000 * fraction)).toBeLessThanOrEqual(0.5);

    const same = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/quantity`, { quantity: 15 });
    expect(same.status).toBe(409);
    expect(same.body).toEqual({ error: 'invalid_state', message: `The subscription is already on ${planId} × 15.` });
    const fewer = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/quantity`, { quantity: 5 });
    expect(fewer.status).toBe(200);
    expect(fewer.body).toMatchObject({ quantity: 15, pending_plan: planId, pending_quantity: 5 });
    const kept = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/quantity`, { quantity: 15 });
    expect(kept.body).toMatchObject({ quantity: 15, pending_plan: null, pending_quantity: null });

    for (const body of [{ quantity: 0 }, { quantity: 1.5 }, {}, { quantity: 3, plan: planId }]) {
      const bad = await portal('POST', `/v1/portal/subscriptions/${subscriptionId}/quantity`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
    // Another customer's subscription is not reachable with this token.
    const other = await engine.call('POST', '/v1/customers', {
      email: 'grace@example.com',
      payment_method: 'pm_card_visa',
    });
    const theirs = await engine.call('POST', '/v1/subscriptions', {
      customer_id: other.body.id,
      plan: planId,
      quantity: 2,
    });
    expect((await portal('POST', `/v1/portal/subscriptions/${theirs.body.id}/quantity`, { quantity: 20 })).status).toBe(
      404,
    );
    expect((await engine.call('GET', `/v1/subscriptions/${theirs.body.id}`)).body.quantity).toBe(2);
    expect((await engine.call('GET', `/v1/subscriptions/${subscriptionId}`)).body).toMatchObject({
      quantity: 15,
      pending_quantity: null,
    });
    expect((await engine.charges(subscriptionId)).length).toBe(2);
  });
});
