/**
 * Subscriptions whose workflow is gone. A subscription is its workflow: if an
 * operator terminates it (Temporal UI "Terminate", `temporal workflow terminate`)
 * or it fails or times out, nothing will bill, retry or end it, while the API
 * still says `active`. The maintenance workflow sweeps the live subscriptions a
 * batch per run (a cursor over their ids, wrapping around) and asks Temporal how
 * each workflow stands; one that is closed while its subscription is not ended is
 * marked `canceled` with an `ended_reason` that says what happened
 * (`workflow_terminated`, `workflow_failed`, `workflow_timed_out`,
 * `workflow_canceled`), with its `subscription.canceled` event and a log line.
 * (A cancellation requested through Temporal is handled by the workflow itself,
 * as an immediate cancel: `canceled_by_operator`.)
 *
 * Describing each workflow works on every Temporal server, including the test
 * server (which has no visibility queries); a run costs `limit` describe calls.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';

import { Subscription } from '../../db/entities/index.ts';
import { endedStatuses } from '../../domain/subscription.ts';
import { serializeSubscription } from '../../objects/subscription.ts';
import { recordEvent } from '../events/record.ts';

export interface SweepResult {
  checked: number;
  /** Subscriptions marked canceled because their workflow had closed. */
  marked: number;
  /** Where the next run starts (null: from the beginning). */
  nextCursor: string | null;
}

const closedReasons: Record<string, string> = {
  TERMINATED: 'workflow_terminated',
  FAILED: 'workflow_failed',
  TIMED_OUT: 'workflow_timed_out',
  CANCELLED: 'workflow_canceled',
};

export async function sweepOrphanedSubscriptions(
  em: EntityManager,
  client: Client,
  after: string | null,
  limit: number,
  log?: { warn(message: string, meta?: Record<string, unknown>): void },
): Promise<SweepResult> {
  const rows = await em.find(
    Subscription,
    { status: { $nin: [...endedStatuses] }, ...(after ? { id: { $gt: after } } : {}) },
    { orderBy: { id: 'asc' }, limit, fields: ['id', 'status', 'version'] },
  );
  let marked = 0;
  for (const row of rows) {
    let status: string;
    try {
      status = (await client.workflow.getHandle(row.id).describe()).status.name;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      status = 'TERMINATED'; // Gone from Temporal altogether (retention passed): nothing runs it either.
    }
    const reason = closedReasons[status];
    if (!reason) continue;
    if (await markEnded(em.fork(), row.id, row.version, reason)) {
      marked++;
      log?.warn('subscription workflow closed while the subscription was live; marked canceled', {
        subscriptionId: row.id,
        workflowStatus: status,
        endedReason: reason,
      });
    }
  }
  return { checked: rows.length, marked, nextCursor: rows.length < limit ? null : rows.at(-1)!.id };
}

/** Marks the row canceled with `reason`, if it has not moved on since it was read; its event in the same transaction. */
async function markEnded(em: EntityManager, id: string, version: number, reason: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const now = new Date();
    const changed = await tx.nativeUpdate(
      Subscription,
      { id, version },
      {
        status: 'canceled',
        endedReason: reason,
        canceledAt: now,
        cancelAtPeriodEnd: false,
        dunning: null,
        version: version + 1,
        updatedAt: now,
      },
    );
    if (changed === 0) return false;
    const row = await tx.findOneOrFail(Subscription, { id }, { refresh: true });
    await recordEvent(tx, {
      accountId: row.accountId,
      livemode: row.livemode,
      type: 'subscription.canceled',
      object: serializeSubscription(row),
      transactionId: null,
    });
    return true;
  });
}
