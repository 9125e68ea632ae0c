/**
 * The usage wave of `npm run bench:renewals -- --usage` (bench/renewals.ts): N subscriptions to a metered plan
 * (a `sum` meter, graduated tiers) renewing at one instant, each invoicing the usage of the period that just
 * ended, against N flat subscriptions in the same run. Here: the rows of a usage wave (an account with an API key,
 * the meter and the plan made through the API, each customer's events sent through POST /v1/meter_events/batch
 * before the wave), the subscriptions' carried-over state, what each renewal must bill, and the check afterwards
 * that every renewal invoiced, charged and recorded its own usage exactly once.
 */
import { randomBytes } from 'node:crypto';

import type { MikroORM } from '@mikro-orm/postgresql';

import { sha256 } from '../api/auth/tokens.ts';
import { ApiKey, Plan } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';
import { defaultUsageGraceSeconds } from '../domain/usage-billing.ts';
import { priceTerms } from '../services/subscriptions/terms.ts';
import { call } from './harness.ts';
import { type ItemsSeed, renewalInterval, renewingSnapshot, seedEngine } from './renewals-setup.ts';

/** The metered plan's graduated tiers: 10 cents a unit up to 100, then 5 cents a unit with a 2.00 flat fee on entering the second tier. */
export const usageTiers = [
  { up_to: 100, unit_amount: 10 },
  { up_to: 'inf', unit_amount: 5, flat_amount: 200 },
] as const;

/** What the tiers charge for `quantity` units, computed here on its own (not by domain/usage-pricing.ts, which the check tests). */
export function tieredAmount(quantity: number): number {
  return quantity <= 100 ? quantity * 10 : 100 * 10 + 200 + (quantity - 100) * 5;
}

/** Customer i's events: 3 to 7 of them, values 10 to 49 (so sums from 30 to over 300: some renewals stay in the first tier, some cross it). */
export function customerEvents(i: number): number[] {
  return Array.from({ length: 3 + (i % 5) }, (_, j) => 10 + ((i * 7 + j * 13) % 40));
}

export interface UsageSeed extends ItemsSeed {
  meterId: string;
  /** Per customer: the usage it sent and what its renewal must charge. */
  expected: Map<string, { quantity: number; amount: number }>;
  /** Events sent through the batch endpoint, and seconds it took. */
  events: number;
  ingestSeconds: number;
}

/**
 * One account, N customers (seedEngine), an API key inserted for it, then through the API at `apiBase`: a `sum` meter,
 * a metered plan with usageTiers billed every renewalInterval, and each customer's events (customerEvents, stamped
 * two hours ago and earlier, inside the period that ends at T minus the grace window) in batches of 1,000.
 */
export async function seedUsageEngine(orm: MikroORM, n: number, round: number, apiBase: string): Promise<UsageSeed> {
  const seed = await seedEngine(orm, n, round, renewalInterval);
  const secret = `sk_test_${randomBytes(32).toString('base64url')}`;
  const em = orm.em.fork();
  em.create(ApiKey, {
    id: newId('apiKey'),
    accountId: seed.accountId,
    livemode: false,
    name: 'bench',
    secretHash: sha256(secret),
    last4: secret.slice(-4),
    createdAt: new Date(),
  });
  await em.flush();
  const headers = { authorization: `Bearer ${secret}` };
  const eventName = `api_calls_${round}`;
  const meter = await call(
    'POST',
    `${apiBase}/v1/meters`,
    { display_name: 'API calls', event_name: eventName, aggregation: 'sum', value_property: 'calls' },
    headers,
  );
  if (meter.status !== 201) throw new Error(`meter (${meter.status}): ${JSON.stringify(meter.body)}`);
  const meterId = String(meter.body!.id);
  const plan = await call(
    'POST',
    `${apiBase}/v1/plans`,
    {
      name: 'API calls (metered, graduated)',
      currency: 'USD',
      interval: renewalInterval.unit,
      interval_count: renewalInterval.count,
      usage_type: 'metered',
      meter: meterId,
      pricing_scheme: 'tiered',
      tiers_mode: 'graduated',
      tiers: usageTiers,
    },
    headers,
  );
  if (plan.status !== 201) throw new Error(`plan (${plan.status}): ${JSON.stringify(plan.body)}`);
  const planRow = await orm.em.fork().findOneOrFail(Plan, { id: String(plan.body!.id) });
  const terms = { ...priceTerms(planRow), interval: renewalInterval };

  const expected = new Map<string, { quantity: number; amount: number }>();
  const all: { event_name: string; customer: string; identifier: string; timestamp: number; payload: object }[] = [];
  const base = Math.floor(Date.now() / 1000) - 2 * 3600;
  seed.customers.forEach((customer, i) => {
    const values = customerEvents(i);
    const quantity = values.reduce((sum, v) => sum + v, 0);
    expected.set(customer, { quantity, amount: tieredAmount(quantity) });
    values.forEach((calls, j) =>
      all.push({
        event_name: eventName,
        customer,
        identifier: `r${round}-${i}-${j}`,
        timestamp: base - j * 60,
        payload: { calls },
      }),
    );
  });
  const started = Date.now();
  for (let i = 0; i < all.length; i += 1000) {
    const batch = await call('POST', `${apiBase}/v1/meter_events/batch`, { events: all.slice(i, i + 1000) }, headers);
    const accepted = Number(batch.body?.accepted);
    if (batch.status !== 200 || accepted !== Math.min(1000, all.length - i))
      throw new Error(`meter events batch (${batch.status}): ${JSON.stringify(batch.body).slice(0, 500)}`);
  }
  return {
    ...seed,
    plan: terms,
    items: null,
    perRenewal: 0,
    meterId,
    expected,
    events: all.length,
    ingestSeconds: (Date.now() - started) / 1000,
  };
}

/**
 * Carried-over state of a metered subscription renewing at T: its period (30 days) ended the default usage grace
 * window (an hour) before T, so the renewal, which waits that window for late events (domain/subscription-decisions.ts
 * nextWake), wakes at T, closes the period's usage and bills it.
 */
export function renewingUsageSnapshot(seed: UsageSeed, customerId: string, at: Date): SubscriptionSnapshot {
  const periodEnd = new Date(at.getTime() - defaultUsageGraceSeconds * 1000);
  return { ...renewingSnapshot(seed, customerId, periodEnd), quantity: 1, currency: 'USD' };
}

/** The usage wave's expected total: the sum of every customer's tiered amount. */
export const expectedUsageTotal = (seed: UsageSeed): number =>
  [...seed.expected.values()].reduce((sum, e) => sum + e.amount, 0);

/**
 * Each customer's renewal billed its own usage exactly once: one invoice per customer, paid, whose total is the
 * tiered amount of the customer's events, with one usage line of the meter at the events' sum; one succeeded charge
 * of that amount per customer. (checkEngineMoney checks the counts, numbering and the wave's total.)
 */
export async function checkUsageMoney(orm: MikroORM, seed: UsageSeed): Promise<void> {
  const connection = orm.em.fork().getConnection();
  const invoices = await connection.execute<
    { customer_id: string; status: string; total: string; lines: { meter?: string; quantity_decimal?: string }[] }[]
  >(`select customer_id, status, total::text as total, lines from invoices where account_id = ? and livemode = false`, [
    seed.accountId,
  ]);
  const charges = await connection.execute<{ customer_id: string; amount: string; n: number }[]>(
    `select customer_id, sum(amount)::text as amount, count(*)::int as n from charges where account_id = ? and status = 'succeeded' group by customer_id`,
    [seed.accountId],
  );
  const chargeOf = new Map(charges.map((c) => [c.customer_id, c]));
  const seen = new Map<string, number>();
  const problems: string[] = [];
  for (const invoice of invoices) {
    seen.set(invoice.customer_id, (seen.get(invoice.customer_id) ?? 0) + 1);
    const want = seed.expected.get(invoice.customer_id);
    if (!want) {
      problems.push(`an invoice of unknown customer ${invoice.customer_id}`);
      continue;
    }
    const usage = (invoice.lines ?? []).filter((line) => line.meter === seed.meterId);
    if (invoice.status !== 'paid') problems.push(`${invoice.customer_id}: invoice ${invoice.status}`);
    if (Number(invoice.total) !== want.amount)
      problems.push(`${invoice.customer_id}: invoice total ${invoice.total}, expected ${want.amount}`);
    if (usage.length !== 1 || usage[0]!.quantity_decimal !== String(want.quantity))
      problems.push(
        `${invoice.customer_id}: usage lines ${JSON.stringify(usage.map((l) => l.quantity_decimal))}, expected one of ${want.quantity}`,
      );
  }
  for (const [customer, want] of seed.expected) {
    if (seen.get(customer) !== 1) problems.push(`${customer}: ${seen.get(customer) ?? 0} invoices`);
    const charge = chargeOf.get(customer);
    if (!charge || charge.n !== 1 || Number(charge.amount) !== want.amount)
      problems.push(
        `${customer}: ${charge?.n ?? 0} succeeded charges of ${charge?.amount ?? 0}, expected one of ${want.amount}`,
      );
  }
  if (problems.length > 0)
    throw new Error(
      `the usage renewals billed wrong (${problems.length} problems): ${problems.slice(0, 10).join('; ')}${problems.length > 10 ? '; …' : ''}`,
    );
}
