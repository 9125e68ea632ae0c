/**
 * Property: for random streams of meter events — duplicates within and across batches, out of
 * order, outside the period, cancellations, and a period closed midway (later events and cancels
 * before its end refused) — every aggregation the PostgreSQL usage store answers equals a reference
 * computed here, apart, in plain TypeScript with exact integer arithmetic, over the events the model
 * accepted. Real PostgreSQL (services/usage/postgres-store.ts).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createUsagePool, PostgresUsageStore } from '../services/usage/postgres-store.ts';
import type { Aggregation, MeterEventInput, MeterRef, UsageAggregate } from '../services/usage/store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

const account = 'acct_usage_property';
const kinds: Aggregation[] = ['count', 'sum', 'max', 'unique_count', 'last', 'weighted_sum'];
const meters = Object.fromEntries(
  kinds.map((aggregation) => [
    aggregation,
    {
      id: `mtr_p_${aggregation}`,
      eventName: `p_${aggregation}`,
      aggregation,
      valueProperty: aggregation === 'unique_count' ? 'user' : 'value',
    },
  ]),
) as Record<Aggregation, MeterRef>;

let db: TestDatabase;
let store: PostgresUsageStore;
beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresUsageStore(createUsagePool(db.url, 4));
  for (const meter of Object.values(meters))
    await db.orm.em
      .getConnection()
      .execute(
        `insert into meters (id, account_id, livemode, display_name, event_name, aggregation, value_property, group_by, status, created_at, updated_at) values (?, ?, false, 'p', ?, ?, ?, '["g"]', 'active', now(), now())`,
        [meter.id, account, meter.eventName, meter.aggregation, meter.valueProperty],
      );
});
afterAll(async () => {
  await store?.close();
  await db?.close();
});

// ---- the reference: exact decimals as BigInt millionths ----
const scale = 1_000_000n;
function micros(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const value = BigInt(whole!) * scale + BigInt((fraction + '000000').slice(0, 6));
  return negative ? -value : value;
}
function decimal(value: bigint): string {
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const fraction = (abs % scale).toString().padStart(6, '0').replace(/0+$/, '');
  const text = `${abs / scale}${fraction ? `.${fraction}` : ''}`;
  return negative && abs !== 0n ? `-${text}` : text;
}
/** a / b rounded half away from zero (b > 0). */
function divideRounded(a: bigint, b: bigint): bigint {
  const negative = a < 0n;
  const abs = negative ? -a : a;
  const q = (abs * 2n + b) / (2n * b);
  return negative ? -q : q;
}

interface ModelEvent {
  kind: Aggregation;
  identifier: string;
  at: number; // unix seconds
  value: string; // decimal text ('' for count)
  user: string;
  group: string | undefined;
  seq: number;
  cancelled: boolean;
}

function reference(
  events: ModelEvent[],
  kind: Aggregation,
  start: number,
  end: number,
  grouped: boolean,
): UsageAggregate[] {
  const mine = events.filter((e) => e.kind === kind && !e.cancelled);
  const keyOf = (e: ModelEvent) => (grouped ? (e.group ?? '') : '');
  const inPeriod = mine.filter((e) => e.at >= start && e.at < end);
  const groups = new Set(inPeriod.map(keyOf));
  if (kind === 'weighted_sum' && grouped) for (const e of mine) if (e.at < start) groups.add(keyOf(e));
  if (!grouped) groups.add('');
  const out: UsageAggregate[] = [];
  for (const key of [...groups].sort()) {
    const here = inPeriod.filter((e) => keyOf(e) === key).sort((a, b) => a.at - b.at || a.seq - b.seq);
    let value: bigint;
    switch (kind) {
      case 'count':
        value = BigInt(here.length) * scale;
        break;
      case 'sum':
        value = here.reduce((s, e) => s + micros(e.value), 0n);
        break;
      case 'max':
        value = here.length ? here.map((e) => micros(e.value)).reduce((a, b) => (b > a ? b : a)) : 0n;
        break;
      case 'unique_count':
        value = BigInt(new Set(here.map((e) => e.user)).size) * scale;
        break;
      case 'last':
        value = here.length ? micros(here[here.length - 1]!.value) : 0n;
        break;
      case 'weighted_sum': {
        const before = mine
          .filter((e) => keyOf(e) === key && e.at < start)
          .sort((a, b) => a.at - b.at || a.seq - b.seq);
        let level = before.length ? micros(before[before.length - 1]!.value) : 0n;
        let from = start;
        let total = 0n;
        for (const e of here) {
          total += level * BigInt(e.at - from);
          level = micros(e.value);
          from = e.at;
        }
        total += level * BigInt(end - from);
        value = divideRounded(total, BigInt(end - start));
        break;
      }
    }
    out.push({ dimensions: grouped ? { g: key } : {}, value: decimal(value), events: here.length });
  }
  return out;
}

// ---- the generator ----
const valueText = fc
  .tuple(
    fc.integer({ min: -999_999, max: 999_999 }),
    fc.integer({ min: 0, max: 999_999 }),
    fc.integer({ min: 0, max: 6 }),
  )
  .map(([whole, fraction, places]) => {
    const digits = places ? `.${String(fraction).padStart(6, '0').slice(0, places)}` : '';
    return `${whole}${digits}`;
  });
const op = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      type: fc.constant('event' as const),
      kind: fc.constantFrom(...kinds),
      id: fc.integer({ min: 0, max: 40 }),
      offset: fc.oneof(
        fc.integer({ min: -7200, max: 14_400 }),
        fc.integer({ min: -12, max: 24 }).map((n) => n * 300),
      ),
      value: valueText,
      asNumber: fc.boolean(),
      user: fc.constantFrom('ann', 'bob', 'cy', 'dee'),
      group: fc.constantFrom('a', 'b', undefined),
      batchBreak: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('cancel' as const), id: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('close' as const) }) },
);

let run = 0;
describe('usage aggregation (property)', () => {
  it('every aggregation equals the reference over the accepted events', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 70 }),
        fc.integer({ min: 2, max: 36 }).map((n) => n * 300 + (n % 3) * 7),
        async (ops, length) => {
          run++;
          const customer = `cus_prop_${run}`;
          await db.orm.em
            .getConnection()
            .execute(
              `insert into customers (id, email, account_id, livemode, created_at, updated_at) values (?, 'p@example.com', ?, false, now(), now())`,
              [customer, account],
            );
          const start = Math.floor(Date.now() / 1000) - 3 * 86_400;
          const end = start + length;
          const prefix = `r${run}-`;
          const model = new Map<string, ModelEvent>();
          let seq = 0;
          let closedAt: UsageAggregate[][] | null = null;
          let pending: { input: MeterEventInput; model: ModelEvent }[] = [];

          const flush = async () => {
            if (!pending.length) return;
            const outcomes = await store.ingest({
              accountId: account,
              livemode: false,
              events: pending.map((p) => p.input),
            });
            pending.forEach((p, i) => {
              const expected =
                closedAt && p.model.at < end ? 'refused' : model.has(p.model.identifier) ? 'duplicate' : 'accepted';
              expect(outcomes[i]!.status, `${p.model.identifier}`).toBe(expected);
              if (expected === 'accepted') model.set(p.model.identifier, { ...p.model, seq: seq++ });
            });
            pending = [];
          };

          for (const o of ops) {
            if (o.type === 'event') {
              const identifier = `${prefix}${o.id}`;
              const at = start + o.offset;
              const payload: Record<string, unknown> = {};
              if (o.group) payload.g = o.group;
              if (o.kind === 'unique_count') payload.user = o.user;
              else if (o.kind !== 'count') payload.value = o.asNumber ? Number(o.value) : o.value;
              pending.push({
                input: {
                  eventName: meters[o.kind].eventName,
                  customerId: customer,
                  identifier,
                  timestamp: new Date(at * 1000),
                  payload,
                },
                model: {
                  kind: o.kind,
                  identifier,
                  at,
                  value: o.kind === 'count' || o.kind === 'unique_count' ? '0' : o.value,
                  user: o.user,
                  group: o.group,
                  seq: 0,
                  cancelled: false,
                },
              });
              if (o.batchBreak) await flush();
            } else if (o.type === 'cancel') {
              await flush();
              const identifier = `${prefix}${o.id}`;
              const outcome = await store.cancel({ accountId: account, livemode: false, identifier });
              const known = model.get(identifier);
              if (!known) expect(outcome.status).toBe('not_found');
              else if (known.cancelled) expect(outcome.status).toBe('already_cancelled');
              else if (closedAt && known.at < end) expect(outcome.status).toBe('period_invoiced');
              else {
                expect(outcome.status).toBe('cancelled');
                known.cancelled = true;
              }
            } else if (!closedAt) {
              await flush();
              const closing = await store.closePeriod({
                accountId: account,
                livemode: false,
                subscriptionId: `sub_${customer}`,
                customerId: customer,
                start: new Date(start * 1000),
                end: new Date(end * 1000),
                meters: kinds.map((k) => ({ meter: meters[k] })),
              });
              const events = [...model.values()];
              closedAt = kinds.map((k) => reference(events, k, start, end, false));
              expect(closing.map((c) => c.aggregates)).toEqual(closedAt);
            }
          }
          await flush();
          const events = [...model.values()];
          for (const kind of kinds) {
            for (const grouped of [false, true]) {
              const q = {
                accountId: account,
                livemode: false,
                customerId: customer,
                meter: meters[kind],
                start: new Date(start * 1000),
                end: new Date(end * 1000),
                groupBy: grouped ? ['g'] : undefined,
              };
              expect(await store.aggregate(q), `${kind} grouped=${grouped}`).toEqual(
                reference(events, kind, start, end, grouped),
              );
            }
            // A window that cuts the period (a summary's hour, say).
            const mid = start + Math.floor(length / 3);
            expect(
              await store.aggregate({
                accountId: account,
                livemode: false,
                customerId: customer,
                meter: meters[kind],
                start: new Date(mid * 1000),
                end: new Date(end * 1000),
              }),
              `${kind} from ${mid}`,
            ).toEqual(reference(events, kind, mid, end, false));
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
