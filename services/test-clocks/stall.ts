import type { Client } from '@temporalio/client';

import type { TestClock } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { stallClockSignal } from '../../workflows/test-clock.ts';

/** The longest quiet timeout a stalled clock takes (the default, for a clock not stalled, is 5 minutes). */
export const maxStallQuietTimeoutSeconds = 60;

/**
 * The sandbox test helper POST /v1/test_helpers/test_clocks/{id}/stall: the clock's workflow
 * (workflows/test-clock.ts) takes a stand-in for a workflow that never reports its work, and
 * waits at most `quietTimeoutSeconds` for due work to go quiet. Its next advance then fails
 * as one held up by a stuck workflow does: `internal_failure` and test_clock.internal_failure.
 * Only a ready clock: one advancing already would fail before the caller's advance.
 */
export async function stallTestClock(
  temporal: Client,
  clock: TestClock,
  quietTimeoutSeconds: number,
): Promise<TestClock> {
  if (clock.status !== 'ready')
    throw new ApiError(
      'invalid_state',
      `Test clock ${clock.id} is ${clock.status}: only a ready clock can be stalled before its next advance.`,
    );
  await temporal.workflow.getHandle(clock.id).signal(stallClockSignal, { quietTimeoutMs: quietTimeoutSeconds * 1000 });
  return clock;
}
