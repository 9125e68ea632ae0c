import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';

import { Payout, PayoutHold } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import type { Scope } from './bank-accounts.ts';
import { recordPayoutEvent, wakePayoutWorkflow } from './rail.ts';
export type { Scope };

/**
 * Places a hold on the account (in this mode) or on one of its payouts, which
 * must still be pending (`not_cancellable` otherwise: it was sent). A held payout
 * shows the hold when its pending time ends; a held schedule skips its runs.
 */
export async function placeHold(
  em: EntityManager,
  scope: Scope,
  input: {
    id?: string;
    reason: string;
    until?: Date | undefined;
    payoutId?: string | undefined;
    createdBy: string;
    now?: Date;
  },
): Promise<PayoutHold> {
  const now = input.now ?? new Date();
  if (input.until && input.until <= now) throw new ApiError('invalid_request', 'until: must be in the future.');
  return em.transactional(async (tx) => {
    // The payouts it would hold are locked as the rail's claim locks them (services/payouts/rail.ts claimForRail): a
    // payout claimed first is being sent and is not held; one locked here first sees this hold when claimed.
    if (input.payoutId) {
      const payout = await tx.findOne(
        Payout,
        { id: input.payoutId, ...scope },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!payout) throw new ApiError('not_found', `No such payout: ${input.payoutId}.`);
      if (payout.status !== 'pending')
        throw new ApiError('invalid_state', `The payout is ${payout.status}; only a pending payout can be held.`);
      if (payout.submittedAt)
        throw new ApiError('invalid_state', 'The payout is being handed to its bank rail; it can no longer be held.');
    } else {
      await tx.find(
        Payout,
        { ...scope, status: 'pending', submittedAt: null },
        { lockMode: LockMode.PESSIMISTIC_WRITE, fields: ['id'] },
      );
    }
    const hold = tx.create(PayoutHold, {
      id: input.id ?? newId('payoutHold'),
      ...scope,
      payoutId: input.payoutId ?? null,
      reason: input.reason,
      until: input.until ?? null,
      createdBy: input.createdBy,
      createdAt: now,
      releasedAt: null,
    });
    await tx.flush();
    return hold;
  });
}

/**
 * Releases a hold: the payouts it kept pending lose it (payout.updated) and their
 * workflows are woken to send them now. A hold an admin placed is released by an
 * admin only (`forbidden`); releasing twice is `invalid_state`.
 */
export async function releaseHold(
  em: EntityManager,
  client: Client,
  scope: Scope,
  id: string,
  actor: string,
): Promise<PayoutHold | null> {
  const released = await em.transactional(async (tx) => {
    const hold = await tx.findOne(PayoutHold, { id, ...scope });
    if (!hold) return null;
    if (hold.createdBy === 'admin' && actor !== 'admin')
      throw new ApiError('forbidden', 'A hold placed by the platform admin is released by an admin only.');
    if (hold.releasedAt) throw new ApiError('invalid_state', 'The hold was already released.');
    hold.releasedAt = new Date();
    await tx.flush();
    const held = await tx.find(Payout, { holdId: hold.id, status: 'pending' });
    for (const payout of held) {
      payout.holdId = null;
      payout.holdReason = null;
      payout.updatedAt = new Date();
      await tx.flush();
      await recordPayoutEvent(tx, payout, 'payout.updated');
    }
    return { hold, payoutIds: held.map((p) => p.id).concat(hold.payoutId ? [hold.payoutId] : []) };
  });
  if (!released) return null;
  for (const payoutId of new Set(released.payoutIds)) await wakePayoutWorkflow(client, payoutId);
  return released.hold;
}

/** Whether a hold is in force at `at`. */
export function holdActive(hold: PayoutHold, at: Date): boolean {
  return !hold.releasedAt && (!hold.until || hold.until > at);
}
