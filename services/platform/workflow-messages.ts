/**
 * How a message (an update) to a long-lived workflow can fail without being a bug: the workflow
 * is gone (never started, or finished meanwhile), or its validator or handler refused the message
 * with an ApplicationFailure whose `type` is the API's error code. Every caller that messages a
 * subscription, an invoice or a payment request reads the failure through these.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

import { ApiError } from '../../domain/errors.ts';

/** The workflow the message was for no longer runs (or never did). */
export function workflowGone(error: unknown): boolean {
  return (
    error instanceof WorkflowNotFoundError ||
    (error instanceof Error && /already completed|not found/i.test(error.message))
  );
}

/** The workflow's refusal of an update (its ApplicationFailure: `type` and `message`), or null. */
export function updateRefusal(error: unknown): ApplicationFailure | null {
  return error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure ? error.cause : null;
}

/** Runs an update of a subscription's workflow; one that finished meanwhile answers like an ended subscription (409 invalid_state). */
export async function sendToSubscription<T>(update: () => Promise<T>): Promise<T> {
  try {
    return await update();
  } catch (error) {
    if (workflowGone(error)) throw new ApiError('invalid_state', 'The subscription has ended.');
    throw error;
  }
}
