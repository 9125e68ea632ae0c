import { createHash } from 'node:crypto';

import type { EntityManager } from '@mikro-orm/postgresql';

import { currentTime } from '../test-clocks/now.ts';
import type { Mailer } from './mailer.ts';

export interface EmailInput {
  /** What this message is about, unique per message: the same key is never sent twice. */
  dedupeKey: string;
  accountId?: string | null;
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** The mode the message is about: a mode that moves no real money gets `[TEST] ` before its subject. Unset: no mark. */
  livemode?: boolean;
  /** The From display name: the merchant's account name for customer-facing emails (services/email/mailer.ts fromHeader). */
  fromName?: string;
}

/** Tells which modes move no real money (services/processors/index.ts Processors). */
export interface TestModes {
  isTestMode(livemode: boolean): boolean;
}

/** The subject as sent: `[TEST] ` first for a mode that moves no real money. */
export function emailSubject(input: Pick<EmailInput, 'subject' | 'livemode'>, modes?: TestModes): string {
  if (input.livemode === undefined) return input.subject;
  const test = modes ? modes.isTestMode(input.livemode) : !input.livemode;
  return test ? `[TEST] ${input.subject}` : input.subject;
}

/**
 * How long an attempt's connection may sit silent in its claim's transaction (PostgreSQL's
 * `idle_in_transaction_session_timeout`, for that transaction only) before PostgreSQL ends its session and so frees
 * the claim: the owner is hung rather than dead (a frozen process, a network cut that resets nothing). Longer than
 * a send takes with the SMTP mailer's timeouts (services/email/mailer.ts `smtpTimeouts`), so a live sender keeps it.
 */
export const silentOwnerMs = 60_000;

/**
 * A claim written by a version before the claim lock, which holds no lock: taken over only once this old. Needed
 * while a worker of that version may still run (a rolling deploy), and for rows it left behind.
 */
const unlockedClaimStaleMs = 60_000;

export class EmailBeingSentError extends Error {
  constructor(key: string) {
    super(`Email ${key} is being sent by another attempt.`);
    this.name = 'EmailBeingSentError';
  }
}

/**
 * Sends one email once per dedupe key; a retried activity, a replay or a second worker sends nothing more.
 *
 * The claim is a PostgreSQL transaction that lives for the send: it takes a transaction advisory lock on the key
 * (`pg_try_advisory_xact_lock(hashtextextended(key, 0))`), inserts the `sending` row, sends, marks the row `sent`
 * and commits. The lock dies with its owner: a process that is killed closes its connection and PostgreSQL frees
 * the lock and rolls the row back at once, so the next attempt claims the key straight away. While the owner lives
 * the lock is held and another attempt fails with EmailBeingSentError (retryable: it comes back to find it `sent`).
 * A send that fails rolls back too, so its retry does not wait either.
 *
 * The one window left: the SMTP server accepted the message and the process died (or lost its connection, or was
 * silent for `silentOwnerMs`) before the commit. The next attempt resends with the same Message-ID, which
 * receiving systems use to drop duplicates.
 *
 * Cost: each email in flight holds one of the pool's connections for its SMTP session (113 ms median to the tests'
 * SMTP server at load 23; at most the mailer's timeouts, and PostgreSQL ends the session after `silentOwnerMs`):
 * docs/scaling.md#test-clocks. It runs on a connection of its own, outside any transaction of the caller's (which
 * would then hold two connections), so call it with none open.
 */
export async function sendEmailOnce(
  em: EntityManager,
  mailer: Mailer,
  email: EmailInput,
  modes?: TestModes,
): Promise<{ sent: boolean; messageId: string }> {
  const input = { ...email, subject: emailSubject(email, modes) };
  const messageId = `<${createHash('sha256').update(input.dedupeKey).digest('hex').slice(0, 32)}@billing-engine>`;
  return withClaimTransaction(em, async ({ sql, begin, commitAfter, literal }) => {
    // Sent with the `begin` (one round trip): the key and the timeout are literals, escaped by pg.
    const [{ held }] = await begin<{ held: boolean }>(
      `select pg_try_advisory_xact_lock(hashtextextended(${literal(claimLockKey(input.dedupeKey))}, 0)) as held, set_config('idle_in_transaction_session_timeout', ${literal(String(silentOwnerMs))}, true)`,
    );
    const recorded = () =>
      sql<{ status: 'sending' | 'sent'; message_id: string; stale: boolean }>(
        `select status, message_id, claimed_at < now() - make_interval(secs => $2::int / 1000.0) as stale from sent_emails where dedupe_key = $1`,
        [input.dedupeKey, unlockedClaimStaleMs],
      );
    if (!held) {
      // A live attempt holds the claim; it may be committing the `sent` row right now.
      const [row] = await recorded();
      if (row?.status === 'sent') return { sent: false, messageId: row.message_id };
      throw new EmailBeingSentError(input.dedupeKey);
    }
    const inserted = await sql(
      `insert into sent_emails (dedupe_key, account_id, "to", subject, status, message_id, created_at, claimed_at)
       values ($1, $2, $3, $4, 'sending', $5, $6, now())
       on conflict (dedupe_key) do nothing returning id`,
      [input.dedupeKey, input.accountId ?? null, input.to, input.subject.slice(0, 300), messageId, currentTime()],
    );
    if (inserted.length === 0) {
      const [row] = await recorded();
      if (row.status === 'sent') return { sent: false, messageId: row.message_id };
      // Claims under the lock are never committed as `sending`: this one was written without it (unlockedClaimStaleMs).
      if (!row.stale) throw new EmailBeingSentError(input.dedupeKey);
      await sql(`update sent_emails set claimed_at = now() where dedupe_key = $1`, [input.dedupeKey]);
    }
    await mailer.send({
      fromName: input.fromName,
      to: input.to,
      subject: input.subject,
      text: input.text,
      html: input.html,
      messageId,
    });
    // Sent with the `commit` (one round trip): a failed update skips the commit and the transaction rolls back.
    await commitAfter(
      `update sent_emails set status = 'sent', sent_at = ${literal(currentTime().toISOString())}::timestamptz where dedupe_key = ${literal(input.dedupeKey)}`,
    );
    return { sent: true, messageId };
  });
}

type Sql = <Row = Record<string, unknown>>(text: string, values: unknown[]) => Promise<Row[]>;

/**
 * The claim's transaction as the work sees it. `begin` and `commitAfter` save a round trip each: they send their
 * statement in one simple-protocol query with the `begin` or the `commit` (several statements in one query string are
 * allowed only without parameters, hence `literal`, pg's escapeLiteral). A successful send is 3 round trips: begin
 * with the lock, the claim, the `sent` mark with the commit.
 */
interface ClaimTransaction {
  sql: Sql;
  /** `begin; <text>`: the rows of `text`. Called first, once. */
  begin: <Row = Record<string, unknown>>(text: string) => Promise<Row[]>;
  /** `<text>; commit`: the transaction is committed (else it is, after the work returns, with a plain `commit`). */
  commitAfter: (text: string) => Promise<void>;
  literal: (value: string) => string;
}

/**
 * One transaction on a connection of the ORM's pool, taken straight from pg: a connection that died under it (the
 * point of the claim) goes back to the pool destroyed. It was written when MikroORM's em.transactional, whose rollback
 * on a dead connection throws before it releases it, lost a pool slot for each (MikroORM 7.2.1, Kysely 0.29.6:
 * ControlledTransaction.rollback releases only after the ROLLBACK succeeded); db/pool-guard.ts now gives such a
 * connection back for every pool db/orm.ts builds, and its no-op release makes the `client.release` below harmless.
 * An error anywhere (in a query string of several statements, the statements after the failed one are skipped, the
 * `commit` among them) rolls the transaction back.
 */
async function withClaimTransaction<T>(em: EntityManager, work: (tx: ClaimTransaction) => Promise<T>): Promise<T> {
  const pool = await em.getConnection().getNativeClient();
  const client = await pool.connect();
  const sql: Sql = async <Row>(text: string, values: unknown[]) => (await client.query(text, values)).rows as Row[];
  let begun = false;
  let committed = false;
  const tx: ClaimTransaction = {
    sql,
    begin: async <Row>(text: string) => {
      begun = true;
      // pg answers a query string of several statements with one result per statement.
      const results = (await client.query(`begin; ${text}`)) as unknown as { rows: Row[] }[];
      return results[1].rows;
    },
    commitAfter: async (text: string) => {
      await client.query(`${text}; commit`);
      committed = true;
    },
    literal: (value: string) => client.escapeLiteral(value),
  };
  let broken: Error | undefined;
  try {
    const result = await work(tx);
    if (!begun) throw new Error('withClaimTransaction: the work must call begin first');
    if (!committed) await client.query('commit');
    return result;
  } catch (error) {
    if (begun) await client.query('rollback').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * The text whose hash is the claim's lock. Prefixed, as other advisory lock users hash theirs (services/test-clocks/clocks.ts);
 * two keys with one hash only make one of them wait its turn.
 */
export function claimLockKey(dedupeKey: string): string {
  return `sent_emails:${dedupeKey}`;
}
