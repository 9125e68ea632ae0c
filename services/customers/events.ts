import type { EntityManager } from '@mikro-orm/postgresql';

import { type Customer, Subscription } from '../../db/entities/index.ts';
import { serializeCustomer } from '../../objects/customer.ts';
import { paymentMethodUpdatedSignal } from '../../workflows/subscription.ts';
import type { ServiceContext, TemporalContext } from '../context.ts';
import { recordEvent } from '../events/record.ts';
import { clockTimeOf, stampClockTime } from '../test-clocks/clocks.ts';
import { onTestClock } from '../test-clocks/now.ts';
import { customerBalances } from './balance.ts';

/**
 * Called by the customer update endpoints (PATCH and POST /v1/customers/{id}) after
 * the update is saved, whenever the request sets `payment_method` — also to the
 * value it already had, because a customer who fixed the card behind a decline
 * (funds added, bank called) re-enters the same method and expects a retry.
 * `customer.paymentMethod` is the new method; it may be null (removed).
 *
 * Updating the payment method retries at once: every past-due subscription of
 * this customer is signalled, and its workflow charges now instead of at the
 * next scheduled retry (a signal, not an update: the caller does not wait for
 * the charge; the subscription's record shows the outcome).
 *
 * It runs inside the request: an error thrown here answers 500 although the update
 * is saved (a retry of the same PATCH calls it again, see above).
 */
export async function notifyPaymentMethodUpdated(
  ctx: Pick<ServiceContext, 'orm'> & { temporal: Pick<TemporalContext, 'client'> },
  customer: Customer,
): Promise<void> {
  if (!customer.paymentMethod) return;
  const pastDue = await ctx.orm.em
    .fork()
    .find(
      Subscription,
      { customerId: customer.id, accountId: customer.accountId, status: 'past_due' },
      { fields: ['id'] },
    );
  await Promise.all(
    pastDue.map((s) => ctx.temporal.client.workflow.getHandle(s.id).signal(paymentMethodUpdatedSignal)),
  );
}

/**
 * Saves a changed customer (a managed entity of `em`) with its `customer.updated` event in
 * one database transaction, for every route that updates one (PATCH /v1/customers/{id},
 * the hosted billing-details page). A customer on a test clock is updated at the clock's
 * time and its event goes on the clock (its webhook retries follow the clock).
 */
export async function saveCustomerUpdate(em: EntityManager, customer: Customer): Promise<void> {
  const testClock = await clockTimeOf(em, customer.testClockId);
  customer.updatedAt = new Date();
  await onTestClock(testClock, () =>
    em.transactional(async (tx) => {
      await tx.flush();
      if (testClock) await stampClockTime(tx, customer, testClock);
      const object = {
        ...serializeCustomer(customer, await customerBalances(tx, customer.id)),
        ...(testClock ? { updated_at: testClock.now } : {}),
      };
      await recordEvent(tx, {
        accountId: customer.accountId,
        livemode: customer.livemode,
        type: 'customer.updated',
        object,
        transactionId: null,
      });
    }),
  );
  if (testClock) customer.updatedAt = new Date(testClock.now);
}
