/**
 * Late meter events billed on the next invoice (issue #28, docs/usage.md#late-events).
 *
 * Under the mode's `late_events: bill_next_invoice`, ingestion (services/usage/postgres-store.ts) accepts an event
 * stamped before the customer's watermark and records it in `usage_late_events`, unclaimed. The subscription's
 * next invoice claims them IN THE TRANSACTION THAT INSERTS IT (services/invoices/cycle-invoices.ts, as it claims
 * pending invoice items): `invoice_id` is set on their rows, and one adjustment line per changed charge bills the
 * old period's price of its usage with them less its price without (domain/usage-late-events.ts). An insert that
 * rolls back (a retried activity whose invoice exists, a lost race on the billing key) gives them back; a
 * committed invoice took them for good, so each is billed once. A late event is claimed by the subscription one
 * of whose closed periods (usage_period_closings, on the same whole-second window as the closing) holds its
 * timestamp on a meter that period closed; an event no closing holds is accepted and never billed, as an event
 * on a meter no subscription bills.
 *
 * A cancel and the claim lock the late row: a cancel before the claim is not billed, one after is refused
 * `period_invoiced`. A late event that arrives while the claim runs is not claimed (it is left out of both
 * aggregates) and waits for the invoice after.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

import { Meter, Plan } from '../../db/entities/index.ts';
import { humanizeInstants } from '../../domain/locale.ts';
import type { InvoiceLineInput } from '../../domain/subscription-decisions.ts';
import { usageAdjustmentLines } from '../../domain/usage-late-events.ts';
import type { UsageAggregateInput } from '../../domain/usage-pricing.ts';
import { isEmptyWindow, usageWindow } from '../../domain/usage-window.ts';
import { priceTerms } from '../subscriptions/terms.ts';
import { aggregateQuery, decimalText } from './postgres-store.ts';
import type { MeterRef } from './store.ts';

/** Who the adjustment is for: a subscription's invoice (or its preview) in a currency. */
export interface AdjustmentScope {
  accountId: string;
  livemode: boolean;
  customerId: string;
  subscriptionId: string;
  currency: string;
}

/** One old period of one meter that late events change. */
interface LateGroup {
  meterId: string;
  periodStart: Date;
  periodEnd: Date;
}

/** A closing's whole-second window (as the closing aggregated it: domain/usage-window.ts usageWindow), matched in SQL. */
const inClosedWindow = `l."timestamp" >= date_trunc('second', c.period_start) and l."timestamp" < date_trunc('second', c.period_end)
  and c.result @> jsonb_build_array(jsonb_build_object('meterId', l.meter_id))`;

/** `aggregateQuery`'s $n placeholders as the ORM's `?` bindings (each occurrence its own binding). */
function positional(sql: string, params: unknown[]): { sql: string; bindings: unknown[] } {
  const bindings: unknown[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    bindings.push(params[Number(n) - 1]);
    return '?';
  });
  return { sql: text, bindings };
}

/**
 * The adjustment lines of `groups` for `scope`: per group, the plans whose usage lines billed that period of that
 * meter on the subscription's invoices, each priced on the period's aggregates without and with the late events.
 * `excluded`: which late events are left out of the aggregate as billed, and of the one with the late events (null: none).
 */
async function adjustmentLines(
  em: EntityManager,
  scope: AdjustmentScope,
  groups: LateGroup[],
  excluded: { billed: string; withLate: string | null },
  invoiceId: string | null,
): Promise<InvoiceLineInput[]> {
  if (groups.length === 0) return [];
  const meters = new Map(
    (
      await em.find(Meter, {
        id: { $in: [...new Set(groups.map((g) => g.meterId))] },
        accountId: scope.accountId,
        livemode: scope.livemode,
      })
    ).map((m) => [m.id, m]),
  );
  const lines: InvoiceLineInput[] = [];
  for (const group of groups) {
    const meter = meters.get(group.meterId);
    if (!meter) continue;
    // The plans that billed this meter's usage of that period on the subscription's invoices (lines say plan, meter, period_start).
    const billedBy = await em.execute<{ plan_id: string }[]>(
      `select distinct line ->> 'plan' as plan_id from invoices i cross join lateral jsonb_array_elements(i.lines) line
       where i.account_id = ? and i.livemode = ? and i.subscription_id = ? and line ->> 'meter' = ?
         and (line ->> 'period_start')::timestamptz = ? and line ->> 'plan' is not null`,
      [scope.accountId, scope.livemode, scope.subscriptionId, group.meterId, group.periodStart],
    );
    if (billedBy.length === 0) continue;
    const plans = await em.find(Plan, {
      id: { $in: billedBy.map((row) => row.plan_id) },
      accountId: scope.accountId,
      livemode: scope.livemode,
    });
    const ref: MeterRef = {
      id: meter.id,
      eventName: meter.eventName,
      aggregation: meter.aggregation,
      valueProperty: meter.valueProperty,
      groupBy: meter.groupBy,
    };
    // The events the closing counted: the period's whole-second window (its SQL twin: inClosedWindow).
    const window = usageWindow({ start: group.periodStart, end: group.periodEnd });
    if (isEmptyWindow(window)) continue;
    for (const plan of plans.sort((a, b) => (a.id < b.id ? -1 : 1))) {
      const usage = plan.usageType === 'metered' ? priceTerms(plan, { currency: scope.currency }).usage : null;
      if (!usage || usage.meterId !== meter.id) continue;
      const groupBy = usage.price.groupBy ? [usage.price.groupBy] : [];
      const aggregate = async (exclude: string | null): Promise<UsageAggregateInput[]> => {
        const { sql, params } = aggregateQuery(
          ref,
          groupBy,
          window.start,
          window.end,
          scope.accountId,
          scope.livemode,
          scope.customerId,
          exclude === null
            ? undefined
            : (param) =>
                `not exists (select 1 from usage_late_events l where l.account_id = meter_events.account_id and l.livemode = meter_events.livemode
                   and l.identifier = meter_events.identifier and (${exclude.replace('$invoice', () => param(invoiceId))}))`,
        );
        const query = positional(sql, params);
        const rows = await em.execute<{ dimensions: Record<string, string>; value: string | null; events: number }[]>(
          query.sql,
          query.bindings,
        );
        const aggregates = rows.map((row) => ({
          dimensions: row.dimensions,
          value: decimalText(row.value),
          events: Number(row.events),
        }));
        return groupBy.length === 0 && aggregates.length === 0
          ? [{ dimensions: {}, value: '0', events: 0 }]
          : aggregates;
      };
      lines.push(
        ...usageAdjustmentLines({
          planId: plan.id,
          meterId: meter.id,
          meterName: meter.displayName,
          price: usage.price,
          period: { start: group.periodStart, end: group.periodEnd },
          billed: await aggregate(excluded.billed),
          withLate: await aggregate(excluded.withLate),
        }),
      );
    }
  }
  return lines;
}

/** Groups (meter, old period) of late event rows, in a stable order. */
function groupsOf(rows: { meter_id: string; period_start: Date | string; period_end: Date | string }[]): LateGroup[] {
  const groups = new Map<string, LateGroup>();
  for (const row of rows) {
    const start = new Date(row.period_start);
    const key = `${row.meter_id}\u0000${start.toISOString()}`;
    if (!groups.has(key))
      groups.set(key, { meterId: row.meter_id, periodStart: start, periodEnd: new Date(row.period_end) });
  }
  return [...groups.values()].sort(
    (a, b) => a.periodStart.getTime() - b.periodStart.getTime() || (a.meterId < b.meterId ? -1 : 1),
  );
}

/**
 * For the subscription's next invoice, in the transaction that inserts it (`tx`): claims the subscription's late
 * events no invoice took yet (invoice_id = `invoiceId`) and answers their adjustment lines, described in the
 * account's words. "Billed" excludes the late events unclaimed and this invoice's; "with late" excludes only the
 * unclaimed (those that committed while this ran: the next invoice takes them).
 */
export async function claimUsageAdjustmentLines(
  tx: EntityManager,
  scope: AdjustmentScope & { invoiceId: string },
  dateStyle: Parameters<typeof humanizeInstants>[1],
): Promise<InvoiceLineInput[]> {
  const claim = usageAdjustmentsClaim(scope);
  return claimedUsageAdjustmentLines(
    tx,
    scope,
    await tx.execute<ClaimedLateEvent[]>(claim.sql, claim.bindings),
    dateStyle,
  );
}

/** A late event claimed for an invoice, with its period (period_start and period_end: Date, or ISO text from JSON). */
export interface ClaimedLateEvent {
  meter_id: string;
  period_start: Date | string;
  period_end: Date | string;
}

/**
 * claimUsageAdjustmentLines' UPDATE, to run as a part of a larger statement (services/invoices/cycle-invoices.ts runs it
 * with the pending items' claim, one round trip): it returns the claimed late events (ClaimedLateEvent).
 */
export function usageAdjustmentsClaim(scope: AdjustmentScope & { invoiceId: string }): {
  sql: string;
  bindings: unknown[];
} {
  return {
    sql: `update usage_late_events l set invoice_id = ?
     from usage_period_closings c
     where l.account_id = ? and l.livemode = ? and l.customer_id = ? and l.invoice_id is null
       and c.subscription_id = ? and c.account_id = l.account_id and c.livemode = l.livemode and c.customer_id = l.customer_id
       and ${inClosedWindow}
     returning l.meter_id, c.period_start, c.period_end`,
    bindings: [scope.invoiceId, scope.accountId, scope.livemode, scope.customerId, scope.subscriptionId],
  };
}

/** The adjustment lines of the late events claimed for `scope.invoiceId` (usageAdjustmentsClaim's rows), in the account's words. */
export async function claimedUsageAdjustmentLines(
  tx: EntityManager,
  scope: AdjustmentScope & { invoiceId: string },
  claimed: ClaimedLateEvent[],
  dateStyle: Parameters<typeof humanizeInstants>[1],
): Promise<InvoiceLineInput[]> {
  const lines = await adjustmentLines(
    tx,
    scope,
    groupsOf(claimed),
    { billed: 'l.invoice_id is null or l.invoice_id = $invoice', withLate: 'l.invoice_id is null' },
    scope.invoiceId,
  );
  return lines.map((line) => ({ ...line, description: humanizeInstants(line.description, dateStyle) }));
}

/**
 * The adjustment lines the subscription's next invoice would carry now (the upcoming invoice): read-only, every
 * unclaimed late event (cancelled ones count nothing). Instants stay ISO: the preview describes lines itself.
 */
export async function pendingUsageAdjustmentLines(orm: MikroORM, scope: AdjustmentScope): Promise<InvoiceLineInput[]> {
  const em = orm.em.fork();
  const pending = await em.execute<{ meter_id: string; period_start: Date; period_end: Date }[]>(
    `select l.meter_id, c.period_start, c.period_end from usage_late_events l
     join usage_period_closings c on c.subscription_id = ? and c.account_id = l.account_id and c.livemode = l.livemode
       and c.customer_id = l.customer_id and ${inClosedWindow}
     where l.account_id = ? and l.livemode = ? and l.customer_id = ? and l.invoice_id is null`,
    [scope.subscriptionId, scope.accountId, scope.livemode, scope.customerId],
  );
  return adjustmentLines(em, scope, groupsOf(pending), { billed: 'l.invoice_id is null', withLate: null }, null);
}

/** The invoices that take late events' adjustments: a subscription's cycle invoices and its final usage invoice (billing keys). */
export const takesUsageAdjustments = (billingKey: string): boolean => /:cycle:\d+$|:final_usage$/.test(billingKey);
