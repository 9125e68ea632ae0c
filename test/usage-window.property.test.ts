/**
 * A billing period's usage window (domain/usage-window.ts, docs/usage.md#timestamps).
 * Property: over random chains of periods whose bounds carry milliseconds (each period's end the next one's
 * start) and random event timestamps (whole seconds or not), every event from the first period's start second
 * to the last period's end second falls in exactly one period's window, the one a reference written apart
 * picks (ISO 8601 texts cut to the second, compared as strings); "so far" windows never count past the period.
 * Then the store on real PostgreSQL: an event stamped in a period's first second before its millisecond is
 * counted by the closing, and one in the next period's first second before its millisecond is still accepted.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isEmptyWindow, usageWindow, wholeSecond } from '../domain/usage-window.ts';
import { createUsagePool, PostgresUsageStore } from '../services/usage/postgres-store.ts';
import type { MeterRef } from '../services/usage/store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

/** The reference: an instant's second as its ISO text up to the seconds (same width for years 1970..9999). */
const secondText = (ms: number) => new Date(ms).toISOString().slice(0, 19);
/** The period an event belongs to by the reference, or -1: the one whose start second <= the event's second < its end second. */
function referencePeriod(bounds: number[], event: number): number {
  const at = secondText(event);
  for (let i = 0; i + 1 < bounds.length; i++)
    if (secondText(bounds[i]!) <= at && at < secondText(bounds[i + 1]!)) return i;
  return -1;
}

const t0 = Date.UTC(2026, 10, 1);
/** Consecutive periods: a start with milliseconds, then lengths from under a second to a few days. */
const chain = fc
  .tuple(
    fc.integer({ min: 0, max: 86_400_000 }),
    fc.array(
      fc.oneof(
        fc.integer({ min: 0, max: 2_500 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.integer({ max: 4 * 86_400_000, min: 0 }),
      ),
      { minLength: 1, maxLength: 8 },
    ),
  )
  .map(([offset, lengths]) => {
    const bounds = [t0 + offset];
    for (const length of lengths) bounds.push(bounds.at(-1)! + length);
    return bounds;
  });

describe('usageWindow (pure)', () => {
  it('puts every event of consecutive periods in exactly one window, the reference one', () => {
    fc.assert(
      fc.property(
        chain,
        fc.array(fc.double({ min: -3, max: 1.05, noNaN: true }), { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        (bounds, positions, wholeSeconds) => {
          const windows = bounds
            .slice(0, -1)
            .map((start, i) => usageWindow({ start: new Date(start), end: new Date(bounds[i + 1]!) }));
          const first = bounds[0]!;
          const span = bounds.at(-1)! - first;
          // Events around the chain (some before it, some after), also near its bounds' seconds.
          const events = positions.map((p, i) => {
            const near = bounds[i % bounds.length]!;
            const ms = i % 3 === 0 ? near + Math.round(p * 1500) : first + Math.round(p * span);
            return wholeSeconds ? Math.floor(ms / 1000) * 1000 : ms;
          });
          for (const event of events) {
            const holding = windows.flatMap((w, i) =>
              event >= w.start.getTime() && event < w.end.getTime() ? [i] : [],
            );
            const expected = referencePeriod(bounds, event);
            expect(holding).toEqual(expected === -1 ? [] : [expected]);
          }
          // No gap, no overlap: the windows chain.
          for (let i = 0; i + 1 < windows.length; i++) expect(windows[i]!.end).toEqual(windows[i + 1]!.start);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('counts so far within the period window, from its start second up to asOf', () => {
    fc.assert(
      fc.property(chain, fc.integer({ min: -5_000, max: 10 * 86_400_000 }), (bounds, offset) => {
        const period = { start: new Date(bounds[0]!), end: new Date(bounds[1]!) };
        const full = usageWindow(period);
        const asOf = new Date(bounds[0]! + offset);
        const soFar = usageWindow(period, asOf);
        expect(soFar.start).toEqual(full.start);
        expect(soFar.end.getTime()).toBeGreaterThanOrEqual(soFar.start.getTime());
        expect(soFar.end.getTime()).toBeLessThanOrEqual(full.end.getTime());
        if (asOf >= full.end) expect(soFar).toEqual(full);
        else if (asOf > full.start) expect(soFar.end).toEqual(asOf);
        else expect(isEmptyWindow(soFar)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('cuts to the whole second, before 1970 too', () => {
    expect(wholeSecond(new Date('2026-11-27T09:00:00.700Z')).toISOString()).toBe('2026-11-27T09:00:00.000Z');
    expect(wholeSecond(new Date(-1))).toEqual(new Date(-1000));
    expect(
      usageWindow({ start: new Date('2026-11-27T09:00:00.700Z'), end: new Date('2026-12-27T09:00:00.700Z') }),
    ).toEqual({ start: new Date('2026-11-27T09:00:00Z'), end: new Date('2026-12-27T09:00:00Z') });
  });
});

describe('a period closed on whole seconds (PostgreSQL usage store)', () => {
  const account = 'acct_usage_window';
  const customer = 'cus_usage_window';
  const meter: MeterRef = {
    id: 'mtr_usage_window',
    eventName: 'window_calls',
    aggregation: 'sum',
    valueProperty: 'value',
  };
  let db: TestDatabase;
  let store: PostgresUsageStore;
  beforeAll(async () => {
    db = await createTestDatabase();
    store = new PostgresUsageStore(createUsagePool(db.url, 2));
    const sql = (text: string, values: unknown[]) => db.orm.em.getConnection().execute(text, values);
    await sql(
      `insert into customers (id, email, account_id, livemode, created_at, updated_at) values (?, 'w@example.com', ?, false, now(), now())`,
      [customer, account],
    );
    await sql(
      `insert into meters (id, account_id, livemode, display_name, event_name, aggregation, value_property, group_by, status, created_at, updated_at) values (?, ?, false, 'w', ?, 'sum', 'value', '[]', 'active', now(), now())`,
      [meter.id, account, meter.eventName],
    );
  });
  afterAll(async () => {
    await store?.close();
    await db?.close();
  });

  it("counts an event of the period's first second before its millisecond, and accepts one of the next period's", async () => {
    const second = Math.floor(Date.now() / 1000) - 3 * 3600;
    // The period [second + 0.700, second + 3600.400); events in whole seconds, as Stripe's.
    const start = new Date(second * 1000 + 700);
    const end = new Date((second + 3600) * 1000 + 400);
    const send = (identifier: string, at: number, value: number) =>
      store.ingest({
        accountId: account,
        livemode: false,
        events: [
          { eventName: meter.eventName, customerId: customer, timestamp: new Date(at), identifier, payload: { value } },
        ],
      });
    await send('before-period', (second - 1) * 1000, 1000);
    await send('first-second', second * 1000, 1);
    await send('last-second', (second + 3599) * 1000 + 999, 10);
    await send('next-first-second', (second + 3600) * 1000, 100);
    const closed = await store.closePeriod({
      accountId: account,
      livemode: false,
      subscriptionId: 'sub_usage_window',
      customerId: customer,
      start,
      end,
      meters: [{ meter }],
    });
    expect(closed).toEqual([{ meterId: meter.id, aggregates: [{ dimensions: {}, value: '11', events: 2 }] }]);
    // The watermark stopped at the end's whole second: the next period's first second is still open, its last closed.
    const outcomes = [
      ...(await send('next-first-second-late', (second + 3600) * 1000 + 200, 1)),
      ...(await send('last-second-late', (second + 3599) * 1000, 1)),
    ];
    expect(outcomes.map((o) => (o.status === 'refused' ? o.code : o.status))).toEqual(['accepted', 'period_invoiced']);
    const next = await store.aggregate({
      accountId: account,
      livemode: false,
      customerId: customer,
      meter,
      ...usageWindow({ start: end, end: new Date(end.getTime() + 3600_000) }),
    });
    expect(next).toEqual([{ dimensions: {}, value: '101', events: 2 }]);
    // An empty window answers "0" without a query error.
    expect(
      await store.aggregate({ accountId: account, livemode: false, customerId: customer, meter, start, end: start }),
    ).toEqual([{ dimensions: {}, value: '0', events: 0 }]);
  });
});
