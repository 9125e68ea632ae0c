import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { Account, Payout, type PayoutMethod, type PayoutStatus } from '../db/entities/index.ts';
import type { EventType } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import { formatMoney } from '../domain/money.ts';
import { sandboxPayoutArrivalMs } from '../domain/payouts.ts';
import { payoutWorkflow } from '../workflows/payout.ts';
import { sendEmailOnce, type TestModes } from './email.ts';
import { payoutPaidEmail } from '../domain/email-templates.ts';
import { serializePayout } from '../objects/payout.ts';
import { recordEvent } from './events.ts';
import { postPayout, postPayoutFailure } from './ledger.ts';
import type { Mailer } from './mailer.ts';
import { loadModeSettings } from './mode-settings.ts';

/**
 * The seam for a real payout rail (a bank's ACH/SEPA API, PayPal Payouts, a wire
 * provider): send the money, keyed by the payout id so a retried activity never
 * sends twice, and say how it ended. Today every payout, in either mode, goes
 * through the sandbox rail, which pays at once.
 */
export interface PayoutRail {
  send(payout: { idempotencyKey: string; amount: number; currency: string; method: PayoutMethod }): Promise<{ status: 'paid' } | { status: 'failed'; failureCode: string; failureMessage: string }>;
}

export const sandboxPayoutRail: PayoutRail = {
  async send() {
    return { status: 'paid' };
  },
};

/**
 * A payout is not a transaction (it moves the account's own money out, it charges
 * nobody), so its events carry `transaction_id: null`; its movement on the balance
 * is its `balance_transaction`.
 */
async function recordPayoutEvent(em: EntityManager, payout: Payout, type: EventType): Promise<void> {
  await recordEvent(em, { accountId: payout.accountId, livemode: payout.livemode, type, object: serializePayout(payout), transactionId: null });
}

export interface NewPayout {
  accountId: string;
  livemode: boolean;
  amount: number;
  currency: string;
  method: PayoutMethod;
  description: string | null;
}

/**
 * Records a pending payout and takes its amount from the available balance (a
 * `payout` balance transaction, available -> external, sourced by the payout id), with its
 * `payout.created` event, in one database transaction: `insufficient_funds` when
 * the balance does not cover it, and then nothing is written.
 */
export async function createPayout(em: EntityManager, input: NewPayout): Promise<Payout> {
  return em.transactional(async (tx) => {
    const now = new Date();
    const payout = tx.create(Payout, {
      id: newId('payout'),
      ...input,
      status: 'pending',
      failureCode: null,
      failureMessage: null,
      createdAt: now,
      updatedAt: now,
      paidAt: null,
      workflowConfirmedAt: null,
      balanceTransactionId: null,
    });
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
 * id exists, running or closed, it is left alone (`false`).
 */
export async function startPayoutWorkflow(client: Client, taskQueue: string, payoutId: string): Promise<boolean> {
  try {
    await client.workflow.start(payoutWorkflow, {
      workflowId: payoutId,
      taskQueue,
      args: [{ payoutId, arrivalMs: sandboxPayoutArrivalMs }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `Payout ${payoutId}`,
    });
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/**
 * Sends a pending payout through the rail and records how it ended, under a row
 * lock: `paid` (payout.paid), or `failed` (payout.failed), which posts the amount
 * back to the available balance. A payout no longer pending is left alone, so a
 * retried activity changes nothing.
 */
export async function completePayout(em: EntityManager, rail: PayoutRail, payoutId: string, at = new Date()): Promise<PayoutStatus> {
  const payout = await em.findOneOrFail(Payout, { id: payoutId });
  if (payout.status !== 'pending') return payout.status;
  const outcome = await rail.send({ idempotencyKey: payout.id, amount: payout.amount, currency: payout.currency, method: payout.method });
  return em.transactional(async (tx) => {
    const row = await tx.findOneOrFail(Payout, { id: payoutId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (row.status !== 'pending') return row.status;
    row.updatedAt = at;
    if (outcome.status === 'paid') {
      row.status = 'paid';
      row.paidAt = at;
    } else {
      row.status = 'failed';
      row.failureCode = outcome.failureCode;
      row.failureMessage = outcome.failureMessage;
      await postPayoutFailure(tx, row);
    }
    await tx.flush();
    await recordPayoutEvent(tx, row, row.status === 'paid' ? 'payout.paid' : 'payout.failed');
    return row.status;
  });
}

/** The payout confirmation email to the account's email, once per payout, unless it turned `payout_confirmations` off in the payout's mode. */
export async function notifyPayoutPaid(em: EntityManager, mailer: Mailer, payoutId: string, modes?: TestModes): Promise<void> {
  const payout = await em.findOneOrFail(Payout, { id: payoutId });
  if (payout.status !== 'paid') return;
  const account = await em.findOneOrFail(Account, { id: payout.accountId });
  if (!(await loadModeSettings(em, account.id, payout.livemode)).notifications.payout_confirmations) return;
  const email = payoutPaidEmail({
    accountName: account.name,
    amount: formatMoney(payout.amount, payout.currency),
    method: payout.method,
    payoutId: payout.id,
    paidAt: payout.paidAt ?? payout.updatedAt,
    description: payout.description ?? null,
  });
  await sendEmailOnce(em, mailer, { dedupeKey: `${payout.id}:payout_paid`, accountId: account.id, to: account.email, livemode: payout.livemode, ...email }, modes);
}
