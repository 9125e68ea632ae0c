import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, Transaction } from '../db/entities/index.ts';
import { openInvoice, settleInvoice } from '../services/invoices/cycle-invoices.ts';
import { chargeCustomer } from '../services/money/charges.ts';
import { makeFundsAvailable } from '../services/money/ledger.ts';
import { sandboxProcessors } from '../services/processors/index.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants, expectOnePaymentPerPaidInvoice } from './helpers/ledger.ts';

/**
 * Random concurrent money movements on one account: direct payments (paid and
 * declined), subscription-invoice charges run twice at once with one key (a retry
 * racing the first attempt), refunds of random payments (partial, full, more than
 * is left), plain refunds, credits, payouts, and pending money becoming available.
 * Whatever the interleaving: every currency's entries sum to zero, the cached
 * available and pending balances equal their entries, no refund exceeds its
 * payment, and every paid invoice has exactly one succeeded payment for amount_paid.
 */
describe('property: the ledger adds up under concurrent charges, declines, refunds and payouts', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  const links = { invoicePdfUrl: (id: string) => `http://localhost/invoices/${id}/pdf` };
  const method = fc.constantFrom('pm_card_visa', 'pm_card_chargeDeclined');
  const operation = fc.oneof(
    fc.record({ kind: fc.constant('payment' as const), amount: fc.integer({ min: 1, max: 5000 }), method }),
    fc.record({ kind: fc.constant('invoice' as const), amount: fc.integer({ min: 1, max: 5000 }), method }),
    fc.record({ kind: fc.constant('refund_of' as const), amount: fc.integer({ min: 1, max: 6000 }), pick: fc.nat() }),
    fc.record({ kind: fc.constant('refund' as const), amount: fc.integer({ min: 1, max: 3000 }) }),
    fc.record({ kind: fc.constant('credit' as const), amount: fc.integer({ min: 1, max: 3000 }) }),
    fc.record({ kind: fc.constant('payout' as const), amount: fc.integer({ min: 1, max: 3000 }) }),
    fc.record({ kind: fc.constant('available' as const), pick: fc.nat() }),
  );

  it('holds for random operation lists', { timeout: 240_000 }, async () => {
    const processors = sandboxProcessors(() => engine.db.orm.em.fork());
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(operation, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }),
        async (rounds) => {
          run++;
          const tenant: Tenant = await engine.signUp();
          const call = (m: string, path: string, body?: unknown) => engine.call(m, path, body, tenant.headers);
          // In live mode only a platform admin may credit (docs/security.md).
          const asAdmin = { ...(await engine.admin()).headers, 'x-account-id': tenant.accountId };
          const customers: Record<string, string> = {};
          for (const pm of ['pm_card_visa', 'pm_card_chargeDeclined']) {
            customers[pm] = (
              await call('POST', '/v1/customers', { email: `${pm}@example.com`, payment_method: pm })
            ).body.id;
          }
          // Payouts go to the default USD destination.
          expect(
            (
              await call('POST', '/v1/bank_accounts', {
                type: 'paypal',
                account_holder_name: 'Prop',
                currency: 'USD',
                email: 'prop@example.com',
              })
            ).status,
          ).toBe(201);
          let invoiceNo = 0;
          const payments = async () =>
            engine.db.orm.em
              .fork()
              .find(
                Transaction,
                { accountId: tenant.accountId, type: 'payment', status: 'succeeded' },
                { orderBy: { id: 'asc' } },
              );
          // Rounds run one after the other; the operations of a round run concurrently.
          for (const ops of rounds) {
            const known = await payments();
            const pending = await engine.db.orm.em
              .fork()
              .find(BalanceTransaction, { accountId: tenant.accountId, status: 'pending' }, { orderBy: { id: 'asc' } });
            const results = await Promise.all(
              ops.map(async (op) => {
                switch (op.kind) {
                  case 'payment':
                    return call('POST', '/v1/transactions', {
                      account_id: tenant.accountId,
                      amount: op.amount,
                      currency: 'USD',
                      type: 'payment',
                      payment_method: op.method,
                    });
                  case 'credit':
                    return engine.call(
                      'POST',
                      '/v1/transactions',
                      { account_id: tenant.accountId, amount: op.amount, currency: 'USD', type: 'credit' },
                      asAdmin,
                    );
                  case 'refund':
                    return call('POST', '/v1/transactions', {
                      account_id: tenant.accountId,
                      amount: op.amount,
                      currency: 'USD',
                      type: 'refund',
                    });
                  case 'refund_of': {
                    const source = known[op.pick % Math.max(1, known.length)];
                    if (!source) return { status: 400, body: { error: 'invalid_request' } };
                    return call('POST', '/v1/transactions', {
                      account_id: tenant.accountId,
                      amount: op.amount,
                      currency: 'USD',
                      type: 'refund',
                      source_transaction: source.id,
                    });
                  }
                  case 'payout':
                    return call('POST', '/v1/payouts', { amount: op.amount, currency: 'USD' });
                  case 'available': {
                    const btxn = pending[op.pick % Math.max(1, pending.length)];
                    if (btxn) await makeFundsAvailable(engine.db.orm.em.fork(), btxn.id);
                    return { status: 200, body: {} };
                  }
                  case 'invoice': {
                    const billingKey = `prop-${run}-${tenant.accountId}:cycle:${invoiceNo++}`;
                    const now = new Date().toISOString();
                    const opened = await openInvoice(engine.db.orm.em.fork(), links, {
                      billingKey,
                      subscriptionId: `sub_prop_${run}`,
                      accountId: tenant.accountId,
                      customerId: customers[op.method]!,
                      currency: 'USD',
                      lines: [
                        { description: 'Plan', amount: op.amount, quantity: 1, period_start: now, period_end: now },
                      ],
                      periodStart: now,
                      periodEnd: now,
                      issuedAt: now,
                      livemode: true,
                    });
                    const input = {
                      idempotencyKey: `${billingKey}:attempt:1`,
                      invoiceId: opened.invoiceId,
                      attempt: 1,
                      accountId: tenant.accountId,
                      customerId: customers[op.method]!,
                      amount: op.amount,
                      currency: 'USD',
                      description: 'Plan',
                      livemode: true,
                    };
                    // The same attempt twice at once (a retried activity racing the first): one charge, one transaction.
                    const outcomes = await Promise.all(
                      [0, 1].map(() => chargeCustomer({ processors, links }, engine.db.orm.em.fork(), input)),
                    );
                    expect(outcomes[0]).toEqual(outcomes[1]);
                    await Promise.all(
                      outcomes.map((o) => settleInvoice(engine.db.orm.em.fork(), links, opened.invoiceId, o)),
                    );
                    return { status: 201, body: outcomes[0] };
                  }
                }
              }),
            );
            results.forEach((r, i) => {
              const op = ops[i]!;
              const allowed =
                op.kind === 'refund_of'
                  ? [201, 400, 402]
                  : op.kind === 'refund' || op.kind === 'payout'
                    ? [201, 402]
                    : [200, 201];
              expect(allowed, `${op.kind}: ${JSON.stringify(r.body)}`).toContain(r.status);
              if (op.kind === 'refund_of' && r.status === 400) expect(r.body.error).toBe('invalid_request');
            });
          }
          await expectLedgerInvariants(engine.db.orm.em.fork(), tenant.accountId);
          await expectOnePaymentPerPaidInvoice(engine.db.orm.em.fork(), { accountId: tenant.accountId });
          // Declined invoice charges are failed payments with no entries; the ledger never goes below zero.
          const [negative] = await engine.db.orm.em
            .fork()
            .getConnection()
            .execute(
              `select count(*)::int as n from account_balances where account_id = ? and (available < 0 or pending < 0)`,
              [tenant.accountId],
            );
          expect(negative!.n).toBe(0);
        },
      ),
      { numRuns: 12 },
    );
  });
});
