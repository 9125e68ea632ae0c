import type { EntityManager } from '@mikro-orm/postgresql';
import { Subscription } from '../db/entities/index.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';

const toDate = (iso: string | null) => (iso === null ? null : new Date(iso));

/**
 * Writes a subscription's projection row. Idempotent and ordered: the row only
 * changes when the snapshot's version is newer than the stored one, so a retried
 * or late activity never rolls the projection back.
 */
export async function projectSubscription(em: EntityManager, snapshot: SubscriptionSnapshot): Promise<void> {
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
    livemode: snapshot.livemode,
    version: snapshot.version,
    createdAt: new Date(snapshot.createdAt),
    updatedAt: new Date(snapshot.updatedAt),
  };
  const { id: _id, accountId: _accountId, createdAt: _createdAt, ...changes } = row;
  await em
    .createQueryBuilder(Subscription)
    .insert(row)
    .onConflict('id')
    .merge(changes)
    .where({ version: { $lt: snapshot.version } })
    .execute();
}
