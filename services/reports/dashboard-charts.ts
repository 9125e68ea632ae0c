/**
 * Aggregates for the dashboard's home charts, computed in PostgreSQL (docs/dashboard.md#reports):
 *
 * - revenue per day or month from the ledger's balance transactions: `gross` the payments,
 *   `refunded` the refunds (as a positive number), `fees`, `net` = gross − refunded − fees;
 * - MRR at the end of each day or month from the subscriptions and their plans: every
 *   subscription that had started billing (its trial over) and had not ended then, what its
 *   plan charges a period at its quantity in its currency (domain/pricing.ts: seats, tiers,
 *   packages, currency_options) brought to a month (year ÷ 12, week × 52 ÷ 12, day × 365 ÷ 12,
 *   ÷ the interval count), rounded once per point.
 *
 * One account, one mode, per currency, buckets in UTC, every bucket present (zero when
 * nothing happened). Objects of customers on a test clock are left out, as lists leave them.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { Plan } from '../../db/entities/index.ts';
import { priceFor } from '../../domain/pricing.ts';
import { planPricing } from '../catalog/plan-prices.ts';

export type ReportInterval = 'day' | 'month';
export interface ReportScope {
  accountId: string;
  livemode: boolean;
}
export interface ReportRange {
  interval: ReportInterval;
  from: Date;
  to: Date;
}

/** At most this many buckets per report. */
export const maxReportBuckets = { day: 400, month: 120 } as const;

/** The start of the UTC bucket holding `at`. */
export function bucketStart(at: Date, interval: ReportInterval): Date {
  return interval === 'day'
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** Bucket starts from the one holding `from` to the one holding the instant before `to`. */
export function bucketStarts({ interval, from, to }: ReportRange): Date[] {
  const starts: Date[] = [];
  const last = new Date(to.getTime() - 1);
  for (let at = bucketStart(from, interval); at <= last; ) {
    starts.push(at);
    at =
      interval === 'day'
        ? new Date(at.getTime() + 86_400_000)
        : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
    if (starts.length > maxReportBuckets[interval]) break;
  }
  return starts;
}

export interface RevenuePoint {
  period_start: string;
  gross: number;
  refunded: number;
  fees: number;
  net: number;
  payments: number;
}
export interface MrrPoint {
  period_start: string;
  /** The instant MRR is measured at: the end of the bucket, or `to` for the last one. */
  at: string;
  mrr: number;
  subscriptions: number;
}
export interface CurrencySeries<P> {
  currency: string;
  points: P[];
}

const iso = (d: Date | string) => new Date(d).toISOString();

/** Fills every bucket of every currency seen, zero where nothing was. */
function densify<P extends { period_start: string }>(
  starts: Date[],
  rows: (P & { currency: string })[],
  zero: (start: Date) => P,
): CurrencySeries<P>[] {
  const currencies = [...new Set(rows.map((r) => r.currency))].sort();
  return currencies.map((currency) => {
    const byStart = new Map(rows.filter((r) => r.currency === currency).map((r) => [r.period_start, r]));
    return {
      currency,
      points: starts.map((start) => {
        const row = byStart.get(start.toISOString());
        if (!row) return zero(start);
        const { currency: _, ...point } = row;
        return point as unknown as P;
      }),
    };
  });
}

const notOnClock = (customerIdColumn: string) =>
  `not exists (select 1 from customers c where c.id = ${customerIdColumn} and c.test_clock_id is not null)`;

export async function revenueReport(
  em: EntityManager,
  scope: ReportScope,
  range: ReportRange,
): Promise<CurrencySeries<RevenuePoint>[]> {
  const starts = bucketStarts(range);
  const rows: {
    period_start: Date;
    currency: string;
    gross: string;
    refunded: string;
    fees: string;
    payments: string;
  }[] = await em.getConnection().execute(
    `select date_trunc(?, bt.created_at at time zone 'UTC') at time zone 'UTC' as period_start,
            bt.currency,
            coalesce(sum(bt.amount) filter (where bt.type = 'payment'), 0) as gross,
            coalesce(-sum(bt.amount) filter (where bt.type = 'refund'), 0) as refunded,
            coalesce(sum(bt.fee), 0) as fees,
            count(*) filter (where bt.type = 'payment') as payments
       from balance_transactions bt
      where bt.account_id = ? and bt.livemode = ? and bt.type in ('payment', 'refund')
        and bt.created_at >= ? and bt.created_at < ?
        and not exists (select 1 from transactions t join customers c on c.id = t.customer_id
                         where t.id = bt.source and c.test_clock_id is not null)
      group by 1, 2`,
    [range.interval, scope.accountId, scope.livemode, starts[0] ?? range.from, range.to],
  );
  return densify(
    starts,
    rows.map((r) => {
      const gross = Number(r.gross);
      const refunded = Number(r.refunded);
      const fees = Number(r.fees);
      return {
        currency: r.currency,
        period_start: iso(r.period_start),
        gross,
        refunded,
        fees,
        net: gross - refunded - fees,
        payments: Number(r.payments),
      };
    }),
    (start) => ({ period_start: start.toISOString(), gross: 0, refunded: 0, fees: 0, net: 0, payments: 0 }),
  );
}

export interface TaxByRate {
  tax_rate: string;
  display_name: string;
  percentage: string;
  inclusive: boolean;
  amount: number;
}
export interface InvoicedPoint {
  period_start: string;
  invoices: number;
  subtotal: number;
  discounts: number;
  tax: number;
  tax_by_rate: TaxByRate[];
  credit_notes: number;
  net_revenue: number;
}

/** An invoiced bucket with nothing in it. */
const emptyInvoicedPoint = (periodStart: string): InvoicedPoint => ({
  period_start: periodStart,
  invoices: 0,
  subtotal: 0,
  discounts: 0,
  tax: 0,
  tax_by_rate: [],
  credit_notes: 0,
  net_revenue: 0,
});

/**
 * Revenue as invoiced (accrual), per bucket and currency: the invoices issued in it (open, paid or uncollectible;
 * not drafts, not void) — subtotal, discounts, tax per rate — less the credit notes issued in it (not void):
 * `net_revenue` = Σ total excluding tax − Σ credit notes. A credit note carries no tax of its own, so it is taken
 * off whole. Customers on a test clock are left out.
 */
export async function invoicedReport(
  em: EntityManager,
  scope: ReportScope,
  range: ReportRange,
): Promise<CurrencySeries<InvoicedPoint>[]> {
  const starts = bucketStarts(range);
  const from = starts[0] ?? range.from;
  const sql = em.getConnection();
  const invoiceRows: {
    period_start: Date;
    currency: string;
    invoices: string;
    subtotal: string;
    discounts: string;
    tax: string;
    excluding_tax: string;
  }[] = await sql.execute(
    `select date_trunc(?, i.created_at at time zone 'UTC') at time zone 'UTC' as period_start, i.currency,
            count(*) as invoices, coalesce(sum(i.subtotal), 0) as subtotal, coalesce(sum(i.discount), 0) as discounts,
            coalesce(sum(i.tax), 0) as tax, coalesce(sum(coalesce(i.total_excluding_tax, i.total)), 0) as excluding_tax
       from invoices i
      where i.account_id = ? and i.livemode = ? and i.status in ('open', 'paid', 'uncollectible')
        and i.created_at >= ? and i.created_at < ? and ${notOnClock('i.customer_id')}
      group by 1, 2`,
    [range.interval, scope.accountId, scope.livemode, from, range.to],
  );
  const taxRows: {
    period_start: Date;
    currency: string;
    tax_rate: string;
    display_name: string;
    percentage: string;
    inclusive: boolean;
    amount: string;
  }[] = await sql.execute(
    `select date_trunc(?, i.created_at at time zone 'UTC') at time zone 'UTC' as period_start, i.currency,
            t->>'tax_rate' as tax_rate, max(t->>'display_name') as display_name, max(t->>'percentage') as percentage,
            bool_or((t->>'inclusive')::boolean) as inclusive, sum((t->>'amount')::bigint) as amount
       from invoices i cross join lateral jsonb_array_elements(coalesce(i.total_tax_amounts, '[]'::jsonb)) as t
      where i.account_id = ? and i.livemode = ? and i.status in ('open', 'paid', 'uncollectible')
        and i.created_at >= ? and i.created_at < ? and ${notOnClock('i.customer_id')}
      group by 1, 2, 3 order by 3`,
    [range.interval, scope.accountId, scope.livemode, from, range.to],
  );
  const noteRows: { period_start: Date; currency: string; credit_notes: string }[] = await sql.execute(
    `select date_trunc(?, n.created_at at time zone 'UTC') at time zone 'UTC' as period_start, n.currency, coalesce(sum(n.total), 0) as credit_notes
       from credit_notes n
      where n.account_id = ? and n.livemode = ? and n.status = 'issued'
        and n.created_at >= ? and n.created_at < ? and ${notOnClock('n.customer_id')}
      group by 1, 2`,
    [range.interval, scope.accountId, scope.livemode, from, range.to],
  );
  const key = (start: Date, currency: string) => `${iso(start)} ${currency}`;
  const points = new Map<string, InvoicedPoint & { currency: string; excluding: number }>();
  const point = (start: Date, currency: string) => {
    const k = key(start, currency);
    let p = points.get(k);
    if (!p) {
      p = { currency, ...emptyInvoicedPoint(iso(start)), excluding: 0 };
      points.set(k, p);
    }
    return p;
  };
  for (const r of invoiceRows)
    Object.assign(point(r.period_start, r.currency), {
      invoices: Number(r.invoices),
      subtotal: Number(r.subtotal),
      discounts: Number(r.discounts),
      tax: Number(r.tax),
      excluding: Number(r.excluding_tax),
    });
  for (const r of taxRows)
    point(r.period_start, r.currency).tax_by_rate.push({
      tax_rate: r.tax_rate,
      display_name: r.display_name,
      percentage: r.percentage,
      inclusive: r.inclusive,
      amount: Number(r.amount),
    });
  for (const r of noteRows) point(r.period_start, r.currency).credit_notes = Number(r.credit_notes);
  return densify<InvoicedPoint>(
    starts,
    [...points.values()].map(({ excluding, ...p }) => ({ ...p, net_revenue: excluding - p.credit_notes })),
    (start) => emptyInvoicedPoint(start.toISOString()),
  );
}

/** A subscription row's items as rows (plan_id, quantity): its items, or its one item of plan × quantity. */
const subscriptionItemRows = `(select x."planId", x.quantity from jsonb_to_recordset(coalesce(s.items, jsonb_build_array(jsonb_build_object('planId', s.plan_id, 'quantity', s.quantity)))) as x("planId" text, quantity int))`;

export async function mrrReport(
  em: EntityManager,
  scope: ReportScope,
  range: ReportRange,
): Promise<CurrencySeries<MrrPoint>[]> {
  const starts = bucketStarts(range);
  if (starts.length === 0) return [];
  const step = range.interval === 'day' ? '1 day' : '1 month';
  // What each (plan, quantity, currency) in use charges a period: priced here, summed in SQL below. A subscription
  // bills each of its items (subscription items: the projection's items; null, its one item of plan × quantity).
  const inUse: { plan_id: string; quantity: number; currency: string }[] = await em.getConnection().execute(
    `select distinct it.plan_id, it.quantity, coalesce(s.currency, p.currency) as currency
       from subscriptions s
       cross join lateral ${subscriptionItemRows} as it(plan_id, quantity)
       join plans p on p.id = it.plan_id
      where s.account_id = ? and s.livemode = ? and s.status <> 'expired' and ${notOnClock('s.customer_id')}`,
    [scope.accountId, scope.livemode],
  );
  const plans = new Map(
    (inUse.length > 0
      ? await em.fork().find(Plan, { id: { $in: [...new Set(inUse.map((u) => u.plan_id))] } })
      : []
    ).map((p) => [p.id, p]),
  );
  const prices = inUse.flatMap((use) => {
    const plan = plans.get(use.plan_id);
    const price = plan ? planPricing(plan, use.currency) : null;
    return price ? [{ ...use, amount: priceFor(price.pricing, use.quantity).amount }] : [];
  });
  const list = (values: (string | number)[]) => `{${values.join(',')}}`;
  const rows: { period_start: Date; at: Date; currency: string; mrr: string; subscriptions: string }[] = await em
    .getConnection()
    .execute(
      `with points as (
       select s as period_start, least(s + interval '${step}', ?::timestamptz) as at
         from unnest(?::timestamptz[]) as s
     )
     select pt.period_start, pt.at, pr.currency,
            round(sum(pr.amount::numeric * case p.interval when 'month' then 1 when 'year' then 1.0 / 12 when 'week' then 52.0 / 12 when 'day' then 365.0 / 12 end
                      / greatest(p.interval_count, 1))) as mrr,
            count(distinct s.id) as subscriptions
       from points pt
       join subscriptions s on s.account_id = ? and s.livemode = ?
        and greatest(s.created_at, coalesce(s.trial_end, s.created_at)) <= pt.at
        and (s.canceled_at is null or s.canceled_at > pt.at)
        and s.status <> 'expired'
        and ${notOnClock('s.customer_id')}
       cross join lateral ${subscriptionItemRows} as it(plan_id, quantity)
       join plans p on p.id = it.plan_id
       join unnest(?::text[], ?::int[], ?::text[], ?::bigint[]) as pr(plan_id, quantity, currency, amount)
         on pr.plan_id = it.plan_id and pr.quantity = it.quantity and pr.currency = coalesce(s.currency, p.currency)
      group by 1, 2, 3`,
      [
        range.to,
        `{${starts.map((s) => s.toISOString()).join(',')}}`,
        scope.accountId,
        scope.livemode,
        list(prices.map((p) => p.plan_id)),
        list(prices.map((p) => p.quantity)),
        list(prices.map((p) => p.currency)),
        list(prices.map((p) => p.amount)),
      ],
    );
  const ends = new Map(
    starts.map((s, i) => [
      s.toISOString(),
      new Date(Math.min((starts[i + 1] ?? range.to).getTime(), range.to.getTime())),
    ]),
  );
  return densify(
    starts,
    rows.map((r) => ({
      currency: r.currency,
      period_start: iso(r.period_start),
      at: iso(r.at),
      mrr: Number(r.mrr),
      subscriptions: Number(r.subscriptions),
    })),
    (start) => ({
      period_start: start.toISOString(),
      at: ends.get(start.toISOString())!.toISOString(),
      mrr: 0,
      subscriptions: 0,
    }),
  );
}
