import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Customer, Invoice } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import {
  customerSearchSchema,
  invoiceSearchSchema,
  parseSearchQuery,
  SearchQueryError,
} from '../domain/search-query.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

/**
 * GET /v1/invoices/search and GET /v1/customers/search: the transactions' query language
 * with each resource's field table (domain/search-query.ts), on a real PostgreSQL through
 * the in-process API: every field, comparisons, nulls, negation, OR, paging, the error
 * shape, injection attempts, isolation by account and mode, and a property test against
 * an in-memory filter.
 */

type InvoiceRow = {
  id: string;
  number: string;
  status: string;
  customer: string;
  email: string | null;
  subscription: string;
  total: number;
  amount_due: number;
  amount_paid: number;
  currency: string;
  created: number;
  period_start: number;
  period_end: number;
  paid_at: number | null;
};
type CustomerRow = { id: string; email: string; name: string | null; created: number };

const day = 86_400_000;
const base = Date.UTC(2026, 10, 1, 9, 30, 15);
const names = [null, 'Ada Lovelace', 'Grace Hopper', "x' OR 1=1 --", '50% off_sale', 'He said "hi"'];
const emails = ['ada@example.com', 'Grace@Navy.mil', 'bob@shop.test', "o'brien@example.com", 'under_score@example.com'];

describe('GET /v1/invoices/search and /v1/customers/search', () => {
  let engine: TestEngine;
  let owner: Tenant;
  let other: Tenant;
  const invoices: InvoiceRow[] = [];
  const customers: CustomerRow[] = [];
  const sandbox: { invoices: string[]; customers: string[] } = { invoices: [], customers: [] };
  const foreign: { invoices: string[]; customers: string[] } = { invoices: [], customers: [] };

  const search = (
    resource: 'invoices' | 'customers',
    query: string,
    extra: Record<string, string | number> = {},
    headers?: Record<string, string>,
  ) => {
    const qs = new URLSearchParams({
      query,
      limit: '100',
      ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, String(v)])),
    });
    return engine.call('GET', `/v1/${resource}/search?${qs}`, undefined, headers ?? owner.headers);
  };
  const ids = async (resource: 'invoices' | 'customers', query: string, headers?: Record<string, string>) => {
    const res = await search(resource, query, {}, headers);
    expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(200);
    expect(res.body.has_more).toBe(false);
    return (res.body.data as { id: string }[]).map((t) => t.id).sort();
  };
  const inv = (filter: (row: InvoiceRow) => boolean) =>
    invoices
      .filter(filter)
      .map((r) => r.id)
      .sort();
  const cus = (filter: (row: CustomerRow) => boolean) =>
    customers
      .filter(filter)
      .map((r) => r.id)
      .sort();

  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    owner = engine.tenant;
    other = await engine.signUp();
    const em = engine.db.orm.em.fork();
    for (let i = 0; i < 20; i++) {
      customers.push({
        id: newId('customer'),
        email: emails[i % emails.length]!.replace('@', `+${i}@`),
        name: names[i % names.length]!,
        created: base + (i % 4) * day + i * 60_000,
      });
    }
    const customerEntity = (r: CustomerRow, accountId: string, livemode: boolean, id = r.id) =>
      em.create(Customer, {
        id,
        email: r.email,
        name: r.name,
        paymentMethod: null,
        accountId,
        livemode,
        createdAt: new Date(r.created),
        updatedAt: new Date(r.created),
      });
    for (const r of customers) customerEntity(r, owner.accountId, true);
    const subscriptions = [newId('subscription'), newId('subscription')];
    const statuses = ['open', 'paid', 'void', 'uncollectible'] as const;
    for (let i = 0; i < 30; i++) {
      const customer = customers[i % 5]!;
      const status = statuses[i % 4]!;
      const total = 500 * (i % 7) + (i % 3);
      const created = base + (i % 5) * day + i * 3_600_000;
      invoices.push({
        id: newId('invoice'),
        number: `ACME-${String(i + 1).padStart(4, '0')}`,
        status,
        customer: customer.id,
        email: i % 6 === 5 ? null : customer.email,
        subscription: subscriptions[i % 2]!,
        total,
        amount_due: total,
        amount_paid: status === 'paid' ? total : 0,
        currency: i % 5 === 0 ? 'EUR' : 'USD',
        created,
        period_start: created - 30 * day,
        period_end: created,
        paid_at: status === 'paid' ? created + 1000 : null,
      });
    }
    const invoiceEntity = (r: InvoiceRow, accountId: string, livemode: boolean, id = r.id) =>
      em.create(Invoice, {
        id,
        number: r.number,
        billingKey: `${id}:cycle`,
        subscriptionId: r.subscription,
        customerId: r.customer,
        customerEmail: r.email,
        customerName: null,
        status: r.status as never,
        currency: r.currency,
        subtotal: r.total,
        total: r.total,
        amountDue: r.amount_due,
        amountPaid: r.amount_paid,
        lines: [],
        periodStart: new Date(r.period_start),
        periodEnd: new Date(r.period_end),
        accountId,
        livemode,
        createdAt: new Date(r.created),
        paidAt: r.paid_at === null ? null : new Date(r.paid_at),
      });
    for (const r of invoices) invoiceEntity(r, owner.accountId, true);
    // The same shapes in the owner's sandbox and in another account: never in the owner's live results.
    for (let i = 0; i < 5; i++) {
      const [s, f] = [newId('invoice'), newId('invoice')];
      sandbox.invoices.push(s);
      foreign.invoices.push(f);
      invoiceEntity(invoices[i]!, owner.accountId, false, s);
      invoiceEntity(invoices[i]!, other.accountId, true, f);
      const [sc, fc2] = [newId('customer'), newId('customer')];
      sandbox.customers.push(sc);
      foreign.customers.push(fc2);
      customerEntity(customers[i]!, owner.accountId, false, sc);
      customerEntity(customers[i]!, other.accountId, true, fc2);
    }
    await em.flush();
  });
  afterAll(() => engine?.close());

  it('answers search_result pages of invoices and customers, scoped to the account and mode', async () => {
    const res = await search('invoices', 'currency:usd', { limit: 100 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ object: 'search_result', has_more: false, next_page: null });
    expect(res.body.data[0]).toMatchObject({ object: 'invoice', account_id: owner.accountId, livemode: true });
    expect(res.body.data[0].pdf).toContain(`/invoices/${res.body.data[0].id}/pdf`);
    expect(res.body.data.map((r: { id: string }) => r.id).sort()).toEqual(inv((r) => r.currency === 'USD'));
    const c = await search('customers', 'created>2026-01-01');
    expect(c.status).toBe(200);
    expect(c.body.data[0]).toMatchObject({ object: 'customer', livemode: true });
    expect(c.body.data.map((r: { id: string }) => r.id).sort()).toEqual(cus(() => true));
    const sandboxHeaders = { ...owner.headers, 'x-sandbox-mode': 'true' };
    expect(await ids('invoices', 'currency:USD OR currency:EUR', sandboxHeaders)).toEqual([...sandbox.invoices].sort());
    expect(await ids('customers', 'created>2026-01-01', sandboxHeaders)).toEqual([...sandbox.customers].sort());
    expect(await ids('invoices', 'currency:USD OR currency:EUR', other.headers)).toEqual([...foreign.invoices].sort());
    expect(await ids('customers', 'created>2026-01-01', other.headers)).toEqual([...foreign.customers].sort());
    // Another account's rows are not found, even by exact id.
    expect(await ids('invoices', `id:${foreign.invoices[0]}`)).toEqual([]);
    expect(await ids('customers', `id:${foreign.customers[0]}`)).toEqual([]);
    // Without a credential: 401.
    expect(
      (await engine.call('GET', '/v1/customers/search?query=name:null', undefined, { authorization: '' })).status,
    ).toBe(401);
  });

  it('invoices: every field, comparisons, nulls, negation and OR', async () => {
    const r = invoices[7]!;
    expect(await ids('invoices', `id:${r.id}`)).toEqual([r.id]);
    expect(await ids('invoices', `number:${r.number}`)).toEqual([r.id]);
    expect(await ids('invoices', 'number~"acme-001"')).toEqual(inv((x) => x.number.startsWith('ACME-001')));
    expect(await ids('invoices', 'status:paid')).toEqual(inv((x) => x.status === 'paid'));
    expect(await ids('invoices', `customer:${r.customer}`)).toEqual(inv((x) => x.customer === r.customer));
    expect(await ids('invoices', `subscription:${r.subscription}`)).toEqual(
      inv((x) => x.subscription === r.subscription),
    );
    expect(await ids('invoices', 'email~"EXAMPLE.com"')).toEqual(
      inv((x) => !!x.email?.toLowerCase().includes('example.com')),
    );
    expect(await ids('invoices', 'email:null')).toEqual(inv((x) => x.email === null));
    expect(await ids('invoices', '-email:null')).toEqual(inv((x) => x.email !== null));
    expect(await ids('invoices', 'total>=1500')).toEqual(inv((x) => x.total >= 1500));
    expect(await ids('invoices', 'amount_due<1000 AND status:open')).toEqual(
      inv((x) => x.amount_due < 1000 && x.status === 'open'),
    );
    expect(await ids('invoices', 'amount_paid>0')).toEqual(inv((x) => x.amount_paid > 0));
    expect(await ids('invoices', 'currency:eur OR status:void')).toEqual(
      inv((x) => x.currency === 'EUR' || x.status === 'void'),
    );
    const nov3 = Date.UTC(2026, 10, 3);
    expect(await ids('invoices', 'created:2026-11-03')).toEqual(
      inv((x) => x.created >= nov3 && x.created < nov3 + day),
    );
    expect(await ids('invoices', 'period_end<2026-11-03')).toEqual(inv((x) => x.period_end < nov3));
    expect(await ids('invoices', 'period_start>=2026-10-05')).toEqual(
      inv((x) => x.period_start >= Date.UTC(2026, 9, 5)),
    );
    expect(await ids('invoices', 'paid_at:null')).toEqual(inv((x) => x.paid_at === null));
    expect(await ids('invoices', 'paid_at>2026-11-02')).toEqual(
      inv((x) => x.paid_at !== null && x.paid_at >= Date.UTC(2026, 10, 3)),
    );
    // A negated comparison includes the rows without the field (unpaid invoices are not paid after the 2nd).
    expect(await ids('invoices', '-paid_at>2026-11-02')).toEqual(
      inv((x) => !(x.paid_at !== null && x.paid_at >= Date.UTC(2026, 10, 3))),
    );
  });

  it('customers: every field, substring case-insensitive with literal % and _, nulls, negation', async () => {
    const r = customers[3]!;
    expect(await ids('customers', `id:${r.id}`)).toEqual([r.id]);
    expect(await ids('customers', `email:"${r.email}"`)).toEqual([r.id]);
    expect(await ids('customers', 'email~"NAVY"')).toEqual(cus((x) => x.email.toLowerCase().includes('navy')));
    // `_` is a literal underscore, not any character.
    expect(await ids('customers', 'email~"under_score"')).toEqual(cus((x) => x.email.includes('under_score')));
    expect(await ids('customers', 'name~"%"')).toEqual(cus((x) => !!x.name?.includes('%')));
    expect(await ids('customers', 'name:"Ada Lovelace"')).toEqual(cus((x) => x.name === 'Ada Lovelace'));
    expect(await ids('customers', 'name:null')).toEqual(cus((x) => x.name === null));
    expect(await ids('customers', '-name~"grace"')).toEqual(cus((x) => !x.name?.toLowerCase().includes('grace')));
    expect(await ids('customers', 'name:"He said \\"hi\\""')).toEqual(cus((x) => x.name === 'He said "hi"'));
    expect(await ids('customers', 'created<2026-11-02 OR name~"hopper"')).toEqual(
      cus((x) => x.created < Date.UTC(2026, 10, 2) || !!x.name?.includes('Hopper')),
    );
  });

  it('injection attempts are values: matched as text, nothing changed', async () => {
    expect(await ids('customers', `name:"x' OR 1=1 --"`)).toEqual(cus((x) => x.name === "x' OR 1=1 --"));
    expect(await ids('customers', `email~"'; drop table customers; --"`)).toEqual([]);
    expect(await ids('invoices', `number:"ACME-0001' OR '1'='1"`)).toEqual([]);
    expect(await ids('customers', `email~"o'brien"`)).toEqual(cus((x) => x.email.includes("o'brien")));
    const count = await engine.db.orm.em.fork().count(Customer, { accountId: owner.accountId, livemode: true });
    expect(count).toBe(customers.length);
  });

  it('pages newest first with next_page; a page of another resource is refused', async () => {
    const seen: string[] = [];
    let page: string | undefined;
    let res;
    do {
      res = await search('invoices', 'currency:USD OR currency:EUR', { limit: 7, ...(page ? { page } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((r: { id: string }) => r.id));
      page = res.body.next_page ?? undefined;
    } while (page);
    expect(seen).toEqual(
      invoices
        .map((r) => r.id)
        .sort()
        .reverse(),
    );
    const first = await search('customers', 'created>2026-01-01', { limit: 3 });
    expect(first.body.has_more).toBe(true);
    // A customers cursor handed to the invoices search (and garbage) is invalid_request.
    const wrong = await search('invoices', 'status:paid', { page: first.body.next_page });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('page') });
  });

  it('a bad query answers invalid_request naming the position and what was expected', async () => {
    const cases: ['invoices' | 'customers', string, number, string][] = [
      ['invoices', 'status:refunded', 8, 'one of open, paid, void, uncollectible'],
      ['invoices', 'risk_level:high', 1, 'a field (id, number, status'],
      ['invoices', 'metadata["k"]:"v"', 1, 'a field'],
      ['invoices', 'total>lots', 7, 'an integer total'],
      ['invoices', 'status>open', 7, ': after status'],
      ['invoices', 'customer~"cus"', 9, ': after customer'],
      ['invoices', 'paid_at:yesterday', 9, 'a date'],
      ['customers', 'amount>5', 1, 'a field (id, email, name, external_id, created, country, tax_exempt)'],
      ['customers', 'name:"x" AND email~"y" OR id:z', 24, 'cannot be mixed'],
      ['customers', 'email~""', 7, 'some text'],
    ];
    for (const [resource, query, position, text] of cases) {
      const res = await search(resource, query);
      expect(res.status, query).toBe(400);
      expect(res.body, query).toEqual({
        error: 'invalid_request',
        message: expect.stringContaining(`character ${position}: expected`),
      });
      expect(res.body.message, query).toContain(text);
    }
  });

  it('is in the OpenAPI document beside /{id}', async () => {
    const doc = await engine.call('GET', '/openapi.json', undefined, { authorization: '' });
    for (const resource of ['invoices', 'customers']) {
      expect(
        doc.body.paths[`/v1/${resource}/search`].get.parameters.map((p: { name: string }) => p.name).sort(),
      ).toEqual(['limit', 'page', 'query']);
      expect(doc.body.paths[`/v1/${resource}/{id}`]).toBeDefined();
    }
  });

  it('property: random queries over the customer and invoice fields match an in-memory filter; garbage only ever fails with the error shape', async () => {
    type Gen = { text: string; match: (r: any) => boolean };
    const quote = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
    const neg = (g: fc.Arbitrary<Gen>) =>
      fc.tuple(fc.boolean(), g).map(([n, c]): Gen => (n ? { text: `-${c.text}`, match: (r) => !c.match(r) } : c));
    const numOp = fc.constantFrom(':', '>', '>=', '<', '<=');
    const cmp = (op: string, v: number, x: number) =>
      op === ':' ? v === x : op === '>' ? v > x : op === '>=' ? v >= x : op === '<' ? v < x : v <= x;
    const joined = (clause: fc.Arbitrary<Gen>) =>
      fc.tuple(fc.array(clause, { minLength: 1, maxLength: 4 }), fc.constantFrom('AND', 'OR', ' ')).map(
        ([cs, j]): Gen => ({
          text: cs.map((c) => c.text).join(j === ' ' ? ' ' : ` ${j} `),
          match: (r) => (j === 'OR' ? cs.some((c) => c.match(r)) : cs.every((c) => c.match(r))),
        }),
      );
    const customerClause = neg(
      fc.oneof(
        fc
          .constantFrom(...customers.map((c) => c.email))
          .map((v): Gen => ({ text: `email:${quote(v)}`, match: (r) => r.email === v })),
        fc
          .constantFrom('example', 'NAVY', '_', '%', "o'b", '+1')
          .map(
            (v): Gen => ({ text: `email~${quote(v)}`, match: (r) => r.email.toLowerCase().includes(v.toLowerCase()) }),
          ),
        fc
          .constantFrom(...names)
          .map((v): Gen => ({ text: `name:${v === null ? 'null' : quote(v)}`, match: (r) => r.name === v })),
        fc
          .constantFrom('ada', 'HOP', '%', '"', "'")
          .map(
            (v): Gen => ({ text: `name~${quote(v)}`, match: (r) => !!r.name?.toLowerCase().includes(v.toLowerCase()) }),
          ),
      ),
    );
    const invoiceClause = neg(
      fc.oneof(
        fc
          .constantFrom('open', 'paid', 'void', 'uncollectible')
          .map((v): Gen => ({ text: `status:${v}`, match: (r) => r.status === v })),
        fc
          .tuple(
            fc.constantFrom('total', 'amount_due', 'amount_paid'),
            numOp,
            fc.constantFrom(0, 500, 1001, 1500, 3000),
          )
          .map(([f, op, v]): Gen => ({ text: `${f}${op}${v}`, match: (r) => cmp(op, r[f], v) })),
        fc
          .constantFrom('USD', 'eur')
          .map((v): Gen => ({ text: `currency:${v}`, match: (r) => r.currency === v.toUpperCase() })),
        fc
          .constantFrom(...customers.slice(0, 5).map((c) => c.id))
          .map((v): Gen => ({ text: `customer:${v}`, match: (r) => r.customer === v })),
        fc.constantFrom('example', '+1').map(
          (v): Gen => ({
            text: `email~${quote(v)}`,
            match: (r) => r.email !== null && r.email.toLowerCase().includes(v),
          }),
        ),
      ),
    );
    await fc.assert(
      fc.asyncProperty(joined(customerClause), async (q) => {
        expect(await ids('customers', q.text)).toEqual(cus(q.match));
      }),
      { numRuns: 40 },
    );
    await fc.assert(
      fc.asyncProperty(joined(invoiceClause), async (q) => {
        expect(await ids('invoices', q.text)).toEqual(inv(q.match));
      }),
      { numRuns: 40 },
    );
    // Garbage: either a query or a SearchQueryError, never anything else.
    fc.assert(
      fc.property(
        fc.string({ maxLength: 60 }),
        fc.constantFrom(invoiceSearchSchema, customerSearchSchema),
        (text, schema) => {
          try {
            parseSearchQuery(text, schema);
          } catch (error) {
            if (!(error instanceof SearchQueryError)) throw error;
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
