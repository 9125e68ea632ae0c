/**
 * GET /v1/reports/revenue, /v1/reports/mrr and /v1/reports/invoiced: the home page's charts, aggregated in
 * PostgreSQL (services/reports/dashboard-charts.ts) instead of from the latest rows in the browser.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from 'hono';

import { ApiError } from '../../domain/errors.ts';
import {
  bucketStarts,
  invoicedReport,
  maxReportBuckets,
  mrrReport,
  type ReportRange,
  type ReportScope,
  revenueReport,
} from '../../services/reports/dashboard-charts.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { errorResponses, isoInstant } from '../schemas.ts';

const ReportQuery = z
  .object({
    interval: z.enum(['day', 'month']).default('day').openapi({ description: 'Bucket size, in UTC' }),
    from: isoInstant.optional().openapi({
      format: 'date-time',
      description:
        'Start (inclusive; its bucket is the first). Default: 30 days (interval=day) or 12 months (interval=month) before `to`',
    }),
    to: isoInstant.optional().openapi({ format: 'date-time', description: 'End (exclusive). Default: now' }),
  })
  .strict();

const RevenuePoint = z.object({
  period_start: z.string(),
  gross: z.number().int().openapi({ description: 'Payments, minor units' }),
  refunded: z.number().int().openapi({ description: 'Refunds, minor units, positive' }),
  fees: z.number().int(),
  net: z.number().int().openapi({ description: 'gross − refunded − fees' }),
  payments: z.number().int().openapi({ description: 'How many payments' }),
});
const MrrPoint = z.object({
  period_start: z.string(),
  at: z
    .string()
    .openapi({ description: 'The instant MRR is measured at: the end of the bucket, or `to` for the last one' }),
  mrr: z.number().int().openapi({ description: 'Monthly recurring revenue, minor units' }),
  subscriptions: z.number().int().openapi({ description: 'Subscriptions counted' }),
});
const InvoicedPoint = z.object({
  period_start: z.string(),
  invoices: z
    .number()
    .int()
    .openapi({ description: 'Invoices issued (open, paid or uncollectible; not drafts, not void)' }),
  subtotal: z.number().int().openapi({ description: 'Σ their subtotals, minor units' }),
  discounts: z.number().int().openapi({ description: 'Σ their discounts' }),
  tax: z.number().int().openapi({ description: 'Σ their tax (inclusive and exclusive)' }),
  tax_by_rate: z
    .array(
      z.object({
        tax_rate: z.string(),
        display_name: z.string(),
        percentage: z.string(),
        inclusive: z.boolean(),
        amount: z.number().int(),
      }),
    )
    .openapi({ description: "Tax per rate, the sum of the invoices' total_tax_amounts" }),
  credit_notes: z
    .number()
    .int()
    .openapi({ description: 'Σ credit notes issued in the bucket (not void), whatever their outcome' }),
  net_revenue: z
    .number()
    .int()
    .openapi({ description: 'Σ totals excluding tax (subtotal − discounts − inclusive tax) − credit_notes' }),
});
const report = <T extends z.ZodTypeAny>(name: string, kind: 'revenue' | 'mrr' | 'invoiced', point: T) =>
  z
    .object({
      object: z.literal('report'),
      report: z.literal(kind),
      interval: z.enum(['day', 'month']),
      from: z.string(),
      to: z.string(),
      livemode: z.boolean(),
      data: z
        .array(z.object({ currency: z.string(), points: z.array(point) }))
        .openapi({ description: 'One series per currency, every bucket present' }),
    })
    .openapi(name);

const revenueRoute = createRoute({
  method: 'get',
  path: '/revenue',
  tags: ['Reports'],
  summary: 'Revenue per day or month, per currency',
  description:
    "From the ledger's balance transactions of this mode: payments, refunds and fees per UTC bucket. Customers on a test clock are left out.",
  request: { query: ReportQuery },
  responses: {
    200: { description: 'The report', ...json(report('RevenueReport', 'revenue', RevenuePoint)) },
    ...errorResponses(400, 401),
  },
});
const mrrRoute = createRoute({
  method: 'get',
  path: '/mrr',
  tags: ['Reports'],
  summary: 'Monthly recurring revenue over time, per currency',
  description:
    'At the end of each bucket: the subscriptions billing then (trial over, not yet ended), each at its current plan brought to a month ' +
    '(year ÷ 12, week × 52 ÷ 12, day × 365 ÷ 12, ÷ interval count). Customers on a test clock are left out.',
  request: { query: ReportQuery },
  responses: {
    200: { description: 'The report', ...json(report('MrrReport', 'mrr', MrrPoint)) },
    ...errorResponses(400, 401),
  },
});

const invoicedRoute = createRoute({
  method: 'get',
  path: '/invoiced',
  tags: ['Reports'],
  summary: 'Revenue as invoiced, net of discounts and credit notes, with tax per rate',
  description:
    'Per UTC bucket and currency: the invoices issued (subtotal, discounts, tax and tax per rate) and the credit notes issued; ' +
    '`net_revenue` = totals excluding tax − credit notes. Accrual, unlike /v1/reports/revenue (cash from the ledger). Customers on a test clock are left out.',
  request: { query: ReportQuery },
  responses: {
    200: { description: 'The report', ...json(report('InvoicedReport', 'invoiced', InvoicedPoint)) },
    ...errorResponses(400, 401),
  },
});

function range(query: z.infer<typeof ReportQuery>): ReportRange {
  const to = query.to ?? new Date();
  const from =
    query.from ??
    (query.interval === 'day'
      ? new Date(to.getTime() - 30 * 86_400_000)
      : new Date(Date.UTC(to.getUTCFullYear(), to.getUTCMonth() - 11, 1)));
  if (from >= to) throw new ApiError('invalid_request', 'from: must be before to.');
  const r = { interval: query.interval, from, to };
  if (bucketStarts(r).length > maxReportBuckets[query.interval]) {
    throw new ApiError(
      'invalid_request',
      `from/to: at most ${maxReportBuckets[query.interval]} ${query.interval}s per report.`,
    );
  }
  return r;
}

/**
 * One report route's answer: the range from the query, the caller's account and mode, the series `build`
 * aggregates, in the envelope `report()` describes.
 */
async function answerReport<K extends 'revenue' | 'mrr' | 'invoiced', D>(
  c: Context,
  orm: AppDeps['context']['orm'],
  query: z.infer<typeof ReportQuery>,
  kind: K,
  build: (em: EntityManager, scope: ReportScope, range: ReportRange) => Promise<D>,
) {
  const r = range(query);
  const scope = await accountScope(c, orm);
  const data = await build(orm.em.fork() as EntityManager, scope, r);
  return {
    object: 'report' as const,
    report: kind,
    interval: r.interval,
    from: r.from.toISOString(),
    to: r.to.toISOString(),
    livemode: scope.livemode,
    data,
  };
}

export function reportsApp({ context: { orm } }: AppDeps) {
  return newOpenApiApp()
    .openapi(revenueRoute, async (c) =>
      c.json(await answerReport(c, orm, c.req.valid('query'), 'revenue', revenueReport), 200),
    )
    .openapi(invoicedRoute, async (c) =>
      c.json(await answerReport(c, orm, c.req.valid('query'), 'invoiced', invoicedReport), 200),
    )
    .openapi(mrrRoute, async (c) => c.json(await answerReport(c, orm, c.req.valid('query'), 'mrr', mrrReport), 200));
}
