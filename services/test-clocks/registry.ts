/**
 * A test clock's registry in PostgreSQL (issue #29; tables `test_clock_registries` and `test_clock_entries`,
 * db/migrations/Migration20261127150000_test_clock_entries.ts): the workflows bound to a clock, when each wants to
 * wake (`wake_at`), the instant the clock waits for it to report having seen (`busy_at`), and the latest clock time
 * it has seen (`known`).
 *
 * Before, these lived in the clock workflow's own state (workflows/test-clock.ts), fed by one signal per bound
 * workflow per instant: its history and workflow-task time grew with what was on the clock (330 KB and 5-8 s tasks at
 * 1,000 trial ends). Now a bound workflow's register, report and unregister write its row here, and the clock's
 * workflow asks the table through a few activities (stepClock, tickClockInstant, checkClockBusy, finalTickClock) and
 * hears ONE signal per instant (`testClockInstantDone`), sent by the write that leaves nothing busy.
 *
 * That check-then-signal is decided once, under the clock's registry row lock (endRoundIfQuiet): each write that
 * cleared a busy entry commits first, then looks whether anything is still busy; of the last two, the later look
 * comes after both commits and sees nothing busy. Only then is the lock taken and the question asked again with a
 * fresh snapshot, and the round cleared as it is signalled, so no other write signals it again (and the clock ignores
 * a round it has passed or never asked for). A signal lost to a crash between commit and send costs at most the
 * clock's 30 s check (checkClockBusy), which also ticks again what is still busy.
 *
 * A clock has a registry row from its creation, or once its workflow reads the table (patch `test-clock-registry-in-table`); for a clock
 * without one (its workflow started before the change and still runs on its own state) the writers signal it as
 * before. A signal that reaches a clock already reading the table (sent before the row appeared) is written into
 * the table by the clock itself (applyClockMessages).
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';

import { type ClockReport, clockReportSignal, type ClockTick, clockTickSignal } from '../../workflows/clock-sleep.ts';
import { type ClockEntry, clockInstantDoneSignal } from '../../workflows/test-clock.ts';

/** A message to a clock's registry: what the register, unregister and report signals carried. */
export type ClockMessage =
  | { kind: 'register'; workflowId: string; known: string }
  | { kind: 'unregister'; workflowId: string }
  | { kind: 'report'; report: ClockReport };

/** The process's database for registry writes made outside an activity's entity manager (services/compose.ts sets it). */
let registryOrm: MikroORM | undefined;

/** The database the registry writes of this process go to (bindToClock, unbindFromClock); without one they signal the clock. */
export function useClockRegistry(orm: MikroORM): void {
  registryOrm = orm;
}

export function clockRegistryEm(): EntityManager | undefined {
  return registryOrm?.em.fork();
}

type Row = Record<string, unknown>;

async function exec<T extends Row = Row>(tx: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  return tx.getConnection().execute<T[]>(sql, params, 'all', tx.getTransactionContext());
}

const asDate = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(value as string);

/**
 * Writes one message into the clock's table. Returns 'unregistered' when the clock has no registry row (the caller
 * signals it instead), else whether it cleared a busy entry (then, once committed, endRoundIfQuiet).
 */
async function applyMessage(
  em: EntityManager,
  clockId: string,
  message: ClockMessage,
): Promise<'unregistered' | boolean> {
  if (message.kind === 'report') {
    const outcome = await applyReport(em, clockId, message.report);
    return outcome === -1 ? 'unregistered' : outcome === 1;
  }
  const [registry] = await exec<{ account_id: string; livemode: boolean }>(
    em,
    `select account_id, livemode from test_clock_registries where clock_id = ?`,
    [clockId],
  );
  if (!registry) return 'unregistered';
  const scope = [clockId, registry.account_id, registry.livemode];
  if (message.kind === 'register') {
    // A workflow the clock knows already (its starter retried after a timeout) stays as it is: its start will be refused.
    const known = new Date(message.known);
    await exec(
      em,
      `insert into test_clock_entries (clock_id, account_id, livemode, workflow_id, wake_at, busy_at, known)
       values (?, ?, ?, ?, null, ?, ?) on conflict (clock_id, workflow_id) do nothing`,
      [...scope, message.workflowId, known, known],
    );
    return false;
  }
  // Only a registration that never became a workflow (no wake-up reported): one that has reported stays.
  const gone = await exec<{ busy_at: unknown }>(
    em,
    `delete from test_clock_entries where clock_id = ? and account_id = ? and livemode = ? and workflow_id = ?
     and wake_at is null returning busy_at`,
    [...scope, message.workflowId],
  );
  return gone.some((r) => r.busy_at !== null);
}

/**
 * A report in one statement (the function test_clock_report, db/migrations/Migration20261127152000_test_clock_report_unlocked.ts):
 * the workflow's row written. Returns -1 (the clock has no registry row), 1 (it cleared a busy entry) or 0.
 */
async function applyReport(em: EntityManager, clockId: string, report: ClockReport): Promise<number> {
  const [row] = await exec<{ round: number }>(em, `select test_clock_report(?, ?, ?, ?, ?) as round`, [
    clockId,
    report.workflowId,
    report.wakeAt === null ? null : new Date(report.wakeAt),
    new Date(report.known),
    report.done === true,
  ]);
  return row!.round;
}

/**
 * After a write that cleared a busy entry has COMMITTED: when nothing on the clock is busy any more and the clock waits
 * for a round, the round is over; returns it (to be signalled) or null. First a look without a lock (every report of
 * an instant but the last few stops there); then, under the clock's registry row lock, the same question again with a
 * fresh snapshot, and the round cleared, so that it is decided once.
 *
 * Why no report is missed: of the last two writers, the one whose look comes later looks after both commits, so it
 * sees nothing busy; and under the lock the look sees every commit before it, including a step of the clock that
 * marked the next instant's entries busy (stepClock holds the same lock), so a round is never ended early.
 */
export async function endRoundIfQuiet(em: EntityManager, clockId: string): Promise<number | null> {
  const busy = await exec(em, `select 1 from test_clock_entries where clock_id = ? and busy_at is not null limit 1`, [
    clockId,
  ]);
  if (busy.length > 0) return null;
  return em.transactional((tx) => finishRoundIfQuiet(tx, clockId));
}

/** Under the clock's registry row lock (in `tx`): the round the clock waits for, ended if nothing is busy. */
async function finishRoundIfQuiet(tx: EntityManager, clockId: string): Promise<number | null> {
  const [registry] = await exec<{ awaiting_round: number | null }>(
    tx,
    `select awaiting_round from test_clock_registries where clock_id = ? for update`,
    [clockId],
  );
  if (!registry || registry.awaiting_round === null) return null;
  const busy = await exec(tx, `select 1 from test_clock_entries where clock_id = ? and busy_at is not null limit 1`, [
    clockId,
  ]);
  if (busy.length > 0) return null;
  await exec(tx, `update test_clock_registries set awaiting_round = null where clock_id = ?`, [clockId]);
  return registry.awaiting_round;
}

async function signalDone(client: Client, clockId: string, round: number): Promise<void> {
  try {
    await client.workflow.getHandle(clockId).signal(clockInstantDoneSignal, { round });
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

/**
 * A bound workflow's register, unregister or report, written into its clock's table; when that ends the round the
 * clock waits for, the clock hears it (one signal). Returns false when the clock has no registry row: the caller
 * signals the clock as before (a clock whose workflow started before the table).
 */
export async function writeClockMessage(
  em: EntityManager,
  client: Client,
  clockId: string,
  message: ClockMessage,
): Promise<boolean> {
  // Each write commits on its own (a report is one statement): the end of the round is asked after the commit.
  const cleared = await applyMessage(em, clockId, message);
  if (cleared === 'unregistered') return false;
  const round = cleared ? await endRoundIfQuiet(em, clockId) : null;
  if (round !== null) await signalDone(client, clockId, round);
  return true;
}

/**
 * Messages the clock's workflow heard as signals once it read the table (sent before its registry row existed).
 * The clock itself asks, so the round they end (if any) is returned to it rather than signalled.
 */
export async function applyClockMessages(
  em: EntityManager,
  clockId: string,
  messages: ClockMessage[],
): Promise<number | null> {
  let cleared = false;
  for (const message of messages) if ((await applyMessage(em, clockId, message)) === true) cleared = true;
  return cleared ? endRoundIfQuiet(em, clockId) : null;
}

/** A new clock's registry row, in the transaction that creates it: its workflow reads the table from its start. */
export async function openClockRegistry(
  tx: EntityManager,
  clock: { id: string; accountId: string; livemode: boolean },
): Promise<void> {
  await exec(
    tx,
    `insert into test_clock_registries (clock_id, account_id, livemode) values (?, ?, ?) on conflict (clock_id) do nothing`,
    [clock.id, clock.accountId, clock.livemode],
  );
}

/**
 * The clock's workflow starts reading the table: its registry row (if the clock still exists) and the entries it
 * carried in its state from a run before the table (continue-as-new), none replacing a row written already.
 * Returns whether the clock has its registry row.
 */
export async function adoptClockEntries(
  em: EntityManager,
  input: { clockId: string; accountId: string; entries: Array<[string, ClockEntry]> },
): Promise<boolean> {
  return em.transactional(async (tx) => {
    await exec(
      tx,
      `insert into test_clock_registries (clock_id, account_id, livemode)
       select id, account_id, livemode from test_clocks where id = ? and account_id = ?
       on conflict (clock_id) do nothing`,
      [input.clockId, input.accountId],
    );
    const [registry] = await exec<{ livemode: boolean }>(
      tx,
      `select livemode from test_clock_registries where clock_id = ? and account_id = ?`,
      [input.clockId, input.accountId],
    );
    if (!registry) return false;
    if (input.entries.length > 0) {
      const ms = (v: number | null | undefined) => (v === null || v === undefined ? null : new Date(v).toISOString());
      await exec(
        tx,
        `insert into test_clock_entries (clock_id, account_id, livemode, workflow_id, wake_at, busy_at, known)
         select ?, ?, ?, e.workflow_id, e.wake_at, e.busy_at, e.known
         from jsonb_to_recordset(?::jsonb) as e(workflow_id text, wake_at timestamptz, busy_at timestamptz, known timestamptz)
         on conflict (clock_id, workflow_id) do nothing`,
        [
          input.clockId,
          input.accountId,
          registry.livemode,
          JSON.stringify(
            input.entries.map(([id, e]) => ({
              workflow_id: id,
              wake_at: ms(e.wakeAt),
              busy_at: ms(e.busyAt),
              known: ms(e.known),
            })),
          ),
        ],
      );
    }
    return true;
  });
}

/** Where a round stands: how many entries are busy, and when the clock's entries were last reported (progress). */
export interface ClockRound {
  busy: number;
  /** The instant the clock moved to (ISO), or null: nothing was due up to the target (or the round only waits). */
  next: string | null;
  lastReportAt: string | null;
}

async function lastReportAt(tx: EntityManager, clockId: string, accountId: string): Promise<string | null> {
  const [row] = await exec<{ at: unknown }>(
    tx,
    `select max(reported_at) as at from test_clock_entries where clock_id = ? and account_id = ?`,
    [clockId, accountId],
  );
  return asDate(row?.at)?.toISOString() ?? null;
}

/**
 * One step of an advance, round `round`:
 * - entries still busy (work started meanwhile, a webhook retry the dispatcher registered, the stall helper's
 *   stand-in): the clock waits for them (`awaiting_round`), nothing moves;
 * - else, without `to`, nothing to do; with it, the earliest wake-up at or before `to` (not before `time`): every
 *   entry due by then is marked busy at that instant and the clock waits for the round; the ticks go out from
 *   tickClockInstant.
 */
export async function stepClock(
  em: EntityManager,
  input: { clockId: string; accountId: string; round: number; time: string; to: string | null },
): Promise<ClockRound> {
  const { clockId, accountId, round } = input;
  const marked = await em.transactional(async (tx) => {
    await exec(tx, `select 1 from test_clock_registries where clock_id = ? and account_id = ? for update`, [
      clockId,
      accountId,
    ]);
    const [{ busy } = { busy: 0 }] = await exec<{ busy: number }>(
      tx,
      `select count(*)::int as busy from test_clock_entries where clock_id = ? and account_id = ? and busy_at is not null`,
      [clockId, accountId],
    );
    if (busy > 0) {
      await exec(tx, `update test_clock_registries set awaiting_round = ? where clock_id = ?`, [round, clockId]);
      return { busy, at: null, lastReportAt: await lastReportAt(tx, clockId, accountId) };
    }
    if (input.to === null) return { busy: 0, at: null, lastReportAt: null };
    const [earliest] = await exec<{ at: unknown }>(
      tx,
      `select min(wake_at) as at from test_clock_entries where clock_id = ? and account_id = ? and wake_at is not null and wake_at <= ?`,
      [clockId, accountId, new Date(input.to)],
    );
    const next = asDate(earliest?.at);
    if (!next) return { busy: 0, at: null, lastReportAt: null };
    const at = new Date(Math.max(next.getTime(), Date.parse(input.time)));
    const due = await exec(
      tx,
      `update test_clock_entries set busy_at = ? where clock_id = ? and account_id = ? and wake_at is not null and wake_at <= ?
       returning 1`,
      [at, clockId, accountId, at],
    );
    await exec(tx, `update test_clock_registries set awaiting_round = ? where clock_id = ?`, [round, clockId]);
    return { busy: due.length, at, lastReportAt: await lastReportAt(tx, clockId, accountId) };
  });
  return { busy: marked.busy, next: marked.at?.toISOString() ?? null, lastReportAt: marked.lastReportAt };
}

/**
 * The tick (with ack) to every entry marked busy at instant `at` that has not reported yet, `concurrency` signals at
 * a time: an activity of its own (not local), so that the clock's workflow task ends while a thousand signals go out.
 * Entries whose workflow no longer exists leave; if that leaves nothing busy, the round is over and the clock hears it.
 */
export async function tickClockInstant(
  em: EntityManager,
  client: Client,
  input: { clockId: string; accountId: string; at: string },
): Promise<{ ticked: number; gone: number }> {
  const { clockId, accountId } = input;
  const due = await exec<{ workflow_id: string }>(
    em.fork(),
    `select workflow_id from test_clock_entries where clock_id = ? and account_id = ? and busy_at = ? and wake_at is not null`,
    [clockId, accountId, new Date(input.at)],
  );
  const gone = await tickClockWorkflows(
    client,
    due.map((r) => r.workflow_id),
    { now: input.at, ack: true },
  );
  if (gone.length > 0) await dropGone(em, client, clockId, accountId, gone);
  return { ticked: due.length - gone.length, gone: gone.length };
}

/** Entries whose workflow no longer exists leave the clock; when that leaves nothing busy, the round the clock waits for is over (signalled). Returns how many are still busy. */
async function dropGone(
  em: EntityManager,
  client: Client,
  clockId: string,
  accountId: string,
  gone: string[],
): Promise<number> {
  await exec(
    em,
    `delete from test_clock_entries where clock_id = ? and account_id = ? and workflow_id in (select jsonb_array_elements_text(?::jsonb))`,
    [clockId, accountId, JSON.stringify(gone)],
  );
  const round = await endRoundIfQuiet(em, clockId);
  if (round !== null) await signalDone(client, clockId, round);
  const [{ busy } = { busy: 0 }] = await exec<{ busy: number }>(
    em,
    `select count(*)::int as busy from test_clock_entries where clock_id = ? and account_id = ? and busy_at is not null`,
    [clockId, accountId],
  );
  return busy;
}

/**
 * The clock's check while it waits for a round (every 30 s, or its quiet timeout when shorter): how many entries
 * are busy (a few of their ids, to name them), when the clock's entries were last reported, and, with `askQueued`
 * (the clock asks when its quiet timeout is up), how many of those few have a workflow task waiting in Temporal
 * (`queued`). Nothing busy: the round is over (its signal was lost, or never needed).
 *
 * `retick` (the default, as before patch `test-clock-queued-not-stuck`): each busy entry that waits for a wake-up
 * hears its instant again (a tick only raises a workflow's known time, so a second one is harmless; one seen lost on a
 * loaded dev server would leave the clock advancing for good). The clock asks for it until the instant's ticks have
 * all gone out (tickClockInstant completed): a wave of 10,000 on 100 clocks otherwise sent every still-queued workflow
 * another signal, each a history write, every 30 s. While the ticks are still going out it asks too: their activity
 * may be on a worker that died, and would be retried only after its 5-minute timeout (test/wave-crash.test.ts).
 */
export async function checkClockBusy(
  em: EntityManager,
  client: Client,
  input: { clockId: string; accountId: string; retick?: boolean; askQueued?: boolean },
): Promise<{ busy: number; sample: string[]; lastReportAt: string | null; queued: number }> {
  const { clockId, accountId } = input;
  const fork = em.fork();
  const rows = await exec<{ workflow_id: string; busy_at: unknown; wake_at: unknown }>(
    fork,
    `select workflow_id, busy_at, wake_at from test_clock_entries where clock_id = ? and account_id = ? and busy_at is not null
     order by workflow_id`,
    [clockId, accountId],
  );
  const last = await lastReportAt(fork, clockId, accountId);
  const gone: string[] = [];
  if (input.retick ?? true) {
    const again = new Map<string, string[]>();
    for (const row of rows) {
      if (row.wake_at === null) continue; // a registration, or the stall helper's stand-in: no tick wakes it
      const at = asDate(row.busy_at)!.toISOString();
      again.set(at, [...(again.get(at) ?? []), row.workflow_id]);
    }
    for (const [at, ids] of again) gone.push(...(await tickClockWorkflows(client, ids, { now: at, ack: true })));
  }
  const busy = gone.length > 0 ? await dropGone(em, client, clockId, accountId, gone) : rows.length;
  // Nothing busy and no one ended the round (its signal was lost): the clock moves on, and no later write signals it again.
  if (busy === 0) await endRoundIfQuiet(em, clockId);
  const sample = rows
    .filter((r) => !gone.includes(r.workflow_id))
    .slice(0, 5)
    .map((r) => r.workflow_id);
  const queued = busy > 0 && input.askQueued ? await countQueued(client, sample) : 0;
  return { busy, sample, lastReportAt: last, queued };
}

/**
 * How many of `workflowIds` have a workflow task waiting to run or running, other than one failing again and again:
 * such a workflow is not stuck, its turn has not come (a worker with a backlog: 100 clocks advanced at once on one
 * worker). A workflow with nothing pending that has not reported is stuck, and so is one whose task keeps failing.
 *
 * DescribeWorkflowExecution says so (`pendingWorkflowTask`); the Java test server leaves that out, so when it is absent
 * the history says: its last workflow task event is a scheduled or started one. A workflow whose local activity keeps
 * failing holds its task while the retries are short, so it counts as queued until the SDK waits for the next retry on
 * a timer instead: that delays the clock's failure, it does not prevent it.
 */
async function countQueued(client: Client, workflowIds: string[]): Promise<number> {
  const queued = async (id: string): Promise<boolean> => {
    const handle = client.workflow.getHandle(id);
    const described = await handle.describe();
    if (described.status.name !== 'RUNNING') return false;
    const pending = described.raw.pendingWorkflowTask;
    if (pending) return (pending.attempt ?? 1) <= maxQueuedTaskAttempt;
    // The last workflow task event of the history (each kind carries its own attributes).
    const last = ((await handle.fetchHistory()).events ?? []).findLast(
      (e) =>
        e.workflowTaskScheduledEventAttributes ||
        e.workflowTaskStartedEventAttributes ||
        e.workflowTaskCompletedEventAttributes ||
        e.workflowTaskFailedEventAttributes ||
        e.workflowTaskTimedOutEventAttributes,
    );
    if (last?.workflowTaskScheduledEventAttributes)
      return (last.workflowTaskScheduledEventAttributes.attempt ?? 1) <= maxQueuedTaskAttempt;
    return Boolean(last?.workflowTaskStartedEventAttributes);
  };
  const pending = await Promise.all(
    workflowIds.map((id) =>
      queued(id).catch((error: unknown) => {
        if (error instanceof WorkflowNotFoundError) return false;
        throw error;
      }),
    ),
  );
  return pending.filter(Boolean).length;
}

/**
 * A pending workflow task's attempt above this is a task that fails (a bug, a nondeterminism error), not one waiting
 * its turn; a task that waited out the sticky queue's timeout and was scheduled again may count 2.
 */
const maxQueuedTaskAttempt = 2;

/**
 * The end of an advance: every entry that has not seen `to` hears it (no ack), 256 signals at a time (they only raise
 * each workflow's known time), and is recorded as knowing it. Returns how many heard it.
 */
export async function finalTickClock(
  em: EntityManager,
  client: Client,
  input: { clockId: string; accountId: string; to: string },
): Promise<number> {
  const { clockId, accountId } = input;
  const to = new Date(input.to);
  const stale = await exec<{ workflow_id: string }>(
    em.fork(),
    `select workflow_id from test_clock_entries where clock_id = ? and account_id = ? and (known is null or known < ?)`,
    [clockId, accountId, to],
  );
  const ids = stale.map((r) => r.workflow_id);
  if (ids.length === 0) return 0;
  const gone = await tickClockWorkflows(client, ids, { now: to.toISOString(), ack: false }, 256);
  const heard = ids.filter((id) => !gone.includes(id));
  await em.transactional(async (tx) => {
    if (gone.length > 0)
      await exec(
        tx,
        `delete from test_clock_entries where clock_id = ? and account_id = ? and workflow_id in (select jsonb_array_elements_text(?::jsonb))`,
        [clockId, accountId, JSON.stringify(gone)],
      );
    await exec(
      tx,
      `update test_clock_entries set known = greatest(coalesce(known, ?::timestamptz), ?::timestamptz)
       where clock_id = ? and account_id = ? and workflow_id in (select jsonb_array_elements_text(?::jsonb))`,
      [to, to, clockId, accountId, JSON.stringify(heard)],
    );
  });
  return heard.length;
}

/** The ids of the workflows in the clock's table (what deleting the clock terminates). */
export async function clockEntryIds(em: EntityManager, clockId: string, accountId: string): Promise<string[]> {
  const rows = await exec<{ workflow_id: string }>(
    em.fork(),
    `select workflow_id from test_clock_entries where clock_id = ? and account_id = ?`,
    [clockId, accountId],
  );
  return rows.map((r) => r.workflow_id);
}

/**
 * The clock's "tick" to the workflows on it, as direct signals, `concurrency` at a time (not signal-external
 * commands: each of those is a transfer task on the server, answered by one more event and one more workflow task
 * of the clock, and a workflow may have only 2,000 of them pending). Returns the ids of the workflows that no longer
 * exist (they leave the clock).
 */
export async function tickClockWorkflows(
  client: Client,
  ids: string[],
  tick: ClockTick,
  concurrency = 32,
): Promise<string[]> {
  const gone: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, ids.length) }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          await client.workflow.getHandle(id).signal(clockTickSignal, tick);
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) gone.push(id);
          else throw error;
        }
      }
    }),
  );
  return gone;
}

/** A bound workflow's report to its clock (a local activity): into the clock's table, or a signal to a clock without one; a clock deleted meanwhile hears nothing. */
export async function reportToClock(
  client: Client,
  clockId: string,
  report: ClockReport,
  em: EntityManager | undefined = clockRegistryEm(),
): Promise<void> {
  if (em && (await writeClockMessage(em, client, clockId, { kind: 'report', report }))) return;
  try {
    await client.workflow.getHandle(clockId).signal(clockReportSignal, report);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}
