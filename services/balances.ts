import { currentTestClock, currentTime } from './clock-context.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from './test-clocks.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { BalanceTransaction } from '../db/entities/index.ts';
import { availabilityDelayMs, availabilityOverrideSeconds, type ProcessorName } from '../domain/balance-availability.ts';
import { fundsAvailabilityWorkflow } from '../workflows/funds-availability.ts';

/** How long a payment through `processor` stays pending in this mode (BALANCE_AVAILABILITY_DELAY_SECONDS overrides). */
export function paymentAvailabilityDelayMs(processor: ProcessorName | undefined, livemode: boolean): number {
  return availabilityDelayMs(processor ?? 'sandbox', livemode, availabilityOverrideSeconds(process.env));
}

/** Where availability workflows are started from: the API's client, or an activity's. */
export interface WorkflowStarter {
  client: Client;
  taskQueue: string;
}

/**
 * Starts the availability workflow of a pending balance transaction (workflow id
 * = its id), sleeping until its available_on. Idempotent: a workflow with that id,
 * running or closed, is left alone (`false`).
 */
export async function startFundsAvailability(starter: WorkflowStarter, btxn: Pick<BalanceTransaction, 'id' | 'availableOn'>): Promise<boolean> {
  // Money of an object on a test clock becomes available on the clock's time.
  const testClock = currentTestClock();
  if (testClock) await bindToClock(starter.client, testClock, btxn.id);
  try {
    await starter.client.workflow.start(fundsAvailabilityWorkflow, {
      workflowId: btxn.id,
      taskQueue: taskQueueFor(starter.taskQueue, testClock),
      args: [{ balanceTransactionId: btxn.id, availableAfterMs: Math.max(0, btxn.availableOn.getTime() - currentTime().getTime()), ...(testClock ? { testClock } : {}) }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Funds of ${btxn.id} become available`,
    });
    return true;
  } catch (error) {
    if (testClock) await unbindFromClock(starter.client, testClock, btxn.id);
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/**
 * After the commit that recorded a payment: starts the availability workflows of
 * its pending money. A process that dies before this leaves the movement pending;
 * the maintenance reconciler (reconcileMissingAvailability) starts it later.
 */
export async function startAvailabilityOf(em: EntityManager, starter: WorkflowStarter | undefined, sourceId: string): Promise<void> {
  if (!starter) return;
  const pending = await em.find(BalanceTransaction, { source: sourceId, status: 'pending' }, { fields: ['id', 'availableOn'] });
  for (const btxn of pending) await startFundsAvailability(starter, btxn);
}
