/**
 * GET /v1/credit_notes/search (issue #27: credit notes findable the way invoices are): the
 * search language with the credit note fields (domain/search-query.ts creditNoteSearchSchema),
 * on a real PostgreSQL through the real API: number, invoice, customer, email, status, reason,
 * memo, amounts, nulls, negation, paging, the error naming the fields, isolation by account;
 * and an export of credit notes taking a query.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('GET /v1/credit_notes/search', () => {
  let engine: TestEngine;
  let other: Tenant;
  beforeAll(async () => {
    engine = await startTestEngine();
    other = await engine.signUp({ name: 'Other' });
  });
  afterAll(() => engine?.close());

  async function call(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
    const answer = await engine.call(method, path, body, headers);
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    return answer.body as any;
  }
  const search = (query: string, extra: Record<string, string | number> = {}, headers?: Record<string, string>) =>
    engine.call(
      'GET',
      `/v1/credit_notes/search?${new URLSearchParams({ query, ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, String(v)])) })}`,
      undefined,
      headers,
    );
  const numbers = async (query: string) => {
    const answer = await search(query);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return (answer.body.data as { number: string }[]).map((n) => n.number).sort();
  };

  it('finds credit notes by number, invoice, customer, email, status, reason, memo and amounts', async () => {
    const customer = await call('POST', '/v1/customers', {
      email: 'refunds@lovelace.example',
      name: 'Ada',
      payment_method: 'pm_card_visa',
    });
    await call('POST', '/v1/invoice_items', {
      customer: customer.id,
      amount: 9000,
      currency: 'USD',
      description: 'Audit',
    });
    const draft = await call('POST', '/v1/invoices', { customer: customer.id });
    const invoice = await call('POST', `/v1/invoices/${draft.id}/finalize`);
    await eventually(
      () => call('GET', `/v1/invoices/${invoice.id}`),
      (i) => i.status === 'paid',
    );
    const credit = (body: Record<string, unknown>) =>
      call('POST', '/v1/credit_notes', { invoice: invoice.id, ...body });
    const first = await credit({ amount: 1000, reason: 'duplicate', memo: 'Charged twice for the audit' });
    const second = await credit({ amount: 2500, reason: 'order_change', out_of_band_amount: 2500 });
    const third = await credit({ amount: 500 });
    await call('POST', `/v1/credit_notes/${third.id}/void`);
    const all = [first.number, second.number, third.number].sort();
    expect(first.number).toBe(`${invoice.number}-CN-01`);

    expect(await numbers(`number:"${second.number}"`)).toEqual([second.number]);
    expect(await numbers(`number~"${invoice.number}-CN"`)).toEqual(all);
    expect(await numbers(`invoice:${invoice.id}`)).toEqual(all);
    expect(await numbers(`customer:${customer.id} AND status:issued`)).toEqual([first.number, second.number].sort());
    expect(await numbers('email~"@lovelace.example" AND status:void')).toEqual([third.number]);
    expect(await numbers('reason:duplicate OR reason:null')).toEqual([first.number, third.number].sort());
    expect(await numbers('memo~"TWICE"')).toEqual([first.number]);
    expect(await numbers('total>=1000 AND -out_of_band_amount:0')).toEqual([second.number]);
    expect(await numbers('credit_amount>0 AND voided_at:null')).toEqual([first.number]);
    expect(await numbers(`id:${third.id}`)).toEqual([third.number]);

    // The answer is the credit note as GET /v1/credit_notes/{id} shows it; pages walk newest first.
    const one = await search(`invoice:${invoice.id}`, { limit: 2 });
    expect(one.body).toMatchObject({ object: 'search_result', has_more: true });
    expect(one.body.data[0]).toEqual(await call('GET', `/v1/credit_notes/${third.id}`));
    const next = await search(`invoice:${invoice.id}`, { limit: 2, page: one.body.next_page });
    expect(next.body.data.map((n: { id: string }) => n.id)).toEqual([first.id]);

    // Another account finds none of them; a field credit notes do not have is named.
    const elsewhere = await search(`invoice:${invoice.id}`, {}, other.headers);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.data).toEqual([]);
    const bad = await search('plan:plan_x');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'invalid_request' });
    expect(bad.body.message).toContain('plan');
    const wrongCursor = await search('status:issued', {
      page: Buffer.from(JSON.stringify({ after: invoice.id })).toString('base64url'),
    });
    expect(wrongCursor.status).toBe(400);

    // An export of credit notes takes the same query.
    const exp = await call('POST', '/v1/exports', {
      resource: 'credit_notes',
      format: 'csv',
      query: 'reason:order_change',
    });
    const done = await eventually(
      () => call('GET', `/v1/exports/${exp.id}`),
      (e) => e.status === 'succeeded',
      30_000,
    );
    expect(done.row_count).toBe(1);
  });
});
