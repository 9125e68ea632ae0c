/**
 * What the customer gets of a credit note: its PDF (domain/credit-note-pdf.ts) and one email with
 * the signed PDF link (sendEmailOnce keyed `<credit note id>:email`, so a retry never sends twice).
 */
import { createHmac } from 'node:crypto';

import type { EntityManager } from '@mikro-orm/postgresql';

import type { CreditNote } from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import { renderCreditNotePdf } from '../../domain/credit-note-pdf.ts';
import { creditNoteEmail } from '../../domain/email-templates.ts';
import { formatMoney } from '../../domain/money.ts';
import { loadLogo } from '../accounts/branding.ts';
import type { ServiceContext } from '../context.ts';
import { sendEmailOnce } from '../email/send-once.ts';
import { billedTo, pdfFonts, pdfSeller } from '../invoices/pdf.ts';
import { creditNoteContext } from './issue.ts';

/** HMAC of the credit note id under a key of its own (derived from AUTH_SECRET), as invoice PDF links are signed. */
export function creditNotePdfToken(secret: string, creditNoteId: string): string {
  const key = createHmac('sha256', secret).update('credit-note-pdf-links').digest();
  return createHmac('sha256', key).update(creditNoteId).digest('base64url');
}

export function signedCreditNotePdfUrl(
  config: { publicUrl: string; auth: { secret: string } },
  creditNoteId: string,
): string {
  return `${config.publicUrl}/credit_notes/${creditNoteId}/pdf?token=${creditNotePdfToken(config.auth.secret, creditNoteId)}`;
}

export async function creditNotePdf(em: EntityManager, note: CreditNote, testMode: boolean): Promise<Buffer> {
  const { invoice, account, customer } = await creditNoteContext(em, note);
  const logo = account.settings.branding ? await loadLogo(em, account.id) : null;
  return renderCreditNotePdf(
    {
      id: note.id,
      number: note.number,
      status: note.status,
      invoiceNumber: invoice.number,
      currency: note.currency,
      issuedAt: note.createdAt,
      reason: note.reason ?? null,
      memo: note.memo ?? null,
      lines: note.lines.map((line) => ({
        description: line.description,
        quantity: line.quantity,
        unitAmount: line.unit_amount,
        amount: line.amount,
      })),
      total: Number(note.total),
      refundAmount: Number(note.refundAmount),
      creditAmount: Number(note.creditAmount),
      outOfBandAmount: Number(note.outOfBandAmount),
      ...pdfSeller(account, logo),
      billTo: billedTo(invoice, customer),
      testMode,
      timeZone: account.settings.timezone || 'UTC',
    },
    pdfFonts(),
  );
}

/**
 * Emails the customer the credit note once (to the address its invoice was issued to), through the context's mailer,
 * branded with its links' public URL, marked [TEST] when the note's mode moves no real money.
 */
export async function emailCreditNote(
  ctx: Pick<ServiceContext, 'mailer' | 'links' | 'processors'>,
  em: EntityManager,
  note: CreditNote,
  pdfUrl: string,
): Promise<boolean> {
  const { invoice, account, customer } = await creditNoteContext(em, note);
  const { name: customerName, email: to } = billedTo(invoice, customer);
  if (!to) return false;
  const money = (amount: number) => formatMoney(amount, note.currency);
  const brand = brandOf(account, ctx.links.publicUrl);
  const outcomes = [
    ...(Number(note.refundAmount) > 0
      ? [
          `${money(Number(note.refundAmount))} is refunded to the payment method that paid the invoice; it can take a few days to appear.`,
        ]
      : []),
    ...(Number(note.creditAmount) > 0
      ? [`${money(Number(note.creditAmount))} is credited to your balance and will be used for your next invoices.`]
      : []),
    ...(Number(note.outOfBandAmount) > 0
      ? [`${money(Number(note.outOfBandAmount))} is settled with you directly.`]
      : []),
  ];
  // A credit note of an open invoice: what is due went down.
  if (outcomes.length === 0)
    outcomes.push(`${money(Number(note.total))} is taken off what is due on invoice ${invoice.number}.`);
  const email = creditNoteEmail({
    accountName: brand.name,
    ...(account.settings.branding ? { brand } : {}),
    customerName,
    number: note.number,
    invoiceNumber: invoice.number,
    total: money(Number(note.total)),
    outcomes,
    memo: note.memo ?? null,
    pdfUrl,
  });
  const sent = await sendEmailOnce(
    em,
    ctx.mailer,
    {
      dedupeKey: `${note.id}:email`,
      accountId: account.id,
      fromName: brand.name,
      to,
      livemode: note.livemode,
      ...email,
    },
    ctx.processors,
  );
  return sent.sent;
}
