import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Customer, Transaction } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import { parseSearchQuery, SearchQueryError } from '../domain/search-query.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

/** One fixture row, as the in-memory filter sees it. */
type Row = {
  id: string;
  status: string;
  type: string;
  amount: number;
  currency: string;
  reference: string | null;
  customer: string | null;
  invoice: string | null;
  subscription: string | null;
  created: number;
  risk_level: string;
  email: string | null;
  metadata: Record<string, string>;
};

const references = [
  null,
  'order-1001',
  'Order-1002',
  "x' OR 1=1 --",
  '50% off_sale',
  'He said "hi"',
  'back\\slash',
  'refund for order-1001',
];
const metadataKeys = ['order', 'plan', 'weird key'];
const metadataValues = ['42', 'gold', 'silver', "x' OR '1'='1"];
const day = 86_400_000;
const base = Date.UTC(2026, 10, 1, 9, 30, 15, 250);

describe('GET /v1/transactions/search', () => {
  let engine: TestEngine;
  let owner: Tenant;
  let other: Tenant;
  const rows: Row[] = [];
  const sandboxIds: string[] = [];
  const otherIds: string[] = [];

  const search = (query: string, extra: Record<string, string | number> = {}, headers?: Record<string, string>) => {
    const qs = new URLSearchParams({
      query,
      limit: '100',
      ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, String(v)])),
    });
    return engine.call('GET', `/v1/transactions/search?${qs}`, undefined, headers ?? owner.headers);
  };
  const ids = async (query: string, headers?: Record<string, string>) => {
    const res = await search(query, {}, headers);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.has_more).toBe(false);
    return (res.body.data as { id: string }[]).map((t) => t.id).sort();
  };
  const expected = (filter: (row: Row) => boolean) =>
    rows
      .filter(filter)
      .map((r) => r.id)
      .sort();

  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    owner = engine.tenant;
    other = await engine.signUp();
    const em = engine.db.orm.em.fork();
    const customers = [
      { id: newId('customer'), email: 'Alice@Example.com' },
      { id: newId('customer'), email: 'bob@shop.test' },
    ];
    for (const c of customers)
      em.create(Customer, { ...c, name: null, paymentMethod: null, accountId: owner.accountId, livemode: true });
    // A customer of another account sharing an id-shaped link must never join in.
    const statuses = ['pending', 'succeeded', 'failed', 'canceled'] as const;
    const types = ['payment', 'credit', 'refund'] as const;
    const risks = ['low', 'medium', 'high'] as const;
    const invoices = [newId('invoice'), newId('invoice')];
    const subscriptions = [newId('subscription')];
    for (let i = 0; i < 40; i++) {
      const customer = i % 3 === 0 ? null : customers[i % 2]!;
      const metadata: Record<string, string> = {};
      if (i % 2 === 0) metadata[metadataKeys[i % 3]!] = metadataValues[i % 4]!;
      const row: Row = {
        id: newId('transaction'),
        status: statuses[i % 4]!,
        type: types[i % 3]!,
        amount: 100 * ((i * 7) % 13) + (i % 5),
        currency: i % 7 === 0 ? 'EUR' : 'USD',
        reference: references[i % references.length]!,
        customer: customer?.id ?? null,
        invoice: i % 4 === 1 ? invoices[i % 2]! : null,
        subscription: i % 4 === 1 ? subscriptions[0]! : null,
        // Spread over five days, some in the same second, one exactly on a day boundary.
        created: i === 39 ? Date.UTC(2026, 10, 3) : base + (i % 5) * day + Math.floor(i / 5) * 3_600_000 + (i % 2) * 1,
        risk_level: risks[i % 3]!,
        email: customer?.email ?? null,
        metadata,
      };
      rows.push(row);
    }
    const entity = (r: Row, accountId: string, livemode: boolean, id = r.id) =>
      em.create(Transaction, {
        id,
        accountId,
        livemode,
        amount: r.amount,
        currency: r.currency,
        type: r.type as never,
        status: r.status as never,
        reference: r.reference,
        metadata: r.metadata,
        riskLevel: r.risk_level as never,
        riskScore: 0,
        createdAt: new Date(r.created),
        updatedAt: new Date(r.created),
        invoiceId: r.invoice,
        subscriptionId: r.subscription,
        customerId: r.customer,
      });
    for (const r of rows) entity(r, owner.accountId, true);
    // The same shapes in the owner's sandbox and in another account: never in the owner's live results.
    for (const r of rows.slice(0, 10)) {
      const sandbox = newId('transaction');
      sandboxIds.push(sandbox);
      entity(r, owner.accountId, false, sandbox);
      const foreign = newId('transaction');
      otherIds.push(foreign);
      entity(r, other.accountId, true, foreign);
    }
    await em.flush();
  });
  afterAll(() => engine?.close());

  it('answers a search_result, scoped to the account and mode', async () => {
    const res = await search('currency:usd');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'search_result', has_more: false, next_page: null });
    expect(res.body.data[0]).toMatchObject({ object: 'transaction', account_id: owner.accountId, livemode: true });
    expect(res.body.data.map((t: { id: string }) => t.id).sort()).toEqual(expected((r) => r.currency === 'USD'));
    // The sandbox sees its own rows only; another account its own.
    expect(await ids('currency:USD OR currency:EUR', { ...owner.headers, 'x-sandbox-mode': 'true' })).toEqual(
      [...sandboxIds].sort(),
    );
    expect(await ids('currency:USD OR currency:EUR', other.headers)).toEqual([...otherIds].sort());
    // Another account's id is not found, even by exact id.
    expect(await ids(`id:${otherIds[0]}`)).toEqual([]);
  });

  it('the migration made the search indexes, trigram ones included (pg_trgm ships with the embedded server)', async () => {
    const found = await engine.db.orm.em
      .fork()
      .getConnection()
      .execute<
        { indexname: string }[]
      >(`select indexname from pg_indexes where (tablename = 'transactions' and indexname like 'transactions_account_id_livemode_%') or indexname like '%trgm_index' order by indexname`);
    expect(found.map((r) => r.indexname)).toEqual([
      'customers_email_trgm_index',
      'transactions_account_id_livemode_created_at_index',
      'transactions_account_id_livemode_id_index',
      'transactions_reference_trgm_index',
    ]);
  });

  it('is documented in the OpenAPI document, beside /v1/transactions/{id}', async () => {
    const doc = await engine.call('GET', '/openapi.json', undefined, { authorization: '' });
    expect(
      doc.body.paths['/v1/transactions/search'].get.parameters.map((p: { name: string }) => p.name).sort(),
    ).toEqual(['limit', 'page', 'query']);
    expect(doc.body.paths['/v1/transactions/{id}']).toBeDefined();
  });

  it('equality on every field', async () => {
    const r = rows[5]!;
    expect(await ids(`id:${r.id}`)).toEqual([r.id]);
    expect(await ids('status:failed')).toEqual(expected((x) => x.status === 'failed'));
    expect(await ids('type:refund')).toEqual(expected((x) => x.type === 'refund'));
    expect(await ids(`amount:${r.amount}`)).toEqual(expected((x) => x.amount === r.amount));
    expect(await ids('reference:"order-1001"')).toEqual(expected((x) => x.reference === 'order-1001'));
    expect(await ids(`customer:${rows[1]!.customer}`)).toEqual(expected((x) => x.customer === rows[1]!.customer));
    expect(await ids(`invoice:${rows[1]!.invoice}`)).toEqual(expected((x) => x.invoice === rows[1]!.invoice));
    expect(await ids(`subscription:${rows[1]!.subscription}`)).toEqual(expected((x) => x.subscription !== null));
    expect(await ids('risk_level:high')).toEqual(expected((x) => x.risk_level === 'high'));
    expect(await ids('invoice:null')).toEqual(expected((x) => x.invoice === null));
    expect(await ids('reference:"He said \\"hi\\""')).toEqual(expected((x) => x.reference === 'He said "hi"'));
  });

  it('comparisons on amounts and dates (ISO dates, ISO times, unix seconds)', async () => {
    expect(await ids('amount>500')).toEqual(expected((x) => x.amount > 500));
    expect(await ids('amount>=500')).toEqual(expected((x) => x.amount >= 500));
    expect(await ids('amount<300')).toEqual(expected((x) => x.amount < 300));
    expect(await ids('amount<=300')).toEqual(expected((x) => x.amount <= 300));
    const nov3 = Date.UTC(2026, 10, 3);
    expect(await ids('created:2026-11-03')).toEqual(expected((x) => x.created >= nov3 && x.created < nov3 + day));
    expect(await ids('created>2026-11-03')).toEqual(expected((x) => x.created >= nov3 + day));
    expect(await ids('created>=2026-11-03')).toEqual(expected((x) => x.created >= nov3));
    expect(await ids('created<2026-11-03')).toEqual(expected((x) => x.created < nov3));
    expect(await ids(`created<=${nov3 / 1000}`)).toEqual(expected((x) => x.created < nov3 + 1000));
    expect(await ids(`created>${nov3 / 1000}`)).toEqual(expected((x) => x.created >= nov3 + 1000));
    expect(await ids('created>=2026-11-03T00:00:00Z AND created<2026-11-04T00:00:00Z')).toEqual(
      expected((x) => x.created >= nov3 && x.created < nov3 + day),
    );
    expect(await ids('created:2026-11-01T09:30:15.250Z')).toEqual(expected((x) => x.created === base));
  });

  it('negation, AND, OR, metadata and substring', async () => {
    expect(await ids('-status:succeeded')).toEqual(expected((x) => x.status !== 'succeeded'));
    // A negated clause matches rows where the field is missing.
    expect(await ids('-reference:"order-1001"')).toEqual(expected((x) => x.reference !== 'order-1001'));
    expect(await ids('status:succeeded AND amount>500')).toEqual(
      expected((x) => x.status === 'succeeded' && x.amount > 500),
    );
    expect(await ids('status:succeeded amount>500')).toEqual(
      expected((x) => x.status === 'succeeded' && x.amount > 500),
    );
    expect(await ids('status:failed OR type:credit')).toEqual(
      expected((x) => x.status === 'failed' || x.type === 'credit'),
    );
    expect(await ids('status:failed or -type:credit')).toEqual(
      expected((x) => x.status === 'failed' || x.type !== 'credit'),
    );
    expect(await ids('metadata["order"]:"42"')).toEqual(expected((x) => x.metadata.order === '42'));
    expect(await ids('metadata["weird key"]:silver')).toEqual(expected((x) => x.metadata['weird key'] === 'silver'));
    expect(await ids('-metadata["plan"]:"gold"')).toEqual(expected((x) => x.metadata.plan !== 'gold'));
    expect(await ids('reference~"order-100"')).toEqual(
      expected((x) => Boolean(x.reference?.toLowerCase().includes('order-100'))),
    );
    // % and _ are literal, not wildcards.
    expect(await ids('reference~"%"')).toEqual(expected((x) => Boolean(x.reference?.includes('%'))));
    expect(await ids('reference~"f_s"')).toEqual(expected((x) => Boolean(x.reference?.includes('f_s'))));
    expect(await ids('reference~"order_1001"')).toEqual([]);
    expect(await ids('reference~"order%sale"')).toEqual([]);
    expect(await ids('email~"example.COM"')).toEqual(
      expected((x) => Boolean(x.email?.toLowerCase().includes('example.com'))),
    );
    expect(await ids('email:"bob@shop.test"')).toEqual(expected((x) => x.email === 'bob@shop.test'));
  });

  it('injection attempts match nothing (or the literal text) and never error', async () => {
    for (const query of [
      `reference:"x' OR 1=1 --"`,
      `reference:"' OR '1'='1"`,
      `metadata["order') or ('1'='1"]:"x"`,
      `reference~"'; drop table transactions; --"`,
    ]) {
      const res = await search(query);
      expect(res.status, query).toBe(200);
      for (const t of res.body.data) expect(t.reference ?? '').toContain("'");
    }
    expect(await ids(`reference:"x' OR 1=1 --"`)).toEqual(expected((x) => x.reference === "x' OR 1=1 --"));
    expect(await ids(`reference:"' OR '1'='1"`)).toEqual([]);
    expect(await ids(`metadata["order"]:"x' OR '1'='1"`)).toEqual([]);
    expect((await search('status:succeeded')).status).toBe(200);
  });

  it('pages newest first with an opaque next_page', async () => {
    const all = [...rows].sort((a, b) => (a.id < b.id ? 1 : -1)).map((r) => r.id);
    const seen: string[] = [];
    let page: string | undefined;
    for (let i = 0; i < 10; i++) {
      const res = await search('currency:USD OR currency:EUR', { limit: 15, ...(page ? { page } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((t: { id: string }) => t.id));
      if (!res.body.has_more) {
        expect(res.body.next_page).toBeNull();
        break;
      }
      expect(res.body.next_page).toEqual(expect.any(String));
      page = res.body.next_page;
    }
    expect(seen).toEqual(all);
    const bad = await search('status:failed', { page: 'not-a-cursor' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('page') });
  });

  it('a bad query is invalid_request naming the position and what was expected', async () => {
    const cases: [string, number, string][] = [
      ['status:succeeded AND type:credit OR amount>5', 34, 'cannot be mixed'],
      ['statuz:failed', 1, 'a field'],
      ['status>failed', 7, ': after status'],
      ['status:won', 8, 'one of pending'],
      ['amount>ten', 8, 'integer'],
      ['created>2026-13-01', 9, 'a date'],
      ['reference:"open', 16, 'closing "'],
      ['metadata[order]:x', 10, 'quoted metadata key'],
      ['status:failed AND', 18, 'a clause after AND'],
      ['', 1, 'a clause'],
    ];
    for (const [query, position, expectedText] of cases) {
      let res = await search(query);
      if (query === '') res = await engine.call('GET', '/v1/transactions/search?query=%20', undefined, owner.headers);
      expect(res.status, query).toBe(400);
      expect(res.body, query).toEqual({
        error: 'invalid_request',
        message: expect.stringContaining(`character ${position}: expected`),
      });
      expect(res.body.message, query).toContain(expectedText);
    }
  });

  it('reads its writes: a transaction is found as soon as it was created', async () => {
    // A tenant of its own, so the fixture above stays as it is for the other tests.
    const fresh = await engine.signUp();
    const headers = { ...fresh.headers, 'x-sandbox-mode': 'true' };
    const created = await engine.call(
      'POST',
      '/v1/transactions',
      { account_id: fresh.accountId, currency: 'USD', amount: 100, type: 'credit', reference: 'just-now' },
      headers,
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await ids('reference:"just-now"', headers)).toEqual([created.body.id]);
  });

  describe('property: the parser and compiler agree with an in-memory filter', () => {
    type Gen = { text: string; match: (r: Row) => boolean };
    const quote = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
    const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);
    const spanOf = (ms: number, format: 'date' | 'unix' | 'iso' | 'isoms'): [number, number, string] => {
      if (format === 'date') {
        const start = Math.floor(ms / day) * day;
        return [start, start + day, new Date(start).toISOString().slice(0, 10)];
      }
      if (format === 'unix') {
        const start = Math.floor(ms / 1000) * 1000;
        return [start, start + 1000, String(start / 1000)];
      }
      if (format === 'iso') {
        const start = Math.floor(ms / 1000) * 1000;
        return [start, start + 1000, new Date(start).toISOString().replace('.000Z', 'Z')];
      }
      return [ms, ms + 1, new Date(ms).toISOString()];
    };
    const compare = (op: string, value: number, lo: number, hi: number) =>
      op === ':'
        ? lo <= value && value < hi
        : op === '>'
          ? value >= hi
          : op === '>='
            ? value >= lo
            : op === '<'
              ? value < lo
              : value < hi;
    const eq = (field: keyof Row, values: readonly (string | null)[]) =>
      pick(values).map(
        (v): Gen => ({ text: `${field}:${v === null ? 'null' : quote(v)}`, match: (r) => r[field] === v }),
      );
    const numOp = pick([':', '>', '>=', '<', '<='] as const);

    // Built when the test runs: the fixture rows exist by then.
    const queries = () => {
      const clauses = fc.oneof(
        eq(
          'id',
          rows.map((r) => r.id),
        ),
        eq('status', ['pending', 'succeeded', 'failed', 'canceled']),
        eq('type', ['payment', 'credit', 'refund']),
        eq('risk_level', ['low', 'medium', 'high']),
        eq('reference', references),
        pick(['USD', 'EUR', 'eur']).map(
          (v): Gen => ({ text: `currency:${v}`, match: (r) => r.currency === v.toUpperCase() }),
        ),
        fc.tuple(numOp, fc.oneof(fc.integer({ min: -5, max: 1300 }), fc.constantFrom(0, 100, 604, 1203))).map(
          ([op, n]): Gen => ({
            text: `amount${op}${n}`,
            match: (r) => compare(op, r.amount, n, n + 1),
          }),
        ),
        fc
          .tuple(
            numOp,
            fc.nat({ max: 39 }),
            fc.integer({ min: -1, max: 1 }),
            pick(['date', 'unix', 'iso', 'isoms'] as const),
          )
          .map(([op, i, shift, format]): Gen => {
            const [lo, hi, text] = spanOf(base + (i % 5) * day + Math.floor(i / 5) * 3_600_000 + shift, format);
            return { text: `created${op}${text}`, match: (r) => compare(op, r.created, lo, hi) };
          }),
        fc
          .tuple(pick(references.filter((r): r is string => r !== null)), fc.nat(), fc.nat())
          .map(([ref, a, b]): Gen => {
            const from = a % ref.length;
            const part = ref.slice(from, from + 1 + (b % (ref.length - from)));
            return {
              text: `reference~${quote(part)}`,
              match: (r) => Boolean(r.reference?.toLowerCase().includes(part.toLowerCase())),
            };
          }),
        fc.tuple(pick(['alice', 'EXAMPLE', 'shop.test', '@', 'zzz'])).map(
          ([part]): Gen => ({
            text: `email~${quote(part)}`,
            match: (r) => Boolean(r.email?.toLowerCase().includes(part.toLowerCase())),
          }),
        ),
        fc
          .tuple(pick(metadataKeys), pick(metadataValues))
          .map(([k, v]): Gen => ({ text: `metadata[${quote(k)}]:${quote(v)}`, match: (r) => r.metadata[k] === v })),
      );
      const negatable = fc
        .tuple(fc.boolean(), clauses)
        .map(([neg, g]): Gen => (neg ? { text: `-${g.text}`, match: (r) => !g.match(r) } : g));
      return fc
        .tuple(fc.array(negatable, { minLength: 1, maxLength: 4 }), pick(['AND', 'OR', 'and', ' '] as const))
        .map(
          ([parts, joiner]): Gen => ({
            text: parts.map((p) => p.text).join(joiner === ' ' ? ' ' : ` ${joiner} `),
            match: joiner === 'OR' ? (r) => parts.some((p) => p.match(r)) : (r) => parts.every((p) => p.match(r)),
          }),
        );
    };

    it('random valid queries match the same rows over the API', async () => {
      await fc.assert(
        fc.asyncProperty(queries(), async (q) => {
          expect(() => parseSearchQuery(q.text)).not.toThrow();
          expect(await ids(q.text)).toEqual(expected(q.match));
        }),
        { numRuns: 120 },
      );
    });
  });

  it('property: garbage never throws past the error shape', async () => {
    const alphabet = fc.constantFrom(
      ...'status:amount>=<~-"\\[]metadata AND OR null 2026-11-01 \'; x_%é\u0000'.split(''),
    );
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: alphabet, maxLength: 60 })), (input) => {
        try {
          parseSearchQuery(input);
        } catch (error) {
          expect(error).toBeInstanceOf(SearchQueryError);
          const e = error as SearchQueryError;
          expect(e.position).toBeGreaterThanOrEqual(1);
          expect(e.position).toBeLessThanOrEqual(input.length + 1);
          expect(e.message).toMatch(/^Invalid search query at character \d+: expected /);
        }
      }),
      { numRuns: 2000 },
    );
    // And through the API: 200 or invalid_request, never a 500.
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: alphabet, minLength: 1, maxLength: 40 }), async (input) => {
        const res = await search(input);
        expect([200, 400], `${input}: ${JSON.stringify(res.body)}`).toContain(res.status);
        if (res.status === 400) expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String) });
      }),
      { numRuns: 80 },
    );
  });
});
