/**
 * Late meter events billed on the next invoice (#28, docs/usage.md#late-events), through the real API on a test
 * clock with one subscription (graduated tiers, free units, periods from the 15th): period 1 is invoiced; a late
 * event of period 1 is refused while the mode's late_events is `refuse` (the default), then accepted under
 * `bill_next_invoice` (sent twice and again in a batch: counted once; another one cancelled before the next
 * invoice: not billed); the upcoming invoice shows the pending adjustment; period 2's invoice carries it as
 * "Usage adjustment: Tokens for <period 1>" with the amount of a hand computation across a tier boundary; once
 * billed, a late event cannot be cancelled and the invoice after does not bill it again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openOrCreateInvoice } from '../services/invoices/cycle-invoices.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

/** Graduated tiers with free units, by hand, in whole units and whole cents. */
function reference(quantity: number, free: number, tiers: { upTo: number | null; unit: number }[]): number {
  let left = Math.max(0, quantity - free);
  let previous = 0;
  let total = 0;
  for (const tier of tiers) {
    const room = tier.upTo === null ? left : Math.min(left, tier.upTo - previous);
    total += room * tier.unit;
    left -= room;
    if (tier.upTo !== null) previous = tier.upTo;
    if (left <= 0) break;
  }
  return total;
}

const tiers = [
  { upTo: 1000, unit: 2 },
  { upTo: null, unit: 1 },
];
const free = 100;

describe('late meter events billed on the next invoice', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('refuses them by default; under bill_next_invoice the next invoice bills each once as an adjustment priced on the old period', async () => {
    const { call, make, advance } = await clockTenant(engine, 'Late tokens');
    const clock = await make('/v1/test_clocks', { frozen_time: '2034-01-15T00:00:00Z' });
    const customer = await make('/v1/customers', {
      email: 'late@example.com',
      payment_method: 'pm_card_visa',
      test_clock: clock.id,
    });
    const meter = await make('/v1/meters', {
      display_name: 'Tokens',
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
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 1000, unit_amount: 2 },
        { up_to: 'inf', unit_amount: 1 },
      ],
      free_quantity: String(free),
    });
    const sub = await make('/v1/subscriptions', { customer_id: customer.id, plan: plan.id });
    expect(sub.current_period_end).toBe('2034-02-15T00:00:00.000Z');

    const event = (identifier: string, timestamp: string, tokens: number) => ({
      event_name: 'tokens',
      customer: customer.id,
      timestamp,
      identifier,
      payload: { tokens: String(tokens) },
    });
    const invoices = async () =>
      [...(await call('GET', `/v1/invoices?subscription=${sub.id}&limit=100`)).body.data].reverse() as any[];
    const invoicesUntil = async (count: number) => {
      const started = Date.now();
      for (;;) {
        const all = await invoices();
        if (all.length >= count && all.every((i) => i.status !== 'open' && i.status !== 'draft')) return all;
        if (Date.now() - started > 30_000) throw new Error(`${all.length} invoices, waited for ${count}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    // Period 1 (Jan 15 to Feb 15): 900 tokens, invoiced after the grace hour: 800 units × 2 = 1600.
    await advance(clock.id, '2034-01-20T00:00:00Z');
    expect((await call('POST', '/v1/meter_events', event('p1', '2034-01-19T00:00:00Z', 900))).status).toBe(201);
    await advance(clock.id, '2034-02-15T01:00:00Z');
    let all = await invoicesUntil(2);
    expect(all[1].total).toBe(reference(900, free, tiers));
    expect(all[1].total).toBe(1600);

    // The default refuses an event of the invoiced period, and stores nothing.
    expect((await call('GET', '/v1/settings/usage')).body.late_events).toBe('refuse');
    const refused = await call('POST', '/v1/meter_events', event('late-1', '2034-02-10T00:00:00Z', 500));
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(JSON.stringify(refused.body)).toContain('period_invoiced');
    expect((await call('GET', '/v1/meter_events/late-1')).status).toBe(404);
    // A bad setting is a 400 and changes nothing.
    expect((await call('POST', '/v1/settings/usage', { late_events: 'later' })).status).toBe(400);
    expect((await call('POST', '/v1/settings/usage', {})).status).toBe(400);

    const set = await call('POST', '/v1/settings/usage', { late_events: 'bill_next_invoice' });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({
      object: 'usage_settings',
      usage_grace_period_seconds: 3600,
      late_events: 'bill_next_invoice',
    });

    // Accepted and said to be late; the same identifier again (single, then in a batch) counts once.
    const late = await call('POST', '/v1/meter_events', event('late-1', '2034-02-10T00:00:00Z', 500));
    expect(late.status, JSON.stringify(late.body)).toBe(201);
    expect(late.body).toMatchObject({ identifier: 'late-1', billed_in: 'next_invoice', adjustment_invoice: null });
    const again = await call('POST', '/v1/meter_events', event('late-1', '2034-02-10T00:00:00Z', 500));
    expect(again.status).toBe(200);
    const batch = await call('POST', '/v1/meter_events/batch', {
      events: [
        event('late-1', '2034-02-10T00:00:00Z', 500),
        event('late-2', '2034-02-11T00:00:00Z', 200),
        event('late-3', '2034-02-12T00:00:00Z', 4000),
        event('p2-a', '2034-02-15T00:30:00Z', 300),
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.data.map((r: any) => [r.identifier, r.status, r.billed_in])).toEqual([
      ['late-1', 'duplicate', undefined],
      ['late-2', 'accepted', 'next_invoice'],
      ['late-3', 'accepted', 'next_invoice'],
      ['p2-a', 'accepted', undefined],
    ]);
    // Cancelled before the next invoice: not billed.
    const cancelled = await call('POST', '/v1/meter_events/late-3/cancel');
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);

    // Period 1 now holds 900 + 500 + 200 = 1600 tokens: 1500 units = 1000 × 2 + 500 × 1 = 2500, against 1600 billed.
    const adjustment = reference(1600, free, tiers) - reference(900, free, tiers);
    expect(adjustment).toBe(900);
    await advance(clock.id, '2034-02-20T00:00:00Z');
    const upcoming = await call('GET', `/v1/invoices/upcoming?subscription=${sub.id}`);
    expect(upcoming.status, JSON.stringify(upcoming.body)).toBe(200);
    const pending = upcoming.body.lines.filter((l: any) => l.description.startsWith('Usage adjustment'));
    expect(pending.map((l: any) => [l.quantity_decimal, l.amount, l.period_start])).toEqual([
      ['700', adjustment, '2034-01-15T00:00:00.000Z'],
    ]);

    // Period 2's invoice: its own usage (300 tokens: 200 units × 2) and the adjustment for period 1.
    await advance(clock.id, '2034-03-15T01:00:00Z');
    all = await invoicesUntil(3);
    const third = all[2];
    const lines = third.lines.map((l: any) => [l.description, l.quantity_decimal, l.amount, l.period_start]);
    expect(lines).toHaveLength(2);
    expect(lines[0][2]).toBe(reference(300, free, tiers));
    expect(lines[1][0]).toMatch(/^Usage adjustment: Tokens for .*2034.*\(\+700, late events\)$/);
    expect(lines[1].slice(1)).toEqual(['700', adjustment, '2034-01-15T00:00:00.000Z']);
    expect(third.total).toBe(400 + 900);
    expect(third.status).toBe('paid');

    // Billed: the event says by which invoice, and cannot be cancelled any more.
    expect((await call('GET', '/v1/meter_events/late-1')).body).toMatchObject({
      billed_in: 'next_invoice',
      adjustment_invoice: third.id,
    });
    const tooLate = await call('POST', '/v1/meter_events/late-2/cancel');
    expect(tooLate.status).toBe(409);
    expect(JSON.stringify(tooLate.body)).toContain('period_invoiced');

    // A late event of period 2 is billed by the invoice after; period 1's are not billed again.
    expect((await call('POST', '/v1/meter_events', event('late-4', '2034-03-10T00:00:00Z', 100))).status).toBe(201);
    // The invoice activity retried for period 2's invoice (same billing key) finds its invoice and claims nothing more.
    const stored = (await engine.invoices(sub.id)).find((i) => i.id === third.id)!;
    const retried = await openOrCreateInvoice(
      engine.db.orm.em.fork(),
      { invoicePdfUrl: (id) => `/v1/invoices/${id}/pdf` },
      {
        billingKey: stored.billingKey!,
        subscriptionId: sub.id,
        accountId: stored.accountId,
        customerId: customer.id,
        currency: stored.currency,
        lines: stored.lines.slice(0, 1),
        periodStart: stored.periodStart.toISOString(),
        periodEnd: stored.periodEnd.toISOString(),
        issuedAt: stored.createdAt.toISOString(),
        livemode: false,
      },
    );
    expect(retried).toMatchObject({ created: false, invoice: { invoiceId: third.id } });
    expect((await call('GET', '/v1/meter_events/late-4')).body.adjustment_invoice).toBeNull();
    await advance(clock.id, '2034-04-15T01:00:00Z');
    all = await invoicesUntil(4);
    const fourth = all[3].lines.filter((l: any) => l.description.startsWith('Usage adjustment'));
    expect(fourth.map((l: any) => [l.quantity_decimal, l.amount, l.period_start])).toEqual([
      ['100', reference(400, free, tiers) - reference(300, free, tiers), '2034-02-15T00:00:00.000Z'],
    ]);
  });
});
