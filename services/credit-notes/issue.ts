/**
 * Credit notes of paid invoices (POST /v1/credit_notes): one decision per credit note, under
 * the locks that money moving out of an invoice takes:
 *
 * 1. the invoice's payment row (`FOR UPDATE`), the same lock a refund of that payment takes
 *    (services/money/refunds.ts reserveRefund), so a credit note and a plain refund of one payment
 *    queue; then the invoice row, which numbers the credit note (`<invoice>-CN-<nn>`, no gaps)
 *    and orders the invoice's credit notes;
 * 2. under them: Σ credit notes ≤ the invoice's total; what went back to the customer
 *    (refunds of the payment, reserved or done, and credit notes' credits to the balance)
 *    plus this credit note's refund and credit ≤ what the invoice collected (amount paid, and
 *    the customer balance it applied); the refund ≤ what is left to refund of the payment;
 * 3. in the same database transaction: the refund reserved (reserveRefund: the payment's
 *    amount_refunded, the money off the balance), the credit recorded on the customer's
 *    balance (services/customers/balance.ts recordBalanceTransaction, type credit_note), the
 *    credit note and its `credit_note.created` event;
 * 4. after the commit: the processor's refund (completeRefund; a crash leaves it pending for
 *    the maintenance reconciler, keyed by the refund) and the email to the customer.
 *
 * Open invoices are refused for now: their amount due would have to change under the
 * workflow that may be charging them (docs/discounts-and-taxes.md says what is left).
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, CreditNote, type CreditNoteLine, Customer, Invoice, Transaction } from '../../db/entities/index.ts';
import {
  creditedByLine,
  creditNoteLines,
  creditNoteNumber,
  CreditNoteProblem,
  type CreditNoteRequest,
  type CreditNoteSplit,
  splitCreditNote,
} from '../../domain/credit-notes.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { formatMoney } from '../../domain/money.ts';
import { serializeCreditNote } from '../../objects/credit-note.ts';
import { lockCustomerBalance, recordBalanceTransaction } from '../customers/balance.ts';
import { recordEvent } from '../events/record.ts';
import { type InvoiceLinks, recordInvoiceEvents } from '../invoices/events.ts';
import { reserveRefund } from '../money/refunds.ts';
import { newTransactionFields } from '../money/transactions.ts';
import { currentTime } from '../test-clocks/now.ts';

// FOR UPDATE (LockMode 3): it waits for the row. (4 is PESSIMISTIC_PARTIAL_WRITE, FOR UPDATE SKIP LOCKED, which answers no row while another holds it.)
const writeLock = { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } as const;

export type { CreditNoteRequest };

export interface Scope {
  accountId: string;
  livemode: boolean;
}

interface Planned {
  invoice: Invoice;
  payment: Transaction | null;
  lines: CreditNoteLine[];
  total: number;
  split: CreditNoteSplit;
  sequence: number;
  number: string;
}

/**
 * What an invoice collected: its amount paid, and the customer balance it applied (total − amount due, less what credit
 * notes took off its amount due while it was open: `preCredited`).
 */
export function collectedOf(invoice: Pick<Invoice, 'amountPaid' | 'total' | 'amountDue'>, preCredited = 0): number {
  return Number(invoice.amountPaid) + Math.max(0, Number(invoice.total) - preCredited - Number(invoice.amountDue));
}

/** A credit note issued on an open invoice lowered its amount due: none of its total went anywhere else. */
export const loweredAmountDue = (note: Pick<CreditNote, 'refundAmount' | 'creditAmount' | 'outOfBandAmount'>) =>
  Number(note.refundAmount) + Number(note.creditAmount) + Number(note.outOfBandAmount) === 0;

function refuse(message: string): never {
  throw new ApiError('invalid_request', message);
}

/**
 * Checks a credit note against its invoice as it stands; with `lock`, under the payment's then the
 * invoice's row lock (the caller's transaction holds them until it commits). A paid invoice's
 * credit note says where its money goes; an open invoice's lowers its amount due.
 */
async function plan(tx: EntityManager, scope: Scope, request: CreditNoteRequest, lock: boolean): Promise<Planned> {
  const peek = await tx.findOne(Invoice, { id: request.invoice, accountId: scope.accountId, livemode: scope.livemode });
  if (!peek) throw new ApiError('not_found', 'invoice: no such invoice.');
  const statusProblem = (status: string, number: string) => {
    if (status === 'paid' || status === 'open') return;
    throw new ApiError(
      'invalid_state',
      `Invoice ${status === 'draft' ? peek.id : number} is ${status}: only a paid or open invoice takes a credit note.`,
    );
  };
  statusProblem(peek.status, peek.number);
  // The payment first (the lock a refund of it takes), then the invoice: the order finishRefund takes them in too.
  const payment =
    peek.status === 'paid' && peek.transactionId
      ? await tx.findOne(Transaction, { id: peek.transactionId }, lock ? writeLock : {})
      : null;
  const invoice = lock ? await tx.findOneOrFail(Invoice, { id: peek.id }, writeLock) : peek;
  statusProblem(invoice.status, invoice.number);
  if (invoice.status !== peek.status)
    throw new ApiError(
      'invalid_state',
      `Invoice ${invoice.number} became ${invoice.status} meanwhile; send the credit note again.`,
    );
  const open = invoice.status === 'open';
  const currency = invoice.currency;
  if (request.currency && request.currency.toUpperCase() !== currency) {
    throw new ApiError(
      'currency_mismatch',
      `currency: invoice ${invoice.number} is in ${currency}, not ${request.currency.toUpperCase()}; a credit note is in its invoice's currency.`,
    );
  }
  const notes = await tx.find(CreditNote, { invoiceId: invoice.id }, { orderBy: { sequence: 'asc' }, refresh: true });
  const issued = notes.filter((note) => note.status === 'issued');
  let lines: CreditNoteLine[];
  let split: CreditNoteSplit;
  let total: number;
  try {
    lines = creditNoteLines(invoice.lines, request, creditedByLine(issued), currency);
    total = lines.reduce((sum, line) => sum + line.amount, 0);
    split = open ? { refund: 0, credit: 0, outOfBand: 0 } : splitCreditNote(total, request, currency);
  } catch (error) {
    if (error instanceof CreditNoteProblem) refuse(error.message);
    throw error;
  }
  const money = (amount: number) => `${amount} (${formatMoney(amount, currency)})`;
  const credited = issued.reduce((sum, note) => sum + Number(note.total), 0);
  const leftToCredit = Number(invoice.total) - credited;
  if (total > leftToCredit)
    refuse(
      `The credit note's total, ${money(total)}, is more than is left to credit of invoice ${invoice.number}: ${money(Math.max(0, leftToCredit))} (total ${money(Number(invoice.total))}, credited ${money(credited)}).`,
    );
  if (open) {
    if (request.refund_amount || request.credit_amount || request.out_of_band_amount) {
      refuse(
        `Invoice ${invoice.number} is open: its credit note lowers what is due; refund_amount, credit_amount and out_of_band_amount are for paid invoices.`,
      );
    }
    const due = Number(invoice.amountDue) - Number(invoice.amountPaid);
    if (total > due)
      refuse(
        `The credit note's total, ${money(total)}, is more than is left to pay of invoice ${invoice.number}: ${money(due)}.`,
      );
  } else {
    if (split.refund > 0 && (!payment || payment.status !== 'succeeded' || !payment.processorChargeId)) {
      refuse(
        `refund_amount: invoice ${invoice.number} was not paid by a payment that can be refunded; credit the customer balance or record it out of band.`,
      );
    }
    const refunded = payment ? Number(payment.amountRefunded) : 0;
    const toBalance = issued.reduce((sum, note) => sum + Number(note.creditAmount), 0);
    const preCredited = issued.filter(loweredAmountDue).reduce((sum, note) => sum + Number(note.total), 0);
    const collected = collectedOf(invoice, preCredited);
    const leftToGiveBack = collected - refunded - toBalance;
    if (split.refund + split.credit > leftToGiveBack) {
      refuse(
        `refund_amount + credit_amount, ${money(split.refund + split.credit)}, is more than is left to give back of invoice ${invoice.number}: ${money(Math.max(0, leftToGiveBack))} ` +
          `(collected ${money(collected)}, refunded ${money(refunded)}, credited to the balance ${money(toBalance)}).`,
      );
    }
    if (payment && split.refund > Number(payment.amount) - refunded)
      refuse(
        `refund_amount: ${money(split.refund)} exceeds what is left to refund of ${payment.id}: ${money(Number(payment.amount) - refunded)}.`,
      );
  }
  const sequence = notes.reduce((max, note) => Math.max(max, note.sequence), 0) + 1;
  return { invoice, payment, lines, total, split, sequence, number: creditNoteNumber(invoice.number, sequence) };
}

/** The credit note a request would issue, checked as creating it would check it (nothing is written, nothing locked). */
export async function previewCreditNote(
  em: EntityManager,
  scope: Scope,
  request: CreditNoteRequest,
): Promise<CreditNote> {
  const planned = await plan(em, scope, request, false);
  return buildNote(planned, scope, request, 'cn_preview', null, null);
}

function buildNote(
  planned: Planned,
  scope: Scope,
  request: CreditNoteRequest,
  id: string,
  refundId: string | null,
  balanceTransactionId: string | null,
): CreditNote {
  return {
    id,
    accountId: scope.accountId,
    livemode: scope.livemode,
    number: planned.number,
    sequence: planned.sequence,
    invoiceId: planned.invoice.id,
    customerId: planned.invoice.customerId,
    currency: planned.invoice.currency,
    subtotal: planned.total,
    total: planned.total,
    lines: planned.lines,
    reason: request.reason ?? null,
    memo: request.memo ?? null,
    refundAmount: planned.split.refund,
    creditAmount: planned.split.credit,
    outOfBandAmount: planned.split.outOfBand,
    refundTransactionId: refundId,
    customerBalanceTransactionId: balanceTransactionId,
    status: 'issued',
    createdAt: currentTime(),
    voidedAt: null,
  } as CreditNote;
}

/**
 * Issues a credit note (steps 1 to 3 above) and answers it with the refund it reserved, still
 * pending: the caller completes that with the processor after this returns (completeRefund).
 */
export async function createCreditNote(
  em: EntityManager,
  scope: Scope,
  request: CreditNoteRequest,
  pdfUrl: (id: string) => string,
): Promise<{ note: CreditNote; refundId: string | null }> {
  return em.transactional(async (tx) => {
    const planned = await plan(tx, scope, request, true);
    const { invoice, payment, split } = planned;
    // An open invoice's credit note changes what its workflow charges: it goes through that workflow (createOpenInvoiceCreditNote).
    if (invoice.status !== 'paid')
      throw new ApiError('invalid_state', `Invoice ${invoice.number} is ${invoice.status}.`);
    const id = newId('creditNote');
    let refundId: string | null = null;
    if (split.refund > 0 && payment) {
      const fields = await newTransactionFields(tx, {
        accountId: scope.accountId,
        livemode: scope.livemode,
        amount: split.refund,
        currency: invoice.currency,
        type: 'refund',
        reference: `Credit note ${planned.number}`,
        metadata: { credit_note: id },
        paymentMethod: null,
      });
      // Under the payment's lock this transaction already holds: its own checks see the same rows.
      refundId = (await reserveRefund(tx, fields, { sourceTransactionId: payment.id, scope })).id;
    }
    let balanceTransactionId: string | null = null;
    if (split.credit > 0) {
      const movement = await recordBalanceTransaction(tx, {
        accountId: scope.accountId,
        livemode: scope.livemode,
        customerId: invoice.customerId,
        currency: invoice.currency,
        type: 'credit_note',
        amount: -split.credit,
        invoiceId: invoice.id,
        creditNoteId: id,
        description: `Credit note ${planned.number}`,
        createdAt: currentTime(),
      });
      balanceTransactionId = movement.id;
    }
    const note = tx.create(CreditNote, buildNote(planned, scope, request, id, refundId, balanceTransactionId));
    await tx.flush();
    await recordCreditNoteEvent(tx, scope, 'credit_note.created', note, pdfUrl, refundId);
    return { note, refundId };
  });
}

/**
 * A credit note on an OPEN invoice: it lowers the invoice's amount due by its total, and an invoice
 * credited down to nothing due is paid without a charge (`invoice.paid`). It must run where nothing
 * is charging the invoice: in the workflow that owns it (workflows/subscription.ts creditInvoiceUpdate,
 * workflows/invoice.ts creditOneOffInvoiceUpdate, applied between their charges), or directly for an
 * invoice no workflow charges any more (services/credit-notes/owner.ts). `id` is chosen by the caller, so a
 * retried activity finds the credit note it made and makes no second one.
 */
export async function createOpenInvoiceCreditNote(
  em: EntityManager,
  links: InvoiceLinks,
  input: {
    id: string;
    scope: Scope;
    request: CreditNoteRequest;
    at?: string | undefined;
    pdfUrl: (id: string) => string;
  },
): Promise<{ note: CreditNote; amountDue: number; paid: boolean }> {
  return em.transactional(async (tx) => {
    const existing = await tx.findOne(CreditNote, { id: input.id });
    if (existing) {
      const invoice = await tx.findOneOrFail(Invoice, { id: existing.invoiceId }, { refresh: true });
      return {
        note: existing,
        amountDue: Number(invoice.amountDue) - Number(invoice.amountPaid),
        paid: invoice.status === 'paid',
      };
    }
    const planned = await plan(tx, input.scope, input.request, true);
    const { invoice } = planned;
    if (invoice.status !== 'open')
      throw new ApiError('invalid_state', `Invoice ${invoice.number} is ${invoice.status}.`);
    const at = input.at ? new Date(input.at) : currentTime();
    const note = tx.create(CreditNote, {
      ...buildNote(planned, input.scope, input.request, input.id, null, null),
      createdAt: at,
    });
    invoice.amountDue = Number(invoice.amountDue) - planned.total;
    const paid = Number(invoice.amountDue) - Number(invoice.amountPaid) <= 0;
    if (paid) {
      // Credited down to nothing due: paid, and nothing is charged.
      invoice.status = 'paid';
      invoice.paidAt = at;
    }
    await tx.flush();
    await recordCreditNoteEvent(tx, input.scope, 'credit_note.created', note, input.pdfUrl, null);
    if (paid) await recordInvoiceEvents(tx, links, invoice, ['invoice.paid'], null);
    return { note, amountDue: Number(invoice.amountDue) - Number(invoice.amountPaid), paid };
  });
}

/**
 * Voids an issued credit note: only one without a refund (money sent back through the processor
 * cannot be called back), and only while the customer still holds its credit (the balance is at
 * least that much credit); the credit is taken back by a `credit_note` balance transaction of
 * the opposite sign. Under the invoice's row lock, then the customer balance's.
 */
export async function voidCreditNote(
  em: EntityManager,
  scope: Scope,
  id: string,
  pdfUrl: (id: string) => string,
): Promise<CreditNote> {
  return em.transactional(async (tx) => {
    const peek = await tx.findOne(CreditNote, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!peek) throw new ApiError('not_found', 'No such credit note.');
    await tx.findOneOrFail(Invoice, { id: peek.invoiceId }, writeLock);
    const note = await tx.findOneOrFail(CreditNote, { id }, writeLock);
    if (note.status !== 'issued') throw new ApiError('invalid_state', `Credit note ${note.number} is already void.`);
    if (Number(note.refundAmount) > 0) {
      // A refund the processor refused moved no money (its reservation was given back): such a credit note may be voided.
      const refund = note.refundTransactionId
        ? await tx.findOne(Transaction, { id: note.refundTransactionId }, { refresh: true })
        : null;
      if (refund?.status !== 'failed') {
        throw new ApiError(
          'invalid_state',
          `Credit note ${note.number} refunded ${formatMoney(Number(note.refundAmount), note.currency)} to the payment method: a refund cannot be taken back, so the credit note cannot be voided.`,
        );
      }
    }
    if (loweredAmountDue(note))
      throw new ApiError(
        'invalid_state',
        `Credit note ${note.number} lowered the amount due of its invoice while it was open: it cannot be voided.`,
      );
    const credit = Number(note.creditAmount);
    if (credit > 0) {
      const balance = await lockCustomerBalance(tx, {
        accountId: note.accountId,
        livemode: note.livemode,
        customerId: note.customerId,
        currency: note.currency,
      });
      if (balance > -credit) {
        throw new ApiError(
          'invalid_state',
          `Credit note ${note.number} credited ${formatMoney(credit, note.currency)} to the customer balance, and the customer holds ${formatMoney(Math.max(0, -balance), note.currency)} of credit now: the credit was used, so the credit note cannot be voided.`,
        );
      }
      await recordBalanceTransaction(tx, {
        accountId: note.accountId,
        livemode: note.livemode,
        customerId: note.customerId,
        currency: note.currency,
        type: 'credit_note',
        amount: credit,
        invoiceId: note.invoiceId,
        creditNoteId: note.id,
        description: `Credit note ${note.number} voided`,
        createdAt: currentTime(),
      });
    }
    note.status = 'void';
    note.voidedAt = currentTime();
    await tx.flush();
    await recordCreditNoteEvent(tx, scope, 'credit_note.voided', note, pdfUrl, null);
    return note;
  });
}

/** The invoice, account and customer a credit note's PDF and email show. */
export async function creditNoteContext(
  em: EntityManager,
  note: CreditNote,
): Promise<{ invoice: Invoice; account: Account; customer: Customer | null }> {
  const [invoice, account, customer] = await Promise.all([
    em.findOneOrFail(Invoice, { id: note.invoiceId }),
    em.findOneOrFail(Account, { id: note.accountId }),
    em.findOne(Customer, { id: note.customerId }),
  ]);
  return { invoice, account, customer };
}

/** Records `type` on a credit note, with the note as its object. */
function recordCreditNoteEvent(
  tx: EntityManager,
  scope: { accountId: string; livemode: boolean },
  type: 'credit_note.created' | 'credit_note.voided',
  note: CreditNote,
  pdfUrl: (id: string) => string,
  transactionId: string | null,
) {
  return recordEvent(tx, {
    accountId: scope.accountId,
    livemode: scope.livemode,
    type,
    object: serializeCreditNote(note, pdfUrl(note.id)),
    transactionId,
  });
}
