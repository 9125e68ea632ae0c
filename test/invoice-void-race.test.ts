/**
 * Issue #24's sweep of "check a status, then act": an invoice voided while its
 * subscription's dunning retry is charging it. The retry read the invoice open and
 * charged; a void landing meanwhile succeeded, and the customer paid a void invoice.
 * A void of a running subscription's invoice now goes through its workflow
 * (services/invoices/void.ts), between the workflow's own steps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Invoice, Transaction } from '../db/entities/index.ts';
import type { TestEngine } from './helpers/engine.ts';
import { pastDueSubscription, startGatedEngine } from './helpers/gated-processor.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('voiding an invoice its subscription is charging', () => {
  let engine: TestEngine;
  let hold: Awaited<ReturnType<typeof startGatedEngine>>['hold'];
  beforeAll(async () => {
    ({ engine, hold } = await startGatedEngine());
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  const pastDue = (email: string) => pastDueSubscription(engine, email);

  it(
    'a void arriving while the retry charges waits for the charge, then is refused: the invoice is paid, never paid and void',
    { timeout: 60_000 },
    async () => {
      const { id, customerId, invoiceId } = await pastDue('void-race@example.com');
      const { inCharge, open } = hold();
      // A new card retries the past-due invoice at once; its charge stops at the gate.
      expect(
        (await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_visa' })).status,
      ).toBe(200);
      await inCharge;

      let answered = false;
      const voided = engine.call('POST', `/v1/invoices/${invoiceId}/void`).finally(() => (answered = true));
      await sleep(1_500);
      expect(answered).toBe(false);
      open();

      const answer = await voided;
      expect(answer.status).toBe(409);
      expect(answer.body.error).toBe('invalid_state');
      const invoice = await em().findOneOrFail(Invoice, { id: invoiceId });
      expect(invoice.status).toBe('paid');
      expect(await em().count(Transaction, { invoiceId, type: 'payment', status: 'succeeded' })).toBe(1);
      expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({
        status: 'active',
        dunning: null,
      });
    },
  );

  it(
    'a past-due invoice voided with no charge in flight: void at once, its dunning ends, nothing charged',
    { timeout: 60_000 },
    async () => {
      const { id, invoiceId } = await pastDue('void-calm@example.com');
      const answer = await engine.call('POST', `/v1/invoices/${invoiceId}/void`);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ id: invoiceId, status: 'void' });
      expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({
        status: 'active',
        dunning: null,
      });
      expect(await em().count(Transaction, { invoiceId, type: 'payment', status: 'succeeded' })).toBe(0);
      // Voiding twice is refused as before.
      const again = await engine.call('POST', `/v1/invoices/${invoiceId}/void`);
      expect([again.status, again.body.error]).toEqual([409, 'invalid_state']);
    },
  );

  it('an invoice of an ended subscription is voided directly', { timeout: 60_000 }, async () => {
    const { id, invoiceId } = await pastDue('void-ended@example.com');
    expect((await engine.call('POST', `/v1/subscriptions/${id}/cancel`)).status).toBe(200);
    // Canceled in dunning: its unpaid invoice is marked uncollectible, and the workflow charges nothing more.
    expect((await em().findOneOrFail(Invoice, { id: invoiceId })).status).toBe('uncollectible');
    const answer = await engine.call('POST', `/v1/invoices/${invoiceId}/void`);
    expect([answer.status, answer.body.status]).toEqual([200, 'void']);
  });
});
