import { existsSync, mkdirSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { WorkflowNotFoundError } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createActivities } from '../activities/index.ts';
import {
  AccountBalance,
  BalanceTransaction,
  Coupon,
  Discount,
  Event,
  Export,
  IdempotencyKey,
  LedgerEntry,
  LoginAttempt,
  Payout,
  SandboxProcessorCharge,
  Transaction,
} from '../db/entities/index.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { derivedId, newId } from '../domain/ids.ts';
import { createSmtpMailer, type Mailer } from '../services/email/mailer.ts';
import { pruneExpiredExports } from '../services/exports/run.ts';
import { localExportStorage } from '../services/exports/storage.ts';
import { ensureMaintenanceWorkflow, maintenanceWorkflowId, pruneExpiredRows } from '../services/maintenance/sweeps.ts';
import { paymentChargeRequest } from '../services/money/payments.ts';
import { recordPaymentAttempt, settlePaymentAttempt } from '../services/money/record-payment-attempt.ts';
import { createPayout } from '../services/payouts/rail.ts';
import { SandboxProcessor } from '../services/processors/sandbox.ts';
import { discountEndWorkflowId } from '../workflows/discount-end.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const hour = 60 * minute;
const stuckAfterMs = 2 * minute;

/**
 * The gaps between a committed row and the workflow that should watch it: the API
 * process "crashes" after its commit (and, for a payment, after or before its
 * processor charge), and the maintenance reconciler finishes the job exactly once.
 */
describe('maintenance', () => {
  let engine: TestEngine;
  let mailer: Mailer;
  let activities: ReturnType<typeof createActivities>;
  let activityEnv: MockActivityEnvironment;
  let processor: SandboxProcessor;

  beforeAll(async () => {
    engine = await startTestEngine();
    mailer = createSmtpMailer(engine.mail.url, engine.config.mailFrom);
    activities = createActivities({
      orm: engine.db.orm,
      mailer,
      links: createCustomerLinks({ publicUrl: engine.config.publicUrl, secret: engine.config.auth.secret }),
    });
    // The activities as the worker runs them: Context.current().client and the task queue come from the activity context.
    activityEnv = new MockActivityEnvironment(
      { taskQueue: engine.taskQueue },
      { client: engine.env.client, logger: new DefaultLogger('WARN') },
    );
    processor = new SandboxProcessor(() => engine.db.orm.em.fork());
  });
  afterAll(async () => {
    await engine?.close();
    mailer?.close();
  });

  const em = () => engine.db.orm.em.fork();
  /** The tenant's default USD payout destination (a PayPal receiver), added once. */
  const ensureDestination = async () => {
    const added = await engine.call('POST', '/v1/bank_accounts', {
      type: 'paypal',
      account_holder_name: 'Maintenance',
      currency: 'USD',
      email: 'payouts@example.com',
    });
    if (added.status !== 201 && added.status !== 409) throw new Error(JSON.stringify(added.body));
  };
  const reconcilePayments = () => activityEnv.run(activities.reconcileStuckPayments, stuckAfterMs);
  const reconcilePayouts = () => activityEnv.run(activities.reconcileStuckPayouts, stuckAfterMs);
  /** Time passes after the crash (the reconciler only looks at rows older than 2 minutes of wall-clock time). */
  const backdate = (entity: typeof Transaction | typeof Payout, id: string, minutes: number) =>
    entity === Transaction
      ? em().nativeUpdate(Transaction, { id }, { createdAt: new Date(Date.now() - minutes * minute) })
      : em().nativeUpdate(Payout, { id }, { createdAt: new Date(Date.now() - minutes * minute) });
  const transaction = async (id: string) => (await engine.call('GET', `/v1/transactions/${id}`)).body;
  /**
   * Entries that moved money in or out for `id`. A payment's money arrives pending; its later pending → available
   * move (two more entries, when skipped time reaches available_on) only changes which balance holds it, and is not counted.
   */
  const entries = async (id: string) =>
    (await em().count(LedgerEntry, { transactionId: id })) -
    2 * (await em().count(BalanceTransaction, { source: id, type: 'payment', status: 'available' }));
  const processorCharges = (id: string) => em().count(SandboxProcessorCharge, { idempotencyKey: `${id}:payment` });
  const events = async (id: string) =>
    (await em().find(Event, { transactionId: id }, { orderBy: { id: 'asc' } })).map((e) => e.type);
  const workflowRun = async (id: string) => {
    try {
      const described = await engine.env.client.workflow.getHandle(id).describe();
      return { runId: described.runId, status: described.status.name, type: described.type };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    }
  };

  /**
   * POST /v1/transactions up to the crash: the pending row (as the API writes it), then
   * the processor charge with the API's key unless the crash came first. Then nothing more.
   */
  async function crashedPayment(
    paymentMethod: string,
    options: { charged?: boolean; amount?: number } = {},
  ): Promise<string> {
    const attempt = {
      accountId: engine.tenant.accountId,
      livemode: true,
      amount: options.amount ?? 4200,
      currency: 'USD',
      reference: null,
      metadata: {},
      paymentMethod,
    };
    const { transaction: pending } = await em().transactional((tx) =>
      recordPaymentAttempt(tx, attempt, { status: 'pending' }),
    );
    if (options.charged !== false) await processor.charge(paymentChargeRequest(pending));
    return pending.id;
  }

  it('starts the settlement workflow of a bank payment whose API died after the charge, once; it settles a day later', async () => {
    const id = await crashedPayment('pm_bank_pendingSettles');
    const fresh = await crashedPayment('pm_bank_pendingSettles', { amount: 1234 });
    await backdate(Transaction, id, 10);
    expect(await workflowRun(id)).toBeNull();

    const first = await reconcilePayments();
    // The fresh one (younger than 2 minutes) is the API's business still: not even looked at.
    expect(first).toEqual({ checked: 1, reconciled: 1, failed: 0 });
    const started = await workflowRun(id);
    expect(started).toMatchObject({ status: 'RUNNING', type: 'paymentSettlementWorkflow' });
    expect(await processorCharges(id)).toBe(1);
    expect((await transaction(id)).status).toBe('pending');
    expect(await workflowRun(fresh)).toBeNull();
    expect((await em().findOneOrFail(Transaction, { id: fresh })).workflowConfirmedAt).toBeNull();

    // Again: the row is marked, nothing is looked at.
    expect(await reconcilePayments()).toEqual({ checked: 0, reconciled: 0, failed: 0 });
    // And with the mark erased, the existing workflow is found and left alone: no new charge, no new run.
    await em().nativeUpdate(Transaction, { id }, { workflowConfirmedAt: null });
    expect(await reconcilePayments()).toEqual({ checked: 1, reconciled: 0, failed: 0 });
    expect(await workflowRun(id)).toEqual(started);
    expect(await processorCharges(id)).toBe(1);
    expect(await em().count(SandboxProcessorCharge, {})).toBe(2);

    // The fresh one is canceled, so it cannot age into a later test's run.
    expect((await engine.call('DELETE', `/v1/transactions/${fresh}`)).status).toBe(200);

    await engine.env.sleep(23 * hour);
    expect((await transaction(id)).status).toBe('pending');
    await engine.env.sleep(2 * hour);
    expect(await engine.env.client.workflow.getHandle(id).result()).toBe('succeeded');
    expect((await transaction(id)).status).toBe('succeeded');
    expect(await entries(id)).toBe(2);
    expect(await events(id)).toEqual(['transaction.created', 'transaction.succeeded', 'payment.succeeded']);
    expect(await workflowRun(id)).toEqual({ ...started, status: 'COMPLETED' });
  });

  it('finalizes a card payment whose API died after the charge, with its ledger entries exactly once', async () => {
    // A payment's money arrives pending (available two days later): the balance here is available + pending.
    const balance = async () => {
      const row = await em().findOne(AccountBalance, {
        accountId: engine.tenant.accountId,
        livemode: true,
        currency: 'USD',
      });
      return (row?.available ?? 0) + (row?.pending ?? 0);
    };
    const before = await balance();
    const id = await crashedPayment('pm_card_visa', { amount: 5100 });
    await backdate(Transaction, id, 3);
    expect(await entries(id)).toBe(0);

    expect(await reconcilePayments()).toEqual({ checked: 1, reconciled: 1, failed: 0 });
    const settled = await transaction(id);
    expect(settled).toMatchObject({ status: 'succeeded', amount: 5100, failure_code: null });
    expect(await entries(id)).toBe(2);
    expect(await balance()).toBe(before + 5100);
    // A card needs no workflow: none was started.
    expect(await workflowRun(id)).toBeNull();

    expect(await reconcilePayments()).toEqual({ checked: 0, reconciled: 0, failed: 0 });
    // The API and the reconciler racing to record the same outcome: the second changes nothing.
    const again = await settlePaymentAttempt(em(), id, { status: 'succeeded' });
    expect(again.status).toBe('succeeded');
    expect(await processorCharges(id)).toBe(1);
    expect(await entries(id)).toBe(2);
    expect(await balance()).toBe(before + 5100);
    expect(await events(id)).toEqual(['transaction.created', 'transaction.succeeded', 'payment.succeeded']);
  });

  it('charges a payment whose API died before the charge reached the processor (what the API would have done), once', async () => {
    const id = await crashedPayment('pm_card_mastercard', { charged: false, amount: 700 });
    await backdate(Transaction, id, 3);
    expect(await processorCharges(id)).toBe(0);
    expect(await reconcilePayments()).toEqual({ checked: 1, reconciled: 1, failed: 0 });
    expect(await reconcilePayments()).toEqual({ checked: 0, reconciled: 0, failed: 0 });
    expect(await processorCharges(id)).toBe(1);
    expect((await transaction(id)).status).toBe('succeeded');
    expect(await entries(id)).toBe(2);
  });

  it("records a declined card as failed with the processor's reason and no money moved", async () => {
    const id = await crashedPayment('pm_card_chargeDeclined');
    await backdate(Transaction, id, 3);
    expect(await reconcilePayments()).toEqual({ checked: 1, reconciled: 1, failed: 0 });
    expect(await transaction(id)).toMatchObject({
      status: 'failed',
      failure_code: 'card_declined',
      failure_message: 'Your card was declined.',
    });
    expect(await entries(id)).toBe(0);
    expect(await events(id)).toEqual(['transaction.created', 'transaction.failed', 'payment.failed']);
  });

  it('leaves alone a pending payment whose API started its workflow, and marks it so it is looked up once', async () => {
    const created = await engine.call('POST', '/v1/transactions', {
      account_id: engine.tenant.accountId,
      amount: 900,
      currency: 'USD',
      type: 'payment',
      payment_method: 'pm_bank_pendingFails',
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const started = await workflowRun(id);
    expect(started).toMatchObject({ status: 'RUNNING' });
    await backdate(Transaction, id, 60);
    expect(await reconcilePayments()).toEqual({ checked: 1, reconciled: 0, failed: 0 });
    expect(await reconcilePayments()).toEqual({ checked: 0, reconciled: 0, failed: 0 });
    expect(await workflowRun(id)).toEqual(started);
    expect(await processorCharges(id)).toBe(1);
    expect((await em().findOneOrFail(Transaction, { id })).workflowConfirmedAt).toBeInstanceOf(Date);
    await engine.env.sleep(25 * hour);
    expect(await engine.env.client.workflow.getHandle(id).result()).toBe('failed');
    expect(await transaction(id)).toMatchObject({ status: 'failed', failure_code: 'debit_failed' });
  });

  it('starts the payoutWorkflow of a payout whose API died after its commit, once; the payout is paid', async () => {
    const admin = { ...(await engine.admin()).headers, 'x-account-id': engine.tenant.accountId };
    expect(
      (
        await engine.call(
          'POST',
          '/v1/transactions',
          { account_id: engine.tenant.accountId, amount: 10_000, currency: 'USD', type: 'credit' },
          admin,
        )
      ).status,
    ).toBe(201);
    await ensureDestination();
    // POST /v1/payouts up to the crash: the pending payout with its ledger posting, committed.
    const payout = await createPayout(em(), {
      accountId: engine.tenant.accountId,
      livemode: true,
      amount: 2500,
      currency: 'USD',
      description: null,
    });
    // One the API started normally, as old: found and left alone.
    const normal = await engine.call('POST', '/v1/payouts', { amount: 1500, currency: 'USD' });
    expect(normal.status).toBe(201);
    const normalRun = await workflowRun(normal.body.id);
    expect(normalRun).toMatchObject({ status: 'RUNNING', type: 'payoutWorkflow' });
    await backdate(Payout, payout.id, 5);
    await backdate(Payout, normal.body.id, 5);
    expect(await workflowRun(payout.id)).toBeNull();

    expect(await reconcilePayouts()).toEqual({ checked: 2, reconciled: 1, failed: 0 });
    const started = await workflowRun(payout.id);
    expect(started).toMatchObject({ status: 'RUNNING', type: 'payoutWorkflow' });
    expect(await reconcilePayouts()).toEqual({ checked: 0, reconciled: 0, failed: 0 });
    await em().nativeUpdate(Payout, { id: payout.id }, { workflowConfirmedAt: null });
    // Checked again only while still pending: its restarted workflow sends it at once (its cancelable minute
    // ended long ago), so it may be in transit by now. Either way its workflow is not started twice.
    const again = (await reconcilePayouts()) as { reconciled: number; failed: number };
    expect({ reconciled: again.reconciled, failed: again.failed }).toEqual({ reconciled: 0, failed: 0 });
    expect(await workflowRun(payout.id)).toEqual(started);
    expect(await workflowRun(normal.body.id)).toEqual(normalRun);

    // Pending 60 s, then in transit for a day.
    await engine.env.sleep(61_000 + 24 * hour);
    expect(await engine.env.client.workflow.getHandle(payout.id).result()).toBe('paid');
    expect((await engine.call('GET', `/v1/payouts/${payout.id}`)).body).toMatchObject({ status: 'paid', amount: 2500 });
    expect(await engine.env.client.workflow.getHandle(normal.body.id).result()).toBe('paid');
    // The money left once: one posting (two entries) per payout.
    expect(await entries(payout.id)).toBe(2);
  });

  it('starts the end timer of a customer discount whose API died after its commit, once; the discount ends at its end', async () => {
    const customer = await engine.call('POST', '/v1/customers', { email: 'discount-timer@example.com' });
    const coupon = await engine.call('POST', '/v1/coupons', {
      percent_off: 10,
      duration: 'repeating',
      duration_in_months: 1,
    });
    expect([customer.status < 300, coupon.status < 300]).toEqual([true, true]);
    // POST /v1/customers/{id}/discount up to the crash: the row committed five minutes ago, no timer started.
    // Its end lies ahead of the test server's time (earlier cases skipped it on), so only the timer ends it.
    const created = new Date(Date.now() - 5 * minute);
    const end = new Date(Math.max(Date.now(), await engine.env.currentTimeMs()) + 40 * 24 * hour);
    const id = derivedId('discount', `maintenance-${Date.now()}`, created);
    const db = em();
    db.create(Discount, {
      id,
      accountId: engine.tenant.accountId,
      livemode: true,
      couponKey: (await db.findOneOrFail(Coupon, { id: coupon.body.id, accountId: engine.tenant.accountId })).key,
      promotionCodeId: null,
      customerId: customer.body.id,
      subscriptionId: null,
      invoiceId: null,
      start: created,
      end,
      endedAt: null,
      firstInvoiceId: null,
      createdAt: created,
    });
    await db.flush();
    const workflowId = discountEndWorkflowId(id);
    expect(await workflowRun(workflowId)).toBeNull();

    const reconcile = () => activityEnv.run(activities.reconcileMissingDiscountTimers, minute);
    expect(await reconcile()).toEqual({ checked: 1, reconciled: 1, failed: 0 });
    const started = await workflowRun(workflowId);
    expect(started).toMatchObject({ status: 'RUNNING', type: 'discountEndWorkflow' });
    // The next run finds the timer and starts nothing.
    expect(await reconcile()).toEqual({ checked: 1, reconciled: 0, failed: 0 });
    expect(await workflowRun(workflowId)).toEqual(started);
    expect((await em().findOneOrFail(Discount, { id })).endedAt).toBeNull();

    expect(await engine.env.client.workflow.getHandle(workflowId).result()).toEqual({ ended: true });
    expect((await em().findOneOrFail(Discount, { id })).endedAt).toEqual(end);
    expect((await em().find(Event, { type: 'customer.discount.deleted' })).map((e) => e.data.object.id)).toContain(id);
    // Ended: no longer looked at.
    expect(await reconcile()).toEqual({ checked: 0, reconciled: 0, failed: 0 });
  });

  it('prunes expired idempotency keys and login attempts older than the throttle window, in batches, and keeps the rest', async () => {
    const windowSeconds = engine.config.auth.loginThrottleWindowSeconds;
    const now = Date.now();
    const keys = em();
    for (const [n, expiresIn] of [
      [1, -hour],
      [2, -minute],
      [3, -1000],
      [4, hour],
    ] as const) {
      keys.create(IdempotencyKey, {
        scope: 'test:maintenance',
        key: `key-${n}`,
        requestHash: 'h',
        state: 'completed',
        responseStatus: 200,
        responseBody: '{}',
        createdAt: new Date(now - 25 * hour),
        expiresAt: new Date(now + expiresIn),
      });
    }
    for (const [n, age] of [
      [1, windowSeconds * 1000 + minute],
      [2, windowSeconds * 1000 + hour],
      [3, 30 * 24 * hour],
      [4, windowSeconds * 1000 - minute],
    ] as const) {
      keys.create(LoginAttempt, {
        email: `pruned-${n}@example.com`,
        ip: '203.0.113.9',
        succeeded: false,
        createdAt: new Date(now - age),
      });
    }
    await keys.flush();
    const attemptsBefore = await em().count(LoginAttempt, {});
    const keysBefore = await em().count(IdempotencyKey, {});

    // Two rows per statement: three expired rows take two statements each.
    expect(await pruneExpiredRows(em(), windowSeconds, 2)).toEqual({ idempotencyKeys: 3, loginAttempts: 3 });
    expect((await em().find(IdempotencyKey, { scope: 'test:maintenance' })).map((k) => k.key)).toEqual(['key-4']);
    expect((await em().find(LoginAttempt, { email: { $like: 'pruned-%' } })).map((a) => a.email)).toEqual([
      'pruned-4@example.com',
    ]);
    expect(await em().count(LoginAttempt, {})).toBe(attemptsBefore - 3);
    expect(await em().count(IdempotencyKey, {})).toBe(keysBefore - 3);
    // The activity the workflow runs: nothing left to prune.
    expect(await activityEnv.run(activities.pruneExpiredRows, windowSeconds)).toEqual({
      idempotencyKeys: 0,
      loginAttempts: 0,
    });
  });

  it('deletes the files of expired exports and abandoned temporary files, in batches, once', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'exports-prune-'));
    const storage = localExportStorage(root);
    const now = new Date();
    const rows = Array.from({ length: 5 }, (_, i) => ({
      id: newId('export'),
      accountId: engine.tenant.accountId,
      livemode: true,
      resource: 'transactions',
      format: 'csv',
      timeZone: 'UTC',
      status: 'succeeded',
      rowsWritten: 1,
      rowCount: 1,
      fileSize: 2,
      // Two are still within their retention.
      expiresAt: new Date(now.getTime() + (i < 3 ? -hour : hour)),
      createdAt: now,
      updatedAt: now,
    }));
    await em().insertMany(Export, rows as never);
    for (const row of rows) writeFileSync(path.join(root, `${row.id}.csv`), 'x\n');
    // A writer that died an hour and a half ago, and one writing now.
    writeFileSync(path.join(root, 'exp_dead.csv.abc.partial'), 'half');
    utimesSync(
      path.join(root, 'exp_dead.csv.abc.partial'),
      new Date(now.getTime() - 90 * minute),
      new Date(now.getTime() - 90 * minute),
    );
    writeFileSync(path.join(root, 'exp_live.csv.def.partial'), 'half');
    // Batches of 2: the loop goes on until none is due.
    expect(await pruneExpiredExports(em(), storage, 2, now)).toEqual({ files: 3, temporary: 1 });
    expect(readdirSync(root).sort()).toEqual(
      [...rows.slice(3).map((r) => `${r.id}.csv`), 'exp_live.csv.def.partial'].sort(),
    );
    for (const row of rows)
      expect((await em().findOneOrFail(Export, { id: row.id })).status).toBe(
        rows.indexOf(row) < 3 ? 'expired' : 'succeeded',
      );
    const api = await engine.call('GET', `/v1/exports/${rows[0]!.id}`);
    expect(api.body).toMatchObject({ status: 'expired', file: null, url: null });
    expect((await engine.call('GET', `/v1/exports/${rows[0]!.id}/file`)).status).toBe(410);
    // Again: nothing more to do.
    expect(await pruneExpiredExports(em(), storage, 2, now)).toEqual({ files: 0, temporary: 0 });
  });

  it('runs as one workflow per task queue, on its timer in skipped time, reconciles and prunes, and continues as new', async () => {
    const client = engine.env.client;
    const settings = {
      loginThrottleWindowSeconds: engine.config.auth.loginThrottleWindowSeconds,
      intervalMs: 10 * minute,
      runsPerExecution: 2,
    };
    // Three workers booting at once: one workflow.
    const boots = await Promise.all(
      [1, 2, 3].map(() => ensureMaintenanceWorkflow({ temporal: { client, taskQueue: engine.taskQueue } }, settings)),
    );
    expect(new Set(boots.map((b) => b.workflowId))).toEqual(new Set([maintenanceWorkflowId(engine.taskQueue)]));
    expect(new Set(boots.map((b) => b.runId)).size).toBe(1);
    const handle = client.workflow.getHandle(maintenanceWorkflowId(engine.taskQueue));
    const details = async () =>
      (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
    const firstRun = boots[0]!.runId;
    await eventually(details, (d) =>
      /^Last run at \S+ \(run 1\): reconciled 0 payments, 0 payouts, 0 availability timers, pruned 0 rows/.test(d),
    );

    // Crashes after that run: a payout without its workflow, a card payment never finalized, an expired key.
    await ensureDestination();
    const payout = await createPayout(em(), {
      accountId: engine.tenant.accountId,
      livemode: true,
      amount: 300,
      currency: 'USD',
      description: null,
    });
    await backdate(Payout, payout.id, 5);
    const payment = await crashedPayment('pm_card_visa', { amount: 800 });
    await backdate(Transaction, payment, 5);
    const keys = em();
    keys.create(IdempotencyKey, {
      scope: 'test:maintenance',
      key: 'timer',
      requestHash: 'h',
      state: 'completed',
      responseStatus: 200,
      responseBody: '{}',
      createdAt: new Date(Date.now() - 25 * hour),
      expiresAt: new Date(Date.now() - hour),
    });
    await keys.flush();
    // An export whose file has expired (and one that has not), with their files in the worker's storage.
    const exportsDir = path.join(engine.config.dataDir, 'exports');
    mkdirSync(exportsDir, { recursive: true });
    const exportRow = (id: string, expiresAt: Date) => ({
      id,
      accountId: engine.tenant.accountId,
      livemode: true,
      resource: 'transactions',
      format: 'csv',
      timeZone: 'UTC',
      status: 'succeeded',
      rowsWritten: 1,
      rowCount: 1,
      fileSize: 2,
      expiresAt,
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const [expiredExport, liveExport] = [newId('export'), newId('export')];
    await em().insertMany(Export, [
      exportRow(expiredExport, new Date(Date.now() - 1000)),
      exportRow(liveExport, new Date(Date.now() + 7 * 24 * hour)),
    ] as never);
    for (const id of [expiredExport, liveExport]) writeFileSync(path.join(exportsDir, `${id}.csv`), 'x\n');

    // Nothing happens before the timer; then the next run (on the timer, in skipped time) takes them over.
    expect(await workflowRun(payout.id)).toBeNull();
    await engine.env.sleep(10 * minute + 1000);
    await eventually(
      () => workflowRun(payout.id),
      (run) => run !== null,
      20_000,
    );
    await eventually(
      () => transaction(payment),
      (t) => t.status === 'succeeded',
      20_000,
    );
    expect(await entries(payment)).toBe(2);
    expect(await em().count(IdempotencyKey, { scope: 'test:maintenance', key: 'timer' })).toBe(0);
    expect(existsSync(path.join(exportsDir, `${expiredExport}.csv`))).toBe(false);
    expect(existsSync(path.join(exportsDir, `${liveExport}.csv`))).toBe(true);
    expect((await em().findOneOrFail(Export, { id: expiredExport })).status).toBe('expired');
    expect((await em().findOneOrFail(Export, { id: liveExport })).status).toBe('succeeded');
    // The details are written once the run's last step is done (the export files go before it).
    await eventually(
      details,
      (d) => /\(run 2\): .*deleted 1 expired export files, 0 abandoned temporary files; next at/.test(d),
      20_000,
    );
    expect((await handle.describe()).runId).toBe(firstRun);

    // runsPerExecution 2: after the second run's wait, the workflow continues as new and runs at once (run 3).
    await engine.env.sleep(10 * minute + 1000);
    await eventually(
      async () => (await handle.describe()).runId,
      (runId) => runId !== firstRun,
      20_000,
    );
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await eventually(
      details,
      (d) =>
        /\(run 3\): reconciled 0 payments, 0 payouts, 0 availability timers, pruned 0 rows \(0 idempotency keys, 0 login attempts\); checked \d+ subscriptions, 0 marked canceled \(workflow closed\); deleted 0 expired export files, 0 abandoned temporary files; next at /.test(
          d,
        ),
      20_000,
    );
    // The payout's own workflow ran meanwhile (pending 60 s, then sent: in transit for a day); the payment was charged once.
    await eventually(
      async () => (await engine.call('GET', `/v1/payouts/${payout.id}`)).body.status,
      (status) => status === 'in_transit',
      20_000,
    );
    expect(await processorCharges(payment)).toBe(1);

    // A worker booted with a changed configuration hands it over: a run at once, then the new interval.
    const third = await ensureMaintenanceWorkflow(
      { temporal: { client, taskQueue: engine.taskQueue } },
      { ...settings, intervalMs: 30 * minute },
    );
    expect(third.runId).toBe((await handle.describe()).runId);
    const latest = await eventually(details, (d) => /\(run 4\)/.test(d), 20_000);
    const [, lastAt, nextAt] = /^Last run at (\S+) .*; next at (\S+)\.$/.exec(latest)!;
    expect(Date.parse(nextAt!) - Date.parse(lastAt!)).toBeGreaterThanOrEqual(30 * minute - 1000);
    expect(Date.parse(nextAt!) - Date.parse(lastAt!)).toBeLessThanOrEqual(30 * minute + 1000);
  });
});
