/**
 * Proration of item changes (docs/pricing.md#proration-of-item-changes), property-tested with fast-check on the pure
 * domain functions the workflow and the upcoming invoice use (applyItemChange, upcomingInvoice): for random
 * subscriptions of 1 to 3 items and random sequences of adds, quantity and plan changes and removals within one
 * period, the prorated lines are exactly what a reference written apart from the engine computes (each line
 * round(price × remaining ÷ period) half away from zero, in exact integer arithmetic), so what the period costs in
 * all (its first invoice plus the prorated lines) is the exact time-weighted sum of what was subscribed, to half a
 * minor unit per prorated line; and every invoice's total is the sum of its lines.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { lineAmount } from '../domain/invoice-lines.ts';
import type { Pricing } from '../domain/pricing.ts';
import { initialSnapshot, type ItemTerms } from '../domain/subscription.ts';
import {
  applyItemChange,
  type ItemChange,
  itemsOf,
  type ProrationBehavior,
  stripItemId,
  type SubscriptionState,
  upcomingInvoice,
} from '../domain/subscription-decisions.ts';

const start = Date.UTC(2027, 0, 10);
const end = Date.UTC(2027, 1, 10);
const periodMs = end - start;

/** A price the reference prices by itself: per unit, or two graduated tiers of whole units and a flat fee. */
type RefPrice =
  | { kind: 'unit'; amount: number }
  | { kind: 'graduated'; first: number; upTo: number; rest: number; flat: number };

/** What a quantity of a price costs, computed here (not by domain/pricing.ts). */
function refPrice(price: RefPrice, q: number): bigint {
  if (price.kind === 'unit') return BigInt(price.amount) * BigInt(q);
  const inFirst = Math.min(q, price.upTo);
  const inRest = Math.max(0, q - price.upTo);
  return (
    BigInt(price.first) * BigInt(inFirst) + (inRest > 0 ? BigInt(price.rest) * BigInt(inRest) + BigInt(price.flat) : 0n)
  );
}

/** round(n ÷ d) half away from zero, for d > 0. */
function roundHalfAway(n: bigint, d: bigint): bigint {
  const sign = n < 0n ? -1n : 1n;
  const a = n < 0n ? -n : n;
  return sign * ((2n * a + d) / (2n * d));
}

const pricingOf = (price: RefPrice): Pricing =>
  price.kind === 'unit'
    ? { scheme: 'per_unit', amount: price.amount }
    : {
        scheme: 'tiered',
        tiers_mode: 'graduated',
        tiers: [
          { up_to: price.upTo, unit_amount: price.first },
          { up_to: 'inf', unit_amount: price.rest, flat_amount: price.flat },
        ],
      };

const refPriceArb: fc.Arbitrary<RefPrice> = fc.oneof(
  fc.record({ kind: fc.constant('unit' as const), amount: fc.integer({ min: 1, max: 50_000 }) }),
  fc.record({
    kind: fc.constant('graduated' as const),
    first: fc.integer({ min: 1, max: 5_000 }),
    upTo: fc.integer({ min: 1, max: 20 }),
    rest: fc.integer({ min: 0, max: 5_000 }),
    flat: fc.integer({ min: 0, max: 10_000 }),
  }),
);

/** Five plans a scenario picks from, by index. */
const catalogArb = fc.array(refPriceArb, { minLength: 5, maxLength: 5 });

const stepArb = fc.record({
  at: fc.integer({ min: 0, max: periodMs }),
  op: fc.constantFrom('add' as const, 'quantity' as const, 'plan' as const, 'remove' as const),
  pick: fc.nat(),
  quantity: fc.integer({ min: 1, max: 40 }),
});

const terms = (catalog: RefPrice[], plan: number, quantity: number, itemId: string): ItemTerms => ({
  itemId,
  planId: `plan_${plan}`,
  name: `Plan ${plan}`,
  amount: 1,
  currency: 'USD',
  pricing: pricingOf(catalog[plan]!),
  quantity,
  interval: { unit: 'month', count: 1 },
});

function activeState(items: ItemTerms[]): SubscriptionState {
  const subscription = {
    ...initialSnapshot({
      id: 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e',
      accountId: 'acct_1',
      customerId: 'cus_1',
      planId: items[0]!.planId,
      livemode: false,
      trialDays: 0,
      billingCycleMode: 'anniversary',
      pauseUntil: null,
      gracePeriodDays: null,
    }),
    status: 'active' as const,
    billingAnchor: new Date(start).toISOString(),
    currentPeriodStart: new Date(start).toISOString(),
    currentPeriodEnd: new Date(end).toISOString(),
    version: 3,
  };
  return { subscription, plan: stripItemId(items[0]!), pendingPlan: null, items };
}

describe('proration of item changes', () => {
  it('prorated lines are the reference exactly, and the period costs the time-weighted sum to half a unit a line', () => {
    fc.assert(
      fc.property(
        catalogArb,
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 40 })), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(stepArb, { minLength: 1, maxLength: 8 }),
        fc.constantFrom<ProrationBehavior>('create_prorations', 'always_invoice'),
        (catalog, initial, rawSteps, behavior) => {
          // Distinct plans among the first items.
          const seen = new Set<number>();
          const first = initial.filter(([plan]) => !seen.has(plan) && seen.add(plan));
          let state = activeState(first.map(([plan, q], i) => terms(catalog, plan, q, `si_${i}`)));
          // The reference's own book: each item's plan and quantity, changed at instants in time order.
          type Held = { id: string; plan: number; quantity: number };
          let held: Held[] = first.map(([plan, quantity], i) => ({ id: `si_${i}`, plan, quantity }));
          const segments: { from: number; held: Held[] }[] = [{ from: start, held }];
          let expectedLines: bigint[] = [];
          let engineLines: number[] = [];
          const steps = [...rawSteps].sort((a, b) => a.at - b.at);
          let added = 0;
          for (const step of steps) {
            const at = start + step.at;
            const remaining = BigInt(end - at);
            const prorate = (h: Held) =>
              roundHalfAway(refPrice(catalog[h.plan]!, h.quantity) * remaining, BigInt(periodMs));
            let change: ItemChange | null = null;
            let next: Held[] = held;
            let reference: bigint[] = [];
            const target = held[step.pick % held.length]!;
            const freePlan = [0, 1, 2, 3, 4].find((p) => !held.some((h) => h.plan === p));
            if (step.op === 'add' && freePlan !== undefined && held.length < 5) {
              const id = `si_added${added++}`;
              const item = { id, plan: (freePlan + step.pick) % 5, quantity: step.quantity };
              if (held.some((h) => h.plan === item.plan)) item.plan = freePlan;
              change = {
                action: 'add',
                item: terms(catalog, item.plan, item.quantity, id),
                prorationBehavior: behavior,
              };
              next = [...held, item];
              reference = [prorate(item)];
            } else if (step.op === 'remove' && held.length > 1) {
              change = { action: 'remove', itemId: target.id, prorationBehavior: behavior };
              next = held.filter((h) => h.id !== target.id);
              reference = [-prorate(target)];
            } else if (step.op === 'plan' && freePlan !== undefined) {
              const moved = { ...target, plan: freePlan };
              change = {
                action: 'update',
                item: terms(catalog, moved.plan, moved.quantity, target.id),
                prorationBehavior: behavior,
              };
              next = held.map((h) => (h.id === target.id ? moved : h));
              reference = [-prorate(target), prorate(moved)];
            } else if (target.quantity !== step.quantity) {
              const moved = { ...target, quantity: step.quantity };
              change = {
                action: 'update',
                item: terms(catalog, moved.plan, moved.quantity, target.id),
                prorationBehavior: behavior,
              };
              next = held.map((h) => (h.id === target.id ? moved : h));
              reference = [-prorate(target), prorate(moved)];
            }
            if (!change) continue;
            const result = applyItemChange(state, change, new Date(at));
            expect(result.lines.map((l) => lineAmount(l))).toEqual(reference.map(Number));
            expect(
              result.lines.every(
                (l) =>
                  l.proration &&
                  l.period_end === new Date(end).toISOString() &&
                  l.period_start === new Date(at).toISOString(),
              ),
            ).toBe(true);
            if (result.invoice) {
              // always_invoice: every waiting line and these, charged now; its total is the sum of its lines, and positive.
              const total = result.invoice.lines.reduce((sum, l) => sum + lineAmount(l), 0);
              expect(total).toBeGreaterThan(0);
              expect(result.invoice.lines).toEqual([...(state.pendingLines ?? []), ...result.lines]);
              expect(result.pendingLines).toEqual([]);
            } else {
              expect(result.pendingLines).toEqual([...(state.pendingLines ?? []), ...result.lines]);
            }
            engineLines = [...engineLines, ...result.lines.map((l) => lineAmount(l))];
            expectedLines = [...expectedLines, ...reference];
            state = {
              ...state,
              items: result.items,
              plan: stripItemId(result.items[0]!),
              pendingLines: result.pendingLines,
              subscription: { ...state.subscription, version: state.subscription.version + 1 },
            };
            held = next;
            segments.push({ from: at, held });
            expect(itemsOf(state).map((i) => [i.itemId, i.planId, i.quantity])).toEqual(
              held.map((h) => [h.id, `plan_${h.plan}`, h.quantity]),
            );
          }
          expect(engineLines).toEqual(expectedLines.map(Number));
          // The period in all: the first invoice (the first items, the whole period) and the prorated lines, against
          // the exact time-weighted sum of the segments, within half a minor unit per prorated line.
          const firstInvoice = segments[0]!.held.reduce((sum, h) => sum + refPrice(catalog[h.plan]!, h.quantity), 0n);
          const charged = firstInvoice + expectedLines.reduce((a, b) => a + b, 0n);
          let weighted = 0n; // in minor units × periodMs
          segments.forEach((segment, i) => {
            const until = i + 1 < segments.length ? segments[i + 1]!.from : end;
            const cost = segment.held.reduce((sum, h) => sum + refPrice(catalog[h.plan]!, h.quantity), 0n);
            weighted += cost * BigInt(until - segment.from);
          });
          const error = charged * BigInt(periodMs) - weighted;
          const bound = BigInt(expectedLines.length) * BigInt(periodMs);
          expect(
            2n * (error < 0n ? -error : error) <= bound,
            `charged ${charged}, exact ${Number(weighted) / periodMs}`,
          ).toBe(true);

          // The next invoice: one line per item at its quantity and the lines still waiting; its total is the sum of its lines.
          const next = upcomingInvoice(state, 0)!;
          expect(next.lines.slice(0, held.length).map((l) => lineAmount(l))).toEqual(
            held.map((h) => Number(refPrice(catalog[h.plan]!, h.quantity))),
          );
          expect(next.lines.slice(held.length)).toEqual(state.pendingLines ?? []);
          expect(next.lines.every((l) => Number.isInteger(lineAmount(l)))).toBe(true);
        },
      ),
      { numRuns: Number(process.env.PRORATION_PROPERTY_RUNS ?? 300) },
    );
  });

  it('in a trial, or with none, an item change makes no line', () => {
    const catalog: RefPrice[] = [
      { kind: 'unit', amount: 1000 },
      { kind: 'unit', amount: 2500 },
    ];
    const state = activeState([terms(catalog, 0, 2, 'si_0')]);
    const add: ItemChange = { action: 'add', item: terms(catalog, 1, 1, 'si_1'), prorationBehavior: 'none' };
    expect(applyItemChange(state, add, new Date(start + 86_400_000))).toMatchObject({
      lines: [],
      pendingLines: [],
      invoice: null,
    });
    const trialing = { ...state, subscription: { ...state.subscription, status: 'trialing' as const } };
    expect(
      applyItemChange(trialing, { ...add, prorationBehavior: 'always_invoice' }, new Date(start + 86_400_000)),
    ).toMatchObject({ lines: [], invoice: null });
  });
});
