/**
 * Usage alerts (docs/usage.md#usage-alerts; Stripe's billing alerts, alert_type usage_threshold,
 * recurrence one_time): an alert watches a meter for every customer (or the one of its filter) and
 * records `billing.alert.triggered` ONCE per (alert, customer) when the customer's usage on the meter
 * in the current billing period of its subscription that bills that meter (alertWindow), or without one in
 * the current UTC calendar month of the customer's time (its test clock's on a clock), reaches gte.
 *
 * Detection runs after an ingestion batch committed (checkUsageAlerts), never per event nor through
 * Temporal: one indexed query finds the active alerts of the batch's (customer, meter) pairs not yet
 * triggered; each is aggregated, and a reached one inserts its trigger row (primary key (alert,
 * customer), on conflict do nothing) and the event in one transaction, so concurrent batches fire
 * once. The last batch to commit always sees every committed event, so no crossing is missed.
 * An account without active alerts costs nothing after the first look (cached for a few seconds).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';

import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { usageWindow } from '../../domain/usage-window.ts';
import { type BillingAlertRow, serializeAlertTriggered } from '../../objects/billing-alert.ts';
import { recordEvent } from '../events/record.ts';
import { usageStoreFor } from './postgres-store.ts';
import type { Aggregation } from './store.ts';

type Scope = { accountId: string; livemode: boolean };

const columns = `id, livemode, title, meter_id as "meterId", gte::float8 as gte, customer_id as "customerId", status, created_at as "createdAt", updated_at as "updatedAt"`;

/** Per account and mode: whether it had an active alert, and when that was read (ms). */
const hasAlertsCache = new Map<string, { has: boolean; at: number }>();
/** How long "no active alert" is believed: an alert created through another process fires at most this much later. */
export const alertCacheMs = 5_000;
const cacheKey = (scope: Scope) => `${scope.accountId}:${scope.livemode}`;

/** Whether the account's mode has the row `id` of `table` (another account's, or the other mode's, is none). */
async function existsInMode(pool: pg.Pool, table: 'meters' | 'customers', id: string, scope: Scope): Promise<boolean> {
  const found = await pool.query(`select 1 from ${table} where id = $1 and account_id = $2 and livemode = $3`, [
    id,
    scope.accountId,
    scope.livemode,
  ]);
  return found.rowCount !== 0;
}

export async function createAlert(
  orm: MikroORM,
  scope: Scope,
  input: { title: string; gte: number; meterId: string; customerId: string | null },
): Promise<BillingAlertRow> {
  const pool = usageStoreFor(orm).pool;
  if (!(await existsInMode(pool, 'meters', input.meterId, scope)))
    throw new ApiError('invalid_request', `usage_threshold.meter: no such meter in this mode (${input.meterId}).`);
  if (input.customerId && !(await existsInMode(pool, 'customers', input.customerId, scope)))
    throw new ApiError('invalid_request', `filter.customer: no such customer in this mode (${input.customerId}).`);
  const now = new Date();
  const { rows } = await pool.query(
    `insert into billing_alerts (id, account_id, livemode, title, meter_id, gte, customer_id, status, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $8) returning ${columns}`,
    [
      newId('billingAlert'),
      scope.accountId,
      scope.livemode,
      input.title,
      input.meterId,
      input.gte,
      input.customerId,
      now,
    ],
  );
  hasAlertsCache.delete(cacheKey(scope));
  return rows[0] as BillingAlertRow;
}

export async function findAlert(orm: MikroORM, scope: Scope, id: string): Promise<BillingAlertRow> {
  const { rows } = await usageStoreFor(orm).pool.query(
    `select ${columns} from billing_alerts where id = $1 and account_id = $2 and livemode = $3`,
    [id, scope.accountId, scope.livemode],
  );
  if (!rows[0]) throw new ApiError('not_found', 'No such billing alert.');
  return rows[0] as BillingAlertRow;
}

/** Newest first, archived ones left out (Stripe's list); keyset on the time-sortable id. */
export async function listAlerts(
  orm: MikroORM,
  scope: Scope,
  q: {
    limit: number;
    startingAfter?: string | undefined;
    endingBefore?: string | undefined;
    meterId?: string | undefined;
  },
): Promise<{ page: BillingAlertRow[]; hasMore: boolean }> {
  const params: unknown[] = [scope.accountId, scope.livemode, q.limit + 1];
  let where = `account_id = $1 and livemode = $2 and status <> 'archived'`;
  if (q.meterId) where += ` and meter_id = $${params.push(q.meterId)}`;
  if (q.startingAfter) where += ` and id < $${params.push(q.startingAfter)}`;
  if (q.endingBefore) where += ` and id > $${params.push(q.endingBefore)}`;
  const order = q.endingBefore ? 'asc' : 'desc';
  const { rows } = await usageStoreFor(orm).pool.query(
    `select ${columns} from billing_alerts where ${where} order by id ${order} limit $3`,
    params,
  );
  const hasMore = rows.length > q.limit;
  const page = (rows as BillingAlertRow[]).slice(0, q.limit);
  if (q.endingBefore) page.reverse();
  return { page, hasMore };
}

/** activate / deactivate / archive. An archived alert stays archived (409); the same status again is a no-op. */
export async function setAlertStatus(
  orm: MikroORM,
  scope: Scope,
  id: string,
  status: 'active' | 'inactive' | 'archived',
): Promise<BillingAlertRow> {
  const current = await findAlert(orm, scope, id);
  if (current.status === 'archived' && status !== 'archived')
    throw new ApiError('conflict', 'This alert is archived: it can no longer be activated or deactivated.');
  const { rows } = await usageStoreFor(orm).pool.query(
    `update billing_alerts set status = $4, updated_at = case when status = $4 then updated_at else now() end
     where id = $1 and account_id = $2 and livemode = $3 and (status <> 'archived' or $4 = 'archived') returning ${columns}`,
    [id, scope.accountId, scope.livemode, status],
  );
  if (!rows[0]) throw new ApiError('conflict', 'This alert is archived: it can no longer be activated or deactivated.');
  if (status === 'active') hasAlertsCache.delete(cacheKey(scope));
  return rows[0] as BillingAlertRow;
}

/** The first instant of the UTC month of `at`, and of the next one. */
export function monthWindow(at: Date): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
    end: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
  };
}

/** value ≥ gte for an exact decimal value and an integer gte (floor(value) ≥ gte), without float rounding. */
export function reaches(value: string, gte: number): boolean {
  const [whole, fraction = ''] = value.split('.');
  let floor = BigInt(whole!);
  if (value.startsWith('-') && /[1-9]/.test(fraction)) floor -= 1n;
  return floor >= BigInt(gte);
}

type Candidate = BillingAlertRow & {
  pairCustomer: string;
  aggregation: Aggregation;
  valueProperty: string;
  eventName: string;
  customerNow: Date;
  /** The current period of the customer's subscription that bills the alert's meter, if it has one. */
  periodStart: Date | null;
  periodEnd: Date | null;
};

/**
 * The usage an alert counts: the current billing period of the customer's subscription that bills the alert's
 * meter (a metered item on it; the newest such active or past_due one), as its invoice counts it (its usage
 * window, domain/usage-window.ts), else the UTC calendar month of the customer's time.
 */
export function alertWindow(c: Pick<Candidate, 'customerNow' | 'periodStart' | 'periodEnd'>): {
  start: Date;
  end: Date;
} {
  if (c.periodStart && c.periodEnd) return usageWindow({ start: new Date(c.periodStart), end: new Date(c.periodEnd) });
  return monthWindow(new Date(c.customerNow));
}

/**
 * After a committed batch: fires the alerts its (customer, meter) pairs reached. Returns how many fired.
 * A failure here never fails the batch (its events are committed): the caller logs it, and the
 * customer's next batch checks again.
 */
export async function checkUsageAlerts(
  orm: MikroORM,
  scope: Scope,
  pairs: { customerId: string; meterId: string }[],
): Promise<number> {
  if (pairs.length === 0) return 0;
  const key = cacheKey(scope);
  const cached = hasAlertsCache.get(key);
  const store = usageStoreFor(orm);
  if (!cached || Date.now() - cached.at > alertCacheMs) {
    const { rowCount } = await store.pool.query(
      `select 1 from billing_alerts where account_id = $1 and livemode = $2 and status = 'active' limit 1`,
      [scope.accountId, scope.livemode],
    );
    hasAlertsCache.set(key, { has: (rowCount ?? 0) > 0, at: Date.now() });
    if (!rowCount) return 0;
  } else if (!cached.has) return 0;

  const unique = new Map(pairs.map((p) => [`${p.customerId}\u0000${p.meterId}`, p]));
  const customers = [...unique.values()].map((p) => p.customerId);
  const meters = [...unique.values()].map((p) => p.meterId);
  const { rows } = await store.pool.query(
    `select a.id, a.livemode, a.title, a.meter_id as "meterId", a.gte::float8 as gte, a.customer_id as "customerId", a.status, a.created_at as "createdAt", a.updated_at as "updatedAt",
       p.customer_id as "pairCustomer", m.aggregation, m.value_property as "valueProperty", m.event_name as "eventName", coalesce(tc.frozen_time, now()) as "customerNow",
       sub.current_period_start as "periodStart", sub.current_period_end as "periodEnd"
     from unnest($3::text[], $4::text[]) as p(customer_id, meter_id)
     join billing_alerts a on a.account_id = $1 and a.livemode = $2 and a.status = 'active' and a.meter_id = p.meter_id and (a.customer_id is null or a.customer_id = p.customer_id)
     join meters m on m.id = a.meter_id
     join customers cu on cu.id = p.customer_id and cu.account_id = $1 and cu.livemode = $2
     left join test_clocks tc on tc.id = cu.test_clock_id
     left join lateral (
       select s.current_period_start, s.current_period_end from subscriptions s
       where s.account_id = $1 and s.livemode = $2 and s.customer_id = p.customer_id and s.status in ('active', 'past_due')
         and s.current_period_start is not null and s.current_period_end is not null
         and exists (select 1 from plans pl where pl.account_id = $1 and pl.livemode = $2 and pl.usage_type = 'metered' and pl.meter_id = a.meter_id
                     and (pl.id = s.plan_id or (s.items is not null and s.items @> jsonb_build_array(jsonb_build_object('planId', pl.id)))))
       order by s.created_at desc limit 1
     ) sub on true
     where not exists (select 1 from billing_alert_triggers t where t.alert_id = a.id and t.customer_id = p.customer_id)`,
    [scope.accountId, scope.livemode, customers, meters],
  );
  let fired = 0;
  for (const candidate of rows as Candidate[]) {
    const window = alertWindow(candidate);
    const [aggregate] = await store.aggregate({
      ...scope,
      customerId: candidate.pairCustomer,
      meter: {
        id: candidate.meterId,
        eventName: candidate.eventName,
        aggregation: candidate.aggregation,
        valueProperty: candidate.valueProperty,
      },
      ...window,
    });
    const value = aggregate?.value ?? '0';
    if (!reaches(value, candidate.gte)) continue;
    const now = new Date();
    const inserted = await orm.em.fork().transactional(async (tx) => {
      const exec = <T extends object[]>(sql: string, params: unknown[]) =>
        tx.getConnection().execute<T>(sql, params, 'all', tx.getTransactionContext());
      const claimed = await exec<{ alert_id: string }[]>(
        `insert into billing_alert_triggers (alert_id, customer_id, account_id, livemode, value, triggered_at) values (?, ?, ?, ?, ?, ?) on conflict do nothing returning alert_id`,
        [candidate.id, candidate.pairCustomer, scope.accountId, scope.livemode, value, now],
      );
      if (claimed.length === 0) return false;
      const event = await recordEvent(tx, {
        ...scope,
        type: 'billing.alert.triggered',
        object: serializeAlertTriggered(candidate, candidate.pairCustomer, value, now),
        transactionId: null,
      });
      await exec<object[]>(`update billing_alert_triggers set event_id = ? where alert_id = ? and customer_id = ?`, [
        event.id,
        candidate.id,
        candidate.pairCustomer,
      ]);
      return true;
    });
    if (inserted) fired++;
  }
  return fired;
}
