/**
 * Credit notes on OPEN invoices (issue #27): the amount due drops, through the workflow that
 * charges the invoice (services/credit-notes/owner.ts), so a charge in flight and a credit note are
 * one decision: a credit note sent while a dunning retry's charge is at the processor waits for it
 * and is refused once the charge paid the invoice. The retries after a credit note charge what is
 * left; an invoice credited to nothing due is paid without a charge and its dunning ends. The same
 * for a one-off invoice through its invoice workflow, and for a promotion code applied to one while
 * its charge is at the processor (workflows/invoice.ts discountOneOffInvoiceUpdate).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CreditNote, Invoice, Transaction } from '../db/entities/index.ts';
import type { TestEngine } from './helpers/engine.ts';
import { pastDueSubscription, startGatedEngine } from './helpers/gated-processor.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('credit notes on open invoices', () => {
  let engine: TestEngine;
  let hold: Awaited<ReturnType<typeof startGatedEngine>>['hold'];
  beforeAll(async () => {
    ({ engine, hold } = await startGatedEngine());
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  const pastDue = (email: string) => pastDueSubscription(engine, email);

  it('lowers a past-due invoice: the retry charges what is left', { timeout: 60_000 }, async () => {
    const { id, customerId, invoiceId } = await pastDue('open-partial@example.com');
    const number = (await engine.call('GET', `/v1/invoices/${invoiceId}`)).body.number;
    const note = await engine.call('POST', '/v1/credit_notes', {
      invoice: invoiceId,
      lines: [{ type: 'invoice_line_item', line_index: 0, amount: 1900 }],
      reason: 'order_change',
    });
    expect(note.status, JSON.stringify(note.body)).toBe(201);
    expect(note.body).toMatchObject({
      number: `${number}-CN-01`,
      total: 1900,
      refund_amount: 0,
      credit_amount: 0,
      out_of_band_amount: 0,
      refund: null,
      status: 'issued',
    });
    expect((await engine.call('GET', `/v1/invoices/${invoiceId}`)).body).toMatchObject({
      status: 'open',
      total: 4900,
      amount_due: 3000,
      amount_remaining: 3000,
    });
    // The customer is emailed what was taken off, with the credit note's PDF link.
    await expect
      .poll(
        () =>
          engine.mail.messages.some(
            (m) =>
              m.parsed.subject?.includes(`Credit note ${number}-CN-01`) &&
              (m.parsed.text ?? '').includes('$19.00 is taken off what is due'),
          ),
        { timeout: 10_000 },
      )
      .toBe(true);
    const pdf = await engine.app.request(new URL(note.body.pdf).pathname + new URL(note.body.pdf).search);
    expect([pdf.status, pdf.headers.get('content-type')]).toEqual([200, 'application/pdf']);
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({
      status: 'past_due',
      dunning: expect.objectContaining({ invoice: invoiceId }),
    });
    // A new card retries at once: for what is left.
    expect((await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_visa' })).status).toBe(
      200,
    );
    await expect
      .poll(async () => (await em().findOneOrFail(Invoice, { id: invoiceId }, { refresh: true })).status, {
        timeout: 20_000,
      })
      .toBe('paid');
    const paid = await em().find(Transaction, { invoiceId, type: 'payment', status: 'succeeded' });
    expect(paid.map((p) => Number(p.amount))).toEqual([3000]);
    expect((await engine.call('GET', `/v1/invoices/${invoiceId}`)).body).toMatchObject({
      amount_due: 3000,
      amount_paid: 3000,
    });
    // Once paid, a credit note gives back at most what was paid (3000 of the 4900 total: 1900 was credited already).
    const over = await engine.call('POST', '/v1/credit_notes', {
      invoice: invoiceId,
      amount: 3001,
      refund_amount: 3001,
    });
    expect([over.status, over.body.error]).toEqual([400, 'invalid_request']);
    const refund = await engine.call('POST', '/v1/credit_notes', {
      invoice: invoiceId,
      amount: 3000,
      refund_amount: 3000,
    });
    expect(refund.status, JSON.stringify(refund.body)).toBe(201);
    expect(refund.body.number).toBe(`${number}-CN-02`);
    // The credit note that lowered the open invoice cannot be voided.
    const voided = await engine.call('POST', `/v1/credit_notes/${note.body.id}/void`);
    expect([voided.status, voided.body.error]).toEqual([409, 'invalid_state']);
    await expectLedgerInvariants(em(), engine.tenant.accountId);
  });

  it(
    'credited to nothing due: paid without a charge, dunning ends, nothing is charged after',
    { timeout: 60_000 },
    async () => {
      const { id, customerId, invoiceId } = await pastDue('open-full@example.com');
      const payments = await em().count(Transaction, { invoiceId, type: 'payment' });
      const note = await engine.call('POST', '/v1/credit_notes', {
        invoice: invoiceId,
        amount: 4900,
        reason: 'product_unsatisfactory',
      });
      expect(note.status, JSON.stringify(note.body)).toBe(201);
      expect((await engine.call('GET', `/v1/invoices/${invoiceId}`)).body).toMatchObject({
        status: 'paid',
        amount_due: 0,
        amount_paid: 0,
        transaction: null,
      });
      expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({
        status: 'active',
        dunning: null,
      });
      const events = (await engine.call('GET', '/v1/events?type=invoice.paid')).body.data;
      expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === invoiceId)).toBe(true);
      // A new card retries nothing: no dunning is left.
      expect(
        (await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_visa' })).status,
      ).toBe(200);
      await sleep(1_000);
      expect(await em().count(Transaction, { invoiceId, type: 'payment' })).toBe(payments);
      // A paid invoice with nothing collected has nothing to give back.
      const more = await engine.call('POST', '/v1/credit_notes', { invoice: invoiceId, amount: 1, credit_amount: 1 });
      expect([more.status, more.body.error]).toEqual([400, 'invalid_request']);
    },
  );

  it(
    'refuses on an open invoice what only a paid one takes, more than is due, and a void invoice; nothing written',
    { timeout: 60_000 },
    async () => {
      const { invoiceId } = await pastDue('open-refusals@example.com');
      for (const [body, message] of [
        [{ invoice: invoiceId, amount: 100, refund_amount: 100 }, 'for paid invoices'],
        [{ invoice: invoiceId, amount: 100, credit_amount: 100 }, 'for paid invoices'],
        [{ invoice: invoiceId, amount: 4901 }, 'left to credit'],
        [{ invoice: invoiceId, lines: [{ type: 'invoice_line_item', line_index: 1, amount: 1 }] }, 'no line 1'],
      ] as const) {
        const answer = await engine.call('POST', '/v1/credit_notes', body);
        expect([answer.status, answer.body.error], JSON.stringify(answer.body)).toEqual([400, 'invalid_request']);
        expect(answer.body.message).toContain(message);
      }
      expect(await em().count(CreditNote, { invoiceId })).toBe(0);
      expect((await em().findOneOrFail(Invoice, { id: invoiceId })).amountDue).toBe(4900);
      expect((await engine.call('POST', `/v1/invoices/${invoiceId}/void`)).status).toBe(200);
      const onVoid = await engine.call('POST', '/v1/credit_notes', { invoice: invoiceId, amount: 100 });
      expect([onVoid.status, onVoid.body.error]).toEqual([409, 'invalid_state']);
    },
  );

  it(
    'a credit note sent while a retry charges waits for the charge, then is refused: the invoice is paid in full once, never credited too',
    { timeout: 60_000 },
    async () => {
      const { customerId, invoiceId } = await pastDue('open-race@example.com');
      const { inCharge, open } = hold();
      expect(
        (await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_visa' })).status,
      ).toBe(200);
      await inCharge;
      let answered = false;
      const credited = engine
        .call('POST', '/v1/credit_notes', { invoice: invoiceId, amount: 1000 })
        .finally(() => (answered = true));
      await sleep(1_500);
      expect(answered).toBe(false);
      open();
      const answer = await credited;
      expect([answer.status, answer.body.error], JSON.stringify(answer.body)).toEqual([409, 'invalid_state']);
      expect(await em().count(CreditNote, { invoiceId })).toBe(0);
      const invoice = await em().findOneOrFail(Invoice, { id: invoiceId });
      expect([invoice.status, Number(invoice.amountDue), Number(invoice.amountPaid)]).toEqual(['paid', 4900, 4900]);
      expect(await em().count(Transaction, { invoiceId, type: 'payment', status: 'succeeded' })).toBe(1);
    },
  );

  it(
    'a one-off invoice in dunning: credited through its invoice workflow, the next pay charges what is left',
    { timeout: 60_000 },
    async () => {
      const customer = (
        await engine.call('POST', '/v1/customers', {
          email: 'one-off@example.com',
          name: 'Ada',
          payment_method: 'pm_card_chargeDeclined',
        })
      ).body.id;
      await engine.call('POST', '/v1/invoice_items', {
        customer,
        amount: 25000,
        currency: 'USD',
        description: 'Migration project',
      });
      const id = (await engine.call('POST', '/v1/invoices', { customer, collection_method: 'charge_automatically' }))
        .body.id;
      expect((await engine.call('POST', `/v1/invoices/${id}/finalize`)).status).toBe(200);
      await expect
        .poll(async () => await em().count(Transaction, { invoiceId: id, type: 'payment', status: 'failed' }), {
          timeout: 20_000,
        })
        .toBe(1);
      const note = await engine.call('POST', '/v1/credit_notes', { invoice: id, amount: 5000, memo: 'Scope reduced' });
      expect(note.status, JSON.stringify(note.body)).toBe(201);
      expect((await engine.call('GET', `/v1/invoices/${id}`)).body).toMatchObject({
        status: 'open',
        amount_due: 20000,
      });
      await engine.call('PATCH', `/v1/customers/${customer}`, { payment_method: 'pm_card_visa' });
      const paid = await engine.call('POST', `/v1/invoices/${id}/pay`);
      expect(paid.status, JSON.stringify(paid.body)).toBe(200);
      const payments = await em().find(Transaction, { invoiceId: id, type: 'payment', status: 'succeeded' });
      expect(payments.map((p) => Number(p.amount))).toEqual([20000]);
      expect((await engine.call('GET', `/v1/invoices/${id}`)).body).toMatchObject({
        status: 'paid',
        amount_paid: 20000,
      });
    },
  );

  it(
    "a promotion code sent while a one-off invoice's charge is at the processor waits for it, then is refused: paid in full, the code not counted",
    { timeout: 60_000 },
    async () => {
      const customer = (
        await engine.call('POST', '/v1/customers', {
          email: 'code-race@example.com',
          name: 'Ada',
          payment_method: 'pm_card_visa',
        })
      ).body.id;
      await engine.call('POST', '/v1/invoice_items', {
        customer,
        amount: 30000,
        currency: 'USD',
        description: 'Design sprint',
      });
      const id = (
        await engine.call('POST', '/v1/invoices', { customer, collection_method: 'send_invoice', days_until_due: 7 })
      ).body.id;
      expect((await engine.call('POST', `/v1/invoices/${id}/finalize`)).status).toBe(200);
      expect((await engine.call('POST', '/v1/coupons', { id: 'RACE10', percent_off: 10 })).status).toBe(201);
      const { inCharge, open } = hold();
      const paying = engine.call('POST', `/v1/invoices/${id}/pay`);
      await inCharge;
      let answered = false;
      const discounting = engine
        .call('POST', `/v1/invoices/${id}/discounts`, { coupon: 'RACE10' })
        .finally(() => (answered = true));
      await sleep(1_500);
      expect(answered).toBe(false);
      open();
      expect((await paying).status).toBe(200);
      const refused = await discounting;
      expect([refused.status, refused.body.error], JSON.stringify(refused.body)).toEqual([409, 'invalid_state']);
      expect((await engine.call('GET', `/v1/invoices/${id}`)).body).toMatchObject({
        status: 'paid',
        amount_paid: 30000,
        discounts: [],
      });
      expect((await engine.call('GET', '/v1/coupons/RACE10')).body.times_redeemed).toBe(0);
    },
  );
});
