import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Account, Subscription } from '../db/entities/index.ts';
import { createCustomerLinks } from '../domain/customer-links.ts';
import { chargeCustomer } from '../services/money/charges.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('closing an account while subscriptions are being created', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  it(
    'never leaves a closed account with a live subscription (11 parallel creates and one close)',
    { timeout: 60_000 },
    async () => {
      const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 14 });
      const accountId = engine.tenant.accountId;
      // The admin closes it (the owner's own session ends with the account), while the owner's creates are in flight.
      const admin = await engine.admin();
      const creates = Array.from({ length: 11 }, () =>
        engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId }),
      );
      await new Promise((resolve) => setTimeout(resolve, 30));
      const close = await engine.call('DELETE', '/v1/account', undefined, {
        ...admin.headers,
        'x-account-id': accountId,
      });
      const results = await Promise.all(creates);
      for (const r of results) expect([201, 401, 409]).toContain(r.status);
      for (const r of results.filter((r) => r.status === 409)) expect(r.body.error).toBe('account_closed');

      const em = () => engine.db.orm.em.fork();
      const account = await em().findOneOrFail(Account, { id: accountId });
      if (close.status === 200) {
        expect(account.status).toBe('closed');
        // Every subscription that got in ends with the account.
        const live = await eventually(
          () => em().count(Subscription, { accountId, status: { $nin: ['canceled', 'expired'] } }),
          (n) => n === 0,
          20_000,
        );
        expect(live).toBe(0);
      } else {
        expect(close.body.error).toBe('active_subscriptions');
        expect(account.status).not.toBe('closed');
      }
    },
  );
});

describe('a charge of a closed account', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
  });
  afterAll(() => engine?.close());

  it('is refused as failed account_closed, with no processor call', async () => {
    const { customerId } = await seedCustomerAndPlan(engine);
    const processor = {
      calls: 0,
      async charge() {
        this.calls++;
        throw new Error('the processor must not be called');
      },
      async settlement() {
        throw new Error('unused');
      },
    };
    const input = {
      idempotencyKey: 'sub_closed:cycle:0:attempt:1',
      invoiceId: 'in_none',
      attempt: 1,
      accountId: engine.tenant.accountId,
      customerId,
      amount: 1500,
      currency: 'USD',
      description: 'test',
      livemode: true,
    };
    const links = createCustomerLinks({ publicUrl: 'http://localhost', secret: 'test' });
    await engine.db.orm.em
      .fork()
      .nativeUpdate(Account, { id: engine.tenant.accountId }, { status: 'closed', closedAt: new Date() });
    const outcome = await chargeCustomer(
      { processors: { forMode: () => processor, isTestMode: () => true } as never, links },
      engine.db.orm.em.fork(),
      input,
    );
    expect(outcome).toMatchObject({ status: 'failed', failureCode: 'account_closed' });
    expect(processor.calls).toBe(0);
  });
});
