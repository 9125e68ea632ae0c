/**
 * Issue #24's sweep of "check a status, then act": an invoice voided while its
 * subscription's dunning retry is charging it. The retry read the invoice open and
 * charged; a void landing meanwhile succeeded, and the customer paid a void invoice.
 * A void of a running subscription's invoice now goes through its workflow
 * (services/invoice-void.ts), between the workflow's own steps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice, Transaction } from '../db/entities/index.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { gatedSandboxProcessor } from './helpers/gated-processor.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('voiding an invoice its subscription is charging', () => {
  let engine: TestEngine;
  let hold: ReturnType<typeof gatedSandboxProcessor>['hold'];
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    const gated = gatedSandboxProcessor(() => engine.db.orm.em.fork());
    hold = gated.hold;
    await engine.startWorker({ processor: gated.processor });
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  async function pastDue(email: string) {
    const customer = await engine.call('POST', '/v1/customers', { email, name: 'Ada', payment_method: 'pm_card_chargeDeclined' });
    const plan = await engine.call('POST', '/v1/plans', { name: 'Team', amount: 4900, currency: 'USD', interval: 'month' });
    const sub = await engine.call('POST', '/v1/subscriptions', { customer_id: customer.body.id, plan: plan.body.id, trial_period_days: 0 });
    expect(sub.body).toMatchObject({ status: 'past_due' });
    return { id: sub.body.id as string, customerId: customer.body.id as string, invoiceId: sub.body.latest_invoice as string };
  }

  it('a void arriving while the retry charges waits for the charge, then is refused: the invoice is paid, never paid and void', { timeout: 60_000 }, async () => {
    const { id, customerId, invoiceId } = await pastDue('void-race@example.com');
    const { inCharge, open } = hold();
    // A new card retries the past-due invoice at once; its charge stops at the gate.
    expect((await engine.call('PATCH', `/v1/customers/${customerId}`, { payment_method: 'pm_card_visa' })).status).toBe(200);
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
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({ status: 'active', dunning: null });
  });

  it('a past-due invoice voided with no charge in flight: void at once, its dunning ends, nothing charged', { timeout: 60_000 }, async () => {
    const { id, invoiceId } = await pastDue('void-calm@example.com');
    const answer = await engine.call('POST', `/v1/invoices/${invoiceId}/void`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: invoiceId, status: 'void' });
    expect((await engine.call('GET', `/v1/subscriptions/${id}`)).body).toMatchObject({ status: 'active', dunning: null });
    expect(await em().count(Transaction, { invoiceId, type: 'payment', status: 'succeeded' })).toBe(0);
    // Voiding twice is refused as before.
    const again = await engine.call('POST', `/v1/invoices/${invoiceId}/void`);
    expect([again.status, again.body.error]).toEqual([409, 'invalid_state']);
  });

  it('an invoice of an ended subscription is voided directly', { timeout: 60_000 }, async () => {
    const { id, invoiceId } = await pastDue('void-ended@example.com');
    expect((await engine.call('POST', `/v1/subscriptions/${id}/cancel`)).status).toBe(200);
    // Canceled in dunning: its unpaid invoice is marked uncollectible, and the workflow charges nothing more.
    expect((await em().findOneOrFail(Invoice, { id: invoiceId })).status).toBe('uncollectible');
    const answer = await engine.call('POST', `/v1/invoices/${invoiceId}/void`);
    expect([answer.status, answer.body.status]).toEqual([200, 'void']);
  });
});
