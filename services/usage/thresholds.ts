/**
 * Progressive billing (#28, docs/usage.md "Billing thresholds"; Stripe's subscription billing_thresholds):
 * the thresholds themselves, the detection after an ingested batch, and the threshold invoice's lines.
 *
 * - Detection (checkUsageThresholds) runs in the same pass as the usage alerts, after a batch committed,
 *   never per event: one indexed query finds the batch's customers' subscriptions with a threshold; each
 *   one's usage of its current period so far is priced (services/usage/billing.ts usageSoFar, its metered
 *   items' terms made from their plans) less what its threshold invoices billed. A reached threshold claims
 *   the crossing (subscription, period start, sequence: primary key, on conflict do nothing) and signals
 *   the workflow ONCE; a failed signal gives the claim back so the next batch signals again.
 * - The workflow decides at its own time (prepareThresholdInvoice, a local activity): it prices again with
 *   its own item terms, and records the invoice's lines once per workflow step (its run and history position), so a
 *   retried activity answers the same lines and the invoice (keyed by the sequence) is made once.
 * - The period's closing subtracts what the threshold invoices billed (thresholdBilledOf, domain/usage-thresholds.ts).
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

import { Plan } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import type { PriceTerms, SubscriptionItemSnapshot } from '../../domain/subscription.ts';
import type { InvoiceLineInput } from '../../domain/subscription-decisions.ts';
import {
  type BilledByLine,
  type BillingThresholds,
  cumulativeByLine,
  linesAmount,
  sumBilled,
  thresholdReached,
  unbilledLines,
} from '../../domain/usage-thresholds.ts';
import { isEmptyWindow, usageWindow } from '../../domain/usage-window.ts';
import { usageThresholdReachedSignal } from '../../workflows/subscription-usage-thresholds.ts';
import type { ServiceContext } from '../context.ts';
import { priceTerms } from '../subscriptions/terms.ts';
import { usageSoFar } from './billing.ts';
import { usageStoreFor } from './postgres-store.ts';

type Scope = { accountId: string; livemode: boolean };

const pool = (orm: MikroORM) => usageStoreFor(orm).pool;

// ---- The setting ------------------------------------------------------------

/** Parses the API's billing_thresholds: an object, or null / "" to remove it (Stripe's empty string). */
export function parseBillingThresholds(value: unknown): BillingThresholds | null {
  if (value === null || value === '') return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ApiError('invalid_request', 'billing_thresholds: an object { amount_gte }, or "" to remove it.');
  const { amount_gte, reset_billing_cycle_anchor, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new ApiError('invalid_request', `billing_thresholds.${unknown[0]}: not a known field.`);
  const amount = typeof amount_gte === 'string' && /^\d+$/.test(amount_gte) ? Number(amount_gte) : amount_gte;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1 || amount > 99_999_999)
    throw new ApiError(
      'invalid_request',
      'billing_thresholds.amount_gte: a whole amount in minor units, from 1 to 99999999 (the usage amount that bills early).',
    );
  const reset = reset_billing_cycle_anchor === undefined ? false : reset_billing_cycle_anchor;
  if (reset === true || reset === 'true')
    throw new ApiError(
      'invalid_request',
      'billing_thresholds.reset_billing_cycle_anchor: only false is supported: a threshold invoice bills the usage so far and the period goes on.',
    );
  if (reset !== false && reset !== 'false')
    throw new ApiError('invalid_request', 'billing_thresholds.reset_billing_cycle_anchor: true or false.');
  return { amount_gte: amount, reset_billing_cycle_anchor: false };
}

/** Sets (or, with null, removes) a subscription's thresholds. The caller checked the subscription is the scope's. */
export async function setBillingThresholds(
  orm: MikroORM,
  scope: Scope,
  subscription: { id: string; customerId: string },
  thresholds: BillingThresholds | null,
): Promise<void> {
  if (!thresholds) {
    await pool(orm).query(
      `delete from subscription_billing_thresholds where subscription_id = $1 and account_id = $2 and livemode = $3`,
      [subscription.id, scope.accountId, scope.livemode],
    );
    return;
  }
  await pool(orm).query(
    `insert into subscription_billing_thresholds (subscription_id, account_id, livemode, customer_id, amount_gte, reset_billing_cycle_anchor, updated_at)
     values ($1, $2, $3, $4, $5, false, now())
     on conflict (subscription_id) do update set amount_gte = excluded.amount_gte, updated_at = now()`,
    [subscription.id, scope.accountId, scope.livemode, subscription.customerId, thresholds.amount_gte],
  );
  thresholdsCache.delete(`${scope.accountId}:${scope.livemode}`);
}

/** The thresholds of subscriptions of the scope, by id (absent: none). */
export async function billingThresholdsOf(
  orm: MikroORM,
  scope: Scope,
  ids: readonly string[],
): Promise<Map<string, BillingThresholds>> {
  if (ids.length === 0) return new Map();
  const { rows } = await pool(orm).query<{ id: string; amount: string; reset: boolean }>(
    `select subscription_id as id, amount_gte as amount, reset_billing_cycle_anchor as reset from subscription_billing_thresholds
     where account_id = $1 and livemode = $2 and subscription_id = any($3::text[])`,
    [scope.accountId, scope.livemode, [...ids]],
  );
  return new Map(
    rows.map((r) => [r.id, { amount_gte: Number(r.amount), reset_billing_cycle_anchor: r.reset } as BillingThresholds]),
  );
}

/**
 * The `billing_thresholds` of subscription answers (each null when none), for the subscriptions routes. The
 * objects come from the caller's scoped reads (a subscription id is the primary key here), so only their ids are asked.
 */
export async function withBillingThresholds<T extends { id: string }>(
  em: EntityManager,
  objects: T[],
): Promise<(T & { billing_thresholds: BillingThresholds | null })[]> {
  const ids = objects.map((o) => o.id);
  const rows =
    ids.length === 0
      ? []
      : await em.getConnection().execute<{ id: string; amount: string; reset: boolean }[]>(
          `select subscription_id as id, amount_gte as amount, reset_billing_cycle_anchor as reset from subscription_billing_thresholds
           where subscription_id = any(?::text[])`,
          [`{${ids.join(',')}}`],
        );
  const byId = new Map(rows.map((r) => [r.id, { amount_gte: Number(r.amount), reset_billing_cycle_anchor: r.reset }]));
  return objects.map((o) => ({ ...o, billing_thresholds: byId.get(o.id) ?? null }));
}

// ---- What a period's threshold invoices billed ------------------------------

/** What the threshold invoices of (subscription, period start) billed per usage line; empty: none. */
export async function thresholdBilledOf(
  orm: MikroORM,
  subscriptionId: string,
  periodStart: Date,
): Promise<BilledByLine> {
  const { rows } = await pool(orm).query<{ amounts: BilledByLine }>(
    `select amounts from usage_threshold_invoices where subscription_id = $1 and period_start = $2`,
    [subscriptionId, periodStart],
  );
  return sumBilled(rows.map((r) => r.amounts));
}

// ---- The workflow's step ----------------------------------------------------

export interface PrepareThresholdInput extends Scope {
  subscriptionId: string;
  customerId: string;
  periodStart: string;
  periodEnd: string;
  /** The workflow's time: the usage of [periodStart, asOf) is what this invoice bills. */
  asOf: string;
  /** The workflow's step (its run and history position): one invoice per step, whatever the retries. A test clock's time may not move between two. */
  stepKey: string;
  /** The subscription's items as the workflow bills them (only the metered ones are priced). */
  items: PriceTerms[];
}

export interface PreparedThreshold {
  billingKey: string;
  sequence: number;
  asOf: string;
  lines: InvoiceLineInput[];
  amount: number;
}

/**
 * The threshold invoice the workflow makes now, or null when the unbilled usage (no longer) reaches the
 * threshold (then the crossing's claim is given back, so a later batch signals again). Once per
 * (subscription, stepKey): a retried activity answers the stored lines.
 */
export async function prepareThresholdInvoice(
  orm: MikroORM,
  input: PrepareThresholdInput,
): Promise<PreparedThreshold | null> {
  const db = pool(orm);
  const periodStart = new Date(input.periodStart);
  const stored = await db.query<{ sequence: number; lines: InvoiceLineInput[]; amount: string; billing_key: string }>(
    `select sequence, lines, amount, billing_key from usage_threshold_invoices where subscription_id = $1 and step_key = $2`,
    [input.subscriptionId, input.stepKey],
  );
  if (stored.rows[0]) {
    const row = stored.rows[0];
    return {
      billingKey: row.billing_key,
      sequence: row.sequence,
      asOf: input.asOf,
      lines: row.lines,
      amount: Number(row.amount),
    };
  }
  const [thresholds] = (await billingThresholdsOf(orm, input, [input.subscriptionId])).values();
  const { rows: billedRows } = await db.query<{ amounts: BilledByLine }>(
    `select amounts from usage_threshold_invoices where subscription_id = $1 and period_start = $2`,
    [input.subscriptionId, periodStart],
  );
  const sequence = billedRows.length + 1;
  const giveBack = () =>
    db.query(
      `delete from usage_threshold_crossings where subscription_id = $1 and period_start = $2 and sequence >= $3`,
      [input.subscriptionId, periodStart, sequence],
    );
  const periodEnd = new Date(input.periodEnd);
  // In the grace window after the period's end (not closed yet), the usage to its end.
  const asOf = new Date(Math.min(Date.parse(input.asOf), periodEnd.getTime()));
  // Nothing counted yet (domain/usage-window.ts: the usage so far starts at the period's first whole second).
  if (!thresholds || isEmptyWindow(usageWindow({ start: periodStart, end: periodEnd }, asOf))) {
    await giveBack();
    return null;
  }
  const cumulative = await usageSoFar(orm, {
    accountId: input.accountId,
    livemode: input.livemode,
    customerId: input.customerId,
    items: input.items,
    start: periodStart,
    end: asOf,
    periodEnd,
  });
  const billed = sumBilled(billedRows.map((r) => r.amounts));
  const unbilled = unbilledLines(cumulative, billed, { start: periodStart, end: asOf }).filter(
    (line) => (line.total ?? 0) !== 0,
  );
  const amount = linesAmount(unbilled);
  if (!thresholdReached(amount, thresholds)) {
    await giveBack();
    return null;
  }
  // Per line, what this invoice bills: the cumulative amount less what earlier ones billed.
  const now = cumulativeByLine(cumulative);
  const amounts: BilledByLine = {};
  for (const key of new Set([...Object.keys(now), ...Object.keys(billed)])) {
    const delta = (now[key] ?? 0) - (billed[key] ?? 0);
    if (delta !== 0) amounts[key] = delta;
  }
  const billingKey = `${input.subscriptionId}:threshold:${periodStart.toISOString()}:${sequence}`;
  await db.query(
    `insert into usage_threshold_invoices (subscription_id, period_start, sequence, account_id, livemode, as_of, step_key, amounts, lines, amount, billing_key, created_at)
     values ($1, $2, $3, $4, $5, $6, $11, $7, $8, $9, $10, now())`,
    [
      input.subscriptionId,
      periodStart,
      sequence,
      input.accountId,
      input.livemode,
      asOf,
      JSON.stringify(amounts),
      JSON.stringify(unbilled),
      amount,
      billingKey,
      input.stepKey,
    ],
  );
  return { billingKey, sequence, asOf: input.asOf, lines: unbilled, amount };
}

// ---- Detection after a batch --------------------------------------------------

/** Per account and mode: whether it had a threshold, and when that was read (ms). */
const thresholdsCache = new Map<string, { has: boolean; at: number }>();
const cacheMs = 5_000;

type Candidate = {
  subscriptionId: string;
  customerId: string;
  amountGte: string;
  periodStart: Date;
  periodEnd: Date;
  planId: string;
  items: SubscriptionItemSnapshot[] | null;
  currency: string | null;
  customerNow: Date;
  billedCount: number;
  billed: BilledByLine[];
};

/**
 * After a committed batch: signals the subscriptions of its customers whose unbilled usage of the current period
 * reached their threshold, once per crossing. Answers how many were signalled. A failure never fails the batch.
 */
export async function checkUsageThresholds(
  deps: Pick<ServiceContext, 'orm' | 'temporal'>,
  scope: Scope,
  customerIds: readonly string[],
): Promise<number> {
  if (customerIds.length === 0) return 0;
  const db = pool(deps.orm);
  const key = `${scope.accountId}:${scope.livemode}`;
  const cached = thresholdsCache.get(key);
  if (!cached || Date.now() - cached.at > cacheMs) {
    const { rowCount } = await db.query(
      `select 1 from subscription_billing_thresholds where account_id = $1 and livemode = $2 limit 1`,
      [scope.accountId, scope.livemode],
    );
    thresholdsCache.set(key, { has: (rowCount ?? 0) > 0, at: Date.now() });
    if (!rowCount) return 0;
  } else if (!cached.has) return 0;

  const { rows } = await db.query<Candidate>(
    `select t.subscription_id as "subscriptionId", s.customer_id as "customerId", t.amount_gte as "amountGte",
       s.current_period_start as "periodStart", s.current_period_end as "periodEnd", s.plan_id as "planId", s.items, s.currency,
       coalesce(tc.frozen_time, now()) as "customerNow",
       (select count(*)::int from usage_threshold_invoices u where u.subscription_id = t.subscription_id and u.period_start = s.current_period_start) as "billedCount",
       coalesce((select jsonb_agg(u.amounts) from usage_threshold_invoices u where u.subscription_id = t.subscription_id and u.period_start = s.current_period_start), '[]'::jsonb) as billed
     from subscription_billing_thresholds t
     join subscriptions s on s.id = t.subscription_id and s.account_id = $1 and s.livemode = $2 and s.status in ('active', 'past_due')
     join customers cu on cu.id = s.customer_id
     left join test_clocks tc on tc.id = cu.test_clock_id
     where t.account_id = $1 and t.livemode = $2 and t.customer_id = any($3::text[])
       and s.current_period_start is not null and s.current_period_end is not null`,
    [scope.accountId, scope.livemode, [...new Set(customerIds)]],
  );
  let signalled = 0;
  for (const candidate of rows) {
    const now = new Date(candidate.customerNow);
    const start = new Date(candidate.periodStart);
    const end = new Date(candidate.periodEnd);
    if (isEmptyWindow(usageWindow({ start, end }, now))) continue;
    const items = await meteredTerms(deps.orm, scope, candidate);
    if (items.length === 0) continue;
    const cumulative = await usageSoFar(deps.orm, {
      ...scope,
      customerId: candidate.customerId,
      items,
      start,
      end: now < end ? now : end,
      periodEnd: end,
    });
    const unbilled = linesAmount(unbilledLines(cumulative, sumBilled(candidate.billed), { start, end }));
    if (!thresholdReached(unbilled, { amount_gte: Number(candidate.amountGte) })) continue;
    const claimed = await db.query(
      `insert into usage_threshold_crossings (subscription_id, period_start, sequence, signalled_at) values ($1, $2, $3, now()) on conflict do nothing`,
      [candidate.subscriptionId, start, candidate.billedCount + 1],
    );
    if (claimed.rowCount === 0) continue;
    try {
      await deps.temporal.client.workflow.getHandle(candidate.subscriptionId).signal(usageThresholdReachedSignal);
      signalled++;
    } catch (error) {
      // Not signalled: the claim goes back, so the customer's next batch signals again.
      await db.query(
        `delete from usage_threshold_crossings where subscription_id = $1 and period_start = $2 and sequence = $3`,
        [candidate.subscriptionId, start, candidate.billedCount + 1],
      );
      throw error;
    }
  }
  return signalled;
}

/** The metered items' terms of a subscription as the projection holds it (its plans now, in its currency). */
async function meteredTerms(
  orm: MikroORM,
  scope: Scope,
  s: Pick<Candidate, 'planId' | 'items' | 'currency'>,
): Promise<PriceTerms[]> {
  const planIds = s.items ? s.items.map((i) => i.planId) : [s.planId];
  const plans = await orm.em.fork().find(Plan, { id: { $in: [...new Set(planIds)] }, ...scope, usageType: 'metered' });
  return plans.map((plan) => priceTerms(plan, s.currency ? { currency: s.currency } : {}));
}
