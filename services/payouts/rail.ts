import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import { Account, BankAccount, Payout, PayoutHold, type PayoutStatus } from '../../db/entities/index.ts';
import { type DestinationType, methodOf } from '../../domain/bank-accounts.ts';
import { payoutFailedEmail, payoutPaidEmail } from '../../domain/email-templates.ts';
import { ApiError } from '../../domain/errors.ts';
import type { EventType } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import {
  payoutCurrencyProblem,
  type PayoutFailureCode,
  payoutFailures,
  payoutPendingMs,
  sandboxOutcome,
} from '../../domain/payouts.ts';
import { serializePayout } from '../../objects/payout.ts';
import type { ClockBinding } from '../../workflows/clock-sleep.ts';
import { payoutWorkflow } from '../../workflows/payout.ts';
import { loadModeSettings } from '../accounts/mode-settings.ts';
import type { ServiceContext, TemporalContext } from '../context.ts';
import { sendEmailOnce } from '../email/send-once.ts';
import { recordEvent } from '../events/record.ts';
import { postPayout, postPayoutFailure } from '../money/ledger.ts';
import { bindToClock, taskQueueFor, unbindFromClock } from '../test-clocks/binding.ts';
import { currentTime } from '../test-clocks/now.ts';
import { setBankAccountStatus } from './bank-accounts.ts';

/** What a payout rail needs to know of a payout (keyed by the payout id, so a retried activity never sends twice). */
export interface RailPayout {
  idempotencyKey: string;
  amount: number;
  currency: string;
  livemode: boolean;
  destination: { type: DestinationType; last4: string } | null;
}

/**
 * The seam for a real payout rail (a bank's ACH/SEPA API, PayPal Payouts, a wire
 * provider): `send` hands the payout over and says how long it travels; `outcome`
 * says how it ended at its arrival. Today every payout goes through the sandbox
 * rail, whose outcome depends on documented test account numbers (domain/payouts.ts).
 */
export interface PayoutRail {
  send(payout: RailPayout): Promise<{ transitMs: number }>;
  outcome(
    payout: RailPayout,
  ): Promise<{ status: 'paid' } | { status: 'failed'; failureCode: PayoutFailureCode; failureMessage: string }>;
}

/** The sandbox rail: records each payout it is sent once (sandbox_payout_transfers, keyed by the payout id); outcomes by test account numbers. */
export function createSandboxPayoutRail(em: EntityManager): PayoutRail {
  return {
    async send(payout) {
      await em
        .getConnection()
        .execute(
          `insert into sandbox_payout_transfers (idempotency_key, amount, currency, destination, created_at) values (?, ?, ?, ?, now()) on conflict (idempotency_key) do nothing`,
          [
            payout.idempotencyKey,
            payout.amount,
            payout.currency,
            payout.destination ? `${payout.destination.type}:${payout.destination.last4}` : null,
          ],
        );
      return { transitMs: sandboxOutcome(payout.destination?.last4 ?? '', payout.livemode).transitMs };
    },
    outcome: sandboxPayoutRail.outcome,
  };
}

/** The sandbox rail's decisions without its record (for a rail that wraps it). */
export const sandboxPayoutRail: PayoutRail = {
  async send(payout) {
    return { transitMs: sandboxOutcome(payout.destination?.last4 ?? '', payout.livemode).transitMs };
  },
  async outcome(payout) {
    const outcome = sandboxOutcome(payout.destination?.last4 ?? '', payout.livemode);
    return outcome.kind === 'paid'
      ? { status: 'paid' }
      : { status: 'failed', failureCode: outcome.code, failureMessage: payoutFailures[outcome.code] };
  },
};

/** Failure codes that say the destination itself is wrong: it becomes `errored`. */
const destinationErrors = new Set<string>([
  'account_closed',
  'account_frozen',
  'bank_ownership_changed',
  'invalid_account_number',
  'no_account',
  'bank_account_restricted',
]);

/**
 * A payout's events carry `transaction_id`: its balance transaction (the `payout`
 * one; for payout.failed and payout.canceled the one that gave the money back).
 */
export async function recordPayoutEvent(em: EntityManager, payout: Payout, type: EventType): Promise<void> {
  const transactionId =
    type === 'payout.failed' || type === 'payout.canceled'
      ? payout.failureBalanceTransactionId
      : payout.balanceTransactionId;
  await recordEvent(em, {
    accountId: payout.accountId,
    livemode: payout.livemode,
    type,
    object: serializePayout(payout),
    transactionId: transactionId ?? null,
  });
}

export interface NewPayout {
  id?: string;
  accountId: string;
  livemode: boolean;
  amount: number;
  currency: string;
  /** A `ba_…` of the account and mode; omitted: the default destination of `currency`. */
  destinationId?: string | null | undefined;
  description: string | null;
  automatic?: boolean;
  /** The test clock it lives on (sandbox): run the call inside `onTestClock` so it is recorded at the clock's time. */
  testClockId?: string | null;
}

/** The destination a payout goes to: the named one, or the default of its currency (errors in the API's words). */
export async function payoutDestination(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  currency: string,
  destinationId?: string | null,
): Promise<BankAccount> {
  if (destinationId) {
    const named = await em.findOne(BankAccount, { id: destinationId, ...scope, deletedAt: null });
    if (!named) throw new ApiError('not_found', `No such destination: ${destinationId}.`);
    if (named.currency !== currency)
      throw new ApiError('currency_mismatch', `${named.id} takes ${named.currency}, not ${currency}.`);
    return named;
  }
  const fallback = await em.findOne(BankAccount, { ...scope, currency, defaultForCurrency: true, deletedAt: null });
  if (!fallback)
    throw new ApiError(
      'invalid_request',
      `destination: there is no default destination for ${currency}; add one with POST /v1/bank_accounts or name one.`,
    );
  return fallback;
}

/** The hold that applies to a payout at `at`: one on the payout, or on its account and mode; null when none. */
export async function activeHold(
  em: EntityManager,
  payout: { id: string; accountId: string; livemode: boolean },
  at: Date,
): Promise<PayoutHold | null> {
  return em.findOne(
    PayoutHold,
    {
      accountId: payout.accountId,
      livemode: payout.livemode,
      releasedAt: null,
      $and: [
        { $or: [{ until: null }, { until: { $gt: at } }] },
        { $or: [{ payoutId: null }, { payoutId: payout.id }] },
      ],
    },
    { orderBy: { id: 'asc' } },
  );
}

/**
 * Records a pending payout and takes its amount from the available balance (a
 * `payout` balance transaction, available -> external, sourced by the payout id), with its
 * `payout.created` event, in one database transaction: `insufficient_funds` when
 * the balance does not cover it, and then nothing is written. The currency must
 * be USD, EUR or GBP and the destination's.
 */
export async function createPayout(em: EntityManager, input: NewPayout): Promise<Payout> {
  const problem = payoutCurrencyProblem(input.currency);
  if (problem) throw new ApiError('invalid_request', `currency: ${problem}`);
  const scope = { accountId: input.accountId, livemode: input.livemode };
  return em.transactional(async (tx) => {
    const destination = await payoutDestination(tx, scope, input.currency, input.destinationId);
    const now = currentTime();
    const payout = tx.create(Payout, {
      id: input.id ?? newId('payout'),
      ...scope,
      amount: input.amount,
      currency: input.currency,
      method: methodOf(destination.type),
      description: input.description,
      destinationId: destination.id,
      status: 'pending',
      failureCode: null,
      failureMessage: null,
      createdAt: now,
      updatedAt: now,
      paidAt: null,
      arrivalDate: null,
      canceledAt: null,
      submittedAt: null,
      workflowConfirmedAt: null,
      balanceTransactionId: null,
      failureBalanceTransactionId: null,
      automatic: input.automatic ?? false,
      holdId: null,
      holdReason: null,
      testClockId: input.testClockId ?? null,
    });
    // Under an account-wide hold it shows the hold from the start (its workflow keeps it pending until released).
    const hold = await activeHold(tx, payout, now);
    if (hold) {
      payout.holdId = hold.id;
      payout.holdReason = hold.reason;
    }
    await tx.flush();
    payout.balanceTransactionId = (await postPayout(tx, payout)).id;
    await tx.flush();
    await recordPayoutEvent(tx, payout, 'payout.created');
    return payout;
  });
}

/**
 * Starts a pending payout's payoutWorkflow (workflow id = payout id), as the API
 * does right after createPayout, and as the maintenance reconciler does for a
 * payout whose API process died in between. Idempotent: when a workflow with that
 * id exists, running or closed, it is left alone (`false`). `pendingMs`: how long it stays
 * pending from now (the reconciler passes what is left of its window, in its own time).
 */
export async function startPayoutWorkflow(
  { client, taskQueue }: Pick<TemporalContext, 'client' | 'taskQueue'>,
  payoutId: string,
  testClock?: ClockBinding,
  pendingMs: number = payoutPendingMs,
): Promise<boolean> {
  // A payout on a test clock is registered on it first, so the clock waits for it (workflows/clock-sleep.ts).
  if (testClock) await bindToClock(client, testClock, payoutId);
  try {
    await client.workflow.start(payoutWorkflow, {
      workflowId: payoutId,
      taskQueue: taskQueueFor(taskQueue, testClock),
      args: [{ payoutId, arrivalMs: pendingMs, ...(testClock ? { testClock } : {}) }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Payout ${payoutId}${testClock ? ` (test clock ${testClock.id})` : ''}`,
    });
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) {
      if (testClock) await unbindFromClock(client, testClock, payoutId);
      return false;
    }
    throw error;
  }
}

/** Tells a payout's workflow that its row changed (canceled, hold released), so it looks again now rather than at its next timer. */
export async function wakePayoutWorkflow(client: Client, payoutId: string): Promise<void> {
  await client.workflow
    .getHandle(payoutId)
    .signal('payoutChanged')
    .catch(() => undefined);
}

async function railPayout(em: EntityManager, payout: Payout): Promise<RailPayout> {
  const destination = payout.destinationId ? await em.findOne(BankAccount, { id: payout.destinationId }) : null;
  return {
    idempotencyKey: payout.id,
    amount: payout.amount,
    currency: payout.currency,
    livemode: payout.livemode,
    destination: destination ? { type: destination.type, last4: destination.last4 } : null,
  };
}

export type SubmitResult =
  | { status: 'in_transit'; arrivalMs: number }
  | { status: 'held'; holdId: string; reason: string; untilMs: number | null }
  /** Woken before its pending (cancelable) time ended, e.g. by a hold released in its first minute: wait until `untilMs`. */
  | { status: 'pending'; untilMs: number }
  | { status: Exclude<PayoutStatus, 'in_transit' | 'pending'> };

/** The claim's answer: the payout is ours to send (`claimed`), or why it is not sent now. */
type Claim = { status: 'claimed'; payout: Payout } | SubmitResult;

/** The payout's row under its write lock, read afresh: claims, hand-overs and outcomes of one payout take turns on it. */
const lockPayout = (tx: EntityManager, payoutId: string) =>
  tx.findOneOrFail(Payout, { id: payoutId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });

/** The answer for a payout already with its rail (in transit) or ended; undefined while it is pending. */
function decidedAnswer(row: Payout): SubmitResult | undefined {
  if (row.status === 'in_transit') return { status: 'in_transit', arrivalMs: row.arrivalDate!.getTime() };
  if (row.status !== 'pending') return { status: row.status as Exclude<PayoutStatus, 'in_transit' | 'pending'> };
  return undefined;
}

/**
 * The one decision between sending a payout and canceling or holding it: under the
 * payout's row lock, a pending payout with no hold in force is claimed for its rail
 * (`submitted_at`), committed before the rail sees it. cancelPayout and placeHold
 * take the same lock and refuse a claimed payout, so a payout is either canceled
 * (never handed over) or sent (never given back). A claimed payout is claimed again
 * by a retried activity (a worker that died between claim and rail), which then
 * hands it over: the rail is idempotent on the payout id.
 */
async function claimForRail(em: EntityManager, payoutId: string, at: Date, notBefore?: Date): Promise<Claim> {
  return em.transactional(async (tx) => {
    const row = await lockPayout(tx, payoutId);
    const decided = decidedAnswer(row);
    if (decided) return decided;
    if (row.submittedAt) return { status: 'claimed' as const, payout: row };
    if (notBefore && at < notBefore) return { status: 'pending' as const, untilMs: notBefore.getTime() };
    // Read after the lock: a hold whose transaction locked this row first is seen (placeHold).
    const hold = await activeHold(tx, row, at);
    if (hold) {
      if (row.holdId !== hold.id) {
        row.holdId = hold.id;
        row.holdReason = hold.reason;
        row.updatedAt = currentTime();
        await tx.flush();
        await recordPayoutEvent(tx, row, 'payout.updated');
      }
      return { status: 'held' as const, holdId: hold.id, reason: hold.reason, untilMs: hold.until?.getTime() ?? null };
    }
    row.submittedAt = currentTime();
    await tx.flush();
    return { status: 'claimed' as const, payout: row };
  });
}

/**
 * The end of a payout's pending time (`at`: the workflow's clock): under a hold it
 * stays pending and shows the hold (payout.updated once per hold); otherwise it is
 * claimed (claimForRail), the rail takes it, and it is `in_transit` with its
 * `arrival_date` (payout.updated). Before `notBefore` (the end of its cancelable
 * time, on the workflow's clock: a workflow woken early by a hold's release) it
 * stays pending. Anything but pending is answered as it is, so a retried activity
 * changes nothing.
 */
export async function submitPayout(
  em: EntityManager,
  rail: PayoutRail,
  payoutId: string,
  at = new Date(),
  notBefore?: Date,
): Promise<SubmitResult> {
  const claim = await claimForRail(em, payoutId, at, notBefore);
  if (claim.status !== 'claimed') return claim;
  const sent = await rail.send(await railPayout(em, claim.payout));
  return em.transactional(async (tx) => {
    const row = await lockPayout(tx, payoutId);
    // Only a deleted test clock ends a claimed payout otherwise (cancelClockPayouts).
    const decided = decidedAnswer(row);
    if (decided) return decided;
    row.status = 'in_transit';
    row.arrivalDate = new Date(at.getTime() + sent.transitMs);
    row.holdId = null;
    row.holdReason = null;
    row.updatedAt = currentTime();
    await tx.flush();
    await recordPayoutEvent(tx, row, 'payout.updated');
    return { status: 'in_transit' as const, arrivalMs: row.arrivalDate.getTime() };
  });
}

/**
 * A payout in transit arrives (`at`: the workflow's clock): the rail says `paid`
 * (payout.paid; the destination becomes `verified`) or `failed` (payout.failed,
 * the amount back on the available balance by a `payout_failure` balance
 * transaction; a destination that does not exist or was closed becomes `errored`).
 * Under a row lock: a retried activity changes nothing.
 */
export async function settlePayout(
  em: EntityManager,
  rail: PayoutRail,
  payoutId: string,
  at = new Date(),
): Promise<PayoutStatus> {
  const current = await em.findOneOrFail(Payout, { id: payoutId });
  if (current.status !== 'in_transit') return current.status;
  const outcome = await rail.outcome(await railPayout(em, current));
  return em.transactional(async (tx) => {
    const row = await lockPayout(tx, payoutId);
    if (row.status !== 'in_transit') return row.status;
    row.updatedAt = currentTime();
    if (outcome.status === 'paid') {
      row.status = 'paid';
      row.paidAt = at;
    } else {
      row.status = 'failed';
      row.failureCode = outcome.failureCode;
      row.failureMessage = outcome.failureMessage;
      row.failureBalanceTransactionId = (await postPayoutFailure(tx, row)).id;
    }
    await tx.flush();
    await recordPayoutEvent(tx, row, row.status === 'paid' ? 'payout.paid' : 'payout.failed');
    if (row.destinationId) {
      if (row.status === 'paid') await setBankAccountStatus(tx, row.destinationId, 'verified');
      else if (destinationErrors.has(row.failureCode ?? ''))
        await setBankAccountStatus(tx, row.destinationId, 'errored');
    }
    return row.status;
  });
}

/**
 * Workflows started before payouts had states (histories recorded then): from
 * pending straight to how it ended. Kept for those histories' replay.
 */
export async function completePayout(
  em: EntityManager,
  rail: PayoutRail,
  payoutId: string,
  at = new Date(),
): Promise<PayoutStatus> {
  const submitted = await submitPayout(em, rail, payoutId, at);
  if (submitted.status !== 'in_transit') return submitted.status === 'held' ? 'pending' : submitted.status;
  return settlePayout(em, rail, payoutId, at);
}

/**
 * Cancels a pending payout (`not_cancellable` once it was claimed for its rail,
 * sent or ended; the claim takes the same row lock, claimForRail): the
 * amount goes back to the available balance with a `payout_cancel` balance
 * transaction, and payout.canceled, in one database transaction; a hold placed on
 * this payout is released with it.
 */
export async function cancelPayout(
  em: EntityManager,
  scope: { accountId: string; livemode: boolean },
  payoutId: string,
): Promise<Payout | null> {
  return em.transactional(async (tx) => {
    const row = await tx.findOne(Payout, { id: payoutId, ...scope }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!row) return null;
    if (row.status !== 'pending')
      throw new ApiError('not_cancellable', `The payout is ${row.status}; only a pending payout can be canceled.`);
    // Claimed for the rail under this same lock (claimForRail): it is being sent, and the money with it.
    if (row.submittedAt)
      throw new ApiError(
        'not_cancellable',
        'The payout is being handed to its bank rail; it can no longer be canceled.',
      );
    row.status = 'canceled';
    row.canceledAt = currentTime();
    row.updatedAt = row.canceledAt;
    row.failureBalanceTransactionId = (await postPayoutFailure(tx, row, 'payout_cancel')).id;
    // A hold on this payout alone has nothing left to hold: it ends with it (an account-wide hold stays).
    await tx.nativeUpdate(PayoutHold, { payoutId: row.id, releasedAt: null }, { releasedAt: row.canceledAt });
    await tx.flush();
    await recordPayoutEvent(tx, row, 'payout.canceled');
    return row;
  });
}

/**
 * A test clock is deleted: its payouts not yet ended (pending or in transit) are
 * canceled, their amounts back on the available balance (`payout_cancel`), with
 * payout.canceled, each in one database transaction; the ended ones stay as the
 * money records they are. Their workflows were ended with the clock. Returns how many.
 */
export async function cancelClockPayouts(em: EntityManager, clockId: string): Promise<number> {
  const open = await em.find(
    Payout,
    { testClockId: clockId, status: { $in: ['pending', 'in_transit'] } },
    { fields: ['id'] },
  );
  let canceled = 0;
  for (const { id } of open) {
    await em.transactional(async (tx) => {
      const row = await tx.findOne(Payout, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!row || (row.status !== 'pending' && row.status !== 'in_transit')) return;
      row.status = 'canceled';
      row.canceledAt = new Date();
      row.updatedAt = row.canceledAt;
      row.failureBalanceTransactionId = (await postPayoutFailure(tx, row, 'payout_cancel')).id;
      await tx.nativeUpdate(PayoutHold, { payoutId: row.id, releasedAt: null }, { releasedAt: row.canceledAt });
      await tx.flush();
      await recordPayoutEvent(tx, row, 'payout.canceled');
      canceled++;
    });
  }
  return canceled;
}

/**
 * The account's email about how a payout ended, once per payout: the
 * confirmation when paid, the failure with its reason when failed; neither when
 * it turned `payout_confirmations` off in the payout's mode.
 */
export async function notifyPayoutPaid(
  ctx: Pick<ServiceContext, 'mailer' | 'processors'>,
  em: EntityManager,
  payoutId: string,
): Promise<void> {
  const payout = await em.findOneOrFail(Payout, { id: payoutId });
  if (payout.status !== 'paid' && payout.status !== 'failed') return;
  const account = await em.findOneOrFail(Account, { id: payout.accountId });
  if (!(await loadModeSettings(em, account.id, payout.livemode)).notifications.payout_confirmations) return;
  const amount = formatMoney(payout.amount, payout.currency);
  const email =
    payout.status === 'failed'
      ? payoutFailedEmail({
          accountName: account.name,
          amount,
          destination: await destinationText(em, payout.destinationId),
          payoutId: payout.id,
          failureCode: payout.failureCode ?? 'could_not_process',
          failureMessage: payout.failureMessage ?? payoutFailures.could_not_process,
        })
      : payoutPaidEmail({
          accountName: account.name,
          amount,
          method: payout.method,
          payoutId: payout.id,
          paidAt: payout.paidAt ?? payout.updatedAt,
          description: payout.description ?? null,
        });
  await sendEmailOnce(
    em,
    ctx.mailer,
    {
      // `<payout id>:payout_paid` or `:payout_failed`: one email per payout and outcome.
      dedupeKey: `${payout.id}:payout_${payout.status}`,
      accountId: account.id,
      to: account.email,
      livemode: payout.livemode,
      ...email,
    },
    ctx.processors,
  );
}

/** How a failed payout's email names where it was going: the bank account or PayPal and its last four. */
async function destinationText(em: EntityManager, destinationId: string | null | undefined): Promise<string> {
  const destination = destinationId ? await em.findOne(BankAccount, { id: destinationId }) : null;
  return destination
    ? `${destination.type === 'paypal' ? 'PayPal' : 'the account'} ending in ${destination.last4} (${destination.id})`
    : 'its destination';
}
