/**
 * billing_reason (domain/invoice-billing-reason.ts): the reason of each billing key the engine makes, and the
 * migration's backfill (db/migrations/Migration20261127102000_invoice_billing_reason.ts) giving older invoices the
 * same reasons as the function, run on rows without one in a fresh database (rolled back).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Migration20261127102000_invoice_billing_reason } from '../db/migrations/Migration20261127102000_invoice_billing_reason.ts';
import { billingReasonOf } from '../domain/invoice-billing-reason.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

const sub = 'sub_01jd3x5k8q0m2v7c9r4t6y1w3e';
const cases: [key: string, subscription: string | null, reason: string][] = [
  [`${sub}:cycle:0`, sub, 'subscription_create'],
  [`${sub}:cycle:1`, sub, 'subscription_cycle'],
  [`${sub}:cycle:10`, sub, 'subscription_cycle'],
  [`${sub}:plan_change:3`, sub, 'subscription_update'],
  [`${sub}:item_change:12`, sub, 'subscription_update'],
  [`${sub}:final_usage`, sub, 'subscription_update'],
  [`${sub}:threshold:2033-01-15T00:00:00.000Z:2`, sub, 'subscription_threshold'],
  ['invoice:inv_01jd3x5k8q0m2v7c9r4t6y1w3e', null, 'manual'],
  ['race:cus_1:3', null, 'manual'],
];

describe('billing_reason', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.close());

  it('is derived from the billing key', () => {
    expect(cases.map(([key, subscription]) => billingReasonOf(key, subscription))).toEqual(cases.map((c) => c[2]));
  });

  it("the migration's backfill gives older invoices the same reasons", async () => {
    const connection = db.orm.em.getConnection();
    const backfill = new Migration20261127102000_invoice_billing_reason(
      db.orm.em.getDriver(),
      db.orm.config,
    ) as unknown as {
      up(): void;
      getQueries(): { sql?: string }[] | string[];
    };
    backfill.up();
    const update = backfill
      .getQueries()
      .map((q) => (typeof q === 'string' ? q : (q.sql ?? '')))
      .find((q) => q.startsWith('update'))!;
    expect(update).toBeDefined();
    await connection
      .transactional(async (tx) => {
        for (const [i, [key, subscription]] of cases.entries())
          await connection.execute(
            `insert into invoices (id, number, billing_key, subscription_id, customer_id, status, currency, subtotal, total, amount_due, amount_paid, attempt_count, lines, period_start, period_end, account_id, livemode, created_at)
             values (?, ?, ?, ?, 'cus_x', 'paid', 'USD', 0, 0, 0, 0, 0, '[]', now(), now(), 'acct_backfill', false, now())`,
            [`inv_backfill_${i}`, `B-${i}`, key, subscription],
            'run',
            tx,
          );
        await connection.execute(update, [], 'run', tx);
        const rows = await connection.execute<{ id: string; billing_reason: string }[]>(
          `select id, billing_reason from invoices where account_id = 'acct_backfill' order by id`,
          [],
          'all',
          tx,
        );
        expect(rows.map((r) => r.billing_reason)).toEqual(cases.map((c) => c[2]));
        throw new Error('rollback');
      })
      .catch((error: Error) => {
        if (error.message !== 'rollback') throw error;
      });
  });
});
