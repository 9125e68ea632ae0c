import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createActivities } from '../activities/index.ts';
import {
  Account,
  BalanceTransaction,
  Charge,
  Customer,
  Event,
  Invoice,
  SandboxProcessorCharge,
  SentEmail,
  Subscription,
  Transaction,
} from '../db/entities/index.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { initialSnapshot, type SubscriptionSnapshot } from '../domain/subscription.ts';
import { createSmtpMailer, type Mailer } from '../services/email/mailer.ts';
import type { RenewCycleInput, RenewCycleResult } from '../services/subscriptions/renew-cycle.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type SmtpCapture, startSmtpCapture } from './helpers/smtp.ts';

/**
 * renewCycle, the one local activity of a due billing cycle (services/subscriptions/renew-cycle.ts), on a
 * real PostgreSQL, the sandbox processor and a real SMTP server. A local activity runs again
 * after a crash or a timed-out workflow task, and may even overlap the run it replaces: run
 * again, and run concurrently, it must invoice, charge, record and email exactly once.
 */
describe('renewCycle activity', () => {
  let db: TestDatabase;
  let smtp: SmtpCapture;
  let mailer: Mailer;
  let activities: ReturnType<typeof createActivities>;
  const activityEnv = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
  const accountId = 'acct_renew';

  beforeAll(async () => {
    db = await createTestDatabase();
    smtp = await startSmtpCapture();
    mailer = createSmtpMailer(smtp.url, 'Billing <billing@test.example>');
    activities = createActivities({
      orm: db.orm,
      mailer,
      links: createCustomerLinks({ publicUrl: 'http://localhost', secret: 'test' }),
    });
    const em = db.orm.em.fork();
    const tenant = { accountId, livemode: false };
    em.create(Account, {
      id: accountId,
      email: 'owner@example.com',
      name: 'Renewals',
      type: 'business',
      status: 'active',
      settings: { currency: 'USD', timezone: 'UTC', language: 'en' },
    });
    em.create(Customer, {
      id: 'cus_r_visa',
      email: 'visa@example.com',
      name: 'Visa',
      paymentMethod: 'pm_card_visa',
      ...tenant,
    });
    em.create(Customer, {
      id: 'cus_r_declined',
      email: 'declined@example.com',
      paymentMethod: 'pm_card_chargeDeclined',
      ...tenant,
    });
    em.create(Customer, { id: 'cus_r_credit', email: 'credit@example.com', paymentMethod: 'pm_card_visa', ...tenant });
    await em.flush();
  });
  afterAll(async () => {
    mailer?.close();
    await smtp?.close();
    await db?.close();
  });

  /** What the workflow passes for cycle 0 of subscription `id` (as workflows/subscription.ts builds it). */
  function input(id: string, customerId: string, amount = 1500): RenewCycleInput {
    const base: SubscriptionSnapshot = {
      ...initialSnapshot({
        id,
        accountId,
        customerId,
        planId: 'plan_r',
        livemode: false,
        trialDays: 30,
        billingCycleMode: 'anniversary',
        pauseUntil: null,
        gracePeriodDays: null,
      }),
      status: 'trialing',
      version: 2,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    const cycle = {
      billingCycle: 0,
      currentPeriodStart: '2026-01-31T00:00:00.000Z',
      currentPeriodEnd: '2026-02-28T00:00:00.000Z',
      latestInvoiceId: null,
    };
    const next = { ...base, ...cycle, status: 'active' as const, updatedAt: '2026-01-31T00:00:00.000Z', version: 3 };
    return {
      invoice: {
        billingKey: `${id}:cycle:0`,
        subscriptionId: id,
        accountId,
        customerId,
        currency: 'USD',
        lines: [
          {
            description: 'Pro',
            amount,
            quantity: 1,
            period_start: cycle.currentPeriodStart,
            period_end: cycle.currentPeriodEnd,
            proration: false,
          },
        ],
        periodStart: cycle.currentPeriodStart,
        periodEnd: cycle.currentPeriodEnd,
        issuedAt: '2026-01-31T00:00:00.000Z',
        livemode: false,
      },
      charge: { idempotencyKey: `${id}:cycle:0:attempt:1`, accountId, customerId, currency: 'USD', livemode: false },
      paidAt: '2026-01-31T00:00:00.000Z',
      paid: { ...next, dunning: null },
      free: next,
    };
  }
  const renew = (i: RenewCycleInput) => activityEnv.run(activities.renewCycle, i) as Promise<RenewCycleResult>;

  /** Everything one cycle of subscription `id` wrote. */
  async function written(id: string) {
    const em = db.orm.em.fork();
    const invoices = await em.find(Invoice, { subscriptionId: id });
    const invoiceIds = invoices.map((i) => i.id);
    const key = `${id}:cycle:0:attempt:1`;
    const events = await em.find(Event, { accountId }, { orderBy: { createdAt: 'asc' } });
    const about = events.filter(
      (e) =>
        invoiceIds.includes(String(e.data.object.id)) ||
        e.data.object.id === id ||
        invoiceIds.includes(String(e.data.object.invoice)),
    );
    const receipts = await em.find(SentEmail, { dedupeKey: { $in: invoiceIds.map((i) => `${i}:receipt`) } });
    return {
      invoices: invoices.map((i) => ({ status: i.status, amountPaid: i.amountPaid, attemptCount: i.attemptCount })),
      charges: await em.count(Charge, { idempotencyKey: key }),
      processorCharges: await em.count(SandboxProcessorCharge, { idempotencyKey: key }),
      payments: await em.count(Transaction, { accountId, type: 'payment', invoiceId: { $in: invoiceIds } }),
      events: about.map((e) => e.type).sort(),
      receipts: receipts.length,
      projection: await em.findOne(
        Subscription,
        { id },
        { fields: ['status', 'version', 'latestInvoiceId', 'billingCycle'] },
      ),
    };
  }

  it('paid: one invoice, one charge, one payment, its events, the projection and one receipt; run again (a retry) it changes nothing', async () => {
    const before = smtp.messages.length;
    const first = await renew(input('sub_r1', 'cus_r_visa'));
    expect(first).toMatchObject({
      status: 'paid',
      invoice: { amountDue: 1500 },
      snapshot: { status: 'active', version: 3, billingCycle: 0 },
    });
    if (first.status !== 'paid') throw new Error('not paid');
    expect(first.snapshot.latestInvoiceId).toBe(first.invoice.invoiceId);
    const once = await written('sub_r1');
    expect(once).toMatchObject({
      invoices: [{ status: 'paid', amountPaid: 1500, attemptCount: 1 }],
      charges: 1,
      processorCharges: 1,
      payments: 1,
      receipts: 1,
      projection: { status: 'active', version: 3, latestInvoiceId: first.invoice.invoiceId, billingCycle: 0 },
    });
    expect(once.events).toEqual([
      'invoice.created',
      'invoice.paid',
      'payment.succeeded',
      'subscription.created',
      'transaction.created',
      'transaction.succeeded',
    ]);

    const again = await renew(input('sub_r1', 'cus_r_visa'));
    expect(again).toEqual(first);
    expect(await written('sub_r1')).toEqual(once);
    await smtp.waitFor(before + 1);
    expect(smtp.messages.length).toBe(before + 1);
  });

  it('run concurrently (a retry overlapping the attempt it replaces) still invoices, charges and emails once', async () => {
    const before = smtp.messages.length;
    const settled = await Promise.allSettled(Array.from({ length: 6 }, () => renew(input('sub_r2', 'cus_r_visa'))));
    // An attempt that finds the receipt being sent by another fails with a retryable error, and Temporal runs it again.
    for (const s of settled)
      if (s.status === 'rejected') expect(String(s.reason)).toContain('is being sent by another attempt');
    expect(settled.some((s) => s.status === 'fulfilled')).toBe(true);
    const results = await Promise.all(
      settled.map((s) => (s.status === 'fulfilled' ? s.value : renew(input('sub_r2', 'cus_r_visa')))),
    );
    expect(new Set(results.map((r) => r.invoice.invoiceId)).size).toBe(1);
    expect(results.every((r) => r.status === 'paid')).toBe(true);
    const after = await written('sub_r2');
    expect(after).toMatchObject({
      invoices: [{ status: 'paid', amountPaid: 1500 }],
      charges: 1,
      processorCharges: 1,
      payments: 1,
      receipts: 1,
      projection: { status: 'active', version: 3 },
    });
    expect(after.events).toEqual([
      'invoice.created',
      'invoice.paid',
      'payment.succeeded',
      'subscription.created',
      'transaction.created',
      'transaction.succeeded',
    ]);
    await smtp.waitFor(before + 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.messages.length).toBe(before + 1);
  });

  it('ownFunds: the paid money is handed to the workflow (pending, two days) and marked owned, so no availability workflow is needed; a retry answers the same', async () => {
    const first = await renew({ ...input('sub_r5', 'cus_r_visa'), ownFunds: true });
    if (first.status !== 'paid') throw new Error('not paid');
    expect(first.funds).toHaveLength(1);
    const [funds] = first.funds!;
    expect(funds!.availableAfterMs).toBeGreaterThan(2 * 86_400_000 - 60_000);
    expect(funds!.availableAfterMs).toBeLessThanOrEqual(2 * 86_400_000);
    const em = db.orm.em.fork();
    const payment = await em.findOneOrFail(Transaction, { accountId, type: 'payment', subscriptionId: 'sub_r5' });
    const pending = await em.find(BalanceTransaction, { source: payment.id });
    expect(pending.map((b) => ({ id: b.id, status: b.status, owned: b.workflowConfirmedAt !== null }))).toEqual([
      { id: funds!.balanceTransactionIds[0], status: 'pending', owned: true },
    ]);
    const again = await renew({ ...input('sub_r5', 'cus_r_visa'), ownFunds: true });
    expect(again.status === 'paid' && again.funds!.map((f) => f.balanceTransactionIds)).toEqual([
      funds!.balanceTransactionIds,
    ]);
    expect(await written('sub_r5')).toMatchObject({ charges: 1, payments: 1, receipts: 1 });
  });

  it('declined: the invoice stays open, nothing is projected, and the workflow gets the outcome; a retry answers the same', async () => {
    const first = await renew(input('sub_r3', 'cus_r_declined'));
    expect(first).toMatchObject({ status: 'unpaid', outcome: { status: 'failed', failureCode: 'card_declined' } });
    const again = await renew(input('sub_r3', 'cus_r_declined'));
    expect(again).toEqual(first);
    expect(await written('sub_r3')).toMatchObject({
      invoices: [{ status: 'open', amountPaid: 0, attemptCount: 1 }],
      charges: 1,
      processorCharges: 1,
      receipts: 0,
      projection: null,
    });
  });

  it('an invoice a credit covers is paid without a charge or a receipt', async () => {
    const result = await renew(input('sub_r4', 'cus_r_credit', -500));
    expect(result).toMatchObject({ status: 'paid', invoice: { amountDue: 0 }, snapshot: { status: 'active' } });
    expect(await written('sub_r4')).toMatchObject({
      invoices: [{ status: 'paid', amountPaid: 0 }],
      charges: 0,
      processorCharges: 0,
      payments: 0,
      receipts: 0,
      projection: { status: 'active', version: 3 },
    });
  });
});
