/**
 * Usage billing's reads and its one write (#28): closing a subscription's period for usage (the
 * subscription workflow's local activity, once per period) and the current period's usage so far (the
 * upcoming invoice and the subscription read). Both go through the UsageStore (services/usage/store.ts),
 * never the meter_events table itself; the pricing is domain/usage-pricing.ts.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

import { AccountModeSettings, Meter, Plan } from '../../db/entities/index.ts';
import type { PriceTerms } from '../../domain/subscription.ts';
import type { InvoiceLineInput } from '../../domain/subscription-decisions.ts';
import { defaultUsageGraceSeconds, type MeterClosing, metersToClose, usageLines } from '../../domain/usage-billing.ts';
import type { BilledByLine } from '../../domain/usage-thresholds.ts';
import { usageWindow } from '../../domain/usage-window.ts';
import { usageStoreFor } from './postgres-store.ts';
import type { MeterRef, UsageStore } from './store.ts';

export interface CloseUsageInput {
  accountId: string;
  livemode: boolean;
  subscriptionId: string;
  customerId: string;
  /** The usage period [start, end), ISO instants. */
  start: string;
  end: string;
  meters: { meterId: string; groupBy?: string[] }[];
}

export interface CloseUsageResult {
  closing: (MeterClosing & { groupBy?: string[] })[];
  /** The mode's usage grace window now: the workflow's next renewals wait it. */
  usageGraceSeconds: number;
  /** What threshold invoices of the period billed per usage line (domain/usage-thresholds.ts); absent: none. */
  thresholdBilled?: BilledByLine;
}

const meterRef = (meter: Meter): MeterRef => ({
  id: meter.id,
  eventName: meter.eventName,
  aggregation: meter.aggregation,
  valueProperty: meter.valueProperty,
  groupBy: meter.groupBy,
});

/** The meters of the caller's account and mode by id, whatever their status: a meter deactivated mid-period still bills what it counted. */
async function metersById(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  ids: readonly string[],
): Promise<Map<string, MeterRef>> {
  if (ids.length === 0) return new Map();
  const rows = await em.find(Meter, {
    id: { $in: [...new Set(ids)] },
    accountId: scope.accountId,
    livemode: scope.livemode,
  });
  return new Map(rows.map((row) => [row.id, meterRef(row)]));
}

/** The mode's usage grace window in seconds (default 3600). */
export async function usageGraceSeconds(em: EntityManager, accountId: string, livemode: boolean): Promise<number> {
  const row = await em.findOne(AccountModeSettings, { accountId, livemode });
  return row?.usageGracePeriodSeconds ?? defaultUsageGraceSeconds;
}

/**
 * Closes [start, end) of a subscription for usage: UsageStore.closePeriod raises the customer's watermark (events
 * before the end's whole second are refused period_invoiced from then on) and aggregates every meter over the
 * period's usage window (domain/usage-window.ts), once per (subscription, start): a retried activity gets the
 * stored result back, so the invoice it makes is the same.
 */
export async function closeUsagePeriod(
  orm: MikroORM,
  input: CloseUsageInput,
  store: UsageStore = usageStoreFor(orm),
): Promise<CloseUsageResult> {
  const em = orm.em.fork();
  const meters = await metersById(
    em,
    input,
    input.meters.map((m) => m.meterId),
  );
  const wanted = input.meters.filter((m) => meters.has(m.meterId));
  const closed = await store.closePeriod({
    accountId: input.accountId,
    livemode: input.livemode,
    subscriptionId: input.subscriptionId,
    customerId: input.customerId,
    start: new Date(input.start),
    end: new Date(input.end),
    meters: wanted.map((m) => ({ meter: meters.get(m.meterId)!, ...(m.groupBy ? { groupBy: m.groupBy } : {}) })),
  });
  // closePeriod answers in the order asked; a meter asked twice (two groupings) is told apart by position.
  const closing = closed.map((result, index) => ({
    meterId: result.meterId,
    aggregates: result.aggregates,
    ...(wanted[index]?.groupBy ? { groupBy: wanted[index]!.groupBy } : {}),
  }));
  return { closing, usageGraceSeconds: await usageGraceSeconds(em, input.accountId, input.livemode) };
}

/**
 * The usage lines of `items` of the period from `start` (to `periodEnd`) so far, up to `end` (now, for the current
 * period): what the next invoice would carry if the period closed now. The events counted are those of the period's
 * usage window up to `end` (domain/usage-window.ts), as the closing counts them. Read-only (UsageStore.aggregate);
 * the watermark does not move.
 */
export async function usageSoFar(
  orm: MikroORM,
  q: {
    accountId: string;
    livemode: boolean;
    customerId: string;
    items: readonly PriceTerms[];
    start: Date;
    end: Date;
    periodEnd?: Date;
  },
  store: UsageStore = usageStoreFor(orm),
): Promise<InvoiceLineInput[]> {
  const wanted = metersToClose(q.items);
  if (wanted.length === 0) return [];
  const meters = await metersById(
    orm.em.fork(),
    q,
    wanted.map((m) => m.meterId),
  );
  const window = usageWindow({ start: q.start, end: q.periodEnd ?? q.end }, q.end);
  const closing = await Promise.all(
    wanted
      .filter((m) => meters.has(m.meterId))
      .map(async (m) => ({
        meterId: m.meterId,
        ...(m.groupBy ? { groupBy: m.groupBy } : {}),
        aggregates: await store.aggregate({
          accountId: q.accountId,
          livemode: q.livemode,
          customerId: q.customerId,
          meter: meters.get(m.meterId)!,
          ...window,
          ...(m.groupBy ? { groupBy: m.groupBy } : {}),
        }),
      })),
  );
  return usageLines(q.items, closing, { start: q.start, end: q.periodEnd ?? q.end });
}

/** One metered item's usage of the current period so far, as GET /v1/subscriptions/{id} shows it. */
export interface ItemUsage {
  meter: string;
  /** The meter's aggregate of the period so far (its usage window up to now), an exact decimal string, before free units. */
  quantity: string;
  period_start: string;
  period_end: string;
}

/**
 * The current period's usage so far of each metered item of an active subscription, by item id: the meter's
 * aggregate (no group_by: one value) over the period's usage window up to `now()` (domain/usage-window.ts, as the
 * closing counts). Read-only (UsageStore.aggregate).
 * A subscription's single read only: one aggregate per metered item, so lists never call it.
 */
export async function itemsUsageSoFar(
  orm: MikroORM,
  q: {
    accountId: string;
    livemode: boolean;
    customerId: string;
    items: readonly { id: string; planId: string }[];
    periodStart: Date;
    periodEnd: Date;
    now: () => Promise<Date>;
  },
  store: UsageStore = usageStoreFor(orm),
): Promise<Map<string, ItemUsage>> {
  const em = orm.em.fork();
  const plans = await em.find(Plan, {
    id: { $in: [...new Set(q.items.map((i) => i.planId))] },
    accountId: q.accountId,
    livemode: q.livemode,
    usageType: 'metered',
  });
  const meterOf = new Map(plans.filter((p) => p.meterId).map((p) => [p.id, p.meterId!]));
  const metered = q.items.filter((i) => meterOf.has(i.planId));
  if (metered.length === 0) return new Map();
  const meters = await metersById(em, q, [...meterOf.values()]);
  // Asked only now that a metered item exists (a test clock's time is one more read).
  const now = await q.now();
  const window = usageWindow({ start: q.periodStart, end: q.periodEnd }, now);
  const answers = await Promise.all(
    metered.map(async (item): Promise<[string, ItemUsage] | null> => {
      const meter = meters.get(meterOf.get(item.planId)!);
      if (!meter) return null;
      // An empty window (now at the start of the period's first second) counts nothing: the store answers "0".
      const [row] = await store.aggregate({
        accountId: q.accountId,
        livemode: q.livemode,
        customerId: q.customerId,
        meter,
        ...window,
      });
      return [
        item.id,
        {
          meter: meter.id,
          quantity: row?.value ?? '0',
          period_start: q.periodStart.toISOString(),
          period_end: q.periodEnd.toISOString(),
        },
      ];
    }),
  );
  return new Map(answers.filter((a): a is [string, ItemUsage] => a !== null));
}
