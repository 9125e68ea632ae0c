import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * One email the engine decided to send, keyed by what it is about (for example
 * `sub_..:dunning:cycle:3:attempt:2`). The unique key is what makes sending
 * durable and single: an activity retry or a replay finds the row already
 * `sent` and sends nothing.
 */
export const SentEmail = defineEntity({
  name: 'SentEmail',
  tableName: 'sent_emails',
  properties: {
    id: p.bigint().primary().autoincrement(),
    dedupeKey: p.string().length(200).unique(),
    accountId: p.string().nullable().index(),
    to: p.string().length(320),
    subject: p.string().length(300),
    /**
     * `sending` until the SMTP server accepted it. The claim's transaction (services/email/send-once.ts) commits the
     * row `sent`, so a committed `sending` row is a claim written without the lock, by a version before it.
     */
    status: p.string().$type<'sending' | 'sent'>(),
    messageId: p.string().length(300),
    createdAt: p.datetime(),
    /** When the attempt that sent it claimed it; a committed `sending` claim (no lock) is taken over once 60 s old. */
    claimedAt: p.datetime(),
    sentAt: p.datetime().nullable(),
  },
});
export type SentEmail = InferEntity<typeof SentEmail>;
