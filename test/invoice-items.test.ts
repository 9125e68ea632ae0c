import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, Event, InvoiceItem } from '../db/entities/index.ts';
import { claimPendingItems } from '../services/invoices/items.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * Invoice items (issue #26): created from an amount, a unit amount × quantity or a plan priced by its
 * scheme; pending until an invoice takes them; changed or deleted only while pending (or on a draft);
 * their events; and taken by exactly one invoice however many claim them at once.
 */
describe('invoice items', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  async function customer(email = 'items@example.com') {
    const created = await engine.call('POST', '/v1/customers', { email, name: 'Ada', payment_method: 'pm_card_visa' });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  const eventsOf = async (itemId: string) =>
    (await engine.db.orm.em.fork().find(Event, { accountId: engine.tenant.accountId }, { orderBy: { id: 'asc' } }))
      .filter((event) => (event.data.object as { id?: string }).id === itemId)
      .map((event) => event.type);

  it('an amount, a unit amount × quantity, and a graduated plan priced by domain/pricing.ts', async () => {
    const cus = await customer();
    const flat = await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      amount: 15000,
      currency: 'usd',
      description: 'Onboarding workshop',
    });
    expect(flat.status).toBe(201);
    expect(flat.body).toMatchObject({
      object: 'invoiceitem',
      customer: cus,
      pending: true,
      invoice: null,
      currency: 'USD',
      quantity: 1,
      unit_amount: 15000,
      amount: 15000,
      plan: null,
      breakdown: null,
    });
    expect(flat.body.id).toMatch(/^ii_[0-9a-z]{26}$/);

    const hours = await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      unit_amount: 12500,
      quantity: 3,
      currency: 'USD',
      description: 'Consulting hours',
    });
    expect(hours.body).toMatchObject({ quantity: 3, unit_amount: 12500, amount: 37500 });

    // 1–10 at 1.00, 11+ at 0.50, plus a 5.00 flat on the second tier: 25 units = 1000 + 750 + 500.
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'API calls (one-off)',
      currency: 'USD',
      type: 'one_time',
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: [
        { up_to: 10, unit_amount: 100 },
        { up_to: 'inf', unit_amount: 50, flat_amount: 500 },
      ],
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);
    const tiered = await engine.call('POST', '/v1/invoice_items', { customer: cus, plan: plan.body.id, quantity: 25 });
    expect(tiered.status, JSON.stringify(tiered.body)).toBe(201);
    expect(tiered.body).toMatchObject({
      plan: plan.body.id,
      description: 'API calls (one-off)',
      quantity: 25,
      amount: 2250,
      unit_amount: 90,
    });
    expect(tiered.body.breakdown).toHaveLength(2);

    const list = await engine.call('GET', `/v1/invoice_items?customer=${cus}&pending=true`);
    expect(list.body.data.map((i: { id: string }) => i.id)).toEqual([tiered.body.id, hours.body.id, flat.body.id]);
    expect((await engine.call('GET', `/v1/invoice_items/${hours.body.id}`)).body.amount).toBe(37500);
    expect(await eventsOf(flat.body.id)).toEqual(['invoiceitem.created']);
  });

  it('bad input is refused with the spec error shape and changes nothing', async () => {
    const cus = await customer('bad-items@example.com');
    const cases: [Record<string, unknown>, number, string][] = [
      [{ customer: cus, amount: 100, currency: 'USD' }, 400, 'description'],
      [{ customer: cus, amount: 100, description: 'x' }, 400, 'currency'],
      [{ customer: cus, amount: 100, unit_amount: 5, currency: 'USD', description: 'x' }, 400, 'exactly one'],
      [{ customer: cus, plan: 'plan_01jd3x5k8q0m2v7c9r4t6y1w3e' }, 404, 'No such plan'],
      [
        { customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e', amount: 100, currency: 'USD', description: 'x' },
        404,
        'No such customer',
      ],
      [{ customer: cus, amount: 100_000_000, currency: 'USD', description: 'x' }, 400, 'amount'],
    ];
    for (const [body, status, words] of cases) {
      const answer = await engine.call('POST', '/v1/invoice_items', body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      expect(Object.keys(answer.body).sort()).toEqual(['error', 'message']);
      expect(answer.body.message).toContain(words);
    }
    expect(await engine.db.orm.em.fork().count(InvoiceItem, { customerId: cus })).toBe(0);
  });

  it('PATCH reprices a pending item, DELETE removes it; both record their event', async () => {
    const cus = await customer('edit-items@example.com');
    const item = (
      await engine.call('POST', '/v1/invoice_items', {
        customer: cus,
        unit_amount: 2000,
        quantity: 2,
        currency: 'USD',
        description: 'Seats',
      })
    ).body;
    const patched = await engine.call('PATCH', `/v1/invoice_items/${item.id}`, { quantity: 5 });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ quantity: 5, unit_amount: 2000, amount: 10000, description: 'Seats' });
    const renamed = await engine.call('PATCH', `/v1/invoice_items/${item.id}`, { description: 'Extra seats' });
    expect(renamed.body).toMatchObject({ amount: 10000, description: 'Extra seats' });
    const deleted = await engine.call('DELETE', `/v1/invoice_items/${item.id}`);
    expect(deleted.body).toEqual({ id: item.id, object: 'invoiceitem', deleted: true });
    expect((await engine.call('GET', `/v1/invoice_items/${item.id}`)).status).toBe(404);
    expect(await eventsOf(item.id)).toEqual([
      'invoiceitem.created',
      'invoiceitem.updated',
      'invoiceitem.updated',
      'invoiceitem.deleted',
    ]);
  });

  it("an item a finalized invoice took can no longer change (409), and a draft shows its items' lines", async () => {
    const cus = await customer('taken-items@example.com');
    const draft = await engine.call('POST', '/v1/invoices', {
      customer: cus,
      currency: 'USD',
      pending_invoice_items_behavior: 'exclude',
    });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    expect(draft.body).toMatchObject({ status: 'draft', number: null, subtotal: 0, lines: [] });
    const item = await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      amount: 4200,
      currency: 'USD',
      description: 'Setup',
      invoice: draft.body.id,
    });
    expect(item.body).toMatchObject({ invoice: draft.body.id, pending: false });
    const shown = (await engine.call('GET', `/v1/invoices/${draft.body.id}`)).body;
    expect(shown).toMatchObject({
      subtotal: 4200,
      total: 4200,
      lines: [{ description: 'Setup', amount: 4200, unit_amount: 4200, quantity: 1 }],
    });
    // On a draft it still changes (the draft follows)…
    expect((await engine.call('PATCH', `/v1/invoice_items/${item.body.id}`, { amount: 4300 })).status).toBe(200);
    expect((await engine.call('GET', `/v1/invoices/${draft.body.id}`)).body.total).toBe(4300);
    // …and once the invoice is no draft any more (as finalize leaves it), it does not.
    await engine.db.orm.em
      .fork()
      .getConnection()
      .execute(`update invoices set status = 'open' where id = ?`, [draft.body.id]);
    const refused = await engine.call('PATCH', `/v1/invoice_items/${item.body.id}`, { amount: 1 });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('invalid_state');
    expect((await engine.call('DELETE', `/v1/invoice_items/${item.body.id}`)).status).toBe(409);
    expect((await engine.call('GET', `/v1/invoice_items/${item.body.id}`)).body.amount).toBe(4300);
  });

  it('pending items are taken by exactly one invoice, however many claim them at once', async () => {
    const cus = await customer('race-items@example.com');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await engine.call('POST', '/v1/invoice_items', {
            customer: cus,
            amount: 100 + i,
            currency: 'USD',
            description: `Item ${i}`,
          })
        ).body.id,
      );
    const claimers = Array.from({ length: 6 }, (_, i) => `inv_race${String(i).padStart(22, '0')}`);
    const taken = await Promise.all(
      claimers.map((invoiceId) =>
        engine.db.orm.em.fork().transactional((tx) =>
          claimPendingItems(tx, {
            accountId: engine.tenant.accountId,
            livemode: true,
            customerId: cus,
            currency: 'USD',
            invoiceId,
          }),
        ),
      ),
    );
    const all = taken.flat().map((item) => item.id);
    expect(all.sort()).toEqual([...ids].sort());
    expect(new Set(all).size).toBe(ids.length);
    // Nothing pending is left, and a later claim takes nothing.
    expect((await engine.call('GET', `/v1/invoice_items?customer=${cus}&pending=true`)).body.data).toEqual([]);
  });
});

/**
 * The pickup: a subscription's next cycle invoice takes the customer's pending items (after its own line),
 * charges them with it, and they are billed once: the renewal after that does not take them again.
 */
describe('invoice items on the next subscription invoice', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it('an item is picked up by the renewal once, and its invoice adds up', async () => {
    const cus = (
      await engine.call('POST', '/v1/customers', {
        email: 'pickup@example.com',
        name: 'Ada',
        payment_method: 'pm_card_visa',
      })
    ).body.id as string;
    const plan = (
      await engine.call('POST', '/v1/plans', { name: 'Pro', amount: 2000, currency: 'USD', interval: 'month' })
    ).body.id as string;
    const sub = await engine.call('POST', '/v1/subscriptions', { customer_id: cus, plan, trial_period_days: 0 });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    // The first invoice was issued before the item: it bills the plan alone.
    const first = (await engine.call('GET', `/v1/invoices?subscription=${sub.body.id}`)).body.data;
    expect(first).toHaveLength(1);
    expect(first[0].total).toBe(2000);

    const item = (
      await engine.call('POST', '/v1/invoice_items', {
        customer: cus,
        unit_amount: 500,
        quantity: 3,
        currency: 'USD',
        description: 'Extra support hours',
      })
    ).body;
    expect(item.pending).toBe(true);
    const periodEnd = Date.parse(sub.body.current_period_end);
    await engine.env.sleep(periodEnd - (await engine.env.currentTimeMs()) + 60_000);
    const second = await eventually(
      async () => (await engine.call('GET', `/v1/invoices?subscription=${sub.body.id}`)).body.data,
      (invoices: any[]) => invoices.length >= 2 && invoices[0].status === 'paid',
      20_000,
    );
    const renewal = second[0];
    expect(renewal.lines.map((l: { description: string; amount: number }) => [l.description, l.amount])).toEqual([
      ['Pro', 2000],
      ['Extra support hours', 1500],
    ]);
    expect(renewal.lines[1]).toMatchObject({ quantity: 3, unit_amount: 500 });
    expect(renewal).toMatchObject({ subtotal: 3500, total: 3500, amount_paid: 3500 });
    const taken = (await engine.call('GET', `/v1/invoice_items/${item.id}`)).body;
    expect(taken).toMatchObject({ pending: false, invoice: renewal.id });
    const charge = await engine.db.orm.em
      .fork()
      .findOneOrFail(Charge, { idempotencyKey: `${sub.body.id}:cycle:1:attempt:1` });
    expect(charge.amount).toBe(3500);
    // It is not billed again: the renewal after bills the plan alone.
    await engine.env.sleep(32 * 86_400_000);
    const third = await eventually(
      async () => (await engine.call('GET', `/v1/invoices?subscription=${sub.body.id}`)).body.data,
      (invoices: any[]) => invoices.length >= 3,
      20_000,
    );
    expect(third[0].total).toBe(2000);
    expect((await engine.call('PATCH', `/v1/invoice_items/${item.id}`, { quantity: 1 })).status).toBe(409);
  });
});
