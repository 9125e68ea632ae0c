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
    const created = await post('/v1/plans', {
      currency: 'USD',
      ...(body.type === 'one_time' ? {} : { interval: 'month' }),
      ...body,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }
  async function customer(paymentMethod = 'pm_card_visa') {
    const created = await post('/v1/customers', {
      email: 'ines@example.com',
      name: 'Inès',
      payment_method: paymentMethod,
    });
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
    await eventually(
      () => engine.invoices(subscriptionId),
      (list) => list.length === count && list.every((i) => i.status === 'paid'),
    );
    const listed = await engine.call('GET', `/v1/invoices?subscription=${subscriptionId}&limit=100`);
    expect(listed.status).toBe(200);
    return [...listed.body.data].reverse() as any[];
  }
  /** Replays a subscription's whole history against this code. */
  async function replays(subscriptionId: string) {
    const history = await engine.env.client.workflow.getHandle(subscriptionId).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: subscriptionId },
      history,
    );
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
      items: [
        { plan: seats.id, quantity: 12 },
        { plan: support.id },
        { plan: storage.id, quantity: 14 },
        { plan: setup.id },
      ],
    });
    expect(sub).toMatchObject({ status: 'active', plan: seats.id, quantity: 12, currency: 'USD' });
    expect(sub.items).toEqual([
      { object: 'subscription_item', id: `si_${sub.id.slice(4)}`, plan: seats.id, quantity: 12 },
      { object: 'subscription_item', id: expect.stringMatching(/^si_[0-9a-z]{26}$/), plan: support.id, quantity: 1 },
      { object: 'subscription_item', id: expect.stringMatching(/^si_[0-9a-z]{26}$/), plan: storage.id, quantity: 14 },
    ]);
    expect((await engine.call('GET', `/v1/subscriptions/${sub.id}`)).body).toEqual(sub);
    // Several items change through /v1/subscription_items, not /update.
    const update = await post(`/v1/subscriptions/${sub.id}/update`, { quantity: 20 });
    expect(update.status).toBe(409);
    expect(update.body).toEqual({
      error: 'invalid_state',
      message: 'The subscription has 3 items: change each through /v1/subscription_items.',
    });

    await engine.env.sleep(31 * day);
    const [first, renewal] = await invoicesOf(sub.id, 2);
    const recurring = [
      expect.objectContaining({
        description: 'Seats',
        plan: seats.id,
        quantity: 12,
        unit_amount: 1500,
        amount: 18000,
        proration: false,
      }),
      expect.objectContaining({
        description: 'Priority support',
        plan: support.id,
        quantity: 1,
        unit_amount: 4900,
        amount: 4900,
        proration: false,
      }),
      // 10 × 1.00 + 4 × 0.50
      expect.objectContaining({
        description: 'Storage',
        plan: storage.id,
        quantity: 14,
        amount: 1200,
        proration: false,
      }),
    ];
    expect(first.lines).toEqual([
      ...recurring,
      expect.objectContaining({ description: 'Onboarding', plan: setup.id, amount: 5000 }),
    ]);
    expect(first).toMatchObject({ subtotal: 18000 + 4900 + 1200 + 5000, total: 29100, amount_paid: 29100 });
    expect(renewal.lines).toEqual(recurring);
    expect(renewal).toMatchObject({ total: 24100, amount_paid: 24100 });
    expect(
      renewal.lines.every(
        (line: any) => line.period_start === renewal.period_start && line.period_end === renewal.period_end,
      ),
    ).toBe(true);
    expect((await engine.charges(sub.id)).map((c) => [c.amount, c.status])).toEqual([
      [29100, 'succeeded'],
      [24100, 'succeeded'],
    ]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
    await replays(sub.id);
  });

  it('items are carried across continue-as-new: a daily subscription of two items still bills both after its run continues', async () => {
    const daily = await plan({ name: 'Daily seats', amount: 100, interval: 'day' });
    const extra = await plan({ name: 'Daily extra', amount: 30, interval: 'day' });
    const sub = await subscribe({
      customer_id: await customer(),
      items: [{ plan: daily.id, quantity: 3 }, { plan: extra.id }],
    });
    const handle = engine.env.client.workflow.getHandle(sub.id);
    const firstRun = (await handle.describe()).runId;
    // 12 renewals a run, then a new run with the state carried (workflows/subscription.ts renewalsPerRun).
    await engine.env.sleep(14 * day + 60_000);
    await eventually(
      () => engine.subscription(sub.id),
      (s) => (s?.billingCycle ?? 0) >= 14,
    );
    expect((await handle.describe()).runId).not.toBe(firstRun);
    const last = (await get(`/v1/invoices?subscription=${sub.id}&limit=1`)).data[0];
    expect(last.lines.map((l: any) => [l.plan, l.quantity, l.amount])).toEqual([
      [daily.id, 3, 300],
      [extra.id, 1, 30],
    ]);
    expect((await get(`/v1/subscriptions/${sub.id}`)).items.map((i: any) => i.plan)).toEqual([daily.id, extra.id]);
  });

  it('MRR counts every item of a subscription, once per subscription', async () => {
    // A fresh account: its MRR is only this subscription's.
    const tenant = await engine.signUp({ email: 'mrr-items@example.com', name: 'Items Inc' });
    const as = async (path: string, body?: unknown) => {
      const answer = await engine.call(body === undefined ? 'GET' : 'POST', path, body, tenant.headers);
      expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
      return answer.body;
    };
    const cus = (await as('/v1/customers', { email: 'ops@example.com', payment_method: 'pm_card_visa' })).id;
    const seats = (await as('/v1/plans', { name: 'Seats', amount: 1500, currency: 'USD', interval: 'month' })).id;
    const support = (await as('/v1/plans', { name: 'Support', amount: 4900, currency: 'USD', interval: 'month' })).id;
    await as('/v1/subscriptions', { customer_id: cus, items: [{ plan: seats, quantity: 12 }, { plan: support }] });
    await as('/v1/subscriptions', { customer_id: cus, plan: seats, quantity: 2 });
    const now = await engine.env.currentTimeMs();
    const report = await as(
      `/v1/reports/mrr?interval=day&from=${new Date(now - day).toISOString()}&to=${new Date(now + day).toISOString()}`,
    );
    expect(report.data.find((series: any) => series.currency === 'USD')?.points.at(-1)).toMatchObject({
      mrr: 18000 + 4900 + 3000,
      subscriptions: 2,
    });
  });

  it('refuses items of different intervals or currencies, and changes nothing', async () => {
    const monthly = await plan({ name: 'Monthly', amount: 1000 });
    const quarterly = await plan({ name: 'Quarterly', amount: 2500, interval_count: 3 });
    const euro = await plan({ name: 'Euro add-on', amount: 900, currency: 'EUR' });
    const cus = await customer();
    const before = (await engine.call('GET', '/v1/subscriptions?limit=100')).body.data.length;
    const intervals = await post('/v1/subscriptions', {
      customer_id: cus,
      items: [{ plan: monthly.id }, { plan: quarterly.id }],
    });
    expect(intervals.status).toBe(400);
    expect(intervals.body).toEqual({
      error: 'invalid_request',
      message: `items: every recurring item shares the subscription's billing period, and ${quarterly.id} bills every 3 months while ${monthly.id} bills every 1 month. Make a subscription per interval.`,
    });
    const currency = await post('/v1/subscriptions', {
      customer_id: cus,
      items: [{ plan: monthly.id }, { plan: euro.id }],
    });
    expect(currency.status).toBe(400);
    expect(currency.body).toEqual({
      error: 'invalid_request',
      message: `currency: plan ${euro.id} has no price in USD (it bills in EUR).`,
    });
    expect((await engine.call('GET', '/v1/subscriptions?limit=100')).body.data.length).toBe(before);
  });

  /** What item changes prorate: round(amount × (period end − at) ÷ period), half away from zero (docs/pricing.md). */
  const prorated = (amount: number, at: string, sub: { current_period_start: string; current_period_end: string }) => {
    const end = Date.parse(sub.current_period_end);
    const exact = (amount * (end - Date.parse(at))) / (end - Date.parse(sub.current_period_start));
    return Math.sign(exact) * Math.round(Math.abs(exact));
  };
  const get = async (path: string) => {
    const got = await engine.call('GET', path);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    return got.body;
  };
  const sumOf = (lines: any[]) => lines.reduce((sum, line) => sum + line.amount, 0);

  it('an add-on added and removed mid-period with each proration_behavior', async () => {
    const base = await plan({ name: 'Base', amount: 2000 });
    const addOn = await plan({ name: 'Add-on', amount: 3000 });
    const subs: Record<string, any> = {};
    for (const behavior of ['create_prorations', 'always_invoice', 'none'])
      subs[behavior] = await subscribe({ customer_id: await customer(), plan: base.id });
    await engine.env.sleep(10 * day);
    const added: Record<string, any> = {};
    for (const [behavior, sub] of Object.entries(subs)) {
      const response = await post('/v1/subscription_items', {
        subscription: sub.id,
        plan: addOn.id,
        quantity: 1,
        proration_behavior: behavior,
      });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      expect(response.body).toMatchObject({
        object: 'subscription_item',
        id: expect.stringMatching(/^si_/),
        subscription: sub.id,
        plan: addOn.id,
        quantity: 1,
      });
      added[behavior] = response.body;
      expect(await get(`/v1/subscription_items/${response.body.id}`)).toEqual(response.body);
      expect((await get(`/v1/subscription_items?subscription=${sub.id}`)).data.map((i: any) => i.plan)).toEqual([
        base.id,
        addOn.id,
      ]);
      expect((await get(`/v1/subscriptions/${sub.id}`)).items.map((i: any) => [i.id, i.plan])).toEqual([
        [`si_${sub.id.slice(4)}`, base.id],
        [response.body.id, addOn.id],
      ]);
    }
    // always_invoice: the rest of the period of the add-on is invoiced and charged now.
    const [, now] = await invoicesOf(subs.always_invoice.id, 2);
    expect(now.lines).toEqual([
      expect.objectContaining({
        plan: addOn.id,
        proration: true,
        amount: prorated(3000, now.lines[0].period_start, subs.always_invoice),
      }),
    ]);
    expect(now.total).toBe(now.lines[0].amount);
    expect((await engine.charges(subs.always_invoice.id)).map((c) => c.amount)).toEqual([2000, now.total]);
    // create_prorations and none: nothing now.
    await invoicesOf(subs.create_prorations.id, 1);
    await invoicesOf(subs.none.id, 1);

    await engine.env.sleep(5 * day);
    for (const [behavior, sub] of Object.entries(subs)) {
      const removed = await engine.call(
        'DELETE',
        `/v1/subscription_items/${added[behavior].id}?proration_behavior=${behavior}`,
      );
      expect(removed.status, JSON.stringify(removed.body)).toBe(200);
      expect(removed.body).toEqual({ object: 'subscription_item', id: added[behavior].id, deleted: true });
      expect((await engine.call('GET', `/v1/subscription_items/${added[behavior].id}`)).status).toBe(404);
      expect((await get(`/v1/subscriptions/${sub.id}`)).items.map((i: any) => i.plan)).toEqual([base.id]);
      // The last item cannot go: cancel instead.
      const last = await engine.call('DELETE', `/v1/subscription_items/si_${sub.id.slice(4)}`);
      expect(last.status).toBe(409);
      expect(last.body.message).toContain(
        "is the subscription's last recurring item; cancel the subscription instead.",
      );
    }
    await engine.env.sleep(20 * day);
    // create_prorations: the renewal carries the add-on's 5 days, as a charge and a credit.
    const [, renewal] = await invoicesOf(subs.create_prorations.id, 2);
    const [baseLine, charge, credit] = renewal.lines;
    expect(baseLine).toMatchObject({ plan: base.id, amount: 2000, proration: false });
    expect(charge).toMatchObject({
      plan: addOn.id,
      proration: true,
      amount: prorated(3000, charge.period_start, subs.create_prorations),
    });
    expect(credit).toMatchObject({
      plan: addOn.id,
      proration: true,
      amount: -prorated(3000, credit.period_start, subs.create_prorations),
    });
    expect(renewal.lines).toHaveLength(3);
    expect(renewal.total).toBe(sumOf(renewal.lines));
    expect(charge.amount + credit.amount).toBeGreaterThan(400); // about 5 of 30 days of 30.00
    // always_invoice: the removal is a credit, which waits for the renewal (nothing to charge now).
    const invoices = await invoicesOf(subs.always_invoice.id, 3);
    expect(invoices[2].lines).toEqual([
      expect.objectContaining({ plan: base.id, amount: 2000 }),
      expect.objectContaining({ plan: addOn.id, proration: true, amount: expect.any(Number) }),
    ]);
    expect(invoices[2].lines[1].amount).toBe(-prorated(3000, invoices[2].lines[1].period_start, subs.always_invoice));
    // none: nothing for the add-on at all.
    const [, plain] = await invoicesOf(subs.none.id, 2);
    expect(plain.lines).toEqual([expect.objectContaining({ plan: base.id, amount: 2000, proration: false })]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });

  it('seats up and down mid-period, across a tier: prorated at each price, previewed exactly as the renewal invoices them', async () => {
    const seats = await plan({ name: 'Seats', amount: 1500 });
    const storage = await plan({
      name: 'Storage',
      pricing_scheme: 'tiered',
      tiers_mode: 'volume',
      tiers: [
        { up_to: 10, unit_amount: 1000 },
        { up_to: 'inf', unit_amount: 700, flat_amount: 500 },
      ],
    });
    const customerId = await customer();
    const sub = await subscribe({
      customer_id: customerId,
      items: [
        { plan: seats.id, quantity: 5 },
        { plan: storage.id, quantity: 8 },
      ],
    });
    const [seatItem, storageItem] = sub.items;
    await engine.env.sleep(7 * day);
    // 5 → 12 seats, and storage 8 → 12: across into the second tier (8 × 10.00 = 80.00 → 12 × 7.00 + 5.00 = 89.00).
    const up = await engine.call('PATCH', `/v1/subscription_items/${seatItem.id}`, { quantity: 12 });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toMatchObject({ id: seatItem.id, quantity: 12 });
    // The event of the change carries the items as they were.
    const events = (await get('/v1/events?type=subscription.updated&limit=100')).data.filter(
      (e: any) => e.data.object.id === sub.id,
    );
    expect(events[0].data.object.items.map((i: any) => i.quantity)).toEqual([12, 8]);
    expect(events[0].data.previous_attributes).toEqual({
      items: [
        { object: 'subscription_item', id: seatItem.id, plan: seats.id, quantity: 5 },
        { object: 'subscription_item', id: storageItem.id, plan: storage.id, quantity: 8 },
      ],
      quantity: 5,
    });
    expect((await engine.call('PATCH', `/v1/subscription_items/${storageItem.id}`, { quantity: 12 })).status).toBe(200);
    await engine.env.sleep(7 * day);
    // 12 → 9 seats: a credit of the unused 12 and a charge of 9, on the next invoice.
    expect(
      (
        await engine.call('PATCH', `/v1/subscription_items/${seatItem.id}`, {
          quantity: 9,
          proration_behavior: 'create_prorations',
        })
      ).status,
    ).toBe(200);
    const now = await get(`/v1/subscriptions/${sub.id}`);
    expect(now.items.map((i: any) => i.quantity)).toEqual([9, 12]);

    // A pending invoice item of the customer: the renewal takes it, after the subscription's own lines (services/invoices/items.ts).
    const workshop = await post('/v1/invoice_items', {
      customer: customerId,
      amount: 15000,
      currency: 'USD',
      description: 'Onboarding workshop',
    });
    expect(workshop.status, JSON.stringify(workshop.body)).toBe(201);
    const preview = await get(`/v1/invoices/upcoming?subscription=${sub.id}`);
    expect(preview).toMatchObject({
      object: 'invoice',
      id: null,
      subscription_id: sub.id,
      period_start: now.current_period_end,
    });
    expect(preview.lines.map((l: any) => [l.plan, l.quantity, l.proration])).toEqual([
      [seats.id, 9, false],
      [storage.id, 12, false],
      [seats.id, 5, true],
      [seats.id, 12, true],
      [storage.id, 8, true],
      [storage.id, 12, true],
      [seats.id, 12, true],
      [seats.id, 9, true],
      [null, 1, false],
    ]);
    expect(preview.lines.at(-1)).toMatchObject({ description: 'Onboarding workshop', amount: 15000 });
    expect(preview.lines[1]).toMatchObject({
      amount: 12 * 700 + 500,
      breakdown: [expect.objectContaining({ tier: 1, quantity: 12 })],
    });
    const [, , , , storageCredit, storageCharge] = preview.lines;
    expect(storageCredit.amount).toBe(-prorated(8000, storageCredit.period_start, now));
    expect(storageCharge.amount).toBe(prorated(8900, storageCharge.period_start, now));
    expect(preview.total).toBe(sumOf(preview.lines));

    await engine.env.sleep(20 * day);
    const [, renewal] = await invoicesOf(sub.id, 2);
    const comparable = (lines: any[]) =>
      lines.map(
        ({ description, plan, quantity, unit_amount, amount, breakdown, period_start, period_end, proration }) => ({
          description,
          plan,
          quantity,
          unit_amount,
          amount,
          breakdown,
          period_start,
          period_end,
          proration,
        }),
      );
    expect(comparable(renewal.lines)).toEqual(comparable(preview.lines));
    expect([renewal.subtotal, renewal.total, renewal.amount_paid]).toEqual([
      preview.subtotal,
      preview.total,
      preview.total,
    ]);
    expect([renewal.period_start, renewal.period_end]).toEqual([preview.period_start, preview.period_end]);
    // Nothing is left waiting: the next preview is the items alone.
    const next = await get(`/v1/invoices/upcoming?subscription=${sub.id}`);
    expect(next.lines.map((l: any) => l.amount)).toEqual([9 * 1500, 12 * 700 + 500]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
    await replays(sub.id);
  });

  it('an item change racing the renewal is applied before or after it, never during: the invoices say which, and add up', async () => {
    const seats = await plan({ name: 'Seats', amount: 1000 });
    const sub = await subscribe({ customer_id: await customer(), plan: seats.id, quantity: 2 });
    const itemId = sub.items[0].id;
    // Right up to the period's end, then the change and the renewal at once.
    await engine.env.sleep(Date.parse(sub.current_period_end) - (await engine.env.currentTimeMs()) - 1_000);
    const [changed] = await Promise.all([
      engine.call('PATCH', `/v1/subscription_items/${itemId}`, { quantity: 5 }),
      engine.env.sleep(2 * day),
    ]);
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const [, renewal] = await invoicesOf(sub.id, 2);
    const after = await get(`/v1/subscriptions/${sub.id}`);
    expect(after.items.map((i: any) => i.quantity)).toEqual([5]);
    expect(renewal.total).toBe(sumOf(renewal.lines));
    const upcoming = await get(`/v1/invoices/upcoming?subscription=${sub.id}`);
    if (renewal.lines[0].quantity === 5) {
      // Before: the renewal bills 5 seats, with the last second of the old period prorated on it; nothing waits.
      expect(renewal.lines.slice(1).every((l: any) => l.proration && l.period_end === renewal.period_start)).toBe(true);
      expect(upcoming.lines).toEqual([expect.objectContaining({ quantity: 5, amount: 5000, proration: false })]);
    } else {
      // After: the renewal bills the 2 seats alone, and the change's lines (in the new period) wait for the next invoice.
      expect(renewal.lines).toEqual([expect.objectContaining({ quantity: 2, amount: 2000, proration: false })]);
      expect(upcoming.lines.slice(1).every((l: any) => l.proration && l.period_end === renewal.period_end)).toBe(true);
      expect(upcoming.lines[0]).toMatchObject({ quantity: 5, amount: 5000 });
    }
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });

  it('seats up now with always_invoice (a decline is 402 and changes nothing), down with none; a proposed change previewed at its proration_date', async () => {
    const seats = await plan({ name: 'Seats', amount: 1500 });
    const addOn = await plan({ name: 'Add-on', amount: 3100 });
    const customerId = await customer();
    const sub = await subscribe({ customer_id: customerId, plan: seats.id, quantity: 4 });
    const itemId = sub.items[0].id;
    await engine.env.sleep(10 * day);
    // Up 4 → 6 now: credit of 4 seats' rest and charge of 6 seats' rest, charged at once.
    const up = await engine.call('PATCH', `/v1/subscription_items/${itemId}`, {
      quantity: 6,
      proration_behavior: 'always_invoice',
    });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    const [, upInvoice] = await invoicesOf(sub.id, 2);
    const [credit, charge] = upInvoice.lines;
    expect(credit).toMatchObject({ quantity: 4, proration: true, amount: -prorated(6000, credit.period_start, sub) });
    expect(charge).toMatchObject({ quantity: 6, proration: true, amount: prorated(9000, charge.period_start, sub) });
    expect(upInvoice).toMatchObject({
      total: credit.amount + charge.amount,
      amount_paid: credit.amount + charge.amount,
    });

    // A declined always_invoice charge: 402, the items as they were, the invoice void.
    expect(
      (await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_chargeDeclined' })).status,
    ).toBe(200);
    const declined = await engine.call('PATCH', `/v1/subscription_items/${itemId}`, {
      quantity: 9,
      proration_behavior: 'always_invoice',
    });
    expect(declined.status).toBe(402);
    expect(declined.body).toMatchObject({
      error: 'payment_failed',
      message: expect.stringContaining('Nothing changed.'),
    });
    expect((await get(`/v1/subscriptions/${sub.id}`)).items.map((i: any) => i.quantity)).toEqual([6]);
    await eventually(
      () => engine.invoices(sub.id),
      (list) => list.length === 3 && list.some((i) => i.status === 'void'),
    );
    expect((await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_visa' })).status).toBe(
      200,
    );

    // Down 6 → 2 with none: no line now or later; the renewal bills 2 seats.
    expect(
      (await engine.call('PATCH', `/v1/subscription_items/${itemId}`, { quantity: 2, proration_behavior: 'none' }))
        .status,
    ).toBe(200);
    const plain = await get(`/v1/invoices/upcoming?subscription=${sub.id}`);
    expect(plain.lines).toEqual([expect.objectContaining({ quantity: 2, amount: 3000, proration: false })]);

    // A proposed add-on at a given instant: its line is round(3100 × remaining ÷ period); nothing is changed by asking.
    const now = await get(`/v1/subscriptions/${sub.id}`);
    const at = Math.floor((Date.parse(now.current_period_start) + 20 * day) / 1000);
    const proposed = await get(
      `/v1/invoices/upcoming?subscription=${sub.id}&proration_date=${at}&subscription_items=${encodeURIComponent(JSON.stringify([{ plan: addOn.id }, { id: itemId, quantity: 3 }]))}`,
    );
    expect(proposed.lines.map((l: any) => [l.plan, l.quantity, l.proration, l.period_start])).toEqual([
      [seats.id, 3, false, now.current_period_end],
      [addOn.id, 1, false, now.current_period_end],
      [addOn.id, 1, true, new Date(at * 1000).toISOString()],
      [seats.id, 2, true, new Date(at * 1000).toISOString()],
      [seats.id, 3, true, new Date(at * 1000).toISOString()],
    ]);
    expect(proposed.lines[2].amount).toBe(prorated(3100, new Date(at * 1000).toISOString(), now));
    expect(proposed.lines[3].amount).toBe(-prorated(3000, new Date(at * 1000).toISOString(), now));
    expect(proposed.total).toBe(sumOf(proposed.lines));
    expect((await get(`/v1/subscriptions/${sub.id}`)).items).toEqual(now.items);
    // Bad proposals are 400 in the error shape.
    const bad = await engine.call(
      'GET',
      `/v1/invoices/upcoming?subscription=${sub.id}&subscription_items=${encodeURIComponent('[{"id":"si_nope"}]')}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'invalid_request',
      message: 'subscription_items[0].id: the subscription has no item si_nope.',
    });

    await engine.env.sleep(21 * day);
    // First, upgrade, void, renewal.
    await eventually(
      () => engine.invoices(sub.id),
      (list) => list.length === 4 && list.filter((i) => i.status === 'paid').length === 3,
    );
    const renewal = (await get(`/v1/invoices?subscription=${sub.id}&limit=100`)).data[0];
    expect(renewal.lines).toEqual([expect.objectContaining({ quantity: 2, amount: 3000, proration: false })]);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });
});
