import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, SandboxProcessorRefund, Transaction } from '../db/entities/index.ts';
import { reconcileMissingAvailability, reconcileStuckPayments } from '../services/maintenance/sweeps.ts';
import { makeFundsAvailable, withBalanceUpdatesLast } from '../services/money/ledger.ts';
import { reserveRefund } from '../services/money/refunds.ts';
import { newTransactionFields, recordSucceededTransaction } from '../services/money/transactions.ts';
import { sandboxProcessors } from '../services/processors/index.ts';
import { SandboxProcessor } from '../services/processors/sandbox.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';

/**
 * Refunds of a charge and the available/pending balance, through the API (no
 * worker: the availability timers are started but not run; tests move money with
 * the activity's own function, makeFundsAvailable).
 */
describe('refunds of a charge and balances', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  const call = (tenant: Tenant, method: string, path: string, body?: unknown) =>
    engine.call(method, path, body, tenant.headers);
  // In live mode only a platform admin may credit (docs/security.md): credits go through the admin, naming the account.
  const create = async (tenant: Tenant, body: Record<string, unknown>) =>
    body.type === 'credit'
      ? engine.call(
          'POST',
          '/v1/transactions',
          { account_id: tenant.accountId, currency: 'USD', ...body },
          { ...(await engine.admin()).headers, 'x-account-id': tenant.accountId },
        )
      : call(tenant, 'POST', '/v1/transactions', { account_id: tenant.accountId, currency: 'USD', ...body });
  const pay = async (tenant: Tenant, amount: number, method = 'pm_card_visa') => {
    const paid = await create(tenant, { amount, type: 'payment', payment_method: method });
    expect(paid.status).toBe(201);
    return paid.body;
  };
  const refund = (tenant: Tenant, source: string, amount: number) =>
    create(tenant, { amount, type: 'refund', source_transaction: source });
  const balance = async (tenant: Tenant) => {
    const body = (await call(tenant, 'GET', '/v1/balance')).body;
    const of = (list: { amount: number; currency: string }[]) => list.find((m) => m.currency === 'USD')?.amount ?? 0;
    return { available: of(body.available), pending: of(body.pending) };
  };
  const paymentBtxn = async (transactionId: string) =>
    engine.db.orm.em.fork().findOneOrFail(BalanceTransaction, { source: transactionId, type: 'payment' });
  /** The books of an account: every entry sums to zero, and the cached balance equals its entries per ledger account. */
  async function expectBalancedBooks(tenant: Tenant) {
    const sql = engine.db.orm.em.fork().getConnection();
    const sums = await sql.execute<{ ledger_account: string; v: string }[]>(
      `select ledger_account, sum(amount)::text as v from ledger_entries where account_id = ? group by ledger_account`,
      [tenant.accountId],
    );
    const by = Object.fromEntries(sums.map((r) => [r.ledger_account, Number(r.v)]));
    expect((by.available ?? 0) + (by.pending ?? 0) + (by.external ?? 0)).toBe(0);
    expect(await balance(tenant)).toEqual({ available: by.available ?? 0, pending: by.pending ?? 0 });
  }

  it('a payment arrives pending; partial refunds draw on its pending money first, then available; never more than paid', async () => {
    const tenant = await engine.signUp();
    const payment = await pay(tenant, 5000);
    expect(payment).toMatchObject({
      status: 'succeeded',
      amount_refunded: 0,
      refunded: false,
      processor_charge_id: expect.stringMatching(/^sbch_/),
    });
    expect(await balance(tenant)).toEqual({ available: 0, pending: 5000 });
    const btxn = await paymentBtxn(payment.id);
    expect(btxn).toMatchObject({ status: 'pending', amount: 5000, fee: 0, net: 5000 });
    expect(btxn.availableOn.getTime() - btxn.createdAt.getTime()).toBeGreaterThanOrEqual(2 * 86_400_000 - 1000);

    // A plain refund is judged on the available balance: the pending money does not count.
    const plain = await create(tenant, { amount: 100, type: 'refund' });
    expect(plain.status).toBe(402);
    expect(plain.body.error).toBe('insufficient_funds');

    // A refund of the charge takes its own pending money.
    const first = await refund(tenant, payment.id, 2000);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      type: 'refund',
      status: 'succeeded',
      amount: 2000,
      source_transaction: payment.id,
    });
    expect(await balance(tenant)).toEqual({ available: 0, pending: 3000 });
    expect((await call(tenant, 'GET', `/v1/transactions/${payment.id}`)).body).toMatchObject({
      amount_refunded: 2000,
      refunded: false,
    });

    // Available at available_on: only what the refund left of it.
    expect(await makeFundsAvailable(engine.db.orm.em.fork(), btxn.id)).toBe(true);
    expect(await makeFundsAvailable(engine.db.orm.em.fork(), btxn.id)).toBe(false);
    expect(await balance(tenant)).toEqual({ available: 3000, pending: 0 });

    // More than what is left: refused, with the remaining amount, and nothing written.
    const over = await refund(tenant, payment.id, 3001);
    expect(over.status).toBe(400);
    expect(over.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('left to refund') });
    expect(over.body.message).toContain(': 3000 ');
    expect(await engine.db.orm.em.fork().count(Transaction, { accountId: tenant.accountId, type: 'refund' })).toBe(1);

    // The rest, from available: the payment is refunded in full.
    const rest = await refund(tenant, payment.id, 3000);
    expect(rest.body).toMatchObject({ status: 'succeeded', amount: 3000 });
    expect((await call(tenant, 'GET', `/v1/transactions/${payment.id}`)).body).toMatchObject({
      amount_refunded: 5000,
      refunded: true,
    });
    expect(await balance(tenant)).toEqual({ available: 0, pending: 0 });
    expect((await refund(tenant, payment.id, 1)).body.message).toContain(': 0 ');

    // The events: the refunds' own, and payment.refunded on the payment (transaction_id = the payment).
    const events = (await call(tenant, 'GET', '/v1/events?type=payment.refunded')).body.data;
    expect(events).toHaveLength(2);
    expect(events.map((e: { transaction_id: string }) => e.transaction_id)).toEqual([payment.id, payment.id]);
    expect(events[0].data.object).toMatchObject({ id: payment.id, amount_refunded: 5000, refunded: true });
    const refundEvents = (await call(tenant, 'GET', '/v1/events?type=transaction.succeeded')).body.data.filter(
      (e: { transaction_id: string }) => e.transaction_id === rest.body.id,
    );
    expect(refundEvents).toHaveLength(1);
    await expectBalancedBooks(tenant);
  });

  it('a refund of one charge takes its pending money, not another payment’s', async () => {
    const tenant = await engine.signUp();
    const older = await pay(tenant, 4000);
    await makeFundsAvailable(engine.db.orm.em.fork(), (await paymentBtxn(older.id)).id);
    const newer = await pay(tenant, 1000);
    expect(await balance(tenant)).toEqual({ available: 4000, pending: 1000 });
    // The older payment's money is available: its refund comes from available, the newer one's pending money stays.
    expect((await refund(tenant, older.id, 1000)).status).toBe(201);
    expect(await balance(tenant)).toEqual({ available: 3000, pending: 1000 });
    expect((await refund(tenant, newer.id, 400)).status).toBe(201);
    expect(await balance(tenant)).toEqual({ available: 3000, pending: 600 });
    await makeFundsAvailable(engine.db.orm.em.fork(), (await paymentBtxn(newer.id)).id);
    expect(await balance(tenant)).toEqual({ available: 3600, pending: 0 });
    await expectBalancedBooks(tenant);
  });

  it('refuses what cannot be refunded', async () => {
    const tenant = await engine.signUp();
    const other = await engine.signUp();
    const declined = await pay(tenant, 900, 'pm_card_chargeDeclined');
    expect(declined).toMatchObject({ status: 'failed', processor_charge_id: expect.stringMatching(/^sbch_/) });
    expect((await refund(tenant, declined.id, 100)).body).toEqual({
      error: 'invalid_request',
      message: expect.stringContaining('succeeded payment'),
    });
    const credit = (await create(tenant, { amount: 500, type: 'credit' })).body;
    expect((await refund(tenant, credit.id, 100)).body.error).toBe('invalid_request');
    const theirs = await pay(other, 700);
    expect((await refund(tenant, theirs.id, 100)).status).toBe(404);
    expect((await create(tenant, { amount: 100, type: 'credit', source_transaction: credit.id })).body.error).toBe(
      'invalid_request',
    );
    await expectBalancedBooks(tenant);
  });

  it('concurrent refunds of one payment never exceed it', async () => {
    const tenant = await engine.signUp();
    const payment = await pay(tenant, 5000);
    const answers = await Promise.all(Array.from({ length: 10 }, () => refund(tenant, payment.id, 1000)));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(5);
    expect(answers.filter((a) => a.status === 400).every((a) => a.body.error === 'invalid_request')).toBe(true);
    expect((await call(tenant, 'GET', `/v1/transactions/${payment.id}`)).body).toMatchObject({
      amount_refunded: 5000,
      refunded: true,
    });
    expect(await balance(tenant)).toEqual({ available: 0, pending: 0 });
    await expectBalancedBooks(tenant);
  });

  it('the sandbox processor refunds once per key and never more than the charge', async () => {
    const processor = new SandboxProcessor(() => engine.db.orm.em.fork());
    const charge = await processor.charge({
      idempotencyKey: `sandbox-refund-${Date.now()}`,
      amount: 1000,
      currency: 'USD',
      paymentMethod: 'pm_card_visa',
      description: 'x',
    });
    const key = `r-${charge.processorChargeId}`;
    const first = await processor.refund({
      idempotencyKey: key,
      processorChargeId: charge.processorChargeId,
      amount: 600,
      currency: 'USD',
    });
    expect(first.status).toBe('succeeded');
    expect(
      await processor.refund({
        idempotencyKey: key,
        processorChargeId: charge.processorChargeId,
        amount: 600,
        currency: 'USD',
      }),
    ).toEqual(first);
    expect(
      await processor.refund({
        idempotencyKey: `${key}-2`,
        processorChargeId: charge.processorChargeId,
        amount: 401,
        currency: 'USD',
      }),
    ).toMatchObject({ status: 'failed', failureCode: 'amount_too_large' });
    expect(
      await processor.refund({
        idempotencyKey: `${key}-3`,
        processorChargeId: charge.processorChargeId,
        amount: 400,
        currency: 'USD',
      }),
    ).toMatchObject({ status: 'succeeded' });
  });

  it('balance transactions: listed newest first with filters, one by id, only the account’s own; payouts take from available', async () => {
    const tenant = await engine.signUp();
    const other = await engine.signUp();
    const payment = await pay(tenant, 3000);
    const credit = (await create(tenant, { amount: 2000, type: 'credit' })).body;
    expect(
      (
        await call(tenant, 'POST', '/v1/bank_accounts', {
          type: 'wire',
          account_holder_name: 'T',
          currency: 'USD',
          bic: 'CHASUS33',
          account_number: '12345678',
        })
      ).status,
    ).toBe(201);
    // A payout is judged on the available balance: the pending payment does not count.
    expect((await call(tenant, 'POST', '/v1/payouts', { amount: 2001, currency: 'USD' })).status).toBe(402);
    const payout = (await call(tenant, 'POST', '/v1/payouts', { amount: 1500, currency: 'USD' })).body;
    expect(payout.balance_transaction).toMatch(/^btxn_/);
    expect(await balance(tenant)).toEqual({ available: 500, pending: 3000 });

    const list = (await call(tenant, 'GET', '/v1/balance_transactions')).body;
    expect(list).toMatchObject({ object: 'list', has_more: false });
    expect(
      list.data.map((b: { type: string; amount: number; status: string }) => [b.type, b.amount, b.status]),
    ).toEqual([
      ['payout', -1500, 'available'],
      ['credit', 2000, 'available'],
      ['payment', 3000, 'pending'],
    ]);
    expect(list.data[0]).toMatchObject({
      id: payout.balance_transaction,
      object: 'balance_transaction',
      source: payout.id,
      fee: 0,
      net: -1500,
      currency: 'USD',
      livemode: true,
    });
    expect(
      (await call(tenant, 'GET', '/v1/balance_transactions?type=payment')).body.data.map(
        (b: { source: string }) => b.source,
      ),
    ).toEqual([payment.id]);
    expect((await call(tenant, 'GET', `/v1/balance_transactions?source=${credit.id}`)).body.data).toHaveLength(1);
    expect((await call(tenant, 'GET', '/v1/balance_transactions?currency=EUR')).body.data).toEqual([]);
    expect((await call(tenant, 'GET', '/v1/balance_transactions?created[gte]=2999-01-01T00:00:00Z')).body.data).toEqual(
      [],
    );
    expect((await call(tenant, 'GET', '/v1/balance_transactions?date_to=2000-01-01T00:00:00Z')).body.data).toEqual([]);
    const page = (await call(tenant, 'GET', `/v1/balance_transactions?limit=1&starting_after=${list.data[0].id}`)).body;
    expect(page).toMatchObject({ has_more: true, data: [{ id: list.data[1].id }] });
    expect((await call(tenant, 'GET', `/v1/balance_transactions/${list.data[2].id}`)).body).toEqual(list.data[2]);
    expect((await call(other, 'GET', `/v1/balance_transactions/${list.data[2].id}`)).status).toBe(404);
    expect((await call(other, 'GET', '/v1/balance_transactions')).body.data).toEqual([]);
    expect((await call(other, 'GET', '/v1/balance')).body).toEqual({
      object: 'balance',
      available: [],
      pending: [],
      livemode: true,
    });
    await expectBalancedBooks(tenant);
  });

  it('money in held to the end of its transaction (withBalanceUpdatesLast) is there for money out in that transaction, and lands once', async () => {
    const tenant = await engine.signUp();
    const em = engine.db.orm.em.fork();
    const movement = (type: 'credit' | 'refund', amount: number) =>
      newTransactionFields(em, {
        accountId: tenant.accountId,
        livemode: true,
        amount,
        currency: 'USD',
        type,
        reference: null,
        metadata: {},
        paymentMethod: null,
      });
    const [credit, moreCredit, refund] = [
      await movement('credit', 5000),
      await movement('credit', 700),
      await movement('refund', 3000),
    ];
    const balanceRow = (tx: typeof em) =>
      tx
        .getConnection()
        .execute<
          { available: string }[]
        >(`select available from account_balances where account_id = ? and livemode = true and currency = 'USD'`, [tenant.accountId], 'all', tx.getTransactionContext());
    await em.transactional((tx) =>
      withBalanceUpdatesLast(tx, async () => {
        await recordSucceededTransaction(tx, credit);
        await recordSucceededTransaction(tx, moreCredit);
        expect(await balanceRow(tx)).toEqual([]); // held: the row is not touched (nor locked) yet
        // Money out in the same transaction decides on the held money too: without it, 3000 would be refused.
        await recordSucceededTransaction(tx, refund);
      }),
    );
    expect((await call(tenant, 'GET', '/v1/balance')).body.available).toEqual([{ amount: 2700, currency: 'USD' }]);
    await expectBalancedBooks(tenant);
  });

  it('the maintenance reconciler starts the availability workflow a crash never started, once', async () => {
    const tenant = await engine.signUp();
    const em = engine.db.orm.em.fork();
    // A payment recorded by a process that died before starting its availability workflow.
    const fields = await newTransactionFields(em, {
      accountId: tenant.accountId,
      livemode: true,
      amount: 700,
      currency: 'USD',
      type: 'payment',
      reference: null,
      metadata: {},
      paymentMethod: 'pm_card_visa',
    });
    const { transaction: payment } = await em.transactional((tx) =>
      recordSucceededTransaction(tx, fields, { delayMs: 3_600_000 }),
    );
    const btxn = await paymentBtxn(payment.id);
    const client = engine.env.client;
    const none = await reconcileMissingAvailability(
      { temporal: { client, taskQueue: engine.taskQueue } },
      engine.db.orm.em.fork(),
      60_000,
    );
    expect(none.reconciled).toBe(0); // not a minute old yet
    await em
      .getConnection()
      .execute(`update balance_transactions set created_at = created_at - interval '2 minutes' where id = ?`, [
        btxn.id,
      ]);
    const result = await reconcileMissingAvailability(
      { temporal: { client, taskQueue: engine.taskQueue } },
      engine.db.orm.em.fork(),
      60_000,
    );
    expect(result).toMatchObject({ reconciled: 1, failed: 0 });
    const described = await client.workflow.getHandle(btxn.id).describe();
    expect(described.type).toBe('fundsAvailabilityWorkflow');
    expect(
      (
        await reconcileMissingAvailability(
          { temporal: { client, taskQueue: engine.taskQueue } },
          engine.db.orm.em.fork(),
          60_000,
        )
      ).checked,
    ).toBe(0);
  });
});

describe('a refund left pending by a crash', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it('is finished by the maintenance reconciler with the same processor key, once', async () => {
    const tenant = engine.tenant;
    const payment = (
      await engine.call('POST', '/v1/transactions', {
        account_id: tenant.accountId,
        amount: 3000,
        currency: 'USD',
        type: 'payment',
        payment_method: 'pm_card_visa',
      })
    ).body;
    const em = engine.db.orm.em.fork();
    const fields = await newTransactionFields(em, {
      accountId: tenant.accountId,
      livemode: true,
      amount: 1200,
      currency: 'USD',
      type: 'refund',
      reference: null,
      metadata: {},
      paymentMethod: null,
    });
    // Step 1 committed, then the process died before the processor's refund.
    const reserved = await reserveRefund(em, fields, {
      sourceTransactionId: payment.id,
      scope: { accountId: tenant.accountId, livemode: true },
    });
    expect(reserved.status).toBe('pending');
    // Its money is reserved: it cannot be canceled meanwhile.
    expect((await engine.call('DELETE', `/v1/transactions/${reserved.id}`)).body.error).toBe('not_cancellable');
    await em
      .getConnection()
      .execute(`update transactions set created_at = created_at - interval '5 minutes' where id = ?`, [reserved.id]);
    const processors = sandboxProcessors(() => engine.db.orm.em.fork());
    const result = await reconcileStuckPayments(
      { processors, temporal: { client: engine.env.client, taskQueue: engine.taskQueue } },
      engine.db.orm.em.fork(),
      60_000,
    );
    expect(result).toMatchObject({ reconciled: 1, failed: 0 });
    expect((await engine.call('GET', `/v1/transactions/${reserved.id}`)).body).toMatchObject({
      status: 'succeeded',
      source_transaction: payment.id,
    });
    expect(
      await engine.db.orm.em.fork().count(SandboxProcessorRefund, { idempotencyKey: `${reserved.id}:refund` }),
    ).toBe(1);
    expect(
      (
        await reconcileStuckPayments(
          { processors, temporal: { client: engine.env.client, taskQueue: engine.taskQueue } },
          engine.db.orm.em.fork(),
          60_000,
        )
      ).checked,
    ).toBe(0);
    expect((await engine.call('GET', `/v1/transactions/${payment.id}`)).body.amount_refunded).toBe(1200);
  });
});
