/**
 * services/usage/postgres-store.ts against real PostgreSQL: ingestion outcomes, every aggregation on
 * a small stream computed by hand, and closePeriod (once, the watermark, and the race with ingestion).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { maintainUsagePartitions, usageRetentionDays } from '../services/usage/partitions.ts';
import { createUsagePool, PostgresUsageStore } from '../services/usage/postgres-store.ts';
import type { Aggregation, MeterEventInput, MeterRef } from '../services/usage/store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let db: TestDatabase;
let store: PostgresUsageStore;
const account = 'acct_usage_store';
const customer = 'cus_usage_store_1';
const other = 'cus_usage_store_2';
const meters = {} as Record<Aggregation, MeterRef>;
const now = Date.now();
const t = (secondsAgo: number) => new Date(Math.floor(now / 1000) * 1000 - secondsAgo * 1000);

async function sql(text: string, values: unknown[] = []) {
  return db.orm.em.getConnection().execute(text, values);
}

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresUsageStore(createUsagePool(db.url, 8));
  for (const id of [customer, other])
    await sql(
      `insert into customers (id, email, account_id, livemode, created_at, updated_at) values (?, 'u@example.com', ?, false, now(), now())`,
      [id, account],
    );
  for (const aggregation of ['count', 'sum', 'max', 'unique_count', 'last', 'weighted_sum'] as Aggregation[]) {
    const meter: MeterRef = {
      id: `mtr_${aggregation}`,
      eventName: `e_${aggregation}`,
      aggregation,
      valueProperty: aggregation === 'unique_count' ? 'user' : 'value',
    };
    meters[aggregation] = meter;
    await sql(
      `insert into meters (id, account_id, livemode, display_name, event_name, aggregation, value_property, group_by, status, created_at, updated_at) values (?, ?, false, ?, ?, ?, ?, '["region"]', 'active', now(), now())`,
      [meter.id, account, aggregation, meter.eventName, aggregation, meter.valueProperty],
    );
  }
});

afterAll(async () => {
  await store?.close();
  await db?.close();
});

const event = (
  eventName: string,
  identifier: string,
  secondsAgo: number,
  payload: Record<string, unknown>,
  customerId = customer,
): MeterEventInput => ({
  eventName,
  customerId,
  identifier,
  timestamp: t(secondsAgo),
  payload,
});

describe('PostgresUsageStore', () => {
  it('answers each event of a batch: accepted, duplicate (in the batch and across batches), refused with its reason', async () => {
    const outcomes = await store.ingest({
      accountId: account,
      livemode: false,
      events: [
        event('e_sum', 'a1', 100, { value: 2 }),
        event('e_sum', 'a1', 100, { value: 2 }),
        event('e_nope', 'a2', 100, { value: 2 }),
        event('e_sum', 'a3', 100, { value: 2 }, 'cus_nobody'),
        event('e_sum', 'a4', 100, { value: 'two' }),
        event('e_sum', 'a5', 40 * 86_400, { value: 2 }),
        event('e_sum', 'a6', -3600, { value: 2 }),
        event('e_sum', 'a7', 100, { value: '1.1234567' }),
        event('e_sum', 'a8', 100, {}),
        event('e_count', 'a9', 100, {}),
      ],
    });
    expect(outcomes.map((o) => (o.status === 'refused' ? o.code : o.status))).toEqual([
      'accepted',
      'duplicate',
      'unknown_meter',
      'unknown_customer',
      'invalid_value',
      'timestamp_out_of_window',
      'timestamp_out_of_window',
      'invalid_value',
      'invalid_value',
      'accepted',
    ]);
    const again = await store.ingest({
      accountId: account,
      livemode: false,
      events: [event('e_sum', 'a1', 50, { value: 5 }), event('e_sum', 'a4', 100, { value: 3 })],
    });
    expect(again.map((o) => o.status)).toEqual(['duplicate', 'accepted']);
    // Another account's mode does not see these identifiers, nor their customers.
    const foreign = await store.ingest({
      accountId: 'acct_other',
      livemode: false,
      events: [event('e_sum', 'a1', 50, { value: 5 })],
    });
    expect(foreign[0]).toMatchObject({ status: 'refused', code: 'unknown_meter' });
  });

  it('aggregates every kind exactly over [start, end), cancelled events excluded, by group', async () => {
    // A stream of its own: a second customer, timestamps 1000..100 seconds ago.
    const start = t(1000);
    const end = t(0);
    const events: MeterEventInput[] = [];
    const add = (agg: Aggregation, id: string, secondsAgo: number, payload: Record<string, unknown>) =>
      events.push(event(`e_${agg}`, `${agg}-${id}`, secondsAgo, payload, other));
    add('sum', '1', 900, { value: '1.5', region: 'eu' });
    add('sum', '2', 800, { value: 2, region: 'us' });
    add('sum', '3', 700, { value: '-0.25', region: 'eu' });
    add('sum', 'old', 1100, { value: 100 });
    add('max', '1', 900, { value: '7.000001' });
    add('max', '2', 800, { value: 3 });
    add('count', '1', 900, {});
    add('count', '2', 10, {});
    add('count', '3', 10, {});
    add('unique_count', '1', 900, { user: 'ann' });
    add('unique_count', '2', 800, { user: 'bob' });
    add('unique_count', '3', 700, { user: 'ann' });
    add('last', '1', 500, { value: 4 });
    add('last', '2', 300, { value: 9 });
    add('last', '3', 300, { value: 8 }); // same timestamp, received later: the last
    add('last', '4', 400, { value: 1 });
    // Gauge: level 10 from before start, 20 from 600s ago, 0 from 200s ago: (400×10 + 400×20 + 200×0) / 1000 = 12.
    add('weighted_sum', '0', 5000, { value: 10 });
    add('weighted_sum', '1', 600, { value: 20 });
    add('weighted_sum', '2', 200, { value: 0 });
    const outcomes = await store.ingest({ accountId: account, livemode: false, events });
    expect(outcomes.every((o) => o.status === 'accepted')).toBe(true);
    await expect(store.cancel({ accountId: account, livemode: false, identifier: 'count-3' })).resolves.toMatchObject({
      status: 'cancelled',
    });
    await expect(store.cancel({ accountId: account, livemode: false, identifier: 'count-3' })).resolves.toMatchObject({
      status: 'already_cancelled',
    });
    await expect(store.cancel({ accountId: account, livemode: false, identifier: 'nothing' })).resolves.toEqual({
      status: 'not_found',
    });

    const value = async (agg: Aggregation, groupBy?: string[]) =>
      store.aggregate({
        accountId: account,
        livemode: false,
        customerId: other,
        meter: meters[agg],
        start,
        end,
        groupBy,
      });
    expect(await value('sum')).toEqual([{ dimensions: {}, value: '3.25', events: 3 }]);
    expect(await value('sum', ['region'])).toEqual([
      { dimensions: { region: 'eu' }, value: '1.25', events: 2 },
      { dimensions: { region: 'us' }, value: '2', events: 1 },
    ]);
    expect(await value('max')).toEqual([{ dimensions: {}, value: '7.000001', events: 2 }]);
    expect(await value('count')).toEqual([{ dimensions: {}, value: '2', events: 2 }]);
    expect(await value('unique_count')).toEqual([{ dimensions: {}, value: '2', events: 3 }]);
    expect(await value('last')).toEqual([{ dimensions: {}, value: '8', events: 4 }]);
    expect(await value('weighted_sum')).toEqual([{ dimensions: {}, value: '12', events: 2 }]);
    // A third of the period: rounded to 6 places, half away from zero.
    const third = await store.aggregate({
      accountId: account,
      livemode: false,
      customerId: other,
      meter: meters.weighted_sum,
      start: t(600),
      end: t(0),
    });
    expect(third).toEqual([{ dimensions: {}, value: '13.333333', events: 2 }]);
    // Nothing in the window: "0" for every kind.
    for (const agg of Object.keys(meters) as Aggregation[]) {
      const empty = await store.aggregate({
        accountId: account,
        livemode: false,
        customerId: other,
        meter: meters[agg],
        start: t(100_000),
        end: t(90_000),
      });
      expect(empty).toEqual([{ dimensions: {}, value: '0', events: 0 }]);
    }
    // Another tenant reads nothing.
    expect(
      await store.aggregate({
        accountId: 'acct_other',
        livemode: false,
        customerId: other,
        meter: meters.sum,
        start,
        end,
      }),
    ).toEqual([{ dimensions: {}, value: '0', events: 0 }]);
  });

  it('closes a period once: the watermark refuses earlier events and cancels, a second call answers the stored result', async () => {
    const start = t(3000);
    const end = t(2000);
    await store.ingest({
      accountId: account,
      livemode: false,
      events: [event('e_sum', 'close-1', 2500, { value: 4 }), event('e_sum', 'close-2', 2400, { value: 6 })],
    });
    const q = {
      accountId: account,
      livemode: false,
      subscriptionId: 'sub_close',
      customerId: customer,
      start,
      end,
      meters: [{ meter: meters.sum }, { meter: meters.count }],
    };
    const first = await store.closePeriod(q);
    expect(first).toEqual([
      { meterId: 'mtr_sum', aggregates: [{ dimensions: {}, value: '10', events: 2 }] },
      { meterId: 'mtr_count', aggregates: [{ dimensions: {}, value: '0', events: 0 }] },
    ]);
    const late = await store.ingest({
      accountId: account,
      livemode: false,
      events: [event('e_sum', 'close-late', 2200, { value: 1 }), event('e_sum', 'close-after', 1000, { value: 1 })],
    });
    expect(late.map((o) => (o.status === 'refused' ? o.code : o.status))).toEqual(['period_invoiced', 'accepted']);
    await expect(store.cancel({ accountId: account, livemode: false, identifier: 'close-1' })).resolves.toMatchObject({
      status: 'period_invoiced',
    });
    // The same key again, even after more events: the stored result.
    expect(await store.closePeriod(q)).toEqual(first);
  });

  it('takes concurrent batches carrying the same identifiers in other orders: each stored once, no deadlock', async () => {
    const ids = Array.from({ length: 1000 }, (_, i) => `overlap-${String(i).padStart(4, '0')}`);
    // Half the batches in one order, half in the reverse, started together, three rounds.
    const results = [];
    for (let round = 0; round < 3; round++) {
      const batch = (b: number) =>
        (b % 2 ? [...ids].reverse() : ids).map((id) => event('e_count', `${round}-${id}`, 50, {}));
      results.push(
        ...(await Promise.all(
          Array.from({ length: 6 }, (_, b) => store.ingest({ accountId: account, livemode: false, events: batch(b) })),
        )),
      );
    }
    expect(results.flat().filter((o) => o.status === 'accepted').length).toBe(3000);
    expect(results.flat().filter((o) => o.status === 'duplicate').length).toBe(15_000);
  });

  it('counts every event committed before a concurrent closing, and refuses every one after', async () => {
    const start = t(30_000);
    const end = t(20_000);
    const batches = Array.from({ length: 24 }, (_, b) =>
      Array.from({ length: 50 }, (_, i) => event('e_count', `race-${b}-${i}`, 20_000 + 1 + ((b * 50 + i) % 9000), {})),
    );
    let closing: Promise<{ meterId: string; aggregates: { value: string }[] }[]> | undefined;
    const results = await Promise.all(
      batches.map(async (events, b) => {
        if (b === 12)
          closing = store.closePeriod({
            accountId: account,
            livemode: false,
            subscriptionId: 'sub_race',
            customerId: other,
            start,
            end,
            meters: [{ meter: meters.count }],
          });
        return store.ingest({ accountId: account, livemode: false, events });
      }),
    );
    const closed = await closing!;
    const accepted = results.flat().filter((o) => o.status === 'accepted').length;
    const refused = results.flat().filter((o) => o.status === 'refused' && o.code === 'period_invoiced').length;
    expect(accepted + refused).toBe(24 * 50);
    expect(closed[0]!.aggregates[0]!.value).toBe(String(accepted));
  });

  // Last: it drops every partition of today's months (the retention as seen from 2030).
  it('keeps monthly partitions: adds months (moving their rows out of DEFAULT), drops months past the retention, prunes identifiers', async () => {
    expect(() => usageRetentionDays({ USAGE_RETENTION_DAYS: '10' })).toThrow(/at least|from 35/);
    expect(usageRetentionDays({})).toBe(400);
    // An event in January 2030 has no partition yet: it sits in DEFAULT.
    await sql(
      `insert into meter_events (account_id, livemode, meter_id, customer_id, identifier, "timestamp", value, payload) values (?, false, 'mtr_sum', ?, 'future-1', '2030-01-20T00:00:00Z', 5, '{"value":5}')`,
      [account, customer],
    );
    const where = async () =>
      (
        (await sql(`select tableoid::regclass::text as part from meter_events where identifier = 'future-1'`)) as {
          part: string;
        }[]
      )[0]!.part;
    expect(await where()).toBe('meter_events_default');
    const before = (await sql(`select count(*)::int as n from meter_event_identifiers`)) as { n: number }[];
    expect(before[0]!.n).toBeGreaterThan(0);

    const result = await maintainUsagePartitions(store.pool, new Date('2030-01-15T00:00:00Z'), 400);
    expect(result.created).toEqual([
      'meter_events_2029_12',
      'meter_events_2030_01',
      'meter_events_2030_02',
      'meter_events_2030_03',
    ]);
    expect(await where()).toBe('meter_events_2030_01');
    // Every month of today's partitions ended before 2030-01-15 minus 400 days: dropped whole; their identifiers pruned.
    const thisMonth = new Date();
    const name = `meter_events_${thisMonth.getUTCFullYear()}_${String(thisMonth.getUTCMonth() + 1).padStart(2, '0')}`;
    expect(result.dropped).toContain(name);
    expect(result.identifiersPruned).toBe(before[0]!.n);
    const left = (await sql(`select count(*)::int as n from meter_events where identifier <> 'future-1'`)) as {
      n: number;
    }[];
    expect(left[0]!.n).toBe(0);
    expect(
      await store.aggregate({
        accountId: account,
        livemode: false,
        customerId: customer,
        meter: meters.sum,
        start: new Date('2030-01-01T00:00:00Z'),
        end: new Date('2030-02-01T00:00:00Z'),
      }),
    ).toEqual([{ dimensions: {}, value: '5', events: 1 }]);
    // Again: nothing to do.
    expect(await maintainUsagePartitions(store.pool, new Date('2030-01-15T00:00:00Z'), 400)).toEqual({
      created: [],
      dropped: [],
      defaultRowsDeleted: 0,
      identifiersPruned: 0,
    });
  });
});
