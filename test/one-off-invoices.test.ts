import fc from 'fast-check';
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, Event, InvoiceItem } from '../db/entities/index.ts';
import { reminderSchedule } from '../domain/one-off-invoices.ts';
import { totalsOf } from '../services/invoices/items.ts';
import { clockTenant } from './helpers/clock-tenant.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const day = 86_400_000;

/**
 * One-off invoices (issue #26) end to end: a draft of invoice items, finalize (number, lines, the
 * invoice workflow), charge_automatically charged at once or retried then uncollectible, send_invoice
 * emailed over real SMTP with a pay link and reminded, paid late through the link; void ends the
 * workflow; totals are the sum of the lines.
 */
describe('one-off invoices', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  async function skipTo(instant: number) {
    const ahead = instant - (await engine.env.currentTimeMs());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  async function customer(email: string, paymentMethod: string | null = 'pm_card_visa') {
    const created = await engine.call('POST', '/v1/customers', {
      email,
      name: 'Grace Hopper',
      ...(paymentMethod ? { payment_method: paymentMethod } : {}),
    });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }
  const mailTo = (to: string) => engine.mail.messages.filter((m) => m.envelopeTo.includes(to));
  const waitForMail = (to: string, count: number) =>
    eventually(
      async () => mailTo(to),
      (m) => m.length >= count,
      20_000,
    );
  const get = async (id: string) => (await engine.call('GET', `/v1/invoices/${id}`)).body;
  const workflowStatus = async (id: string) => (await engine.env.client.workflow.getHandle(id).describe()).status.name;
  const eventTypes = async (invoiceId: string) =>
    (await engine.db.orm.em.fork().find(Event, { accountId: engine.tenant.accountId }, { orderBy: { id: 'asc' } }))
      .filter((event) => (event.data.object as { id?: string }).id === invoiceId)
      .map((event) => event.type);

  /** A draft with a consulting item (3 × 125.00) and a workshop (150.00): 525.00. */
  async function draftWithItems(cus: string, invoice: Record<string, unknown>) {
    await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      unit_amount: 12500,
      quantity: 3,
      currency: 'USD',
      description: 'Consulting hours',
      period: { start: '2026-11-02T00:00:00Z', end: '2026-11-06T00:00:00Z' },
    });
    await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      amount: 15000,
      currency: 'USD',
      description: 'Onboarding workshop',
    });
    const draft = await engine.call('POST', '/v1/invoices', { customer: cus, ...invoice });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    expect(draft.body).toMatchObject({
      status: 'draft',
      number: null,
      subscription_id: null,
      billing_reason: 'manual',
      subtotal: 52500,
      total: 52500,
    });
    expect(draft.body.lines).toHaveLength(2);
    return draft.body.id as string;
  }

  it('charge_automatically: finalize numbers it and charges the card at once; the workflow ends paid', async () => {
    const cus = await customer('auto-paid@example.com');
    const id = await draftWithItems(cus, {
      collection_method: 'charge_automatically',
      description: 'November consulting',
    });
    expect(await eventTypes(id)).toEqual([]); // a draft records no event
    const finalized = await engine.call('POST', `/v1/invoices/${id}/finalize`);
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(200);
    expect(finalized.body.number).toMatch(/^[A-Z0-9]{3,6}-\d{4}$/);
    expect(finalized.body).toMatchObject({
      collection_method: 'charge_automatically',
      description: 'November consulting',
    });
    const paid = await eventually(
      () => get(id),
      (invoice) => invoice.status === 'paid',
    );
    expect(paid).toMatchObject({ amount_paid: 52500, amount_remaining: 0, attempt_count: 1 });
    expect(paid.transaction).toMatch(/^txn_/);
    await eventually(
      () => workflowStatus(id),
      (status) => status === 'COMPLETED',
    );
    expect(await eventTypes(id)).toEqual(['invoice.created', 'invoice.finalized', 'invoice.paid', 'payment.succeeded']);
    // Its items are no longer pending, and a second finalize or a delete is refused.
    expect((await engine.call('GET', `/v1/invoice_items?customer=${cus}&pending=true`)).body.data).toEqual([]);
    expect((await engine.call('POST', `/v1/invoices/${id}/finalize`)).status).toBe(409);
    expect((await engine.call('DELETE', `/v1/invoices/${id}`)).status).toBe(409);
    expect((await engine.call('POST', `/v1/invoices/${id}/pay`)).status).toBe(409);
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });

  it('a draft can be deleted (its items pending again); an empty draft is not finalized', async () => {
    const cus = await customer('drafts@example.com');
    const id = await draftWithItems(cus, { collection_method: 'charge_automatically' });
    expect((await engine.call('DELETE', `/v1/invoices/${id}`)).body).toEqual({ id, object: 'invoice', deleted: true });
    expect((await engine.call('GET', `/v1/invoice_items?customer=${cus}&pending=true`)).body.data).toHaveLength(2);
    const empty = await engine.call('POST', '/v1/invoices', {
      customer: cus,
      currency: 'USD',
      pending_invoice_items_behavior: 'exclude',
    });
    const refused = await engine.call('POST', `/v1/invoices/${empty.body.id}/finalize`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain('no invoice items');
    expect((await get(empty.body.id)).status).toBe('draft');
    // The customer's portal never lists a draft: it is the merchant's until finalized.
    const link = await engine.call('POST', `/v1/customers/${cus}/portal_link`, {});
    const portal = (path: string) =>
      engine.call('GET', path, undefined, { authorization: '', 'x-portal-token': link.body.url.split('#')[1] });
    expect(
      (await engine.call('GET', `/v1/invoices?customer=${cus}&status=draft`)).body.data.map(
        (i: { id: string }) => i.id,
      ),
    ).toEqual([empty.body.id]);
    const listed = await portal('/v1/portal/invoices');
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data).toEqual([]);
    expect((await portal('/v1/portal/invoices?status=draft')).status).toBe(400);
    // Refused once, it is finalized once it has an item (a new run of its workflow).
    await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      amount: 990,
      currency: 'USD',
      description: 'Late fee',
      invoice: empty.body.id,
    });
    const second = await engine.call('POST', `/v1/invoices/${empty.body.id}/finalize`);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ status: 'open', total: 990 });
    await eventually(
      () => get(empty.body.id),
      (invoice) => invoice.status === 'paid',
    );
    const noDays = await engine.call('POST', '/v1/invoices', { customer: cus, collection_method: 'send_invoice' });
    expect(noDays.status).toBe(400);
    expect(noDays.body.message).toContain('days_until_due');
  });

  it('charge_automatically with a failing card: retried on the account policy, then uncollectible; paid later out of band', async () => {
    const cus = await customer('auto-declined@example.com', 'pm_card_chargeDeclined');
    const id = await draftWithItems(cus, { collection_method: 'charge_automatically' });
    const start = await engine.env.currentTimeMs();
    await engine.call('POST', `/v1/invoices/${id}/finalize`);
    await eventually(
      () => get(id),
      (invoice) => invoice.attempt_count === 1,
    );
    expect((await get(id)).status).toBe('open');
    // Default policy: 24 h, 3 d, 7 d after the first failure; then the 7-day grace period.
    await skipTo(start + 7 * day + minute);
    await eventually(
      () => get(id),
      (invoice) => invoice.attempt_count === 4,
    );
    const charges = await engine.db.orm.em.fork().find(Charge, { idempotencyKey: { $like: `invoice:${id}:%` } });
    expect(charges.map((c) => c.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
    expect((await get(id)).status).toBe('open');
    await skipTo(start + 14 * day + 2 * minute);
    await eventually(
      () => get(id),
      (invoice) => invoice.status === 'uncollectible',
    );
    // Still payable: the workflow owns it until paid or void.
    expect(await workflowStatus(id)).toBe('RUNNING');
    const paid = await engine.call('POST', `/v1/invoices/${id}/pay`, { paid_out_of_band: true });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.status).toBe('paid');
    // Paid outside the engine: no money on it (amount_paid 0), and nothing left to pay.
    expect(paid.body).toMatchObject({ amount_paid: 0, amount_remaining: 0 });
    await eventually(
      () => workflowStatus(id),
      (status) => status === 'COMPLETED',
    );
    expect(await eventTypes(id)).toContain('invoice.marked_uncollectible');
  });

  it('void ends the workflow; a pay after it is refused and nothing is charged', async () => {
    const cus = await customer('voided@example.com', 'pm_card_chargeDeclined');
    const id = await draftWithItems(cus, { collection_method: 'charge_automatically' });
    await engine.call('POST', `/v1/invoices/${id}/finalize`);
    await eventually(
      () => get(id),
      (invoice) => invoice.attempt_count === 1,
    );
    const voided = await engine.call('POST', `/v1/invoices/${id}/void`);
    expect(voided.status, JSON.stringify(voided.body)).toBe(200);
    expect(voided.body.status).toBe('void');
    await eventually(
      () => workflowStatus(id),
      (status) => status === 'COMPLETED',
    );
    expect((await engine.call('POST', `/v1/invoices/${id}/pay`)).status).toBe(409);
    await engine.env.sleep(2 * day);
    expect(await engine.db.orm.em.fork().count(Charge, { idempotencyKey: { $like: `invoice:${id}:%` } })).toBe(1);
  });

  it('send_invoice: emailed with a pay link and due date, reminded before, on and after, paid late through the link', async () => {
    const email = 'send-invoice@example.com';
    const cus = await customer(email, null);
    const id = await draftWithItems(cus, {
      collection_method: 'send_invoice',
      days_until_due: 14,
      description: 'Consulting, November 2026',
    });
    const finalized = await engine.call('POST', `/v1/invoices/${id}/finalize`);
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(200);
    const { number, due_date: dueDate, finalized_at: finalizedAt } = finalized.body;
    expect(Date.parse(dueDate) - Date.parse(finalizedAt)).toBe(14 * day);

    const [sent] = await waitForMail(email, 1);
    expect(sent!.parsed.subject).toContain(`Invoice ${number}`);
    const text = sent!.parsed.text!;
    // The email shows the lines as the invoice and its PDF do: quantity, unit amount, human dates, totals.
    expect(text).toContain('Consulting hours (Nov 2, 2026 – Nov 6, 2026): 3 × $125.00 = $375.00');
    expect(text).toContain('Onboarding workshop');
    expect(text).toContain('Subtotal: $525.00');
    expect(text).toContain('Total: $525.00');
    expect(text).toContain('Consulting, November 2026');
    const payUrl = text.match(/Pay online: (\S+)/)![1]!;
    expect(payUrl).toContain(`/invoices/${id}/pay?token=`);

    // The PDF says what the email says: the same lines, amounts, totals, description and due date.
    const pdf = await engine.app.request(new URL(finalized.body.pdf).pathname + new URL(finalized.body.pdf).search);
    expect(pdf.status).toBe(200);
    const { text: pdfText } = await extractText(await getDocumentProxy(new Uint8Array(await pdf.arrayBuffer())), {
      mergePages: true,
    });
    const flat = pdfText.replace(/\s+/g, ' ');
    for (const words of [
      'Consulting hours',
      'Onboarding workshop',
      '$375.00',
      '$125.00',
      '$150.00',
      '$525.00',
      'Consulting, November 2026',
      number,
    ])
      expect(flat).toContain(words);
    const dueLong = new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(dueDate));
    expect(flat).toContain(`Date due ${dueLong}`);
    expect(flat).toContain(`$525.00 due ${dueLong}`);

    // Reminders: 3 days before the due date, on it, 7 days after.
    const due = Date.parse(dueDate);
    await skipTo(due - 3 * day + minute);
    const [, before] = await waitForMail(email, 2);
    expect(before!.parsed.subject).toContain('Reminder');
    await skipTo(due + minute);
    const [, , onDay] = await waitForMail(email, 3);
    expect(onDay!.parsed.subject).toContain('due today');
    await skipTo(due + 7 * day + minute);
    const [, , , overdue] = await waitForMail(email, 4);
    expect(overdue!.parsed.subject).toContain('Overdue');
    expect((await get(id)).status).toBe('open');

    // Paid late through the link: the page, a declined card, then a good one.
    const path = new URL(payUrl).pathname + new URL(payUrl).search;
    const pageAnswer = await engine.app.request(path);
    expect(pageAnswer.status).toBe(200);
    const html = await pageAnswer.text();
    expect(html).toContain('$525.00');
    expect(html).toContain(number);
    const attempt = html.match(/name="attempt" value="([^"]+)"/)![1]!;
    const post = (method: string, key: string) =>
      engine.app.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ payment_method: method, attempt: key }).toString(),
      });
    const declined = await post('pm_card_chargeDeclined', attempt);
    expect(declined.status).toBe(402);
    expect((await get(id)).status).toBe('open');
    const paid = await post('pm_card_visa', `${attempt}-second`);
    expect(paid.status).toBe(200);
    expect(await paid.text()).toContain('is paid');
    const invoice = await get(id);
    expect(invoice).toMatchObject({ status: 'paid', amount_paid: 52500 });
    await eventually(
      () => workflowStatus(id),
      (status) => status === 'COMPLETED',
    );
    // A wrong token is a 404, as an unknown invoice.
    expect((await engine.app.request(`/invoices/${id}/pay?token=nope`)).status).toBe(404);
    expect(await eventTypes(id)).toEqual(
      expect.arrayContaining([
        'invoice.created',
        'invoice.finalized',
        'invoice.reminder_sent',
        'invoice.payment_failed',
        'invoice.paid',
      ]),
    );
    await expectLedgerInvariants(engine.db.orm.em.fork(), engine.tenant.accountId);
  });

  it('a customer on a test clock: the invoice runs on the clock (its queue and time), reminded as the clock advances', async () => {
    const { call, make, advance } = await clockTenant(engine, 'Clocked Consulting');
    const clock = await make('/v1/test_clocks', { frozen_time: '2033-05-01T00:00:00Z' });
    const email = 'clocked-invoice@example.com';
    const cus = await make('/v1/customers', { email, name: 'Clocked', test_clock: clock.id });
    const item = await make('/v1/invoice_items', {
      customer: cus.id,
      amount: 90000,
      currency: 'EUR',
      description: 'Audit',
    });
    expect(item.created_at).toBe('2033-05-01T00:00:00.000Z');
    const draft = await make('/v1/invoices', {
      customer: cus.id,
      collection_method: 'send_invoice',
      days_until_due: 10,
    });
    const finalized = await call('POST', `/v1/invoices/${draft.id}/finalize`);
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(200);
    expect(finalized.body).toMatchObject({
      status: 'open',
      finalized_at: '2033-05-01T00:00:00.000Z',
      due_date: '2033-05-11T00:00:00.000Z',
      total: 90000,
      livemode: false,
    });
    const description = await engine.env.client.workflow.getHandle(draft.id).describe();
    expect(description.taskQueue).toBe(engine.config.clockTaskQueue);
    await waitForMail(email, 1);
    // The clock's days, not Temporal's: nothing more until the clock moves past 3 days before the due date.
    await advance(clock.id, '2033-05-08T01:00:00Z');
    const [, before] = await waitForMail(email, 2);
    expect(before!.parsed.subject).toContain('Reminder');
    expect(before!.parsed.subject).toContain('€900.00');
    await advance(clock.id, '2033-05-11T01:00:00Z');
    const [, , onDay] = await waitForMail(email, 3);
    expect(onDay!.parsed.subject).toContain('due today');
    const paid = await call('POST', `/v1/invoices/${draft.id}/pay`, { paid_out_of_band: true });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ status: 'paid', paid_at: '2033-05-11T01:00:00.000Z' });
    await eventually(
      () => workflowStatus(draft.id),
      (status) => status === 'COMPLETED',
    );
    // Ended: the clock advances on without it.
    await advance(clock.id, '2033-05-30T00:00:00Z');
    expect(mailTo(email)).toHaveLength(3);

    // A running invoice workflow ends with its clock, and the clock's invoices and items go.
    const pending = await make('/v1/invoice_items', {
      customer: cus.id,
      amount: 500,
      currency: 'EUR',
      description: 'Pending',
    });
    const open = await make('/v1/invoices', {
      customer: cus.id,
      collection_method: 'send_invoice',
      days_until_due: 30,
      pending_invoice_items_behavior: 'exclude',
      currency: 'EUR',
    });
    await make('/v1/invoice_items', {
      customer: cus.id,
      amount: 700,
      currency: 'EUR',
      description: 'Attached',
      invoice: open.id,
    });
    expect((await call('POST', `/v1/invoices/${open.id}/finalize`)).status).toBe(200);
    expect(await workflowStatus(open.id)).toBe('RUNNING');
    expect((await call('DELETE', `/v1/test_clocks/${clock.id}`)).status).toBe(200);
    await eventually(
      () => workflowStatus(open.id),
      (status) => status === 'TERMINATED',
    );
    expect(await engine.db.orm.em.fork().count(InvoiceItem, { customerId: cus.id })).toBe(0);
    expect((await call('GET', `/v1/invoice_items/${pending.id}`)).status).toBe(404);
  });

  it('reminders already past at finalize are skipped', () => {
    const finalizedAt = new Date('2027-01-01T00:00:00Z');
    expect(reminderSchedule(new Date(finalizedAt.getTime() + 2 * day), finalizedAt).map((r) => r.kind)).toEqual([
      'due',
      'overdue',
    ]);
    expect(reminderSchedule(finalizedAt, finalizedAt).map((r) => r.kind)).toEqual(['overdue']);
  });

  it('totals equal the sum of the lines, for any items (a reference sum written apart)', () => {
    const item = fc.record({
      unit: fc.integer({ min: -99_999, max: 99_999 }),
      quantity: fc.integer({ min: 1, max: 1000 }),
      whole: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(item, { minLength: 0, maxLength: 30 }), (specs) => {
        const now = new Date('2027-01-01T00:00:00Z');
        const items = specs.map((spec, i) => ({
          id: `ii_${String(i).padStart(26, '0')}`,
          description: `Item ${i}`,
          quantity: spec.quantity,
          // Half the items as a tiered price would leave them: no whole unit amount, the line's amount only.
          unitAmount: spec.whole ? spec.unit : null,
          amount: spec.unit * spec.quantity,
          planId: null,
          breakdown: null,
          periodStart: now,
          periodEnd: now,
        })) as unknown as InvoiceItem[];
        const totals = totalsOf(items);
        let reference = 0;
        for (const spec of specs) reference += spec.unit * spec.quantity;
        expect(totals.subtotal).toBe(reference);
        expect(totals.total).toBe(reference);
        expect(totals.amountDue).toBe(Math.max(0, reference));
        expect(totals.lines.map((line) => line.total ?? line.amount! * line.quantity)).toEqual(
          specs.map((s) => s.unit * s.quantity),
        );
      }),
      { numRuns: 300 },
    );
  });
});
