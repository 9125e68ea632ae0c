/**
 * A worker interceptor: an activity scheduled by a workflow on a test clock (its header,
 * set by workflows/test-clock-interceptors.ts) runs on the clock's time
 * (services/test-clocks/now.ts).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

import { onTestClock } from '../services/test-clocks/now.ts';
import { type ClockBinding, testClockHeader } from '../workflows/clock-sleep.ts';

export const testClockContext: ActivityInterceptorsFactory = () => ({
  inbound: {
    async execute(input, next) {
      const header = input.headers[testClockHeader];
      if (!header) return next(input);
      return onTestClock(defaultPayloadConverter.fromPayload<ClockBinding>(header), () => next(input));
    },
  },
});
