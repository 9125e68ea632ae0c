import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, SandboxProcessorCharge, Transaction } from '../db/entities/index.ts';
import { startCrashingWorker } from './helpers/crashing-worker.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants, expectOnePaymentPerPaidInvoice } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('a worker killed in the middle of the slice', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it(
    'is replaced by a new worker and the subscription finishes with no duplicate charge',
    { timeout: 120_000 },
    async () => {
      const worker = await startCrashingWorker(engine, 'crashing-worker.ts');

      const { customerId, planId } = await seedCustomerAndPlan(engine);
      const created = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        plan: planId,
        trial_period_days: 14,
      });
      expect(created.status).toBe(201);
      const id: string = created.body.id;

      // Trial ends; the child charges at the processor and dies before recording it.
      // The test server does not skip time while an activity is in flight, so the
      // lost activity's 30 s start-to-close timeout passes in real time: this test
      // takes about half a minute by design.
      const pastTrialEnd = engine.env.sleep(15 * day);
      const [, signal] = await worker.exited;
      expect(signal).toBe('SIGKILL');
      expect(worker.output()).toContain(`charged ${id}:cycle:0:attempt:1; crashing`);
      const em = () => engine.db.orm.em.fork();
      expect(await em().count(SandboxProcessorCharge, { idempotencyKey: { $like: `${id}:%` } })).toBe(1);
      expect(await em().count(Charge, { idempotencyKey: { $like: `${id}:%` } })).toBe(0);

      // A new worker takes over once the lost activity times out and is retried.
      await engine.startWorker();
      await pastTrialEnd;
      const active = await eventually(
        () => engine.subscription(id),
        (s) => s?.status === 'active',
        20_000,
      );
      expect(active!.billingCycle).toBe(0);
      expect(await em().count(SandboxProcessorCharge, { idempotencyKey: { $like: `${id}:%` } })).toBe(1);
      expect(await em().count(Charge, { idempotencyKey: { $like: `${id}:%` } })).toBe(1);
      expect(await engine.invoices(id)).toHaveLength(1);

      // And it goes on billing normally.
      await engine.env.sleep(32 * day);
      await eventually(
        () => engine.subscription(id),
        (s) => s?.billingCycle === 1,
      );
      expect(await em().count(SandboxProcessorCharge, { idempotencyKey: { $like: `${id}:%` } })).toBe(2);
      expect(await engine.invoices(id)).toHaveLength(2);
      // Each paid invoice has exactly one succeeded payment transaction (the crash lost none and doubled none), and the ledger adds up.
      expect(await expectOnePaymentPerPaidInvoice(em(), { subscriptionId: id })).toBe(2);
      expect(await em().count(Transaction, { subscriptionId: id, type: 'payment' })).toBe(2);
      await expectLedgerInvariants(em(), active!.accountId);
    },
  );
});
