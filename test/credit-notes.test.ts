/**
 * Credit notes and the customer balance API (issue #27), through the Hono app with real
 * PostgreSQL, the time-skipping Temporal server, the sandbox processor and a real SMTP server:
 * a paid subscription invoice credited by line (refund through the processor, on the ledger),
 * to the customer's balance and out of band; the invoice's limits; every refusal writing nothing;
 * void; preview; PDFs and the email; balance adjustments; tenants and modes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CreditNote, CustomerBalanceTransaction, Event, Invoice, Transaction } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

describe('credit notes and the customer balance', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  /** A customer with an active subscription of two items (3 seats at $10, an add-on at $5), its first invoice paid by card: 3500. */
  async function paidInvoice(email: string) {
    const customer = await engine.call('POST', '/v1/customers', {
      email,
      name: 'Ada Lovelace',
      payment_method: 'pm_card_visa',
    });
    const seats = await engine.call('POST', '/v1/plans', {
      name: 'Seats',
      amount: 1000,
      currency: 'USD',
      interval: 'month',
    });
    const addOn = await engine.call('POST', '/v1/plans', {
      name: 'Support',
      amount: 500,
      currency: 'USD',
      interval: 'month',
    });
    const sub = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      items: [
        { plan: seats.body.id, quantity: 3 },
        { plan: addOn.body.id, quantity: 1 },
      ],
      trial_period_days: 0,
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const invoice = (await engine.call('GET', `/v1/invoices/${sub.body.latest_invoice}`)).body;
    expect(invoice).toMatchObject({ status: 'paid', total: 3500, amount_paid: 3500 });
    expect(invoice.lines.map((line: { amount: number }) => line.amount)).toEqual([3000, 500]);
    return { customerId: customer.body.id as string, subscriptionId: sub.body.id as string, invoice };
  }

  async function snapshot(invoiceId: string, customerId: string) {
    const [notes, balanceRows, refunds, events] = await Promise.all([
      em().count(CreditNote, { invoiceId }),
      em().count(CustomerBalanceTransaction, { customerId }),
      em().count(Transaction, { invoiceId, type: 'refund' }),
      em().count(Event, { type: { $like: 'credit_note.%' } }),
    ]);
    return { notes, balanceRows, refunds, events };
  }

  it(
    'refunds one seat of a paid invoice through the processor: a refund of its payment on the ledger, numbered, emailed, with a PDF',
    { timeout: 60_000 },
    async () => {
      const { invoice, customerId } = await paidInvoice('refund-line@example.com');
      const mailBefore = engine.mail.messages.length;
      const created = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        lines: [{ type: 'invoice_line_item', line_index: 0, quantity: 1 }],
        reason: 'product_unsatisfactory',
        memo: 'One seat was never used.',
        refund_amount: 1000,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toMatchObject({
        object: 'credit_note',
        number: `${invoice.number}-CN-01`,
        invoice: invoice.id,
        customer: customerId,
        currency: 'USD',
        total: 1000,
        subtotal: 1000,
        amount: 1000,
        refund_amount: 1000,
        credit_amount: 0,
        out_of_band_amount: 0,
        reason: 'product_unsatisfactory',
        memo: 'One seat was never used.',
        status: 'issued',
        livemode: true,
        lines: [{ type: 'invoice_line_item', invoice_line_index: 0, quantity: 1, unit_amount: 1000, amount: 1000 }],
      });
      // The refund is a refund of the invoice's payment, sent to the processor and succeeded.
      const refund = await em().findOneOrFail(Transaction, { id: created.body.refund });
      expect(refund).toMatchObject({
        type: 'refund',
        status: 'succeeded',
        amount: 1000,
        sourceTransactionId: invoice.transaction,
        invoiceId: invoice.id,
      });
      expect((await engine.call('GET', `/v1/transactions/${invoice.transaction}`)).body).toMatchObject({
        amount_refunded: 1000,
      });
      expect((await engine.call('GET', `/v1/invoices/${invoice.id}`)).body).toMatchObject({
        amount_refunded: 1000,
        status: 'paid',
      });
      await expectLedgerInvariants(em(), engine.tenant.accountId);
      // Its event, and the email to the customer with the signed PDF link.
      const events = (await engine.call('GET', '/v1/events?type=credit_note.created')).body.data;
      expect(events.map((e: { data: { object: { id: string } } }) => e.data.object.id)).toContain(created.body.id);
      const [mail] = (await engine.mail.waitFor(mailBefore + 1)).slice(mailBefore);
      expect(mail!.envelopeTo).toEqual(['refund-line@example.com']);
      expect(mail!.parsed.subject).toContain(`Credit note ${invoice.number}-CN-01`);
      expect(mail!.parsed.text).toContain('$10.00 is refunded to the payment method');
      expect(mail!.parsed.text).toContain(created.body.pdf);
      // The PDF: authenticated, and by the signed link without credentials; a wrong token is 404.
      const pdf = await engine.app.request(`/v1/credit_notes/${created.body.id}/pdf`, {
        headers: engine.tenant.headers,
      });
      expect([pdf.status, pdf.headers.get('content-type')]).toEqual([200, 'application/pdf']);
      expect(
        Buffer.from(await pdf.arrayBuffer())
          .subarray(0, 5)
          .toString(),
      ).toBe('%PDF-');
      const signed = await engine.app.request(new URL(created.body.pdf).pathname + new URL(created.body.pdf).search);
      expect(signed.status).toBe(200);
      expect((await engine.app.request(`/credit_notes/${created.body.id}/pdf?token=nope`)).status).toBe(404);
      // Retrieve and list.
      expect((await engine.call('GET', `/v1/credit_notes/${created.body.id}`)).body).toEqual(created.body);
      const listed = await engine.call('GET', `/v1/credit_notes?invoice=${invoice.id}`);
      expect(listed.body.data.map((n: { id: string }) => n.id)).toEqual([created.body.id]);
      expect((await engine.call('GET', `/v1/credit_notes?customer=${customerId}`)).body.data).toHaveLength(1);
    },
  );

  it(
    'credits the customer balance and records out of band; numbers follow without gaps; the invoice total caps them; void takes back an unused credit',
    { timeout: 60_000 },
    async () => {
      const { invoice, customerId } = await paidInvoice('balance-credit@example.com');
      const credit = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        lines: [{ type: 'invoice_line_item', line_index: 1, amount: 500 }],
        credit_amount: 500,
      });
      expect(credit.status, JSON.stringify(credit.body)).toBe(201);
      expect(credit.body).toMatchObject({ number: `${invoice.number}-CN-01`, credit_amount: 500, refund: null });
      const movement = (await engine.call('GET', `/v1/customers/${customerId}/balance_transactions`)).body.data;
      expect(movement).toMatchObject([
        {
          type: 'credit_note',
          amount: -500,
          currency: 'USD',
          ending_balance: -500,
          credit_note: credit.body.id,
          invoice: invoice.id,
        },
      ]);
      expect(credit.body.customer_balance_transaction).toBe(movement[0].id);
      expect((await engine.call('GET', `/v1/customers/${customerId}`)).body.balances).toEqual({ USD: -500 });
      const events = (await engine.call('GET', '/v1/events?type=customer_balance_transaction.created')).body.data;
      expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === movement[0].id)).toBe(true);

      // The add-on line is credited in full: crediting it again is refused.
      const again = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        lines: [{ type: 'invoice_line_item', line_index: 1, amount: 1 }],
        out_of_band_amount: 1,
      });
      expect([again.status, again.body.error]).toEqual([400, 'invalid_request']);
      expect(again.body.message).toContain('left to credit of line 1');

      const outOfBand = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 2000,
        out_of_band_amount: 2000,
        memo: 'Paid back by bank transfer',
      });
      expect(outOfBand.status, JSON.stringify(outOfBand.body)).toBe(201);
      expect(outOfBand.body).toMatchObject({
        number: `${invoice.number}-CN-02`,
        out_of_band_amount: 2000,
        refund_amount: 0,
        credit_amount: 0,
        lines: [{ type: 'custom_amount', amount: 2000, description: 'Paid back by bank transfer' }],
      });
      // 2500 of 3500 credited: 1001 more is over the total.
      const over = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 1001,
        out_of_band_amount: 1001,
      });
      expect([over.status, over.body.error]).toEqual([400, 'invalid_request']);
      expect(over.body.message).toContain('left to credit of invoice');

      // Void the balance credit while the customer still holds it: the balance goes back to 0.
      const voided = await engine.call('POST', `/v1/credit_notes/${credit.body.id}/void`);
      expect(voided.status, JSON.stringify(voided.body)).toBe(200);
      expect(voided.body).toMatchObject({ status: 'void' });
      expect((await engine.call('GET', `/v1/customers/${customerId}`)).body.balances).toEqual({ USD: 0 });
      const afterVoid = (await engine.call('GET', `/v1/customers/${customerId}/balance_transactions`)).body.data;
      expect(afterVoid.map((t: { amount: number }) => t.amount)).toEqual([500, -500]);
      expect((await engine.call('POST', `/v1/credit_notes/${credit.body.id}/void`)).status).toBe(409);
      // Its 500 can be credited again (a void note no longer counts), and the next number follows: 03.
      const after = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 1000,
        out_of_band_amount: 1000,
      });
      expect(after.status, JSON.stringify(after.body)).toBe(201);
      expect(after.body.number).toBe(`${invoice.number}-CN-03`);
      const voidedEvents = (await engine.call('GET', '/v1/events?type=credit_note.voided')).body.data;
      expect(voidedEvents.map((e: { data: { object: { id: string } } }) => e.data.object.id)).toContain(credit.body.id);
    },
  );

  it(
    'a refund the processor refuses: it fails, nothing leaves, and the credit note can be voided and issued again',
    { timeout: 60_000 },
    async () => {
      const { invoice } = await paidInvoice('refund-refused@example.com');
      const payment = await em().findOneOrFail(Transaction, { id: invoice.transaction });
      // The charge was refunded in full at the processor behind the engine's back: the processor refuses any more.
      await em()
        .getConnection()
        .execute(
          `insert into sandbox_processor_refunds (id, idempotency_key, charge_id, amount, currency, status, created_at) values (?, ?, ?, 3500, 'USD', 'succeeded', now())`,
          [`sbre_outside_${payment.id}`, `outside:${payment.id}`, payment.processorChargeId],
        );
      const note = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 1000,
        refund_amount: 1000,
      });
      expect(note.status, JSON.stringify(note.body)).toBe(201);
      const refund = await em().findOneOrFail(Transaction, { id: note.body.refund });
      expect([refund.status, refund.failureCode]).toEqual(['failed', 'amount_too_large']);
      expect(Number((await em().findOneOrFail(Transaction, { id: payment.id })).amountRefunded)).toBe(0);
      const voided = await engine.call('POST', `/v1/credit_notes/${note.body.id}/void`);
      expect([voided.status, voided.body.status], JSON.stringify(voided.body)).toEqual([200, 'void']);
      const again = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 3500,
        out_of_band_amount: 3500,
      });
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(again.body.number).toBe(`${invoice.number}-CN-02`);
      await expectLedgerInvariants(em(), engine.tenant.accountId);
    },
  );

  it('refuses what the invoice cannot take, and writes nothing', { timeout: 60_000 }, async () => {
    const { invoice, customerId } = await paidInvoice('refusals@example.com');
    const before = await snapshot(invoice.id, customerId);
    const cases: [unknown, number, string, string][] = [
      [
        { invoice: invoice.id, lines: [{ type: 'invoice_line_item', line_index: 2, quantity: 1 }] },
        400,
        'invalid_request',
        'there is no line 2',
      ],
      [
        { invoice: invoice.id, lines: [{ type: 'invoice_line_item', line_index: 0, quantity: 4 }] },
        400,
        'invalid_request',
        'has 3 unit(s), not 4',
      ],
      [
        { invoice: invoice.id, lines: [{ type: 'invoice_line_item', line_index: 0, amount: 3001 }] },
        400,
        'invalid_request',
        'left to credit of line 0',
      ],
      [{ invoice: invoice.id, amount: 3501, credit_amount: 3501 }, 400, 'invalid_request', 'left to credit of invoice'],
      [
        { invoice: invoice.id, amount: 1000, refund_amount: 600, credit_amount: 600 },
        400,
        'invalid_request',
        'must add up',
      ],
      [{ invoice: invoice.id, amount: 1000, currency: 'EUR' }, 400, 'currency_mismatch', 'is in USD, not EUR'],
      [
        { invoice: invoice.id, amount: 1000, lines: [{ type: 'custom_amount', amount: 5, description: 'x' }] },
        400,
        'invalid_request',
        'lines or amount',
      ],
      [{ invoice: invoice.id }, 400, 'invalid_request', 'lines or amount'],
      [{ invoice: invoice.id, lines: [{ type: 'custom_amount', amount: 5 }] }, 400, 'invalid_request', 'description'],
      [
        { invoice: invoice.id, lines: [{ type: 'invoice_line_item', line_index: 0 }] },
        400,
        'invalid_request',
        'quantity or amount',
      ],
      [{ invoice: invoice.id, amount: -5 }, 400, 'invalid_request', 'amount'],
      [{ invoice: invoice.id, amount: 10, reason: 'changed_my_mind' }, 400, 'invalid_request', 'reason'],
      [{ invoice: 'inv_01jd3x5k8q0m2v7c9r4t6y1w3e', amount: 10 }, 404, 'not_found', 'no such invoice'],
    ];
    for (const [body, status, error, message] of cases) {
      const answer = await engine.call('POST', '/v1/credit_notes', body);
      expect([answer.status, answer.body.error], JSON.stringify({ body, answer: answer.body })).toEqual([
        status,
        error,
      ]);
      expect(answer.body.message).toContain(message);
    }
    expect(await snapshot(invoice.id, customerId)).toEqual(before);
  });

  it('refunds and credits together never give back more than the invoice collected', { timeout: 60_000 }, async () => {
    const { invoice, customerId } = await paidInvoice('collected@example.com');
    // A plain refund of 3000 of the invoice's payment: only 500 is left to give back.
    const refunded = await engine.call('POST', '/v1/transactions', {
      account_id: engine.tenant.accountId,
      amount: 3000,
      currency: 'USD',
      type: 'refund',
      source_transaction: invoice.transaction,
    });
    expect(refunded.status, JSON.stringify(refunded.body)).toBe(201);
    const tooMuch = await engine.call('POST', '/v1/credit_notes', {
      invoice: invoice.id,
      amount: 1000,
      credit_amount: 1000,
    });
    expect([tooMuch.status, tooMuch.body.error]).toEqual([400, 'invalid_request']);
    expect(tooMuch.body.message).toContain('left to give back');
    // Out of band moves no money: allowed up to the total.
    expect(
      (await engine.call('POST', '/v1/credit_notes', { invoice: invoice.id, amount: 1000, out_of_band_amount: 1000 }))
        .status,
    ).toBe(201);
    const credit = await engine.call('POST', '/v1/credit_notes', {
      invoice: invoice.id,
      amount: 500,
      credit_amount: 500,
    });
    expect(credit.status, JSON.stringify(credit.body)).toBe(201);
    // Now nothing is left: a plain refund of 1 is refused, naming the credit notes.
    const refundAfter = await engine.call('POST', '/v1/transactions', {
      account_id: engine.tenant.accountId,
      amount: 1,
      currency: 'USD',
      type: 'refund',
      source_transaction: invoice.transaction,
    });
    expect([refundAfter.status, refundAfter.body.error]).toEqual([400, 'invalid_request']);
    expect(refundAfter.body.message).toContain('credit notes credited $5.00');
    // A credit that was used cannot be voided: spend it with a debit adjustment first.
    expect(
      (
        await engine.call('POST', `/v1/customers/${customerId}/balance_transactions`, {
          amount: 300,
          currency: 'USD',
          description: 'Used',
        })
      ).status,
    ).toBe(201);
    const voidUsed = await engine.call('POST', `/v1/credit_notes/${credit.body.id}/void`);
    expect([voidUsed.status, voidUsed.body.error]).toEqual([409, 'invalid_state']);
    expect(voidUsed.body.message).toContain('the credit was used');
    await expectLedgerInvariants(em(), engine.tenant.accountId);
  });

  it('a credit note with a refund cannot be voided; preview checks without writing', { timeout: 60_000 }, async () => {
    const { invoice, customerId } = await paidInvoice('preview@example.com');
    const before = await snapshot(invoice.id, customerId);
    const lines = encodeURIComponent(JSON.stringify([{ type: 'invoice_line_item', line_index: 0, quantity: 2 }]));
    const preview = await engine.call(
      'GET',
      `/v1/credit_notes/preview?invoice=${invoice.id}&lines=${lines}&refund_amount=1500`,
    );
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body).toMatchObject({
      id: 'cn_preview',
      number: `${invoice.number}-CN-01`,
      total: 2000,
      refund_amount: 1500,
      credit_amount: 500,
      refund: null,
    });
    const badPreview = await engine.call('GET', `/v1/credit_notes/preview?invoice=${invoice.id}&amount=9999`);
    expect([badPreview.status, badPreview.body.error]).toEqual([400, 'invalid_request']);
    expect((await engine.call('GET', `/v1/credit_notes/preview?invoice=${invoice.id}&lines=nope`)).status).toBe(400);
    expect(await snapshot(invoice.id, customerId)).toEqual(before);
    const withRefund = await engine.call('POST', '/v1/credit_notes', {
      invoice: invoice.id,
      amount: 700,
      refund_amount: 700,
    });
    expect(withRefund.status).toBe(201);
    const voided = await engine.call('POST', `/v1/credit_notes/${withRefund.body.id}/void`);
    expect([voided.status, voided.body.error]).toEqual([409, 'invalid_state']);
    expect(voided.body.message).toContain('refund cannot be taken back');
  });

  it('refuses a void invoice and a draft (409)', { timeout: 60_000 }, async () => {
    const customer = await engine.call('POST', '/v1/customers', {
      email: 'declined@example.com',
      payment_method: 'pm_card_chargeDeclined',
    });
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Team',
      amount: 4900,
      currency: 'USD',
      interval: 'month',
    });
    const sub = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      plan: plan.body.id,
      trial_period_days: 0,
    });
    expect(sub.body.status).toBe('past_due');
    expect((await engine.call('POST', `/v1/invoices/${sub.body.latest_invoice}/void`)).status).toBe(200);
    const voided = await engine.call('POST', '/v1/credit_notes', { invoice: sub.body.latest_invoice, amount: 100 });
    expect([voided.status, voided.body.error]).toEqual([409, 'invalid_state']);
    expect(voided.body.message).toContain('is void');
    expect(await em().count(CreditNote, { invoiceId: sub.body.latest_invoice })).toBe(0);
    await engine.call('POST', '/v1/invoice_items', {
      customer: customer.body.id,
      amount: 2500,
      currency: 'USD',
      description: 'Setup',
    });
    const draft = (
      await engine.call('POST', '/v1/invoices', {
        customer: customer.body.id,
        collection_method: 'send_invoice',
        days_until_due: 30,
      })
    ).body;
    const onDraft = await engine.call('POST', '/v1/credit_notes', { invoice: draft.id, amount: 100 });
    expect([onDraft.status, onDraft.body.error], JSON.stringify(onDraft.body)).toEqual([409, 'invalid_state']);
  });

  it(
    'balance adjustments: credit and debit, listed newest first with cursors, retrieved; bad input refused',
    { timeout: 60_000 },
    async () => {
      const customer = (await engine.call('POST', '/v1/customers', { email: 'goodwill@example.com' })).body;
      expect(customer.balances).toEqual({});
      const ids: string[] = [];
      for (const [amount, currency] of [
        [-2500, 'USD'],
        [700, 'USD'],
        [-100, 'eur'],
      ] as const) {
        const made = await engine.call('POST', `/v1/customers/${customer.id}/balance_transactions`, {
          amount,
          currency,
          description: 'Goodwill',
        });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        expect(made.body).toMatchObject({
          object: 'customer_balance_transaction',
          type: 'adjustment',
          amount,
          currency: currency.toUpperCase(),
          customer: customer.id,
          description: 'Goodwill',
          livemode: true,
        });
        ids.push(made.body.id);
      }
      expect((await engine.call('GET', `/v1/customers/${customer.id}`)).body.balances).toEqual({
        EUR: -100,
        USD: -1800,
      });
      const listed = (await engine.call('GET', `/v1/customers/${customer.id}/balance_transactions?limit=2`)).body;
      expect([listed.data.map((t: { id: string }) => t.id), listed.has_more]).toEqual([[ids[2], ids[1]], true]);
      const next = (
        await engine.call('GET', `/v1/customers/${customer.id}/balance_transactions?limit=2&starting_after=${ids[1]}`)
      ).body;
      expect([next.data.map((t: { id: string }) => t.id), next.has_more]).toEqual([[ids[0]], false]);
      expect(
        (await engine.call('GET', `/v1/customers/${customer.id}/balance_transactions?currency=EUR`)).body.data,
      ).toHaveLength(1);
      expect(
        (await engine.call('GET', `/v1/customers/${customer.id}/balance_transactions/${ids[0]}`)).body,
      ).toMatchObject({ id: ids[0], ending_balance: -2500 });
      const count = await em().count(CustomerBalanceTransaction, { customerId: customer.id });
      for (const body of [
        { amount: 0, currency: 'USD' },
        { amount: 10, currency: 'XYZ' },
        { amount: 1.5, currency: 'USD' },
        { amount: 10 },
        { amount: 100_000_000, currency: 'USD' },
        { amount: 10, currency: 'USD', type: 'credit_note' },
      ]) {
        const answer = await engine.call('POST', `/v1/customers/${customer.id}/balance_transactions`, body);
        expect([answer.status, answer.body.error], JSON.stringify(body)).toEqual([400, 'invalid_request']);
      }
      expect(await em().count(CustomerBalanceTransaction, { customerId: customer.id })).toBe(count);
      // Another customer's transaction id under this customer: 404.
      const other = (await engine.call('POST', '/v1/customers', { email: 'other@example.com' })).body;
      expect((await engine.call('GET', `/v1/customers/${other.id}/balance_transactions/${ids[0]}`)).status).toBe(404);
    },
  );

  it(
    'a credit note to the balance pays the next renewal first: the card is charged the rest; then a credit note refund after the renewal',
    { timeout: 60_000 },
    async () => {
      const { invoice, customerId, subscriptionId } = await paidInvoice('renewal-credit@example.com');
      const credit = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        lines: [{ type: 'invoice_line_item', line_index: 0, quantity: 1 }],
        credit_amount: 1000,
        reason: 'order_change',
      });
      expect(credit.status, JSON.stringify(credit.body)).toBe(201);
      expect((await engine.call('GET', `/v1/customers/${customerId}`)).body.balances).toEqual({ USD: -1000 });
      await engine.env.sleep(32 * 86_400_000);
      const invoices = await engine.invoices(subscriptionId);
      expect(invoices).toHaveLength(2);
      const renewal = (await engine.call('GET', `/v1/invoices/${invoices[1]!.id}`)).body;
      expect(renewal).toMatchObject({
        status: 'paid',
        total: 3500,
        starting_balance: -1000,
        ending_balance: 0,
        amount_due: 2500,
        amount_paid: 2500,
      });
      const payment = await em().findOneOrFail(Transaction, { id: renewal.transaction });
      expect(Number(payment.amount)).toBe(2500);
      expect((await engine.call('GET', `/v1/customers/${customerId}`)).body.balances).toEqual({ USD: 0 });
      const movements = (await engine.call('GET', `/v1/customers/${customerId}/balance_transactions`)).body.data;
      expect(movements.map((m: { type: string; amount: number }) => [m.type, m.amount])).toEqual([
        ['applied_to_invoice', 1000],
        ['credit_note', -1000],
      ]);
      // The renewal collected 3500 (2500 by card, 1000 from the balance): a credit note refunds at most the card's 2500,
      // and credits the balance the rest.
      const tooMuch = await engine.call('POST', '/v1/credit_notes', {
        invoice: renewal.id,
        amount: 3000,
        refund_amount: 3000,
      });
      expect([tooMuch.status, tooMuch.body.error]).toEqual([400, 'invalid_request']);
      const refund = await engine.call('POST', '/v1/credit_notes', {
        invoice: renewal.id,
        amount: 3500,
        refund_amount: 2500,
        credit_amount: 1000,
      });
      expect(refund.status, JSON.stringify(refund.body)).toBe(201);
      expect((await em().findOneOrFail(Transaction, { id: refund.body.refund })).status).toBe('succeeded');
      expect((await engine.call('GET', `/v1/customers/${customerId}`)).body.balances).toEqual({ USD: -1000 });
      // The credit notes of the first invoice's refund do not reach the renewal's payment.
      expect(Number((await em().findOneOrFail(Transaction, { id: invoice.transaction })).amountRefunded)).toBe(0);
      await expectLedgerInvariants(em(), engine.tenant.accountId);
    },
  );

  it(
    'exports credit notes: what each gave back and how, filtered by invoice; an unknown reason refused',
    { timeout: 60_000 },
    async () => {
      const { invoice } = await paidInvoice('export-notes@example.com');
      const note = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 1500,
        refund_amount: 1000,
        credit_amount: 500,
        reason: 'order_change',
        memo: 'Two seats fewer',
      });
      expect(note.status, JSON.stringify(note.body)).toBe(201);
      const created = await engine.call('POST', '/v1/exports', {
        resource: 'credit_notes',
        format: 'json',
        filters: { invoice: invoice.id },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(202);
      const done = await eventually(
        async () => (await engine.call('GET', `/v1/exports/${created.body.id}`)).body,
        (e) => e.status === 'succeeded' || e.status === 'failed',
        20_000,
      );
      expect(done.status, JSON.stringify(done)).toBe('succeeded');
      const file = await engine.app.request(`/v1/exports/${done.id}/file`, { headers: engine.tenant.headers });
      expect(file.status).toBe(200);
      const rows = JSON.parse(await file.text());
      // Times in exports are to the second, with the account's offset.
      expect(Math.abs(Date.parse(rows[0].created) - Date.parse(note.body.created_at))).toBeLessThan(1000);
      expect(rows).toEqual([
        {
          id: note.body.id,
          created: rows[0].created,
          number: note.body.number,
          status: 'issued',
          invoice: invoice.id,
          customer: invoice.customer_id,
          total: 1500,
          refund_amount: 1000,
          credit_amount: 500,
          out_of_band_amount: 0,
          currency: 'USD',
          total_formatted: '15.00',
          reason: 'order_change',
          memo: 'Two seats fewer',
          refund: note.body.refund,
          voided_at: null,
        },
      ]);
      const bad = await engine.call('POST', '/v1/exports', {
        resource: 'credit_notes',
        format: 'csv',
        filters: { reason: 'because' },
      });
      expect([bad.status, bad.body.error]).toEqual([400, 'invalid_request']);
    },
  );

  it(
    'tenants and modes: another account and the other mode see nothing and change nothing',
    { timeout: 60_000 },
    async () => {
      const { invoice, customerId } = await paidInvoice('isolated@example.com');
      const note = (
        await engine.call('POST', '/v1/credit_notes', { invoice: invoice.id, amount: 100, out_of_band_amount: 100 })
      ).body;
      const adjustment = (
        await engine.call('POST', `/v1/customers/${customerId}/balance_transactions`, { amount: -100, currency: 'USD' })
      ).body;
      const before = await snapshot(invoice.id, customerId);
      const intruder = await engine.signUp();
      const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
      for (const headers of [intruder.headers, sandbox]) {
        const as = (method: string, path: string, body?: unknown) => engine.call(method, path, body, headers);
        expect((await as('GET', `/v1/credit_notes/${note.id}`)).status).toBe(404);
        expect((await as('GET', `/v1/credit_notes/${note.id}/pdf`)).status).toBe(404);
        expect((await as('POST', `/v1/credit_notes/${note.id}/void`)).status).toBe(404);
        expect((await as('GET', `/v1/credit_notes?invoice=${invoice.id}`)).body.data).toEqual([]);
        expect(
          (await as('POST', '/v1/credit_notes', { invoice: invoice.id, amount: 100, out_of_band_amount: 100 })).status,
        ).toBe(404);
        expect((await as('GET', `/v1/credit_notes/preview?invoice=${invoice.id}&amount=100`)).status).toBe(404);
        expect((await as('GET', `/v1/customers/${customerId}/balance_transactions`)).status).toBe(404);
        expect((await as('GET', `/v1/customers/${customerId}/balance_transactions/${adjustment.id}`)).status).toBe(404);
        expect(
          (await as('POST', `/v1/customers/${customerId}/balance_transactions`, { amount: -100, currency: 'USD' }))
            .status,
        ).toBe(404);
      }
      // The sandbox's credential is told the id exists in live mode.
      expect((await engine.call('GET', `/v1/credit_notes/${note.id}`, undefined, sandbox)).body.message).toContain(
        'exists in live mode',
      );
      expect(await snapshot(invoice.id, customerId)).toEqual(before);
      expect((await em().findOneOrFail(Invoice, { id: invoice.id })).amountRefunded).toBe(0);
    },
  );
});
