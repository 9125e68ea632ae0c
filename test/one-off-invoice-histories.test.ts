import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { recordHistory } from './helpers/histories.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * Records the invoice workflow's histories that test/replay.test.ts replays against the current code
 * (test/histories/invoice-*.json): a change of its commands without `patched()` fails there.
 * Only with RECORD_HISTORIES=1: RECORD_HISTORIES=1 npx vitest run test/one-off-invoice-histories.test.ts
 */
const day = 86_400_000;

describe.runIf(process.env.RECORD_HISTORIES === '1')('invoice workflow histories (recording)', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const record = (id: string, runId: string, name: string) => recordHistory(engine.env.address, id, runId, name);
  const status = async (id: string) => (await engine.env.client.workflow.getHandle(id).describe()).status.name;

  async function invoiceOf(email: string, paymentMethod: string, body: Record<string, unknown>) {
    const cus = (await engine.call('POST', '/v1/customers', { email, name: 'Ada', payment_method: paymentMethod })).body
      .id;
    await engine.call('POST', '/v1/invoice_items', {
      customer: cus,
      amount: 30000,
      currency: 'USD',
      description: 'Audit',
    });
    const draft = (await engine.call('POST', '/v1/invoices', { customer: cus, ...body })).body.id as string;
    expect((await engine.call('POST', `/v1/invoices/${draft}/finalize`)).status).toBe(200);
    return draft;
  }

  it('records a send_invoice invoice: emailed, reminded before its due date, then paid by a charge', async () => {
    const id = await invoiceOf('history-send@example.com', 'pm_card_visa', {
      collection_method: 'send_invoice',
      days_until_due: 5,
    });
    await engine.env.sleep(3 * day);
    await eventually(
      async () => engine.mail.messages.filter((m) => m.envelopeTo.includes('history-send@example.com')).length,
      (n) => n >= 2,
    );
    expect((await engine.call('POST', `/v1/invoices/${id}/pay`)).status).toBe(200);
    await eventually(
      () => status(id),
      (s) => s === 'COMPLETED',
    );
    record(id, (await engine.env.client.workflow.getHandle(id).describe()).runId, 'invoice-send-reminded-paid');
  });

  it('records a charge_automatically invoice: declined, retried, then voided', async () => {
    const id = await invoiceOf('history-auto@example.com', 'pm_card_chargeDeclined', {
      collection_method: 'charge_automatically',
    });
    await engine.env.sleep(day + 60_000);
    await eventually(
      async () => (await engine.call('GET', `/v1/invoices/${id}`)).body.attempt_count,
      (n) => n >= 2,
    );
    expect((await engine.call('POST', `/v1/invoices/${id}/void`)).status).toBe(200);
    await eventually(
      () => status(id),
      (s) => s === 'COMPLETED',
    );
    record(id, (await engine.env.client.workflow.getHandle(id).describe()).runId, 'invoice-auto-retried-voided');
  });

  it('records a send_invoice invoice discounted by a coupon while open (patched invoice-promotion-code), then paid', async () => {
    expect((await engine.call('POST', '/v1/coupons', { id: 'HISTORY10', percent_off: 10 })).status).toBe(201);
    const id = await invoiceOf('history-code@example.com', 'pm_card_visa', {
      collection_method: 'send_invoice',
      days_until_due: 5,
    });
    const discounted = await engine.call('POST', `/v1/invoices/${id}/discounts`, { coupon: 'HISTORY10' });
    expect(discounted.body).toMatchObject({ amount_due: 27000 });
    expect((await engine.call('POST', `/v1/invoices/${id}/pay`)).body).toMatchObject({
      status: 'paid',
      amount_paid: 27000,
    });
    await eventually(
      () => status(id),
      (s) => s === 'COMPLETED',
    );
    record(id, (await engine.env.client.workflow.getHandle(id).describe()).runId, 'invoice-promotion-code-paid');
  });
});
