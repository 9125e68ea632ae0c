import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'vitest';

import { Invoice, Transaction } from '../../db/entities/index.ts';

/**
 * The ledger's invariants for one account (both modes): entries sum to zero per
 * mode and currency, the cached balance equals its entries per ledger account
 * (available, pending), and no payment is refunded beyond its amount (its
 * amount_refunded equals its refunds that did not fail).
 */
export async function expectLedgerInvariants(em: EntityManager, accountId: string): Promise<void> {
  const sql = em.getConnection();
  const unbalanced = await sql.execute(
    `select livemode, currency, sum(amount)::text as total from ledger_entries where account_id = ? group by livemode, currency having sum(amount) <> 0`,
    [accountId],
  );
  expect(unbalanced).toEqual([]);
  const mismatched = await sql.execute(
    `select b.livemode, b.currency, b.available::text, b.pending::text,
            coalesce(sum(e.amount) filter (where e.ledger_account = 'available'), 0)::text as entries_available,
            coalesce(sum(e.amount) filter (where e.ledger_account = 'pending'), 0)::text as entries_pending
       from account_balances b left join ledger_entries e on e.account_id = b.account_id and e.livemode = b.livemode and e.currency = b.currency
      where b.account_id = ?
      group by b.account_id, b.livemode, b.currency, b.available, b.pending
     having b.available <> coalesce(sum(e.amount) filter (where e.ledger_account = 'available'), 0)
         or b.pending <> coalesce(sum(e.amount) filter (where e.ledger_account = 'pending'), 0)`,
    [accountId],
  );
  expect(mismatched).toEqual([]);
  const overRefunded = await sql.execute(
    `select p.id, p.amount::text, p.amount_refunded::text, coalesce(sum(r.amount) filter (where r.status <> 'failed'), 0)::text as refunds
       from transactions p left join transactions r on r.source_transaction_id = p.id and r.type = 'refund'
      where p.account_id = ? and p.type = 'payment'
      group by p.id
     having p.amount_refunded > p.amount or p.amount_refunded <> coalesce(sum(r.amount) filter (where r.status <> 'failed'), 0)`,
    [accountId],
  );
  expect(overRefunded).toEqual([]);
}

/** Every paid invoice (with something to pay) of these invoices has exactly one succeeded payment, for amount_paid, which it names as its transaction. */
export async function expectOnePaymentPerPaidInvoice(
  em: EntityManager,
  where: { subscriptionId?: string; accountId?: string },
): Promise<number> {
  const invoices = await em.find(Invoice, { ...where, status: 'paid', amountPaid: { $gt: 0 } });
  for (const invoice of invoices) {
    const payments = await em.find(Transaction, { invoiceId: invoice.id, type: 'payment', status: 'succeeded' });
    expect(payments, `succeeded payments of ${invoice.id}`).toHaveLength(1);
    expect(Number(payments[0]!.amount)).toBe(Number(invoice.amountPaid));
    expect(invoice.transactionId).toBe(payments[0]!.id);
  }
  return invoices.length;
}
