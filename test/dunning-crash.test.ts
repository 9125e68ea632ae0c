import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, LedgerEntry, SandboxProcessorCharge, Transaction } from '../db/entities/index.ts';
import { startCrashingWorker } from './helpers/crashing-worker.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const day = 86_400_000;

describe('a worker killed during dunning', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it(
    'is replaced; the retry schedule holds, nothing is charged twice, no email is lost or doubled',
    { timeout: 120_000 },
    async () => {
      const { exited, output } = await startCrashingWorker(engine, 'crashing-worker.ts', {
        SMTP_URL: engine.mail.url,
        CRASH_ON: ':attempt:3',
      });

      const customer = await engine.call('POST', '/v1/customers', {
        email: 'crash@example.com',
        payment_method: 'pm_card_chargeDeclined',
      });
      const plan = await engine.call('POST', '/v1/plans', {
        name: 'Team',
        amount: 4900,
        currency: 'USD',
        interval: 'month',
      });
      const created = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customer.body.id,
        plan: plan.body.id,
        trial_period_days: 0,
      });
      expect(created.body.status).toBe('past_due');
      const id: string = created.body.id;
      const firstFailedAt = Date.parse(created.body.dunning.first_failed_at);
      await engine.env.sleep(day + minute);
      await engine.mail.waitFor(2);

      // Day 3: the child charges attempt 3 at the processor and dies before recording it or emailing.
      // The lost activity's 30 s timeout passes in real time (the test server does not skip
      // time while an activity is in flight), so this part takes about half a minute.
      const pastThirdAttempt = engine.env.sleep(2 * day);
      const [, signal] = await exited;
      expect(signal).toBe('SIGKILL');
      expect(output()).toContain(`charged ${id}:cycle:0:attempt:3; crashing`);
      expect(engine.mail.messages).toHaveLength(2);

      await engine.startWorker();
      await pastThirdAttempt;
      const third = await eventually(
        async () => (await engine.call('GET', `/v1/subscriptions/${id}`)).body,
        (s) => s.dunning?.attempt_count === 3,
        60_000,
      );
      // Same schedule as if nothing had happened: attempt 4 seven days after the first failure.
      expect(third.dunning.next_payment_attempt).toBe(new Date(firstFailedAt + 7 * day).toISOString());
      await engine.env.sleep(firstFailedAt + 7 * day + minute - (await engine.env.currentTimeMs()));
      await eventually(
        async () => (await engine.call('GET', `/v1/subscriptions/${id}`)).body,
        (s) => s.dunning?.attempt_count === 4,
      );
      await engine.mail.waitFor(4);

      const em = () => engine.db.orm.em.fork();
      const keys = [1, 2, 3, 4].map((n) => `${id}:cycle:0:attempt:${n}`);
      const processorCharges = await em().find(
        SandboxProcessorCharge,
        { idempotencyKey: { $like: `${id}:%` } },
        { orderBy: { createdAt: 'asc' } },
      );
      expect(processorCharges.map((c) => c.idempotencyKey)).toEqual(keys);
      const charges = await em().find(
        Charge,
        { idempotencyKey: { $like: `${id}:%` } },
        { orderBy: { createdAt: 'asc' } },
      );
      expect(charges.map((c) => c.idempotencyKey)).toEqual(keys);
      // One failed payment transaction per attempt (the one the crash interrupted included, recorded once), each its charge's, with no ledger entries.
      const payments = await em().find(
        Transaction,
        { subscriptionId: id, type: 'payment' },
        { orderBy: { createdAt: 'asc' } },
      );
      expect(payments.map((t) => [t.id, t.status, t.failureCode, t.processorChargeId])).toEqual(
        charges.map((c, n) => [c.transactionId, 'failed', 'card_declined', processorCharges[n]!.id]),
      );
      expect(await em().count(LedgerEntry, { transactionId: { $in: payments.map((t) => t.id) } })).toBe(0);
      await expectLedgerInvariants(em(), created.body.account_id ?? payments[0]!.accountId);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(engine.mail.messages.map((m) => m.parsed.subject!.replace(/^.*\(attempt (\d)\)$/, '$1'))).toEqual([
        '1',
        '2',
        '3',
        '4',
      ]);
    },
  );
});
