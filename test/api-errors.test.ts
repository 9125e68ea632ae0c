import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Subscription } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

/**
 * Subscriptions that cannot be charged (issue #11) and the small edges of issue #12:
 * both names of the customer, and validation messages that say where and what.
 */
describe('api errors and subscription create edges', () => {
  let engine: TestEngine;
  let plan: string;
  let trialPlan: string;
  let withCard: string;
  let withoutCard: string;
  beforeAll(async () => {
    engine = await startTestEngine();
    plan = (await engine.call('POST', '/v1/plans', { name: 'Now', amount: 1500, currency: 'USD', interval: 'month' }))
      .body.id;
    trialPlan = (
      await engine.call('POST', '/v1/plans', {
        name: 'Trial',
        amount: 1500,
        currency: 'USD',
        interval: 'month',
        trial_period_days: 14,
      })
    ).body.id;
    withCard = (
      await engine.call('POST', '/v1/customers', { email: 'card@example.com', payment_method: 'pm_card_visa' })
    ).body.id;
    withoutCard = (await engine.call('POST', '/v1/customers', { email: 'nocard@example.com' })).body.id;
  });
  afterAll(() => engine?.close());

  const subscriptionsOf = (customerId: string) => engine.db.orm.em.fork().count(Subscription, { customerId });

  describe('a subscription that cannot be charged', () => {
    it('without a trial, for a customer with no payment method: 402 payment_method_required, nothing created', async () => {
      for (const body of [
        { customer_id: withoutCard, plan },
        { customer_id: withoutCard, plan: trialPlan, trial_period_days: 0 },
      ]) {
        const refused = await engine.call('POST', '/v1/subscriptions', body);
        expect(refused.status, JSON.stringify(body)).toBe(402);
        expect(refused.body.error).toBe('payment_method_required');
        expect(refused.body.message).toContain(withoutCard);
      }
      expect(await subscriptionsOf(withoutCard)).toBe(0);
      expect((await engine.call('GET', `/v1/subscriptions?customer=${withoutCard}`)).body.data).toHaveLength(0);
    });

    it("with a trial (the body's or the plan's) it is still created, trialing", async () => {
      const own = await engine.call('POST', '/v1/subscriptions', {
        customer_id: withoutCard,
        plan,
        trial_period_days: 7,
      });
      expect(own.status).toBe(201);
      expect(own.body.status).toBe('trialing');
      const plans = await engine.call('POST', '/v1/subscriptions', { customer_id: withoutCard, plan: trialPlan });
      expect(plans.body.status).toBe('trialing');
    });
  });

  describe('customer and customer_id', () => {
    it('create takes either name, not both', async () => {
      const byCustomer = await engine.call('POST', '/v1/subscriptions', { customer: withCard, plan });
      expect(byCustomer.status).toBe(201);
      expect(byCustomer.body).toMatchObject({ customer_id: withCard, status: 'active' });
      const both = await engine.call('POST', '/v1/subscriptions', { customer: withCard, customer_id: withCard, plan });
      expect(both.status).toBe(400);
      expect(both.body).toEqual({
        error: 'invalid_request',
        message: 'body: customer and customer_id name the same thing: give one of them, not both',
      });
      const neither = await engine.call('POST', '/v1/subscriptions', { plan });
      expect(neither.body).toEqual({ error: 'invalid_request', message: 'customer_id: required' });
    });

    it('the list filters by either name, not both', async () => {
      const byCustomer = (await engine.call('GET', `/v1/subscriptions?customer=${withCard}`)).body.data;
      const byCustomerId = (await engine.call('GET', `/v1/subscriptions?customer_id=${withCard}`)).body.data;
      expect(byCustomer.length).toBeGreaterThan(0);
      expect(byCustomer.every((s: { customer_id: string }) => s.customer_id === withCard)).toBe(true);
      expect(byCustomerId).toEqual(byCustomer);
      const both = await engine.call('GET', `/v1/subscriptions?customer=${withCard}&customer_id=${withCard}`);
      expect(both.body).toEqual({
        error: 'invalid_request',
        message: 'query: customer and customer_id name the same thing: give one of them, not both',
      });
    });
  });

  describe('validation messages', () => {
    it('an unknown query parameter is reported as a query parameter, on every route', async () => {
      for (const path of ['/v1/subscriptions?foo=1', '/v1/customers?foo=1', '/v1/plans?foo=1', '/v1/invoices?foo=1']) {
        const response = await engine.call('GET', path);
        expect(response.status, path).toBe(400);
        expect(response.body, path).toEqual({ error: 'invalid_request', message: 'query: unknown parameter foo' });
      }
    });

    it('an unknown body field is reported as a body field', async () => {
      const response = await engine.call('POST', '/v1/customers', { email: 'x@example.com', colour: 'red' });
      expect(response.body).toEqual({ error: 'invalid_request', message: 'body: unknown field colour' });
    });

    it('a bad date shows an example', async () => {
      const response = await engine.call('POST', '/v1/subscriptions', {
        customer_id: withCard,
        plan,
        pause_until: 'next tuesday',
      });
      expect(response.body).toEqual({
        error: 'invalid_request',
        message: 'pause_until: must be an ISO 8601 date-time such as 2026-01-31T00:00:00Z',
      });
    });

    it('a missing field says required', async () => {
      const response = await engine.call('POST', '/v1/subscriptions', { customer_id: withCard });
      expect(response.body).toEqual({ error: 'invalid_request', message: 'plan: required' });
    });
  });
});
