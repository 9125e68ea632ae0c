/**
 * Credit notes (docs/discounts-and-taxes.md#credit-notes-and-customer-balance), the pure part:
 * a request's lines priced against the invoice's lines, the split of the total between refund,
 * customer balance and out of band, and the number. services/credit-notes/issue.ts loads the rows,
 * takes the locks and moves the money.
 */
import { lineAmount, type LineAmounts } from './invoice-lines.ts';
import { formatMoney } from './money.ts';

export const creditNoteReasons = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;
export type CreditNoteReason = (typeof creditNoteReasons)[number];
export const creditNoteStatuses = ['issued', 'void'] as const;
export type CreditNoteStatus = (typeof creditNoteStatuses)[number];

/** One line of a credit note: part of an invoice line (by quantity or amount), or a custom amount. */
export interface CreditNoteLine {
  type: 'invoice_line_item' | 'custom_amount';
  /** invoice_line_item: the index of the invoice's line it credits. */
  line_index: number | null;
  description: string;
  /** invoice_line_item by quantity: the units credited; null otherwise. */
  quantity: number | null;
  /** invoice_line_item by quantity: the line's unit amount; null otherwise. */
  unit_amount: number | null;
  /** Minor units credited, positive. */
  amount: number;
}

export type CreditNoteLineRequest =
  | {
      type: 'invoice_line_item';
      line_index: number;
      quantity?: number | undefined;
      amount?: number | undefined;
      description?: string | undefined;
    }
  | { type: 'custom_amount'; amount: number; description: string };

/** A credit note as POST /v1/credit_notes asks for it. */
export interface CreditNoteRequest {
  invoice: string;
  lines?: CreditNoteLineRequest[] | undefined;
  amount?: number | undefined;
  currency?: string | undefined;
  reason?: CreditNoteReason | undefined;
  memo?: string | undefined;
  refund_amount?: number | undefined;
  credit_amount?: number | undefined;
  out_of_band_amount?: number | undefined;
}

/** A credit note on an open invoice, as the API hands it to the workflow that owns the invoice (its id and PDF link chosen by the API). */
export interface OpenInvoiceCredit {
  creditNoteId: string;
  pdfUrl: string;
  scope: { accountId: string; livemode: boolean };
  request: CreditNoteRequest;
}

/** What the owner answers: the invoice's amount left to pay (paid: credited to nothing), or why it refused. */
export type OpenInvoiceCreditResult =
  | { creditNoteId: string; amountDue: number; paid: boolean }
  | { refused: { type: string; message: string } };

export interface InvoiceLineView extends LineAmounts {
  description: string;
}

/** A refusal: the field it is about and why (the API answers 400 invalid_request with it). */
export class CreditNoteProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CreditNoteProblem';
  }
}

/** `<invoice number>-CN-<nn>`: the invoice's own sequence of credit notes, as Stripe numbers them. */
export function creditNoteNumber(invoiceNumber: string, sequence: number): string {
  return `${invoiceNumber}-CN-${String(sequence).padStart(2, '0')}`;
}

/**
 * The credit note's lines from the request: `lines`, or one custom line of `amount`.
 * An invoice line is credited by `quantity` (its unit amount × quantity; only for a line with a
 * whole unit amount) or by `amount`; each invoice line at most its own amount, counting what
 * earlier credit notes (`credited`, by line index) took from it.
 */
export function creditNoteLines(
  invoiceLines: readonly InvoiceLineView[],
  request: {
    lines?: readonly CreditNoteLineRequest[] | undefined;
    amount?: number | undefined;
    memo?: string | null | undefined;
  },
  credited: ReadonlyMap<number, number>,
  currency: string,
): CreditNoteLine[] {
  if (request.lines && request.amount !== undefined) throw new CreditNoteProblem('Give lines or amount, not both.');
  if (!request.lines) {
    if (request.amount === undefined) throw new CreditNoteProblem('lines or amount is required.');
    return [
      {
        type: 'custom_amount',
        line_index: null,
        description: request.memo || 'Credit',
        quantity: null,
        unit_amount: null,
        amount: request.amount,
      },
    ];
  }
  const taken = new Map(credited);
  return request.lines.map((line, i) => {
    if (line.type === 'custom_amount') {
      return {
        type: 'custom_amount',
        line_index: null,
        description: line.description,
        quantity: null,
        unit_amount: null,
        amount: line.amount,
      };
    }
    const source = invoiceLines[line.line_index];
    if (!source)
      throw new CreditNoteProblem(
        `lines[${i}].line_index: the invoice has ${invoiceLines.length} line(s), numbered from 0; there is no line ${line.line_index}.`,
      );
    if ((line.quantity === undefined) === (line.amount === undefined))
      throw new CreditNoteProblem(`lines[${i}]: give quantity or amount (one of them).`);
    const full = lineAmount(source);
    if (full <= 0)
      throw new CreditNoteProblem(
        `lines[${i}].line_index: line ${line.line_index} is a credit (${formatMoney(full, currency)}) and cannot be credited.`,
      );
    let amount: number;
    let quantity: number | null = null;
    let unitAmount: number | null = null;
    if (line.quantity !== undefined) {
      if (source.total !== undefined || source.amount === null)
        throw new CreditNoteProblem(
          `lines[${i}].quantity: line ${line.line_index} has no whole unit amount (a tiered, package or prorated amount); credit it by amount.`,
        );
      if (line.quantity > source.quantity)
        throw new CreditNoteProblem(
          `lines[${i}].quantity: line ${line.line_index} has ${source.quantity} unit(s), not ${line.quantity}.`,
        );
      quantity = line.quantity;
      unitAmount = source.amount;
      amount = source.amount * line.quantity;
    } else {
      amount = line.amount!;
    }
    const left = full - (taken.get(line.line_index) ?? 0);
    if (amount > left) {
      throw new CreditNoteProblem(
        `lines[${i}]: ${formatMoney(amount, currency)} is more than is left to credit of line ${line.line_index}: ${left} (${formatMoney(left, currency)}).`,
      );
    }
    taken.set(line.line_index, (taken.get(line.line_index) ?? 0) + amount);
    return {
      type: 'invoice_line_item',
      line_index: line.line_index,
      description: line.description ?? source.description,
      quantity,
      unit_amount: unitAmount,
      amount,
    };
  });
}

/** What earlier credit notes took from each invoice line (by line index). */
export function creditedByLine(notes: readonly { lines: readonly CreditNoteLine[] }[]): Map<number, number> {
  const credited = new Map<number, number>();
  for (const note of notes)
    for (const line of note.lines)
      if (line.line_index !== null) credited.set(line.line_index, (credited.get(line.line_index) ?? 0) + line.amount);
  return credited;
}

export interface CreditNoteSplit {
  refund: number;
  credit: number;
  outOfBand: number;
}

/**
 * Where a paid invoice's credit goes: the amounts given, which must add up to `total`. None given:
 * all of it to the customer's balance (as Stripe's dashboard does); one or two given: the rest to
 * the balance when that adds up, else a refusal.
 */
export function splitCreditNote(
  total: number,
  given: {
    refund_amount?: number | undefined;
    credit_amount?: number | undefined;
    out_of_band_amount?: number | undefined;
  },
  currency: string,
): CreditNoteSplit {
  const refund = given.refund_amount ?? 0;
  const outOfBand = given.out_of_band_amount ?? 0;
  const credit = given.credit_amount ?? Math.max(0, total - refund - outOfBand);
  if (refund + credit + outOfBand !== total) {
    throw new CreditNoteProblem(
      `refund_amount + credit_amount + out_of_band_amount must add up to the credit note's total, ${total} (${formatMoney(total, currency)}); they add up to ${refund + credit + outOfBand}.`,
    );
  }
  return { refund, credit, outOfBand };
}
