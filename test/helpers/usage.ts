/**
 * What the usage tests share (#28): a sandbox tenant with a test clock, a customer on it, a meter and a metered
 * plan on that meter, made through the real API (clockTenant); a way to send meter events and to read a
 * subscription's invoices oldest first; and graduated tiers priced by hand (micro-units), the reference the
 * engine's invoices are checked against.
 */
import { expect } from 'vitest';

import { clockTenant } from './clock-tenant.ts';
import type { TestEngine } from './engine.ts';

export type Tier = { upTo: number | null; unit: number };

/**
 * Graduated tiers with free units, by hand: quantity in micro-units (10^-6), unit prices in minor units; the exact
 * amount and its rounding (half away from zero), as an invoice line's amount.
 */
export function graduatedReference(
  quantity: number | string,
  tiers: Tier[],
  free = 0,
): { exact: number; amount: number } {
  let left = Math.max(0, Math.round(Number(quantity) * 1e6) - free * 1e6);
  let previous = 0;
  let exact = 0;
  for (const tier of tiers) {
    const room = tier.upTo === null ? left : Math.min(left, tier.upTo * 1e6 - previous);
    exact += (room * tier.unit) / 1e6;
    left -= room;
    if (tier.upTo !== null) previous = tier.upTo * 1e6;
    if (left <= 0) break;
  }
  return { exact, amount: Math.round(exact + 1e-9) };
}

export interface UsageSetupOptions {
  /** The test clock's first time. */
  frozenTime: string;
  /** The customer's payment method (default pm_card_visa). */
  paymentMethod?: string;
  email?: string;
  /** POST /v1/meters's body. */
  meter: Record<string, unknown>;
  /** POST /v1/plans's body, without `meter` (added) and with USD, monthly and metered as defaults. */
  plan: Record<string, unknown>;
}

/** A tenant with a clock, a customer on it, a meter and a metered plan; helpers to send events and read invoices. */
export async function usageSetup(engine: TestEngine, name: string, options: UsageSetupOptions) {
  const tenant = await clockTenant(engine, name);
  const { call, make } = tenant;
  const clock = await make('/v1/test_clocks', { frozen_time: options.frozenTime });
  const customer = await make('/v1/customers', {
    email: options.email ?? 'usage@example.com',
    payment_method: options.paymentMethod ?? 'pm_card_visa',
    test_clock: clock.id,
  });
  const meter = await make('/v1/meters', options.meter);
  const plan = await make('/v1/plans', {
    name: 'Usage',
    currency: 'USD',
    interval: 'month',
    usage_type: 'metered',
    ...options.plan,
    meter: meter.id,
  });
  let sent = 0;
  /** POST /v1/meter_events for the customer, expecting 201; `payload` defaults to none (a count meter). */
  const send = async (event: {
    timestamp?: string | number;
    payload?: Record<string, unknown>;
    event_name?: string;
  }) => {
    const answer = await call('POST', '/v1/meter_events', {
      event_name: meter.event_name,
      customer: customer.id,
      identifier: `${name}-${++sent}`,
      ...event,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body;
  };
  /** The subscription's invoices, oldest first. */
  const invoicesOf = async (subscriptionId: string): Promise<any[]> =>
    [...(await call('GET', `/v1/invoices?subscription=${subscriptionId}&limit=100`)).body.data].reverse();
  /** Waits (30 s at most) until the subscription has `count` invoices and each is settled one way or the other (`settled`). */
  const invoicesUntil = async (
    subscriptionId: string,
    count: number,
    settled: (invoice: any) => boolean = (i) => i.status !== 'open' && i.status !== 'draft',
  ): Promise<any[]> => {
    const started = Date.now();
    for (;;) {
      const all = await invoicesOf(subscriptionId);
      if (all.length >= count && all.every(settled)) return all;
      if (Date.now() - started > 30_000) throw new Error(`${all.length} invoices, waited for ${count}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { ...tenant, clock, customer, meter, plan, send, invoicesOf, invoicesUntil };
}
