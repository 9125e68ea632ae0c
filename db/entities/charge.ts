import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * A charge attempt against a customer's payment method, as the payment processor
 * answered it. `idempotencyKey` is unique: a second attempt with the same key is
 * answered from this row and never reaches the processor again.
 */
export const Charge = defineEntity({
  name: 'Charge',
  tableName: 'charges',
  properties: {
    id: p.string().primary(),
    idempotencyKey: p.string().unique(),
    customerId: p.string().index(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    paymentMethod: p.string(),
    status: p.string().$type<'succeeded' | 'failed'>(),
    failureCode: p.string().nullable(),
    failureMessage: p.string().nullable(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
    /** The payment transaction of this attempt, written in the same database transaction as this row. */
    transactionId: p.string().nullable(),
  },
});
export type Charge = InferEntity<typeof Charge>;
