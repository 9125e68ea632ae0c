/**
 * The fault matrix's worker kill during a renewal wave (issue #29): 100 trials on one test clock, made over the
 * public API, the clock advanced past their end, and the worker process SIGKILLed once the wave is part way through
 * (some trials invoiced, not all: read from the database, not timed). Three requests on live subscriptions (two
 * quantity changes and a cancel) are sent right after the kill. A new worker then finishes the wave: every
 * subscription invoiced once and paid by one charge, the processor charged once per subscription, the payments
 * adding up to N × the price, the ledger balanced, the clock `ready`; the requests answered within 60 s of the new
 * worker, the wave finished within 120 s of it.
 *
 * On a real Temporal server (`temporal server start-dev`), as test/worker-kill-recovery.test.ts, and for the same
 * reason: what a dead worker leaves behind is the server's (its sticky queues, its activity timeouts, kept in real
 * time). The worker is test/fixtures/production-worker.ts, worker.ts's options as `npm run worker` has them.
 *
 * What the new worker waits out, and so what the 120 s bound allows for: the dead worker's sticky tasks (5 s after
 * the server stops sending there, about 15 s), the workflow task timeout of tasks it had taken (10 s), and the 30 s
 * start-to-close timeout of the renewal activities it was running when it died.
 */
import { once } from 'node:events';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, Invoice, SandboxProcessorCharge, Subscription, Transaction } from '../db/entities/index.ts';
import { expectLedgerInvariants, expectOnePaymentPerPaidInvoice } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';
import { startWorkerProcessStack, type WorkerProcessStack } from './helpers/worker-process.ts';

const day = 86_400_000;
/** Trials on the clock: a wave long enough (many seconds on a loaded 2-core machine) to be caught part way. */
const N = 100;
/** The kill comes once this many are invoiced. */
const killAfter = Math.floor(N / 5);
const price = 1500;
const start = '2027-01-01T00:00:00.000Z';
const pastTrials = new Date(Date.parse(start) + 31 * day).toISOString();

describe('a worker SIGKILLed in the middle of a renewal wave', () => {
  let stack: WorkerProcessStack;
  const call = (method: string, url: string, body?: unknown) => stack.call(method, url, body);
  const created = (url: string, body: unknown) => stack.created(url, body);
  const startWorker = () => stack.startWorker();

  beforeAll(async () => {
    // The whole wave on one clock, one customer per trial (as bench:renewals --black-box raises it).
    stack = await startWorkerProcessStack({
      name: 'wave',
      configure: (config) => ({ ...config, testClocks: { ...config.testClocks, customersPerClock: N + 1 } }),
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it(
    'a new worker renews every subscription exactly once within 120 s and answers every request within 60 s',
    { timeout: 300_000 },
    async () => {
      const began = Date.now();
      /** One line per phase, with the seconds since the test began: where a slow run spent its time. */
      const say = (message: string) =>
        console.log(`wave-crash +${((Date.now() - began) / 1000).toFixed(1)} s: ${message}`);
      const first = await startWorker();
      say('first worker ready');
      const plan = await created('/v1/plans', { name: 'Pro', amount: price, currency: 'USD', interval: 'month' });

      // Three live subscriptions (charged now), held by the first worker: the requests sent after the kill.
      const ada = await created('/v1/customers', {
        email: 'ada@example.com',
        name: 'Ada',
        payment_method: 'pm_card_visa',
      });
      const live: string[] = [];
      for (let i = 0; i < 3; i++) live.push(await created('/v1/subscriptions', { customer_id: ada, plan }));

      // The wave: N customers on one clock, each with a 30-day trial, created 8 requests at a time.
      const clock = await created('/v1/test_clocks', { frozen_time: start });
      const wave: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < N) {
            const i = next++;
            const customer = await created('/v1/customers', {
              email: `c${i}@example.com`,
              name: `Customer ${i}`,
              payment_method: 'pm_card_visa',
              test_clock: clock,
            });
            wave.push(await created('/v1/subscriptions', { customer_id: customer, plan, trial_period_days: 30 }));
          }
        }),
      );
      expect(wave).toHaveLength(N);
      say(`${N} customers and trials created on the clock`);
      const em = () => stack.db.orm.em.fork();
      const invoiced = () => em().count(Invoice, { subscriptionId: { $in: wave } });
      const paid = () => em().count(Invoice, { subscriptionId: { $in: wave }, status: 'paid' });
      expect(await invoiced()).toBe(0);

      // Every trial ends; the kill comes once some of them, not all, are invoiced (polled, no fixed wait).
      const advanced = await call('POST', `/v1/test_clocks/${clock}/advance`, { frozen_time: pastTrials });
      expect(advanced.status, JSON.stringify(advanced.body)).toBe(200);
      const advancedAt = Date.now();
      say('clock advanced');
      const seen = await eventually(invoiced, (count) => count >= killAfter, 120_000);
      first.kill('SIGKILL');
      const [, signal] = await once(first, 'exit');
      expect(signal).toBe('SIGKILL');
      // At once, requests on subscriptions the dead worker held: their tasks go to its sticky queue (the server
      // sends there until it has seen no poll for 10 s).
      const answered: number[] = [];
      const requests = [
        call('POST', `/v1/subscriptions/${live[0]}/update`, { quantity: 2 }),
        call('POST', `/v1/subscriptions/${live[1]}/update`, { quantity: 3 }),
        call('POST', `/v1/subscriptions/${live[2]}/cancel`, {}),
      ].map((request) => request.then((response) => (answered.push(Date.now()), response)));

      const atKill = {
        invoiced: await invoiced(),
        paid: await paid(),
        // Charged at the processor but not recorded when it died (each must end as one charge, not two).
        processorCharges: await em().count(SandboxProcessorCharge, {}),
        charges: await em().count(Charge, {}),
        afterMs: Date.now() - advancedAt,
      };
      // Not a skip: a wave that ended before the kill tests nothing, and N must grow.
      if (atKill.invoiced >= N || atKill.paid >= N)
        throw new Error(
          `the wave of ${N} ended before the kill (${JSON.stringify(atKill)}, ${seen} seen): make N larger`,
        );
      say(
        `killed ${atKill.afterMs} ms after the advance: ${atKill.invoiced}/${N} invoiced, ${atKill.paid} paid, ` +
          `${atKill.processorCharges} processor charges against ${atKill.charges} recorded`,
      );

      await startWorker();
      const restarted = Date.now();
      say('new worker ready');
      const late = new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`requests not all answered within 60 s of the new worker (${answered.length} of 3)`)),
          60_000,
        ).unref(),
      );
      const responses = await Promise.race([Promise.all(requests), late]);
      for (const response of responses) expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(responses.map((r) => [r.body.quantity, r.body.status])).toEqual([
        [2, 'active'],
        [3, 'active'],
        [1, 'canceled'],
      ]);
      const requestsMs = Math.max(...answered) - restarted;
      expect(requestsMs).toBeLessThan(60_000);

      // The wave finishes: every invoice paid and the clock ready, within 120 s of the new worker.
      const bound = 120_000;
      await eventually(paid, (count) => count >= N, bound);
      const allPaidMs = Date.now() - restarted;
      const ready = await eventually(
        () => call('GET', `/v1/test_clocks/${clock}`),
        (c) => c.body.status === 'ready',
        Math.max(1, bound - (Date.now() - restarted)),
      );
      const readyMs = Date.now() - restarted;
      expect(readyMs).toBeLessThan(bound);
      expect(ready.body.frozen_time).toBe(pastTrials);
      say(
        `after the new worker's ready: requests answered in ${requestsMs} ms, all ${N} paid in ${allPaidMs} ms, clock ready in ${readyMs} ms`,
      );

      // Exactly once: one invoice, one charge, one processor charge and one payment per subscription.
      const waveSet = new Set(wave);
      const perSubscription = (keys: string[]) => {
        const counts = new Map<string, number>();
        for (const key of keys) {
          const id = key.split(':')[0]!;
          if (waveSet.has(id)) counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        return counts;
      };
      const expectOneEach = (what: string, counts: Map<string, number>) => {
        const wrong = wave.filter((id) => counts.get(id) !== 1).map((id) => [id, counts.get(id) ?? 0]);
        expect(wrong, `subscriptions without exactly one ${what}`).toEqual([]);
      };
      const invoices = await em().find(Invoice, { subscriptionId: { $in: wave } });
      expectOneEach('invoice', perSubscription(invoices.map((i) => i.subscriptionId!)));
      expect(invoices.filter((i) => i.status !== 'paid' || Number(i.amountPaid) !== price)).toEqual([]);
      const payments = await em().find(Transaction, { subscriptionId: { $in: wave }, type: 'payment' });
      const accountId = payments[0]!.accountId;
      const charges = await em().find(Charge, { accountId, livemode: false });
      const waveCharges = charges.filter((c) => waveSet.has(c.idempotencyKey.split(':')[0]!));
      expectOneEach('charge', perSubscription(waveCharges.map((c) => c.idempotencyKey)));
      expect(waveCharges.filter((c) => c.status !== 'succeeded')).toEqual([]);
      const processorCharges = await em().find(SandboxProcessorCharge, {
        idempotencyKey: { $in: waveCharges.map((c) => c.idempotencyKey) },
      });
      expect(processorCharges).toHaveLength(N);
      const allProcessorCharges = await em().find(SandboxProcessorCharge, {});
      expectOneEach('processor charge', perSubscription(allProcessorCharges.map((c) => c.idempotencyKey)));
      expectOneEach('payment', perSubscription(payments.map((t) => t.subscriptionId!)));
      expect(payments.filter((t) => t.status !== 'succeeded')).toEqual([]);
      expect(payments.reduce((sum, t) => sum + Number(t.amount), 0)).toBe(N * price);
      expect(new Set(payments.map((t) => t.processorChargeId)).size).toBe(N);
      expect(await expectOnePaymentPerPaidInvoice(em(), { accountId })).toBeGreaterThanOrEqual(N + 3);
      await expectLedgerInvariants(em(), accountId);
      const statuses = await em().find(Subscription, { id: { $in: wave } });
      expect(statuses.filter((s) => s.status !== 'active')).toEqual([]);
    },
  );
});
