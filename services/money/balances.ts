import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import { BalanceTransaction } from '../../db/entities/index.ts';
import { fundsAvailabilityWorkflow } from '../../workflows/funds-availability.ts';
import type { WorkflowStartContext } from '../context.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from '../test-clocks/clocks.ts';
import { currentTestClock, currentTime } from '../test-clocks/now.ts';

/**
 * Starts the availability workflow of a pending balance transaction (workflow id
 * = its id), sleeping until its available_on. Idempotent: a workflow with that id,
 * running or closed, is left alone (`false`).
 */
export async function startFundsAvailability(
  ctx: WorkflowStartContext,
  btxn: Pick<BalanceTransaction, 'id' | 'availableOn'>,
): Promise<boolean> {
  const { client, taskQueue } = ctx.temporal;
  // Money of an object on a test clock becomes available on the clock's time.
  const testClock = currentTestClock();
  if (testClock) await bindToClock(client, testClock, btxn.id);
  try {
    await client.workflow.start(fundsAvailabilityWorkflow, {
      workflowId: btxn.id,
      taskQueue: taskQueueFor(taskQueue, testClock),
      args: [
        {
          balanceTransactionId: btxn.id,
          availableAfterMs: Math.max(0, btxn.availableOn.getTime() - currentTime().getTime()),
          ...(testClock ? { testClock } : {}),
        },
      ],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Funds of ${btxn.id} become available`,
    });
    return true;
  } catch (error) {
    if (testClock) await unbindFromClock(client, testClock, btxn.id);
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/**
 * After the commit that recorded a payment: starts the availability workflows of
 * its pending money. A process that dies before this leaves the movement pending;
 * the maintenance reconciler (reconcileMissingAvailability) starts it later.
 */
export async function startAvailabilityOf(
  em: EntityManager,
  ctx: Partial<WorkflowStartContext>,
  sourceId: string,
): Promise<void> {
  if (!ctx.temporal) return;
  const pending = await em.find(
    BalanceTransaction,
    { source: sourceId, status: 'pending' },
    { fields: ['id', 'availableOn'] },
  );
  for (const btxn of pending) await startFundsAvailability({ temporal: ctx.temporal }, btxn);
}

/**
 * A payment's money still pending: the balance transactions that become available
 * `availableAfterMs` from now. Relative, as for fundsAvailabilityWorkflow: the workflow
 * that owns it adds it to its own time (a test server's skipped time, or a test clock's).
 */
export interface PendingFunds {
  balanceTransactionIds: string[];
  availableAfterMs: number;
}

/**
 * The pending balance transactions of a payment, marked as owned by a workflow
 * (`workflow_confirmed_at`: the maintenance reconciler starts no availability workflow
 * for them), grouped by available_on. One statement; a retry finds them again. (A first
 * run writes them owned with the payment: chargeCustomer's `fundsOwnedByWorkflow`.)
 * Used by the subscription workflow's renewals (services/subscriptions/renew-cycle.ts) and its other
 * charges (a dunning retry, an upgrade: the `charge` activity with `ownFunds`).
 */
export async function claimPendingFunds(em: EntityManager, transactionId: string): Promise<PendingFunds[]> {
  const rows = await em
    .getConnection()
    .execute<
      { id: string; available_on: Date }[]
    >(`update balance_transactions set workflow_confirmed_at = coalesce(workflow_confirmed_at, now()) where source = ? and status = 'pending' returning id, available_on`, [transactionId], 'all', em.getTransactionContext());
  return pendingFunds(rows.map((row) => ({ id: row.id, availableOn: new Date(row.available_on) })));
}

/** Pending balance transactions grouped by how long from now (the wall clock's, or the test clock's) they become available. */
export function pendingFunds(btxns: Pick<BalanceTransaction, 'id' | 'availableOn'>[]): PendingFunds[] {
  const now = currentTime().getTime();
  const byDelay = new Map<number, string[]>();
  for (const btxn of btxns) {
    const afterMs = Math.max(0, btxn.availableOn.getTime() - now);
    byDelay.set(afterMs, [...(byDelay.get(afterMs) ?? []), btxn.id]);
  }
  return [...byDelay].map(([availableAfterMs, balanceTransactionIds]) => ({
    availableAfterMs,
    balanceTransactionIds: balanceTransactionIds.sort(),
  }));
}
