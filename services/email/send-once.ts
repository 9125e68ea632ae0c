import { createHash } from 'node:crypto';

import type { EntityManager } from '@mikro-orm/postgresql';

import { SentEmail } from '../../db/entities/index.ts';
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

/** Longer than the email activity's start-to-close timeout: a claim this old belongs to a dead attempt. */
const staleClaimMs = 60_000;

export class EmailBeingSentError extends Error {
  constructor(key: string) {
    super(`Email ${key} is being sent by another attempt.`);
    this.name = 'EmailBeingSentError';
  }
}

/**
 * Sends one email once per dedupe key. An attempt first claims the key (insert,
 * or take over a claim older than `staleClaimMs`), sends, then marks it `sent`;
 * a retried activity, a replay or a second worker finds it sent or claimed and
 * sends nothing. The one window left (the process dies after the SMTP server
 * accepted the message but before the row says so) resends with the same
 * Message-ID, which receiving systems use to drop duplicates.
 */
export async function sendEmailOnce(
  em: EntityManager,
  mailer: Mailer,
  email: EmailInput,
  modes?: TestModes,
): Promise<{ sent: boolean; messageId: string }> {
  const input = { ...email, subject: emailSubject(email, modes) };
  const messageId = `<${createHash('sha256').update(input.dedupeKey).digest('hex').slice(0, 32)}@billing-engine>`;
  const now = new Date();
  const at = currentTime();
  const inserted = await em
    .createQueryBuilder(SentEmail)
    .insert({
      dedupeKey: input.dedupeKey,
      accountId: input.accountId ?? null,
      to: input.to,
      subject: input.subject.slice(0, 300),
      status: 'sending',
      messageId,
      createdAt: at,
      claimedAt: now,
      sentAt: null,
    })
    .onConflict('dedupeKey')
    .ignore()
    .execute('run');
  // Inserted: the claim is this call's (no need to read the row back). Otherwise someone claimed it first.
  if (inserted.affectedRows === 0) {
    const row = await em.findOneOrFail(SentEmail, { dedupeKey: input.dedupeKey });
    if (row.status === 'sent') return { sent: false, messageId: row.messageId };
    const takenOver = await em.nativeUpdate(
      SentEmail,
      { id: row.id, status: 'sending', claimedAt: { $lt: new Date(now.getTime() - staleClaimMs) } },
      { claimedAt: now },
    );
    // Retryable: the activity comes back after the other attempt finished or went stale.
    if (takenOver === 0) throw new EmailBeingSentError(input.dedupeKey);
  }
  await mailer.send({
    fromName: input.fromName,
    to: input.to,
    subject: input.subject,
    text: input.text,
    html: input.html,
    messageId,
  });
  await em.nativeUpdate(SentEmail, { dedupeKey: input.dedupeKey }, { status: 'sent', sentAt: currentTime() });
  return { sent: true, messageId };
}
