/**
 * Binding work to a test clock before its workflow starts (services/test-clocks/clocks.ts
 * re-exports these): apart, so that services the clock's deletion calls (payouts) can
 * bind their workflows without importing test-clocks.ts back.
 */
import type { Client } from '@temporalio/client';

import { type ClockBinding, clockRegisterSignal, clockUnregisterSignal } from '../../workflows/clock-sleep.ts';
import { clockRegistryEm, writeClockMessage } from './registry.ts';

/**
 * Tells the clock that `workflowId` is about to start on it: the clock waits for it
 * to report before moving on. Call before starting the workflow.
 */
export async function bindToClock(client: Client, binding: ClockBinding, workflowId: string): Promise<void> {
  // Into the clock's table (services/test-clocks/registry.ts); a clock without one (started before it) hears a signal.
  const em = clockRegistryEm();
  if (em && (await writeClockMessage(em, client, binding.id, { kind: 'register', workflowId, known: binding.now })))
    return;
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
  const em = clockRegistryEm();
  if (em && (await writeClockMessage(em, client, binding.id, { kind: 'unregister', workflowId }))) return;
  await client.workflow.getHandle(binding.id).signal(clockUnregisterSignal, { workflowId });
}

/**
 * Test clock work runs on a task queue of its own (config.ts clockTaskQueue, TEMPORAL_CLOCK_TASK_QUEUE; default
 * `<task queue>-clocks`), served by a Worker of its own with modest limits (worker.ts createClockWorker), so that an
 * advance over many renewals never holds a slot that live traffic waits for (docs/scaling.md#test-clocks).
 * Every workflow started with a clock binding goes there (the clock's own workflow too); its activities and
 * continue-as-new runs follow their workflow's queue. The pairs a process serves are registered at start
 * (createApp, createBillingWorker, createClockWorker); an unregistered queue's clock queue is `<queue>-clocks`.
 */
const clockQueueOfMain = new Map<string, string>();
const mainQueueOfClock = new Map<string, string>();

/** The default clock queue of a task queue (TEMPORAL_CLOCK_TASK_QUEUE unset). */
export const defaultClockTaskQueue = (taskQueue: string) => `${taskQueue}-clocks`;

/** Records that test clock work of `taskQueue` runs on `clockTaskQueue` (this process's configuration). */
export function registerClockTaskQueue(taskQueue: string, clockTaskQueue: string): void {
  clockQueueOfMain.set(taskQueue, clockTaskQueue);
  mainQueueOfClock.set(clockTaskQueue, taskQueue);
}

/** The clock queue of `taskQueue` (itself when it is one: an activity of a clock's workflow starting more work on the clock). */
export function clockTaskQueueOf(taskQueue: string): string {
  if (mainQueueOfClock.has(taskQueue)) return taskQueue;
  return clockQueueOfMain.get(taskQueue) ?? defaultClockTaskQueue(taskQueue);
}

/** The live queue of `taskQueue` (itself unless it is a registered clock queue). */
export function mainTaskQueueOf(taskQueue: string): string {
  return mainQueueOfClock.get(taskQueue) ?? taskQueue;
}

/** Where a workflow starts: the clock queue when it is bound to a test clock, else the live queue. */
export function taskQueueFor(taskQueue: string, testClock: ClockBinding | null | undefined): string {
  return testClock ? clockTaskQueueOf(taskQueue) : mainTaskQueueOf(taskQueue);
}
