import type { EntityManager } from '@mikro-orm/postgresql';

import {
  BalanceTransaction,
  type BalanceTransactionType,
  type LedgerAccount,
  LedgerEntry,
  type Payout,
  type Transaction,
} from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { type InsertPart, insertRowsPart, insertTogether } from '../platform/row-inserts.ts';
import { currentTime } from '../test-clocks/now.ts';
import { transactionBatch } from './transaction-batch.ts';

/*
 * The ledger: three accounts per (account, mode, currency): `available`, `pending`
 * and `external` (the world outside). Every movement writes entries that sum to
 * zero, a balance transaction (the movement as GET /v1/balance_transactions shows
 * it) and the cached balance row (account_balances: available and pending), all
 * inside the caller's database transaction, with the balance row locked, so
 * concurrent movements of one account and currency queue and never overdraw. The
 * CHECK constraints (available >= 0, pending >= 0) back this up. Money in (which can
 * never overdraw) may wait until the end of the transaction: withBalanceUpdatesLast.
 *
 * - payment: external → pending (available at `available_on`, fundsAvailabilityWorkflow)
 * - pending → available: makeFundsAvailable
 * - credit: external → available
 * - refund: available → external; a refund of a charge takes from that charge's
 *   own pending money first, then from available
 * - payout: available → external; payout failure: external → available
 */

/** Fee of a movement: 0 for the sandbox processor (it charges none); a real processor's fee would be recorded here. */
const fee = 0;

interface Legs {
  available?: number;
  pending?: number;
}

interface Movement {
  accountId: string;
  livemode: boolean;
  currency: string;
  /** The transaction or payout the money belongs to. */
  transactionId: string;
  balanceTransactionId: string;
  legs: Legs;
}

type BalanceKey = Pick<Movement, 'accountId' | 'livemode' | 'currency'>;
type HeldIncrement = BalanceKey & { available: number; pending: number };

/**
 * Money in held back on a database transaction's EntityManager by withBalanceUpdatesLast, by balance row, and the
 * inserts that go out in the same statement as the first of those updates (insertWithBalanceUpdates).
 */
const heldIncrements = transactionBatch<{ increments: Map<string, HeldIncrement>; riders: InsertPart[] }>(
  () => ({ increments: new Map(), riders: [] }),
  async (tx, held) => {
    let riders = held.riders;
    for (const increment of held.increments.values()) {
      await addToBalance(tx, increment, riders);
      riders = [];
    }
    // Money out applied what was held before the end (applyHeld): the inserts go alone.
    await insertTogether(tx, riders);
  },
);

/**
 * Inside withBalanceUpdatesLast with money in held: `part` (an INSERT) is written in the same statement as the
 * balance row's update at the end, one round trip fewer (a renewal's events: withEventBatch, services/events/record.ts),
 * and true is answered. Otherwise false: the caller writes it itself. Only for rows nothing reads back before the commit.
 */
export function insertWithBalanceUpdates(tx: EntityManager, part: InsertPart): boolean {
  const held = heldIncrements.heldOn(tx);
  if (!held || held.increments.size === 0) return false;
  held.riders.push(part);
  return true;
}
const balanceKey = (b: BalanceKey) => `${b.accountId}:${b.livemode}:${b.currency}`;

/**
 * Runs `work` on `tx` (a database transaction's EntityManager) with its money in (payments,
 * credits: legs that only add) held back and applied to the balance rows as the last
 * statements of `work`, one per row, just before the caller commits.
 *
 * Why: applying a movement locks the account's balance row until the transaction ends, and
 * every movement of that account and currency waits for it. Applied first, the lock was held
 * through the rest of the transaction (a renewal's ledger entries, paid invoice, projection
 * and events: six round trips), and a wave of one merchant's renewals queued on it: in a wave
 * of 2,000 the upsert waited 90 ms on average (docs/scaling.md, pg_stat_statements). Applied
 * last, the row is held for one statement and the commit. An increment can never overdraw, so
 * applying it later changes no outcome; money out in the same transaction (and lockBalance)
 * applies what is held for its row first, so it decides on the same balance as before.
 */
export function withBalanceUpdatesLast<T>(tx: EntityManager, work: () => Promise<T>): Promise<T> {
  return heldIncrements.run(tx, work);
}

/** Applies what withBalanceUpdatesLast holds for this row now: money out and reads of the row must see it. */
async function applyHeld(tx: EntityManager, key: BalanceKey): Promise<void> {
  const held = heldIncrements.heldOn(tx);
  const increment = held?.increments.get(balanceKey(key));
  if (!held || !increment) return;
  held.increments.delete(balanceKey(key));
  await addToBalance(tx, increment);
}

/**
 * Money in: one upsert (the row is created on the first movement), which locks the row until the transaction ends;
 * `with`: inserts written in the same statement (insertWithBalanceUpdates).
 */
async function addToBalance(
  tx: EntityManager,
  increment: HeldIncrement,
  withInserts: InsertPart[] = [],
): Promise<void> {
  await insertTogether(tx, [
    ...withInserts,
    {
      sql: `insert into account_balances (account_id, livemode, currency, available, pending, updated_at) values (?, ?, ?, ?, ?, now())
     on conflict (account_id, livemode, currency) do update
       set available = account_balances.available + excluded.available, pending = account_balances.pending + excluded.pending, updated_at = now()`,
      params: [increment.accountId, increment.livemode, increment.currency, increment.available, increment.pending],
    },
  ]);
}

/** The balance row of (account, mode, currency), created at 0 when missing, locked until the caller's transaction ends. */
export async function lockBalance(
  tx: EntityManager,
  accountId: string,
  livemode: boolean,
  currency: string,
): Promise<{ available: number; pending: number }> {
  await applyHeld(tx, { accountId, livemode, currency });
  const connection = tx.getConnection();
  const ctx = tx.getTransactionContext();
  await connection.execute(
    `insert into account_balances (account_id, livemode, currency, available, pending, updated_at) values (?, ?, ?, 0, 0, now())
     on conflict (account_id, livemode, currency) do nothing`,
    [accountId, livemode, currency],
    'run',
    ctx,
  );
  const [row] = await connection.execute<{ available: string | number; pending: string | number }[]>(
    `select available, pending from account_balances where account_id = ? and livemode = ? and currency = ? for update`,
    [accountId, livemode, currency],
    'all',
    ctx,
  );
  return { available: Number(row!.available), pending: Number(row!.pending) };
}

/**
 * Applies a movement's legs to the cached balance row in one statement, which also
 * locks the row until the caller's transaction ends (concurrent movements of one
 * account and currency queue on it; READ COMMITTED re-checks the condition after
 * the wait, so they never overdraw). Money in only: an upsert (the row is created
 * on the first movement), held back to the transaction's end inside
 * withBalanceUpdatesLast. Money out: an update that applies only when it covers
 * the legs; when it does not (or there is no row yet), the row is locked and read,
 * and the movement applied or refused on what it holds then.
 */
async function applyLegs(tx: EntityManager, m: Movement): Promise<void> {
  const connection = tx.getConnection();
  const ctx = tx.getTransactionContext();
  const available = m.legs.available ?? 0;
  const pending = m.legs.pending ?? 0;
  type Row = { available: string | number; pending: string | number };
  if (available >= 0 && pending >= 0) {
    const held = heldIncrements.heldOn(tx)?.increments;
    if (!held) {
      await addToBalance(tx, {
        accountId: m.accountId,
        livemode: m.livemode,
        currency: m.currency,
        available,
        pending,
      });
      return;
    }
    const key = balanceKey(m);
    const before = held.get(key) ?? {
      accountId: m.accountId,
      livemode: m.livemode,
      currency: m.currency,
      available: 0,
      pending: 0,
    };
    held.set(key, { ...before, available: before.available + available, pending: before.pending + pending });
    return;
  }
  await applyHeld(tx, m);
  const [row] = await connection.execute<Row[]>(
    `update account_balances set available = available + ?, pending = pending + ?, updated_at = now()
      where account_id = ? and livemode = ? and currency = ? and available + ? >= 0 and pending + ? >= 0
      returning available, pending`,
    [available, pending, m.accountId, m.livemode, m.currency, available, pending],
    'all',
    ctx,
  );
  if (row) return;
  // Not covered, no row yet, or covered only since the update read the row (an unmatched
  // update takes no lock): lock the row, then decide on what it holds now.
  const balance = await lockBalance(tx, m.accountId, m.livemode, m.currency);
  const after = { available: balance.available + available, pending: balance.pending + pending };
  if (after.available < 0) {
    throw new ApiError(
      'insufficient_funds',
      `The available balance (${balance.available} ${m.currency}) does not cover ${-available}.`,
    );
  }
  if (after.pending < 0) throw new Error(`Ledger bug: the pending balance of ${m.accountId} would go below zero.`);
  await connection.execute(
    `update account_balances set available = ?, pending = ?, updated_at = now() where account_id = ? and livemode = ? and currency = ?`,
    [after.available, after.pending, m.accountId, m.livemode, m.currency],
    'run',
    ctx,
  );
}

async function move(tx: EntityManager, m: Movement): Promise<void> {
  await applyLegs(tx, m);
  for (const entry of ledgerEntriesOf(m)) tx.create(LedgerEntry, entry);
  await tx.flush();
}

/** A movement's ledger entries: one per leg, and the `external` one that makes them sum to zero. */
function ledgerEntriesOf(m: Movement) {
  const entry = {
    accountId: m.accountId,
    livemode: m.livemode,
    transactionId: m.transactionId,
    balanceTransactionId: m.balanceTransactionId,
    currency: m.currency,
  };
  const entries: (typeof entry & { ledgerAccount: LedgerAccount; amount: number })[] = [];
  let external = 0;
  for (const ledgerAccount of ['available', 'pending'] as const) {
    const amount = m.legs[ledgerAccount] ?? 0;
    if (amount === 0) continue;
    external -= amount;
    entries.push({ ...entry, ledgerAccount, amount });
  }
  if (external !== 0) entries.push({ ...entry, ledgerAccount: 'external', amount: external });
  return entries;
}

function newBalanceTransaction(
  tx: EntityManager,
  input: {
    accountId: string;
    livemode: boolean;
    currency: string;
    type: BalanceTransactionType;
    source: string;
    amount: number;
    delayMs?: number;
    ownedByWorkflow?: boolean;
  },
): BalanceTransaction {
  return tx.create(BalanceTransaction, balanceTransactionRow(input));
}

/** The row of a new balance transaction: pending until `delayMs` from now (available at once without a delay). */
function balanceTransactionRow(input: Parameters<typeof newBalanceTransaction>[1]) {
  const now = currentTime();
  const delayMs = input.delayMs ?? 0;
  return {
    id: newId('balanceTransaction'),
    accountId: input.accountId,
    livemode: input.livemode,
    type: input.type,
    source: input.source,
    amount: input.amount,
    fee,
    net: input.amount - fee,
    currency: input.currency,
    status: delayMs > 0 ? 'pending' : 'available',
    availableOn: new Date(now.getTime() + delayMs),
    refundedFromPending: 0,
    // A workflow that waits for this money itself (the maintenance reconciler starts none for it).
    workflowConfirmedAt: input.ownedByWorkflow ? now : null,
    createdAt: now,
  } satisfies Partial<BalanceTransaction> & { status: BalanceTransaction['status'] };
}

/**
 * A succeeded payment: its money arrives pending (external → pending), available `delayMs` from now.
 * The balance transaction and its ledger entries are written in ONE statement, with `insertWith` (the
 * payment's own row, when the caller has not written it yet: recordSucceededTransaction), and no unit of
 * work: they are only inserted (services/platform/row-inserts.ts). The balance row is updated first, or
 * held for the end of the transaction inside withBalanceUpdatesLast.
 */
export async function postPayment(
  tx: EntityManager,
  payment: Transaction,
  delayMs: number,
  options: { ownedByWorkflow?: boolean; insertWith?: InsertPart[] } = {},
): Promise<BalanceTransaction> {
  const row = balanceTransactionRow({
    ...scopeOf(payment),
    type: 'payment',
    source: payment.id,
    amount: payment.amount,
    delayMs,
    ownedByWorkflow: options.ownedByWorkflow,
  });
  const btxn = tx.create(BalanceTransaction, row, { persist: false });
  const movement = {
    ...scopeOf(payment),
    transactionId: payment.id,
    balanceTransactionId: btxn.id,
    legs: delayMs > 0 ? { pending: btxn.net } : { available: btxn.net },
  };
  await applyLegs(tx, movement);
  const createdAt = new Date();
  await insertTogether(tx, [
    ...(options.insertWith ?? []),
    insertRowsPart(tx, BalanceTransaction, [row]),
    insertRowsPart(
      tx,
      LedgerEntry,
      ledgerEntriesOf(movement).map((entry) => ({ ...entry, createdAt })),
    ),
  ]);
  return btxn;
}

/** A credit: external → available, at once. */
export async function postCredit(tx: EntityManager, credit: Transaction): Promise<BalanceTransaction> {
  const btxn = newBalanceTransaction(tx, {
    ...scopeOf(credit),
    type: 'credit',
    source: credit.id,
    amount: credit.amount,
  });
  await tx.flush();
  await move(tx, {
    ...scopeOf(credit),
    transactionId: credit.id,
    balanceTransactionId: btxn.id,
    legs: { available: btxn.net },
  });
  return btxn;
}

/**
 * A refund: money out at once. Without a source, from the available balance
 * (insufficient_funds when it does not cover it). Of a charge: first from what is
 * still pending of that charge's own payment movement (locked), then from available.
 */
export async function postRefund(
  tx: EntityManager,
  refund: Transaction,
  source: Transaction | null,
): Promise<BalanceTransaction> {
  let fromPending = 0;
  if (source) {
    const connection = tx.getConnection();
    const [payment] = await connection.execute<
      { id: string; net: string | number; refunded_from_pending: string | number }[]
    >(
      `select id, net, refunded_from_pending from balance_transactions where source = ? and type = 'payment' and status = 'pending' for update`,
      [source.id],
      'all',
      tx.getTransactionContext(),
    );
    if (payment) {
      fromPending = Math.min(refund.amount, Number(payment.net) - Number(payment.refunded_from_pending));
      if (fromPending > 0) {
        await connection.execute(
          `update balance_transactions set refunded_from_pending = refunded_from_pending + ? where id = ?`,
          [fromPending, payment.id],
          'run',
          tx.getTransactionContext(),
        );
      }
    }
  }
  const btxn = newBalanceTransaction(tx, {
    ...scopeOf(refund),
    type: 'refund',
    source: refund.id,
    amount: -refund.amount,
  });
  await tx.flush();
  await move(tx, {
    ...scopeOf(refund),
    transactionId: refund.id,
    balanceTransactionId: btxn.id,
    legs: { pending: -fromPending, available: -(refund.amount - fromPending) },
  });
  return btxn;
}

/** A payout: available → external (insufficient_funds when the available balance does not cover it). */
export async function postPayout(tx: EntityManager, payout: Payout): Promise<BalanceTransaction> {
  const btxn = newBalanceTransaction(tx, {
    ...scopeOf(payout),
    type: 'payout',
    source: payout.id,
    amount: -payout.amount,
  });
  await tx.flush();
  await move(tx, {
    ...scopeOf(payout),
    transactionId: payout.id,
    balanceTransactionId: btxn.id,
    legs: { available: -payout.amount },
  });
  return btxn;
}

/** A failed (`payout_failure`) or canceled (`payout_cancel`) payout gives its amount back: external → available. */
export async function postPayoutFailure(
  tx: EntityManager,
  payout: Payout,
  type: 'payout_failure' | 'payout_cancel' = 'payout_failure',
): Promise<BalanceTransaction> {
  const btxn = newBalanceTransaction(tx, { ...scopeOf(payout), type, source: payout.id, amount: payout.amount });
  await tx.flush();
  await move(tx, {
    ...scopeOf(payout),
    transactionId: payout.id,
    balanceTransactionId: btxn.id,
    legs: { available: payout.amount },
  });
  return btxn;
}

/** A correction: `amount` (signed) into the available balance from outside, e.g. a refund the processor refused gives its money back. */
export async function postAdjustment(
  tx: EntityManager,
  source: Transaction,
  amount: number,
): Promise<BalanceTransaction> {
  const btxn = newBalanceTransaction(tx, { ...scopeOf(source), type: 'adjustment', source: source.id, amount });
  await tx.flush();
  await move(tx, {
    ...scopeOf(source),
    transactionId: source.id,
    balanceTransactionId: btxn.id,
    legs: { available: btxn.net },
  });
  return btxn;
}

/**
 * Moves a pending balance transaction's money to available (less what refunds
 * took from it while pending), under a lock on it, only if it is still pending:
 * running it again changes nothing. Answers whether this call moved it.
 */
export async function makeFundsAvailable(em: EntityManager, balanceTransactionId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const [row] = await tx.getConnection().execute<
      {
        id: string;
        status: string;
        net: string | number;
        refunded_from_pending: string | number;
        source: string;
        account_id: string;
        livemode: boolean;
        currency: string;
      }[]
    >(`select * from balance_transactions where id = ? for update`, [balanceTransactionId], 'all', tx.getTransactionContext());
    if (!row) throw new Error(`No balance transaction ${balanceTransactionId}.`);
    if (row.status !== 'pending') return false;
    const amount = Number(row.net) - Number(row.refunded_from_pending);
    await tx
      .getConnection()
      .execute(
        `update balance_transactions set status = 'available' where id = ?`,
        [row.id],
        'run',
        tx.getTransactionContext(),
      );
    if (amount > 0) {
      await move(tx, {
        accountId: row.account_id,
        livemode: row.livemode,
        currency: row.currency,
        transactionId: row.source,
        balanceTransactionId: row.id,
        legs: { pending: -amount, available: amount },
      });
    }
    return true;
  });
}

function scopeOf(row: { accountId: string; livemode: boolean; currency: string }) {
  return { accountId: row.accountId, livemode: row.livemode, currency: row.currency };
}
