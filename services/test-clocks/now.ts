/**
 * "Now" for services: the wall clock, or, inside an activity of a workflow on a test
 * clock, the clock's time (activities/test-clock-context.ts runs each such activity
 * inside `onTestClock`). Services that record a timestamp take it from `currentTime()`,
 * so an invoice, a charge, a transaction, an event or an email of an object on a test
 * clock carries the clock's time.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import type { ClockBinding } from '../../workflows/clock-sleep.ts';

const store = new AsyncLocalStorage<ClockBinding>();

/** Runs `fn` on the test clock `binding` (or as is, without one). */
export function onTestClock<T>(binding: ClockBinding | undefined, fn: () => Promise<T>): Promise<T> {
  return binding ? store.run(binding, fn) : fn();
}

/** The test clock the current activity runs on, or undefined. */
export function currentTestClock(): ClockBinding | undefined {
  return store.getStore();
}

/** The wall clock's time, or the test clock's. */
export function currentTime(): Date {
  const binding = store.getStore();
  return binding ? new Date(binding.now) : new Date();
}
