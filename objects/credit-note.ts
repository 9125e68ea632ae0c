import { z } from '@hono/zod-openapi';

import { type CreditNote, creditNoteReasons, creditNoteStatuses } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A credit note as the API, its events and webhooks show it (Stripe's credit_note, with our names). */
export const CreditNoteLineSchema = z
  .object({
    object: z.literal('credit_note_line_item'),
    type: z.enum(['invoice_line_item', 'custom_amount']).openapi({
      description: 'invoice_line_item: part of one line of the invoice; custom_amount: an amount of its own',
    }),
    invoice_line_index: z.number().int().nullable().openapi({
      description: 'invoice_line_item: the index (from 0) of the invoice line it credits; null for a custom amount',
    }),
    description: z.string(),
    quantity: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'Units of the invoice line credited, when credited by quantity; else null' }),
    unit_amount: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The invoice line's unit amount, when credited by quantity; else null" }),
    amount: z.number().int().openapi({ description: 'Credited, in minor units (positive)', example: 1000 }),
  })
  .openapi('CreditNoteLine');

export const CreditNoteSchema = z
  .object({
    id: z.string().openapi({ example: 'cn_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    object: z.literal('credit_note'),
    number: z.string().openapi({
      example: 'ACME-0001-CN-01',
      description: "The invoice's number, -CN-, and the invoice's own sequence of credit notes (01, 02, …; no gaps)",
    }),
    invoice: z.string().openapi({ description: 'The invoice it credits' }),
    customer: z.string(),
    currency: z.string().openapi({ example: 'USD', description: "The invoice's currency" }),
    lines: z.array(CreditNoteLineSchema),
    subtotal: z.number().int().openapi({ description: 'Σ lines, minor units', example: 1000 }),
    total: z.number().int().openapi({
      description: 'What the credit note credits (equal to subtotal: taxes are not credited apart)',
      example: 1000,
    }),
    amount: z.number().int().openapi({ description: "Same as total (Stripe's name)", example: 1000 }),
    reason: z.enum(creditNoteReasons).nullable().openapi({
      description: 'duplicate, fraudulent, order_change or product_unsatisfactory; null when none was given',
    }),
    memo: z.string().nullable().openapi({ description: 'A note to the customer, printed on the PDF and in the email' }),
    refund: z.string().nullable().openapi({
      description:
        'The refund transaction (txn_…) that sent refund_amount back to the payment method through the processor; null without one',
    }),
    refund_amount: z.number().int().openapi({
      description: 'Back to the payment method that paid the invoice (a refund of its payment)',
      example: 1000,
    }),
    credit_amount: z.number().int().openapi({
      description: "To the customer's balance (a credit_note customer balance transaction), used by its next invoices",
      example: 0,
    }),
    out_of_band_amount: z
      .number()
      .int()
      .openapi({ description: 'Given back outside the engine (cash, a bank transfer): recorded only', example: 0 }),
    customer_balance_transaction: z
      .string()
      .nullable()
      .openapi({ description: 'The customer balance transaction (cbtxn_…) of credit_amount; null without one' }),
    status: z.enum(creditNoteStatuses).openapi({ description: 'issued, or void (its balance credit taken back)' }),
    pdf: z.string().openapi({
      description: 'A signed link to the credit note as a PDF (opens without an API key)',
      example: 'http://localhost:3000/credit_notes/cn_01jd3x5k8q0m2v7c9r4t6y1w3e/pdf?token=…',
    }),
    created_at: timestamp,
    voided_at: timestamp.nullable(),
    livemode: z.boolean(),
  })
  .openapi('CreditNote');
export type CreditNoteBody = z.infer<typeof CreditNoteSchema>;

export function serializeCreditNote(note: CreditNote, pdf: string): CreditNoteBody {
  return {
    id: note.id,
    object: 'credit_note',
    number: note.number,
    invoice: note.invoiceId,
    customer: note.customerId,
    currency: note.currency,
    lines: note.lines.map((line) => ({
      object: 'credit_note_line_item' as const,
      type: line.type,
      invoice_line_index: line.line_index,
      description: line.description,
      quantity: line.quantity,
      unit_amount: line.unit_amount,
      amount: line.amount,
    })),
    subtotal: Number(note.subtotal),
    total: Number(note.total),
    amount: Number(note.total),
    reason: note.reason ?? null,
    memo: note.memo ?? null,
    refund: note.refundTransactionId ?? null,
    refund_amount: Number(note.refundAmount),
    credit_amount: Number(note.creditAmount),
    out_of_band_amount: Number(note.outOfBandAmount),
    customer_balance_transaction: note.customerBalanceTransactionId ?? null,
    status: note.status,
    pdf,
    created_at: note.createdAt.toISOString(),
    voided_at: note.voidedAt?.toISOString() ?? null,
    livemode: note.livemode,
  };
}
