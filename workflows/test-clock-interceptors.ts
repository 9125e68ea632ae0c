/**
 * Workflow interceptors (registered in worker.ts and the test bundle): an activity
 * scheduled by a workflow on a test clock carries the clock's id and time in a header,
 * so the services it calls take the clock's time (services/test-clocks/now.ts). A workflow
 * not on a clock schedules exactly as before: no header.
 */
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

import { currentClockBinding, testClockHeader } from './clock-sleep.ts';

/** The activity's input with the clock's header when the workflow is on a test clock, else as it was. */
function withClockHeader<I extends { headers: Headers }>(input: I): I {
  const binding = currentClockBinding();
  return binding
    ? { ...input, headers: { ...input.headers, [testClockHeader]: defaultPayloadConverter.toPayload(binding) } }
    : input;
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleActivity: (input, next) => next(withClockHeader(input)),
      scheduleLocalActivity: (input, next) => next(withClockHeader(input)),
    },
  ],
});
