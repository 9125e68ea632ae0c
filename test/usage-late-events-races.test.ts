/**
 * Late events' claim (services/usage/late-events.ts) against real PostgreSQL, without Temporal: the claim made in
 * an invoice's transaction holds its late events' rows, so a cancel that comes meanwhile waits and is then refused
 * `period_invoiced`; a late event ingested while the claim's transaction is open is not taken by it (the next
 * invoice takes it); a transaction that rolls back gives its claims back; a late event cancelled before the claim
 * is taken but cancelled (it counts nothing).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimUsageAdjustmentLines } from '../services/usage/late-events.ts';
import { createUsagePool, PostgresUsageStore } from '../services/usage/postgres-store.ts';
import type { MeterEventInput, MeterRef } from '../services/usage/store.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let db: TestDatabase;
let store: PostgresUsageStore;
const account = 'acct_late_races';
const customer = 'cus_late_races';
const subscription = 'sub_late_races';
const meter: MeterRef = { id: 'mtr_late_races', eventName: 'tokens', aggregation: 'sum', valueProperty: 'value' };
const day = 86_400_000;
const now = Math.floor(Date.now() / 1000) * 1000;
const period = { start: new Date(now - 20 * day), end: new Date(now - 10 * day) };
const scope = {
  accountId: account,
  livemode: false,
  customerId: customer,
  subscriptionId: subscription,
  currency: 'USD',
};

async function sql(text: string, values: unknown[] = []) {
  return db.orm.em.getConnection().execute(text, values);
}

const late = (identifier: string): MeterEventInput => ({
  eventName: meter.eventName,
  customerId: customer,
  identifier,
  timestamp: new Date(now - 15 * day),
  payload: { value: 5 },
});

const invoiceOf = async (identifier: string): Promise<string | null> =>
  (
    (await sql(`select invoice_id from usage_late_events where identifier = ?`, [identifier])) as {
      invoice_id: string | null;
    }[]
  )[0]!.invoice_id;

beforeAll(async () => {
  db = await createTestDatabase();
  store = new PostgresUsageStore(createUsagePool(db.url, 8));
  await sql(
    `insert into accounts (id, email, name, type, status, settings, created_at, updated_at) values (?, 'late@example.com', 'Late races', 'business', 'active', '{}'::jsonb, now(), now())`,
    [account],
  );
  await sql(
    `insert into customers (id, email, account_id, livemode, created_at, updated_at) values (?, 'c@example.com', ?, false, now(), now())`,
    [customer, account],
  );
  await sql(
    `insert into meters (id, account_id, livemode, display_name, event_name, aggregation, value_property, group_by, status, created_at, updated_at) values (?, ?, false, 'Tokens', ?, 'sum', 'value', '[]', 'active', now(), now())`,
    [meter.id, account, meter.eventName],
  );
  // Period closed (the watermark at its end), and the mode bills late events on the next invoice.
  await store.closePeriod({ ...scope, start: period.start, end: period.end, meters: [{ meter }] });
  await sql(
    `insert into account_mode_settings (account_id, livemode, notifications, usage_late_events, updated_at) values (?, false, '{}', 'bill_next_invoice', now())`,
    [account],
  );
});

afterAll(async () => {
  await store?.close();
  await db?.close();
});

describe('late events: the claim under races', () => {
  it('holds its rows: a cancel meanwhile waits and is refused; a late event ingested meanwhile is left for the next invoice', async () => {
    const [first] = await store.ingest({ accountId: account, livemode: false, events: [late('late-a')] });
    expect(first).toMatchObject({ status: 'accepted', late: true });

    let cancel: Promise<{ status: string }> | undefined;
    let settled = false;
    await db.orm.em.fork().transactional(async (tx) => {
      await claimUsageAdjustmentLines(tx, { ...scope, invoiceId: 'in_first' }, { timeZone: 'UTC', locale: 'en-US' });
      cancel = store.cancel({ accountId: account, livemode: false, identifier: 'late-a' });
      void cancel.then(() => (settled = true));
      // Ingested while the claim's transaction is open: committed at once, not the claim's.
      const [meanwhile] = await store.ingest({ accountId: account, livemode: false, events: [late('late-b')] });
      expect(meanwhile).toMatchObject({ status: 'accepted', late: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settled).toBe(false);
    });
    expect(await cancel).toMatchObject({ status: 'period_invoiced' });
    expect(await invoiceOf('late-a')).toBe('in_first');
    expect(await invoiceOf('late-b')).toBeNull();
    expect((await store.find({ accountId: account, livemode: false, identifier: 'late-a' }))?.late).toEqual({
      invoiceId: 'in_first',
    });
  });

  it('gives its claims back when the invoice transaction rolls back; a cancel before the claim is not billed', async () => {
    await expect(
      db.orm.em.fork().transactional(async (tx) => {
        await claimUsageAdjustmentLines(tx, { ...scope, invoiceId: 'in_lost' }, {});
        throw new Error('the billing key was taken');
      }),
    ).rejects.toThrow('the billing key was taken');
    expect(await invoiceOf('late-b')).toBeNull();

    expect(await store.cancel({ accountId: account, livemode: false, identifier: 'late-b' })).toMatchObject({
      status: 'cancelled',
    });
    await db.orm.em.fork().transactional(async (tx) => {
      await claimUsageAdjustmentLines(tx, { ...scope, invoiceId: 'in_second' }, {});
    });
    expect(await invoiceOf('late-b')).toBe('in_second');
    // Cancelled before, it stays cancelled: nothing counts it.
    const [row] = await store.aggregate({
      accountId: account,
      livemode: false,
      customerId: customer,
      meter,
      ...period,
    });
    expect(row).toMatchObject({ value: '5', events: 1 });
  });
});
