/**
 * Check, then act, on a one-off invoice (docs/money-and-ledger.md): its invoice workflow runs its
 * charges, a pay and a void one at a time. A void that arrives while a charge of the invoice is at
 * the processor waits for it and is refused when it paid: the customer never pays a void invoice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Invoice, Transaction } from '../db/entities/index.ts';
import type { TestEngine } from './helpers/engine.ts';
import { startGatedEngine } from './helpers/gated-processor.ts';
import { eventually } from './helpers/temporal.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a one-off invoice voided while it is being charged', () => {
  let engine: TestEngine;
  let hold: Awaited<ReturnType<typeof startGatedEngine>>['hold'];
  beforeAll(async () => {
    ({ engine, hold } = await startGatedEngine());
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  async function draft(email: string) {
    const customer = (
      await engine.call('POST', '/v1/customers', { email, name: 'Ada', payment_method: 'pm_card_visa' })
    ).body.id;
    await engine.call('POST', '/v1/invoice_items', {
      customer,
      amount: 25000,
      currency: 'USD',
      description: 'Migration project',
    });
    return (await engine.call('POST', '/v1/invoices', { customer, collection_method: 'charge_automatically' })).body
      .id as string;
  }

  it(
    'a void during the finalize charge waits for it and is refused: paid, never paid and void',
    { timeout: 60_000 },
    async () => {
      const id = await draft('race-void@example.com');
      const { inCharge, open } = hold();
      const finalized = engine.call('POST', `/v1/invoices/${id}/finalize`);
      await inCharge;
      expect((await finalized).status).toBe(200);
      let answered = false;
      const voided = engine.call('POST', `/v1/invoices/${id}/void`).finally(() => (answered = true));
      await sleep(1_500);
      expect(answered).toBe(false);
      open();
      const answer = await voided;
      expect([answer.status, answer.body.error]).toEqual([409, 'invalid_state']);
      expect((await em().findOneOrFail(Invoice, { id })).status).toBe('paid');
      expect(await em().count(Transaction, { invoiceId: id, type: 'payment', status: 'succeeded' })).toBe(1);
    },
  );

  it('a pay during the finalize charge waits for it and is refused: charged once', { timeout: 60_000 }, async () => {
    const id = await draft('race-pay@example.com');
    const { inCharge, open } = hold();
    await engine.call('POST', `/v1/invoices/${id}/finalize`);
    await inCharge;
    const paid = engine.call('POST', `/v1/invoices/${id}/pay`);
    await sleep(1_000);
    open();
    const answer = await paid;
    expect([answer.status, answer.body.error]).toEqual([409, 'invalid_state']);
    await eventually(
      async () => (await em().findOneOrFail(Invoice, { id })).status,
      (status) => status === 'paid',
    );
    expect(await em().count(Transaction, { invoiceId: id, type: 'payment' })).toBe(1);
  });
  it(
    'items attached to one draft at once all wait for its lock, none refused, and the draft adds them all up',
    { timeout: 60_000 },
    async () => {
      // A lock that skipped a locked row (SKIP LOCKED, MikroORM's lockMode 4) answered 404 "No such invoice" to all but one.
      const customer = (
        await engine.call('POST', '/v1/customers', { email: 'race-items@example.com', payment_method: 'pm_card_visa' })
      ).body.id;
      const draftId = (
        await engine.call('POST', '/v1/invoices', {
          customer,
          collection_method: 'send_invoice',
          days_until_due: 7,
          currency: 'USD',
        })
      ).body.id as string;
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          engine.call('POST', '/v1/invoice_items', {
            customer,
            invoice: draftId,
            amount: 100 + i,
            currency: 'USD',
            description: `Part ${i}`,
          }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 12 }, () => 201));
      const invoice = (await engine.call('GET', `/v1/invoices/${draftId}`)).body;
      expect(invoice.lines).toHaveLength(12);
      expect(invoice.subtotal).toBe(12 * 100 + 66);
    },
  );
});
