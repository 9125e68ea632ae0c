/**
 * services/email/send-once.ts `sendEmailOnce` on real PostgreSQL and a real SMTP server: the claim on a dedupe key
 * is a transaction holding an advisory lock for the send, so it blocks other attempts while its owner lives and
 * dies with the owner's connection (issue #29: a SIGKILLed worker's email must not hold its retry for 60 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SentEmail } from '../db/entities/index.ts';
import { createSmtpMailer, type Mailer } from '../services/email/mailer.ts';
import { EmailBeingSentError, sendEmailOnce } from '../services/email/send-once.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type SmtpCapture, startSmtpCapture } from './helpers/smtp.ts';

let db: TestDatabase;
let smtp: SmtpCapture;
let mailer: Mailer;
let n = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  smtp = await startSmtpCapture();
  mailer = createSmtpMailer(smtp.url, 'Billing <billing@test.example>');
});

afterAll(async () => {
  mailer?.close();
  await smtp?.close();
  await db?.close();
});

const em = () => db.orm.em.fork();
const email = (dedupeKey: string) => ({ dedupeKey, to: 'ada@example.com', subject: dedupeKey, text: 'Paid.' });
const newKey = () => `test_${Date.now()}_${++n}:receipt`;
/** Messages the SMTP server accepted for one key (its subject). */
const received = (key: string) => smtp.messages.filter((m) => m.parsed.subject === key).length;

/** A mailer whose sends wait until released: `entered` resolves once a send has begun (the claim is held). */
function heldMailer() {
  let enter!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  let release!: (send: boolean) => void;
  const released = new Promise<boolean>((resolve) => (release = resolve));
  const held: Mailer = {
    async send(mail) {
      enter();
      // `false`: the owner dies here, before the SMTP server got anything.
      if (!(await released)) throw new Error('the owner died before sending');
      return mailer.send(mail);
    },
    close() {},
  };
  return { mailer: held, entered, release };
}

/** The backend of the one connection idle in a transaction in this database: the held claim's. */
async function claimBackend(): Promise<number> {
  const rows = await em()
    .getConnection()
    .execute<
      { pid: number }[]
    >(`select pid from pg_stat_activity where datname = current_database() and state = 'idle in transaction' and pid <> pg_backend_pid()`);
  expect(rows).toHaveLength(1);
  return rows[0].pid;
}

/** Retries while another attempt holds the claim, as the activity's retry policy does. */
async function sendRetrying(key: string): Promise<{ sent: boolean }> {
  for (;;) {
    try {
      return await sendEmailOnce(em(), mailer, email(key));
    } catch (error) {
      if (!(error instanceof EmailBeingSentError)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe('sendEmailOnce', () => {
  it('a claim held by a live attempt blocks a second attempt, which then finds it sent', async () => {
    const key = newKey();
    const owner = heldMailer();
    const first = sendEmailOnce(em(), owner.mailer, email(key));
    await owner.entered;
    await expect(sendEmailOnce(em(), mailer, email(key))).rejects.toBeInstanceOf(EmailBeingSentError);
    owner.release(true);
    expect(await first).toMatchObject({ sent: true });
    expect(await sendEmailOnce(em(), mailer, email(key))).toMatchObject({ sent: false });
    expect(received(key)).toBe(1);
    expect(await em().findOneOrFail(SentEmail, { dedupeKey: key })).toMatchObject({ status: 'sent' });
  });

  it("a claim whose owner's connection died is taken over at once, and the email is sent once", async () => {
    const key = newKey();
    const owner = heldMailer();
    const first = sendEmailOnce(em(), owner.mailer, email(key));
    await owner.entered;
    // The owner's process is gone: PostgreSQL ends its session (as when a SIGKILL closes the socket). With a timeout,
    // pg_terminate_backend waits until the backend has exited (its locks freed); without one it only signals it,
    // and the take-over below could come first (it failed so once in CI).
    const [terminated] = await em()
      .getConnection()
      .execute<{ gone: boolean }[]>(`select pg_terminate_backend(?, 5000) as gone`, [await claimBackend()]);
    expect(terminated!.gone).toBe(true);
    const started = Date.now();
    expect(await sendEmailOnce(em(), mailer, email(key))).toMatchObject({ sent: true });
    expect(Date.now() - started).toBeLessThan(10_000);
    owner.release(false);
    await expect(first).rejects.toThrow();
    expect(received(key)).toBe(1);
    expect(await em().findOneOrFail(SentEmail, { dedupeKey: key })).toMatchObject({ status: 'sent' });
    // The dead connection went back to the pool and was dropped, not kept checked out for good.
    const pool = await em().getConnection().getNativeClient();
    expect(pool.totalCount - pool.idleCount).toBe(0);
    expect(await sendEmailOnce(em(), mailer, email(newKey()))).toMatchObject({ sent: true });
  });

  it('a send that failed leaves no claim: its retry sends at once', async () => {
    const key = newKey();
    const failing: Mailer = { send: () => Promise.reject(new Error('421 try again later')), close() {} };
    await expect(sendEmailOnce(em(), failing, email(key))).rejects.toThrow('421');
    expect(await sendEmailOnce(em(), mailer, email(key))).toMatchObject({ sent: true });
    expect(received(key)).toBe(1);
  });

  it('attempts at once send it once', async () => {
    const key = newKey();
    const results = await Promise.all(Array.from({ length: 8 }, () => sendRetrying(key)));
    expect(results.filter((r) => r.sent)).toHaveLength(1);
    expect(received(key)).toBe(1);
  });

  it('a key with quotes and backslashes (sent as literals with the begin and the commit) is claimed and marked sent', async () => {
    const key = `${newKey()}:o'brien\\'; select 1; --`;
    expect(await sendEmailOnce(em(), mailer, email(key))).toMatchObject({ sent: true });
    const row = await em().findOneOrFail(SentEmail, { dedupeKey: key });
    expect(row.status).toBe('sent');
    expect(row.sentAt).toBeInstanceOf(Date);
    expect(await sendEmailOnce(em(), mailer, email(key))).toMatchObject({ sent: false });
    expect(received(key)).toBe(1);
  });

  it('a claim written without the lock (a worker of the previous version) is taken over only once 60 s old', async () => {
    const key = newKey();
    const claim = (claimedAt: Date) =>
      em().insert(SentEmail, {
        dedupeKey: key,
        to: 'ada@example.com',
        subject: key,
        status: 'sending',
        messageId: '<old@billing-engine>',
        createdAt: claimedAt,
        claimedAt,
        sentAt: null,
      });
    await claim(new Date(Date.now() - 5_000));
    await expect(sendEmailOnce(em(), mailer, email(key))).rejects.toBeInstanceOf(EmailBeingSentError);
    await em().nativeUpdate(SentEmail, { dedupeKey: key }, { claimedAt: new Date(Date.now() - 61_000) });
    expect(await sendEmailOnce(em(), mailer, email(key))).toMatchObject({ sent: true });
    expect(received(key)).toBe(1);
  });
});
