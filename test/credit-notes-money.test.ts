/**
 * Money is never created by credit notes (issue #27's acceptance): a credit note's refund and a
 * plain refund of the same payment racing each other never exceed the payment, nor do a credit to
 * the balance and a refund; and random rounds of concurrent credit notes (refund, credit,
 * out of band), plain refunds, voids and balance adjustments on paid invoices never give back more
 * than was collected, keep every customer's balance equal to the sum of its transactions, and keep
 * the ledger balanced.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CreditNote, CustomerBalance, CustomerBalanceTransaction, Invoice, Transaction } from '../db/entities/index.ts';
import { openInvoice, settleInvoice } from '../services/invoices/cycle-invoices.ts';
import { chargeCustomer } from '../services/money/charges.ts';
import { sandboxProcessors } from '../services/processors/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';

describe('credit notes never give back more than was collected', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();
  const links = { invoicePdfUrl: (id: string) => `http://localhost/invoices/${id}/pdf` };
  let invoiceNo = 0;

  /** An invoice of `amount` paid by card, as a subscription's renewal pays one (open, charge, settle). */
  async function paidInvoice(tenant: Tenant, customerId: string, amount: number) {
    const processors = sandboxProcessors(() => em());
    const billingKey = `cn-money-${invoiceNo++}:cycle:1`;
    const now = new Date().toISOString();
    const opened = await openInvoice(em(), links, {
      billingKey,
      subscriptionId: `sub_cn_money_${invoiceNo}`,
      accountId: tenant.accountId,
      customerId,
      currency: 'USD',
      lines: [
        { description: 'Seats', amount: amount - 100, quantity: 1, period_start: now, period_end: now },
        { description: 'Support', amount: 100, quantity: 1, period_start: now, period_end: now },
      ],
      periodStart: now,
      periodEnd: now,
      issuedAt: now,
      livemode: true,
    });
    // The customer's balance may pay part of it (services/invoices/adjustments.ts): the card pays what is due.
    expect(opened.amountDue).toBeGreaterThan(0);
    const outcome = await chargeCustomer({ processors, links }, em(), {
      idempotencyKey: `${billingKey}:attempt:1`,
      invoiceId: opened.invoiceId,
      attempt: 1,
      accountId: tenant.accountId,
      customerId,
      amount: opened.amountDue,
      currency: 'USD',
      description: 'Plan',
      livemode: true,
    });
    expect(outcome.status).toBe('succeeded');
    await settleInvoice(em(), links, opened.invoiceId, outcome);
    return em().findOneOrFail(Invoice, { id: opened.invoiceId });
  }

  async function tenantWithCustomer() {
    const tenant = await engine.signUp();
    const customer = await engine.call(
      'POST',
      '/v1/customers',
      { email: 'money@example.com', payment_method: 'pm_card_visa' },
      tenant.headers,
    );
    return { tenant, customerId: customer.body.id as string };
  }

  /** What left for the customer per invoice never exceeds what it collected; balances equal their transactions; the ledger balances. */
  async function expectNoMoneyCreated(tenant: Tenant) {
    const invoices = await em().find(Invoice, { accountId: tenant.accountId, status: 'paid' });
    for (const invoice of invoices) {
      const payment = await em().findOneOrFail(Transaction, { id: invoice.transactionId! });
      const refunds = await em().find(Transaction, {
        sourceTransactionId: payment.id,
        type: 'refund',
        status: { $ne: 'failed' },
      });
      const notes = await em().find(CreditNote, { invoiceId: invoice.id, status: 'issued' });
      const refunded = refunds.reduce((sum, r) => sum + Number(r.amount), 0);
      const toBalance = notes.reduce((sum, n) => sum + Number(n.creditAmount), 0);
      const credited = notes.reduce((sum, n) => sum + Number(n.total), 0);
      expect(refunded, `refunds of ${invoice.id}`).toBeLessThanOrEqual(Number(payment.amount));
      // Collected: paid by card, and by the customer's balance when one was applied (total − amount due).
      const collected = Number(invoice.amountPaid) + Math.max(0, Number(invoice.total) - Number(invoice.amountDue));
      expect(refunded + toBalance, `given back of ${invoice.id}`).toBeLessThanOrEqual(collected);
      expect(credited, `credit notes of ${invoice.id}`).toBeLessThanOrEqual(Number(invoice.total));
      for (const note of notes)
        expect(Number(note.refundAmount) + Number(note.creditAmount) + Number(note.outOfBandAmount)).toBe(
          Number(note.total),
        );
      // Every credit note's refund is one refund of the payment for its refund_amount.
      for (const note of notes.filter((n) => n.refundTransactionId)) {
        expect(refunds.find((r) => r.id === note.refundTransactionId)?.amount).toBe(Number(note.refundAmount));
      }
    }
    const balances = await em().find(CustomerBalance, { accountId: tenant.accountId });
    for (const balance of balances) {
      const movements = await em().find(
        CustomerBalanceTransaction,
        { customerId: balance.customerId, currency: balance.currency },
        { orderBy: { id: 'asc' } },
      );
      expect(Number(balance.balance)).toBe(movements.reduce((sum, m) => sum + Number(m.amount), 0));
      // Each transaction's ending_balance is the running sum, in the order they were made.
      let running = 0;
      for (const movement of movements) {
        running += Number(movement.amount);
        expect(Number(movement.endingBalance)).toBe(running);
      }
    }
    await expectLedgerInvariants(em(), tenant.accountId);
  }

  it(
    'a credit note refund and a plain refund of one payment at once: one of them, never more than paid',
    { timeout: 120_000 },
    async () => {
      const { tenant } = await tenantWithCustomer();
      const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, tenant.headers);
      for (let round = 0; round < 6; round++) {
        // A customer of its own each round: an earlier round's credit would pay part of the invoice.
        const customerId = (
          await call('POST', '/v1/customers', { email: `race${round}@example.com`, payment_method: 'pm_card_visa' })
        ).body.id;
        const invoice = await paidInvoice(tenant, customerId, 3000);
        const creditNote =
          round % 2 === 0
            ? { invoice: invoice.id, amount: 2000, refund_amount: 2000 }
            : {
                invoice: invoice.id,
                lines: [{ type: 'invoice_line_item', line_index: 0, amount: 2000 }],
                credit_amount: 2000,
              };
        const [note, refund] = await Promise.all([
          call('POST', '/v1/credit_notes', creditNote),
          call('POST', '/v1/transactions', {
            account_id: tenant.accountId,
            amount: 2000,
            currency: 'USD',
            type: 'refund',
            source_transaction: invoice.transactionId,
          }),
        ]);
        expect([note.status, refund.status].sort(), JSON.stringify([note.body, refund.body])).toEqual([201, 400]);
        const loser = note.status === 400 ? note : refund;
        expect(loser.body.error).toBe('invalid_request');
        const payment = await em().findOneOrFail(Transaction, { id: invoice.transactionId! });
        expect(Number(payment.amountRefunded)).toBeLessThanOrEqual(3000);
      }
      await expectNoMoneyCreated(tenant);
    },
  );

  it(
    'GET /v1/reports/invoiced: invoices issued less the credit notes issued (void ones left out); the cash report shows the refund',
    { timeout: 60_000 },
    async () => {
      const { tenant, customerId } = await tenantWithCustomer();
      const call = (method: string, path: string, body?: unknown) => engine.call(method, path, body, tenant.headers);
      const first = await paidInvoice(tenant, customerId, 2000);
      await paidInvoice(tenant, customerId, 3000);
      expect(
        (await call('POST', '/v1/credit_notes', { invoice: first.id, amount: 500, refund_amount: 500 })).status,
      ).toBe(201);
      expect(
        (await call('POST', '/v1/credit_notes', { invoice: first.id, amount: 700, out_of_band_amount: 700 })).status,
      ).toBe(201);
      const voided = await call('POST', '/v1/credit_notes', { invoice: first.id, amount: 300, credit_amount: 300 });
      expect((await call('POST', `/v1/credit_notes/${voided.body.id}/void`)).status).toBe(200);
      const report = await call('GET', '/v1/reports/invoiced?interval=month');
      expect(report.status, JSON.stringify(report.body)).toBe(200);
      expect(report.body).toMatchObject({ object: 'report', report: 'invoiced', interval: 'month', livemode: true });
      const usd = report.body.data.find((series: { currency: string }) => series.currency === 'USD');
      const last = usd.points.at(-1);
      expect(last).toMatchObject({
        invoices: 2,
        subtotal: 5000,
        discounts: 0,
        tax: 0,
        tax_by_rate: [],
        credit_notes: 1200,
        net_revenue: 3800,
      });
      const cash = (await call('GET', '/v1/reports/revenue?interval=month')).body.data.find(
        (series: { currency: string }) => series.currency === 'USD',
      );
      expect(cash.points.at(-1)).toMatchObject({ gross: 5000, refunded: 500, net: 4500 });
      // Another account's report has none of it.
      const other = await engine.signUp();
      expect(
        (await engine.call('GET', '/v1/reports/invoiced?interval=month', undefined, other.headers)).body.data,
      ).toEqual([]);
    },
  );

  it(
    'random concurrent credit notes, refunds, voids and adjustments never create money',
    { timeout: 300_000 },
    async () => {
      const split = fc.constantFrom('refund', 'credit', 'oob', 'mixed');
      const operation = fc.oneof(
        fc.record({
          kind: fc.constant('credit_note' as const),
          pick: fc.nat(),
          amount: fc.integer({ min: 1, max: 2500 }),
          split,
          byLine: fc.boolean(),
        }),
        fc.record({ kind: fc.constant('refund' as const), pick: fc.nat(), amount: fc.integer({ min: 1, max: 2500 }) }),
        fc.record({ kind: fc.constant('void' as const), pick: fc.nat() }),
        fc.record({
          kind: fc.constant('adjustment' as const),
          amount: fc.integer({ min: -1500, max: 1500 }).filter((n) => n !== 0),
        }),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(operation, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 }),
          async (rounds) => {
            const { tenant, customerId } = await tenantWithCustomer();
            const call = (method: string, path: string, body?: unknown) =>
              engine.call(method, path, body, tenant.headers);
            const invoices = [await paidInvoice(tenant, customerId, 2000), await paidInvoice(tenant, customerId, 3000)];
            for (const ops of rounds) {
              const notes = await em().find(CreditNote, { accountId: tenant.accountId }, { orderBy: { id: 'asc' } });
              const results = await Promise.all(
                ops.map(async (op) => {
                  switch (op.kind) {
                    case 'credit_note': {
                      const invoice = invoices[op.pick % invoices.length]!;
                      const half = Math.floor(op.amount / 2);
                      const where =
                        op.split === 'refund'
                          ? { refund_amount: op.amount }
                          : op.split === 'credit'
                            ? { credit_amount: op.amount }
                            : op.split === 'oob'
                              ? { out_of_band_amount: op.amount }
                              : { refund_amount: half, credit_amount: op.amount - half };
                      const body = op.byLine
                        ? {
                            invoice: invoice.id,
                            lines: [{ type: 'invoice_line_item', line_index: 0, amount: op.amount }],
                            ...where,
                          }
                        : { invoice: invoice.id, amount: op.amount, ...where };
                      return { op, answer: await call('POST', '/v1/credit_notes', body) };
                    }
                    case 'refund': {
                      const invoice = invoices[op.pick % invoices.length]!;
                      return {
                        op,
                        answer: await call('POST', '/v1/transactions', {
                          account_id: tenant.accountId,
                          amount: op.amount,
                          currency: 'USD',
                          type: 'refund',
                          source_transaction: invoice.transactionId,
                        }),
                      };
                    }
                    case 'void': {
                      const note = notes[op.pick % Math.max(1, notes.length)];
                      if (!note) return { op, answer: { status: 409, body: { error: 'invalid_state' } } };
                      return { op, answer: await call('POST', `/v1/credit_notes/${note.id}/void`) };
                    }
                    case 'adjustment':
                      return {
                        op,
                        answer: await call('POST', `/v1/customers/${customerId}/balance_transactions`, {
                          amount: op.amount,
                          currency: 'USD',
                        }),
                      };
                  }
                }),
              );
              for (const { op, answer } of results) {
                // Refused ones are refusals in the error shape, never a server error.
                const allowed = op.kind === 'void' ? [200, 409] : op.kind === 'adjustment' ? [201] : [201, 400, 402];
                expect(allowed, `${op.kind}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
              }
            }
            await expectNoMoneyCreated(tenant);
          },
        ),
        { numRuns: 10 },
      );
    },
  );
});
