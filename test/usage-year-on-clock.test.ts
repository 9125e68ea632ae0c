/**
 * A year of usage billing on a test clock (#28): a metered subscription with graduated tiers, events
 * every month stamped in the clock's time (one left to default to the clock's now, one stamped
 * explicitly), the clock advanced month by month; each of the 12 usage invoices bills its month's
 * quantity at an amount computed here by hand (micro-units), and is paid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { graduatedReference, usageSetup } from './helpers/usage.ts';

describe('a year of usage on a test clock', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('bills 12 months of usage on 12 invoices, each at its reference amount', async () => {
    const tiers = [
      { upTo: 1000, unit: 0.5 },
      { upTo: null, unit: 0.25 },
    ];
    const { call, make, advance, clock, customer, plan, invoicesOf } = await usageSetup(engine, 'A year of usage', {
      frozenTime: '2034-01-01T00:00:00Z',
      email: 'year@example.com',
      meter: { display_name: 'Requests', event_name: 'requests', aggregation: 'sum', value_property: 'n' },
      plan: {
        name: 'Requests',
        pricing_scheme: 'tiered',
        tiers_mode: 'graduated',
        tiers: [
          { up_to: 1000, unit_amount_decimal: '0.5' },
          { up_to: 'inf', unit_amount_decimal: '0.25' },
        ],
      },
    });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });

    const expected: { quantity: string; amount: number; start: string }[] = [];
    for (let month = 0; month < 12; month++) {
      const start = new Date(Date.UTC(2034, month, 1));
      // The 15th of the month: the previous month was closed and invoiced on the way (1st + the hour of grace).
      await advance(clock.id, new Date(Date.UTC(2034, month, 15)).toISOString());
      const a = 150 * (month + 1);
      const b = 37.25 * month;
      // In the clock's time: one without a timestamp (the clock's now), one stamped on the 10th.
      const first = await call('POST', '/v1/meter_events', {
        event_name: 'requests',
        customer: customer.id,
        payload: { n: a },
      });
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body.timestamp).toBe(Date.UTC(2034, month, 15) / 1000);
      const second = await call('POST', '/v1/meter_events', {
        event_name: 'requests',
        customer: customer.id,
        timestamp: Date.UTC(2034, month, 10, 12) / 1000,
        payload: { n: String(b) },
      });
      expect(second.status, JSON.stringify(second.body)).toBe(201);
      expected.push({
        quantity: String(a + b),
        amount: graduatedReference(a + b, tiers).amount,
        start: start.toISOString(),
      });
    }
    await advance(clock.id, '2035-01-01T02:00:00Z');

    const invoices = await invoicesOf(sub.id);
    // The first invoice (January 1st) bills nothing in arrears; then one per month's usage.
    expect(invoices).toHaveLength(13);
    expect(invoices[0].total).toBe(0);
    const billed = invoices.slice(1).map((invoice: any) => ({
      quantity: invoice.lines[0]?.quantity_decimal,
      amount: invoice.lines[0]?.amount,
      start: invoice.lines[0]?.period_start,
    }));
    expect(billed).toEqual(expected);
    expect(expected.map((e) => e.amount).filter((amount) => amount > 500).length).toBeGreaterThan(3); // tiers crossed
    for (const invoice of invoices.slice(1)) {
      expect(invoice.lines).toHaveLength(1);
      expect(invoice.status).toBe('paid');
      expect(invoice.total).toBe(invoice.lines[0].amount);
    }
  });
});
