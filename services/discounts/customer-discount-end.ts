/**
 * The timer that ends a customer's own repeating discount on time (workflows/discount-end.ts),
 * started by the API right after the discount's transaction commits. The workflow id is derived
 * from the discount's id, so a start repeated for one discount starts nothing more.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import type { Discount } from '../../db/entities/index.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import { discountEndWorkflow, discountEndWorkflowId } from '../../workflows/discount-end.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import type { WorkflowStartContext } from '../context.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from '../test-clocks/binding.ts';

/**
 * Starts the discount's end timer: on the customer's test clock when `testClock` (read before the
 * discount was made: a clock that is advancing refuses the request before anything changes). A
 * discount without an end (once, forever), a subscription's or an invoice's needs none.
 */
export async function startDiscountEndTimer(
  ctx: WorkflowStartContext,
  discount: Pick<Discount, 'id' | 'accountId' | 'livemode' | 'end' | 'subscriptionId' | 'invoiceId'>,
  testClock: ClockBinding | undefined,
): Promise<void> {
  if (!discount.end || discount.subscriptionId || discount.invoiceId) return;
  const { client, taskQueue } = ctx.temporal;
  const workflowId = discountEndWorkflowId(discount.id);
  if (testClock) await bindToClock(client, testClock, workflowId);
  try {
    await client.workflow.start(discountEndWorkflow, {
      workflowId,
      taskQueue: taskQueueFor(taskQueue, testClock),
      args: [{ discountId: discount.id, end: discount.end.toISOString(), ...(testClock ? { testClock } : {}) }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Discount ${discount.id} ends at ${discount.end.toISOString()}${testClock ? ` (test clock ${testClock.id})` : ''}`,
      typedSearchAttributes: [
        { key: AccountIdKey, value: discount.accountId },
        { key: LivemodeKey, value: discount.livemode },
      ],
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    if (testClock) await unbindFromClock(client, testClock, workflowId);
  }
}
