import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { CreditNoteLine, CreditNoteReason, CreditNoteStatus } from '../../domain/credit-notes.ts';

export {
  type CreditNoteLine,
  type CreditNoteReason,
  creditNoteReasons,
  type CreditNoteStatus,
  creditNoteStatuses,
} from '../../domain/credit-notes.ts';
/**
 * A credit note (POST /v1/credit_notes): lowers what an invoice asked for after it was issued,
 * and says where the money goes on a paid invoice: back to the payment method (`refundAmount`,
 * through services/money/refunds.ts: `refundTransactionId`), to the customer's balance
 * (`creditAmount`: the customer balance transaction `customerBalanceTransactionId`), or out of
 * band (`outOfBandAmount`, recorded only). Numbered `<invoice number>-CN-<nn>` per invoice
 * (`sequence` 1, 2, …; unique per invoice, taken under the invoice's row lock: no gaps).
 */
export const CreditNote = defineEntity({
  name: 'CreditNote',
  tableName: 'credit_notes',
  uniques: [{ properties: ['invoiceId', 'sequence'] }],
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    number: p.string(),
    sequence: p.integer(),
    invoiceId: p.string().index(),
    customerId: p.string().index(),
    currency: p.string().length(3),
    /** Σ lines. */
    subtotal: p.bigint('number'),
    /** What the credit note credits: subtotal (no tax is credited apart: see docs/discounts-and-taxes.md). */
    total: p.bigint('number'),
    lines: p.json<CreditNoteLine[]>(),
    reason: p.string().$type<CreditNoteReason>().nullable(),
    memo: p.text().nullable(),
    refundAmount: p.bigint('number'),
    creditAmount: p.bigint('number'),
    outOfBandAmount: p.bigint('number'),
    refundTransactionId: p.string().nullable(),
    customerBalanceTransactionId: p.string().nullable(),
    status: p.string().$type<CreditNoteStatus>(),
    createdAt: p.datetime(),
    voidedAt: p.datetime().nullable(),
  },
});
export type CreditNote = InferEntity<typeof CreditNote>;
