import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BalanceTransaction, Event, Payout, SandboxPayoutTransfer } from '../db/entities/index.ts';
import { startCrashingWorker } from './helpers/crashing-worker.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('a worker killed in the middle of a payout', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it(
    'is replaced by a new worker and the payout is sent once, debited once and paid once',
    { timeout: 120_000 },
    async () => {
      const worker = await startCrashingWorker(engine, 'crashing-payout-worker.ts');

      const tenant = engine.tenant;
      const admin = { ...(await engine.admin()).headers, 'x-account-id': tenant.accountId };
      expect(
        (
          await engine.call(
            'POST',
            '/v1/transactions',
            { account_id: tenant.accountId, amount: 9000, currency: 'USD', type: 'credit' },
            admin,
          )
        ).status,
      ).toBe(201);
      expect(
        (
          await engine.call('POST', '/v1/bank_accounts', {
            type: 'us_ach',
            account_holder_name: 'Crash',
            currency: 'USD',
            routing_number: '110000000',
            account_number: '000123456789',
          })
        ).status,
      ).toBe(201);
      const created = await engine.call('POST', '/v1/payouts', { amount: 6000, currency: 'USD' });
      expect(created.status).toBe(201);
      const id: string = created.body.id;

      // Its pending minute passes; the child hands it to the rail and dies before recording in_transit.
      const later = engine.env.sleep(61_000);
      const [, signal] = await worker.exited;
      expect(signal).toBe('SIGKILL');
      expect(worker.output()).toContain(`sent ${id}; crashing`);
      const em = () => engine.db.orm.em.fork();
      expect(await em().count(SandboxPayoutTransfer, { idempotencyKey: id })).toBe(1);
      expect((await em().findOneOrFail(Payout, { id })).status).toBe('pending');

      // A new worker retries the lost activity once its 30 s timeout passes (in real time: the test server does not skip it).
      await engine.startWorker();
      await later;
      await eventually(
        async () => (await em().findOneOrFail(Payout, { id })).status,
        (s) => s === 'in_transit',
        60_000,
      );
      await engine.env.sleep(day + 60_000);
      expect(await engine.env.client.workflow.getHandle(id).result()).toBe('paid');

      expect(await em().count(SandboxPayoutTransfer, { idempotencyKey: id })).toBe(1);
      const btxns = await em().find(BalanceTransaction, { source: id });
      expect(btxns.map((b) => [b.type, Number(b.amount)])).toEqual([['payout', -6000]]);
      expect(
        (
          await em().find(
            Event,
            { accountId: tenant.accountId, type: { $like: 'payout.%' } },
            { orderBy: { id: 'asc' } },
          )
        ).map((e) => e.type),
      ).toEqual(['payout.created', 'payout.updated', 'payout.paid']);
      const balance = (await engine.call('GET', '/v1/balance')).body;
      expect(balance.available).toEqual([{ amount: 3000, currency: 'USD' }]);
    },
  );
});
