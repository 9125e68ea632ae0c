/**
 * payoutWorkflow: one per payout, workflow id = payout id (`po_...`). The payout
 * was recorded `pending` (its amount already off the available balance) by the
 * API or the payout schedule. This workflow owns its time:
 *
 * 1. pending for `arrivalMs` (it can be canceled; a `payoutChanged` signal wakes
 *    it at once), then submitPayout: under a hold it stays pending, showing the
 *    hold, until the hold is released (signal) or its `until` passes; otherwise the
 *    rail takes it, `in_transit` with its arrival_date;
 * 2. at the arrival date, settlePayout: `paid`, or `failed` (money back);
 * 3. the confirmation or failure email.
 *
 * Workflows started before these states (recorded histories) took the old path:
 * one timer, completePayout, the email. patched('payout-states') keeps them
 * replaying. Deterministic code only.
 *
 * Its waits go through workflowClock (workflows/clock-sleep.ts): without a test clock
 * they are the same `condition` timers as before (recorded histories replay
 * unchanged); on a clock (`testClock`), the clock's time.
 */
import { defineSignal, patched, proxyActivities, setCurrentDetails, setHandler, sleep } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import { type ClockBinding, workflowClock } from './clock-sleep.ts';

export interface PayoutWorkflowInput {
  payoutId: string;
  /** How long the payout stays pending (cancelable) before it is sent. */
  arrivalMs: number;
  /** A payout on a test clock (sandbox): it waits for the clock's time, not timers (workflows/clock-sleep.ts). */
  testClock?: ClockBinding;
}

/** A hold released inside a payout's cancelable time does not send it before that time ends (issue #24). */
export const payoutCancelWindowPatch = 'payout-cancel-window';

/** The payout's row changed (canceled, a hold released): look again now. */
export const payoutChangedSignal = defineSignal('payoutChanged');

const activities = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function payoutWorkflow(input: PayoutWorkflowInput): Promise<string> {
  if (!patched('payout-states')) {
    setCurrentDetails(`Payout ${input.payoutId} arrives at ${new Date(Date.now() + input.arrivalMs).toISOString()}.`);
    await sleep(input.arrivalMs, { summary: 'Payout arrival' });
    const status = await activities.completePayout(input.payoutId);
    setCurrentDetails(`Payout ${status}.`);
    if (status === 'paid') await activities.notifyPayoutPaid(input.payoutId);
    return status;
  }

  const clock = workflowClock(input.testClock);
  let changed = false;
  setHandler(payoutChangedSignal, () => {
    changed = true;
  });
  const woken = () => changed;
  const at = (ms: number | null) => (ms === null ? null : new Date(ms));

  const cancelableUntil = clock.now().getTime() + input.arrivalMs;
  setCurrentDetails(`Payout ${input.payoutId}: pending (cancelable) until ${new Date(cancelableUntil).toISOString()}.`);
  await clock.sleepUntil(at(cancelableUntil), woken);
  // Runs from before payout claims submitted whenever woken (a cancel then ended them); newer ones stay pending until the end of their cancelable time.
  const notBefore = patched(payoutCancelWindowPatch) ? [cancelableUntil] : [];
  let arrivalMs: number;
  for (;;) {
    changed = false;
    const submitted = await activities.submitPayout(input.payoutId, clock.now().getTime(), ...notBefore);
    if (submitted.status === 'in_transit') {
      arrivalMs = submitted.arrivalMs;
      break;
    }
    if (submitted.status === 'pending') {
      // Woken inside its cancelable time (a hold released in its first minute): the rest of that time first.
      await clock.sleepUntil(at(submitted.untilMs), woken);
      continue;
    }
    if (submitted.status !== 'held') {
      setCurrentDetails(`Payout ${submitted.status}.`);
      await clock.finished();
      return submitted.status;
    }
    setCurrentDetails(
      `Payout held by ${submitted.holdId}: ${submitted.reason}${submitted.untilMs ? ` (until ${new Date(submitted.untilMs).toISOString()})` : ' (until released)'}.`,
    );
    await clock.sleepUntil(at(submitted.untilMs), woken);
  }
  setCurrentDetails(`Payout in transit, arrives at ${new Date(arrivalMs).toISOString()}.`);
  await clock.sleepUntil(at(arrivalMs), () => false);
  const status = await activities.settlePayout(input.payoutId, clock.now().getTime());
  setCurrentDetails(`Payout ${status}.`);
  if (status === 'paid' || status === 'failed') await activities.notifyPayoutPaid(input.payoutId);
  await clock.finished();
  return status;
}
