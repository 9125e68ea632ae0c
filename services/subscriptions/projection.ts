import { type EntityManager, raw } from '@mikro-orm/postgresql';

import { Subscription } from '../../db/entities/index.ts';
import { subscriptionEventType } from '../../domain/events.ts';
import type { SubscriptionItemSnapshot, SubscriptionSnapshot } from '../../domain/subscription.ts';
import { serializeSubscription } from '../../objects/subscription.ts';
import { recordEvent } from '../events/record.ts';
import { writeVersioned } from '../platform/versioned-write.ts';

const toDate = (iso: string | null) => (iso === null ? null : new Date(iso));

/**
 * Writes a subscription's projection row. Idempotent and ordered: the row only
 * changes when the snapshot's version is newer than the stored one, so a retried
 * or late activity never rolls the projection back. A write that changes the row
 * records its one event (domain/events.ts subscriptionEventType) in the same
 * database transaction; a write that changes nothing records none.
 */
export async function projectSubscription(em: EntityManager, snapshot: SubscriptionSnapshot): Promise<void> {
  await em.transactional((tx) => projectSubscriptionOn(tx, snapshot));
}

/** projectSubscription on `tx`, the caller's database transaction. */
export async function projectSubscriptionOn(tx: EntityManager, snapshot: SubscriptionSnapshot): Promise<void> {
  const row = {
    id: snapshot.id,
    accountId: snapshot.accountId,
    customerId: snapshot.customerId,
    planId: snapshot.planId,
    status: snapshot.status,
    trialStart: toDate(snapshot.trialStart),
    trialEnd: toDate(snapshot.trialEnd),
    currentPeriodStart: toDate(snapshot.currentPeriodStart),
    currentPeriodEnd: toDate(snapshot.currentPeriodEnd),
    billingCycle: snapshot.billingCycle,
    latestInvoiceId: snapshot.latestInvoiceId,
    canceledAt: toDate(snapshot.canceledAt),
    trialDays: snapshot.trialDays,
    billingCycleMode: snapshot.billingCycleMode,
    billingAnchor: toDate(snapshot.billingAnchor),
    cancelAtPeriodEnd: snapshot.cancelAtPeriodEnd,
    endedReason: snapshot.endedReason,
    pausedAt: toDate(snapshot.pausedAt),
    pauseUntil: toDate(snapshot.pauseUntil),
    pauseReason: snapshot.pauseReason,
    pendingPlanId: snapshot.pendingPlanId,
    quantity: snapshot.quantity ?? 1,
    pendingQuantity: snapshot.pendingQuantity ?? null,
    // As jsonb from JSON text: the query builder would send a bare array as a PostgreSQL array (and a string as a JSON string).
    items: snapshot.items
      ? (raw('?::jsonb', [JSON.stringify(snapshot.items)]) as unknown as SubscriptionSnapshot['items'])
      : null,
    // Snapshots of workflows started before currencies were recorded have none: the column keeps what the migration filled in.
    ...(snapshot.currency ? { currency: snapshot.currency } : {}),
    gracePeriodDays: snapshot.gracePeriodDays,
    dunning: snapshot.dunning,
    livemode: snapshot.livemode,
    version: snapshot.version,
    createdAt: new Date(snapshot.createdAt),
    updatedAt: new Date(snapshot.updatedAt),
  };
  const { written, previous } = await writeVersioned<
    typeof row,
    { status: string; plan_id: string; quantity: number; items: SubscriptionItemSnapshot[] | null }
  >(tx, Subscription, 'subscriptions', row, {
    insertOnly: ['accountId', 'createdAt'],
    previousColumns: ['status', 'plan_id', 'quantity', 'items'],
  });
  // A retried or late write changes no row, and so records no event.
  if (!written) return;
  const object = serializeSubscription(snapshot);
  // The items' previous values when they changed (an item added, changed or removed; a plan or quantity change).
  const before = previous
    ? serializeSubscription({
        ...snapshot,
        planId: previous.plan_id,
        quantity: previous.quantity,
        items: previous.items ?? undefined,
      })
    : null;
  const itemsChanged = before !== null && JSON.stringify(before.items) !== JSON.stringify(object.items);
  await recordEvent(tx, {
    accountId: snapshot.accountId,
    livemode: snapshot.livemode,
    type: subscriptionEventType(previous ? { status: previous.status, planId: previous.plan_id } : null, snapshot),
    object,
    transactionId: null,
    ...(itemsChanged
      ? {
          previousAttributes: {
            items: before!.items,
            ...(before!.plan !== object.plan ? { plan: before!.plan } : {}),
            ...(before!.quantity !== object.quantity ? { quantity: before!.quantity } : {}),
          },
        }
      : {}),
  });
}
