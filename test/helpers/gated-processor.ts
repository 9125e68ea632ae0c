import type { EntityManager } from '@mikro-orm/postgresql';

import { SandboxProcessor } from '../../services/processors/sandbox.ts';
import type { PaymentProcessor } from '../../services/processors/types.ts';
import { startTestEngine, type TestEngine } from './engine.ts';

/**
 * The sandbox processor with a gate in front of its charges, for race tests: `hold()` makes the next
 * charge wait at the processor (its `inCharge` resolves when one arrives) until `open()` lets it, and
 * every later one, through. Everything else is the sandbox's.
 */
export function gatedSandboxProcessor(em: () => EntityManager) {
  const sandbox = new SandboxProcessor(em);
  let gate: { entered: () => void; release: Promise<void> } | null = null;
  const processor: PaymentProcessor = Object.assign(Object.create(sandbox) as PaymentProcessor, {
    async charge(request: Parameters<PaymentProcessor['charge']>[0]) {
      if (gate) {
        gate.entered();
        await gate.release;
      }
      return sandbox.charge(request);
    },
  });
  function hold(): { inCharge: Promise<void>; open: () => void } {
    let entered!: () => void;
    const inCharge = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    gate = { entered, release: new Promise<void>((resolve) => (release = resolve)) };
    return {
      inCharge,
      open: () => {
        gate = null;
        release();
      },
    };
  }
  return { processor, hold };
}

/**
 * A test engine whose worker charges through gatedSandboxProcessor: `hold()` as above. The race tests'
 * setup (test/invoice-void-race, one-off-invoice-race, credit-notes-open).
 */
export async function startGatedEngine(): Promise<{
  engine: TestEngine;
  hold: ReturnType<typeof gatedSandboxProcessor>['hold'];
}> {
  const engine = await startTestEngine({ startWorker: false });
  const gated = gatedSandboxProcessor(() => engine.db.orm.em.fork());
  await engine.startWorker({ processor: gated.processor });
  return { engine, hold: gated.hold };
}

/** A subscription whose first charge was declined: past due, its 4900 invoice open in dunning. */
export async function pastDueSubscription(
  engine: TestEngine,
  email: string,
): Promise<{ id: string; customerId: string; invoiceId: string }> {
  const customer = await engine.call('POST', '/v1/customers', {
    email,
    name: 'Ada',
    payment_method: 'pm_card_chargeDeclined',
  });
  const plan = await engine.call('POST', '/v1/plans', {
    name: 'Team',
    amount: 4900,
    currency: 'USD',
    interval: 'month',
  });
  const sub = await engine.call('POST', '/v1/subscriptions', {
    customer_id: customer.body.id,
    plan: plan.body.id,
    trial_period_days: 0,
  });
  if (sub.body?.status !== 'past_due')
    throw new Error(`expected a past_due subscription, got ${JSON.stringify(sub.body)}`);
  return {
    id: sub.body.id as string,
    customerId: customer.body.id as string,
    invoiceId: sub.body.latest_invoice as string,
  };
}
