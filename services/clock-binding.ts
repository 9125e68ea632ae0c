/**
 * Binding work to a test clock before its workflow starts (services/test-clocks.ts
 * re-exports these): apart, so that services the clock's deletion calls (payouts) can
 * bind their workflows without importing test-clocks.ts back.
 */
import type { Client } from '@temporalio/client';
import { clockRegisterSignal, clockUnregisterSignal, type ClockBinding } from '../workflows/clock-sleep.ts';

/**
 * Tells the clock that `workflowId` is about to start on it: the clock waits for it
 * to report before moving on. Call before starting the workflow.
 */
export async function bindToClock(client: Client, binding: ClockBinding, workflowId: string): Promise<void> {
  await client.workflow.getHandle(binding.id).signal(clockRegisterSignal, { workflowId, known: binding.now });
}

/**
 * Undoes bindToClock when the workflow did not start (it existed already): the clock
 * forgets a registration that never reported. (It used to send a "done" report, which
 * also removed the live workflow of an activity retried after a timeout: that
 * workflow then never heard the clock again; seen as 85 of 1,000 payments never
 * becoming available in bench:test-clocks.)
 */
export async function unbindFromClock(client: Client, binding: ClockBinding, workflowId: string): Promise<void> {
  await client.workflow.getHandle(binding.id).signal(clockUnregisterSignal, { workflowId });
}

