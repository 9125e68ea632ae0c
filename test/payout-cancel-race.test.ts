/**
 * Issue #24: a cancel landing as the rail takes a payout both paid it and gave its
 * money back. The claim (services/payouts/rail.ts claimForRail) and the cancel are now
 * one decision under the payout's row lock. These tests cancel at many offsets
 * around the hand-off, inside the rail's own call, and after a worker died between
 * the claim and the rail; every payout must end either canceled with no transfer,
 * or sent with no money back, and available balance + sent = credited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, Payout, SandboxPayoutTransfer } from '../db/entities/index.ts';
import { payoutPendingMs } from '../domain/payouts.ts';
import { createPayout, createSandboxPayoutRail, type PayoutRail, submitPayout } from '../services/payouts/rail.ts';
import { startCrashingWorker } from './helpers/crashing-worker.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('canceling a payout as the rail takes it', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  /** A fresh account with `credited` on its available USD balance and a default USD bank account. */
  async function fundedTenant(credited: number) {
    const tenant = await engine.signUp();
    const admin = { ...(await engine.admin()).headers, 'x-account-id': tenant.accountId };
    expect(
      (
        await engine.call(
          'POST',
          '/v1/transactions',
          { account_id: tenant.accountId, amount: credited, currency: 'USD', type: 'credit' },
          admin,
        )
      ).status,
    ).toBe(201);
    const bank = await engine.call(
      'POST',
      '/v1/bank_accounts',
      {
        type: 'us_ach',
        account_holder_name: 'Race',
        currency: 'USD',
        routing_number: '110000000',
        account_number: '000123456789',
      },
      tenant.headers,
    );
    expect(bank.status).toBe(201);
    return tenant;
  }

  /** Every payout of the account ended one way or the other, never both; available + sent = credited. */
  async function expectMoneyAddsUp(tenant: { accountId: string; headers: Record<string, string> }, credited: number) {
    const payouts = await em().find(Payout, { accountId: tenant.accountId });
    let sent = 0;
    for (const payout of payouts) {
      const transfers = await em().count(SandboxPayoutTransfer, { idempotencyKey: payout.id });
      const givenBack = await em().count(BalanceTransaction, {
        source: payout.id,
        type: { $in: ['payout_cancel', 'payout_failure'] },
      });
      if (payout.status === 'canceled')
        expect({ id: payout.id, transfers, givenBack }).toEqual({ id: payout.id, transfers: 0, givenBack: 1 });
      else {
        expect({ id: payout.id, status: payout.status, transfers, givenBack }).toEqual({
          id: payout.id,
          status: 'in_transit',
          transfers: 1,
          givenBack: 0,
        });
        sent += Number(payout.amount);
      }
    }
    const balance = (await engine.call('GET', '/v1/balance', undefined, tenant.headers)).body;
    const available = balance.available.find((b: { currency: string }) => b.currency === 'USD')?.amount ?? 0;
    expect(available + sent).toBe(credited);
    return { sent, canceled: payouts.filter((p) => p.status === 'canceled').length };
  }

  it('a cancel while the rail holds the payout is refused (409 not_cancellable) and the payout is sent once', async () => {
    const tenant = await fundedTenant(1_000);
    const payout = await createPayout(em(), {
      accountId: tenant.accountId,
      livemode: true,
      amount: 400,
      currency: 'USD',
      description: null,
    });
    const sandbox = createSandboxPayoutRail(em());
    let inRail!: () => void;
    const railEntered = new Promise<void>((resolve) => (inRail = resolve));
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    const gatedRail: PayoutRail = {
      async send(p) {
        inRail();
        await gate;
        return sandbox.send(p);
      },
      outcome: sandbox.outcome,
    };
    const submitted = submitPayout(em(), gatedRail, payout.id, new Date(payout.createdAt.getTime() + payoutPendingMs));
    await railEntered;
    const cancel = await engine.call('POST', `/v1/payouts/${payout.id}/cancel`, undefined, tenant.headers);
    letGo();
    expect(cancel.status).toBe(409);
    expect(cancel.body.error).toBe('not_cancellable');
    expect((await submitted).status).toBe('in_transit');
    expect(await expectMoneyAddsUp(tenant, 1_000)).toEqual({ sent: 400, canceled: 0 });
  });

  it(
    'cancels fired at 40 offsets around the hand-off: each payout is canceled with no transfer or sent with no money back',
    { timeout: 60_000 },
    async () => {
      const credited = 40 * 100;
      const tenant = await fundedTenant(credited);
      const sandbox = createSandboxPayoutRail(em());
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          const payout = await createPayout(em(), {
            accountId: tenant.accountId,
            livemode: true,
            amount: 100,
            currency: 'USD',
            description: `race ${i}`,
          });
          // The rail takes 0-19 ms; the cancel lands 0-39 ms after the submit began: before the claim, during the rail, after.
          const rail: PayoutRail = {
            send: async (p) => (await sleep(i % 20), sandbox.send(p)),
            outcome: sandbox.outcome,
          };
          const submitted = submitPayout(em(), rail, payout.id, new Date(payout.createdAt.getTime() + payoutPendingMs));
          await sleep(i);
          const cancel = await engine.call('POST', `/v1/payouts/${payout.id}/cancel`, undefined, tenant.headers);
          const result = await submitted;
          // The cancel's answer agrees with how the payout ended.
          expect([cancel.status, result.status]).toEqual(
            cancel.status === 200 ? [200, 'canceled'] : [409, 'in_transit'],
          );
          return cancel.status;
        }),
      );
      const { sent, canceled } = await expectMoneyAddsUp(tenant, credited);
      expect(canceled).toBe(outcomes.filter((s) => s === 200).length);
      expect(sent).toBe(outcomes.filter((s) => s === 409).length * 100);
    },
  );

  it(
    'a worker killed between the claim and the rail: the payout cannot be canceled, and a new worker sends it once',
    { timeout: 120_000 },
    async () => {
      const tenant = await fundedTenant(9_000);
      const worker = await startCrashingWorker(engine, 'crashing-payout-worker.ts', { CRASH_BEFORE_RAIL: '1' });
      const created = await engine.call('POST', '/v1/payouts', { amount: 6_000, currency: 'USD' }, tenant.headers);
      expect(created.status).toBe(201);
      const id: string = created.body.id;

      const later = engine.env.sleep(61_000);
      const [, signal] = await worker.exited;
      expect(signal).toBe('SIGKILL');
      expect(worker.output()).toContain(`claimed ${id}; crashing`);
      const claimed = await em().findOneOrFail(Payout, { id });
      expect([claimed.status, claimed.submittedAt !== null]).toEqual(['pending', true]);
      expect(await em().count(SandboxPayoutTransfer, { idempotencyKey: id })).toBe(0);

      const cancel = await engine.call('POST', `/v1/payouts/${id}/cancel`, undefined, tenant.headers);
      expect(cancel.status).toBe(409);
      expect(cancel.body.error).toBe('not_cancellable');

      await engine.startWorker();
      await later;
      await eventually(
        async () => (await em().findOneOrFail(Payout, { id })).status,
        (s) => s === 'in_transit',
        60_000,
      );
      await engine.stopWorker();
      expect(await expectMoneyAddsUp(tenant, 9_000)).toEqual({ sent: 6_000, canceled: 0 });
    },
  );

  it(
    'a payout made under an account hold shows the hold from the start, and a release in its first minute does not send it early',
    { timeout: 60_000 },
    async () => {
      const tenant = await fundedTenant(500);
      const hold = await engine.call('POST', '/v1/payout_holds', { reason: 'Reviewing a dispute' }, tenant.headers);
      expect(hold.status).toBe(201);
      const created = await engine.call('POST', '/v1/payouts', { amount: 200, currency: 'USD' }, tenant.headers);
      expect(created.status).toBe(201);
      expect(created.body.hold).toEqual({ id: hold.body.id, reason: 'Reviewing a dispute' });
      expect((await engine.call('GET', `/v1/payouts/${created.body.id}`, undefined, tenant.headers)).body.hold).toEqual(
        { id: hold.body.id, reason: 'Reviewing a dispute' },
      );

      // Released at once: the payout's workflow is woken, but its cancelable minute is not over.
      await engine.startWorker();
      expect((await engine.call('DELETE', `/v1/payout_holds/${hold.body.id}`, undefined, tenant.headers)).status).toBe(
        200,
      );
      await sleep(1_500);
      const early = await em().findOneOrFail(Payout, { id: created.body.id });
      expect([early.status, early.submittedAt, early.holdId]).toEqual(['pending', null, null]);
      expect(
        (await engine.call('POST', `/v1/payouts/${created.body.id}/cancel`, undefined, tenant.headers)).status,
      ).toBe(200);
      expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('canceled');
      await engine.stopWorker();
      expect(await expectMoneyAddsUp(tenant, 500)).toEqual({ sent: 0, canceled: 1 });
    },
  );
});
