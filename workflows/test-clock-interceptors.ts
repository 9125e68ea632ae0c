/**
 * Workflow interceptors (registered in worker.ts and the test bundle): an activity
 * scheduled by a workflow on a test clock carries the clock's id and time in a header,
 * so the services it calls take the clock's time (services/test-clocks/now.ts). A workflow
 * not on a clock schedules exactly as before: no header.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

import { currentClockBinding, testClockHeader } from './clock-sleep.ts';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleActivity(input, next) {
        const binding = currentClockBinding();
        return next(
          binding
            ? { ...input, headers: { ...input.headers, [testClockHeader]: defaultPayloadConverter.toPayload(binding) } }
            : input,
        );
      },
      scheduleLocalActivity(input, next) {
        const binding = currentClockBinding();
        return next(
          binding
            ? { ...input, headers: { ...input.headers, [testClockHeader]: defaultPayloadConverter.toPayload(binding) } }
            : input,
        );
      },
    },
  ],
});
