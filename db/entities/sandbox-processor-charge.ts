import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * The sandbox payment processor's own book of charges: what a real processor
 * (Stripe, Adyen) would hold on its side. It honours idempotency keys the way
 * they do, so a retried call with the same key returns the first outcome and
 * moves no money twice.
 */
export const SandboxProcessorCharge = defineEntity({
  name: 'SandboxProcessorCharge',
  tableName: 'sandbox_processor_charges',
  properties: {
    id: p.string().primary(),
    idempotencyKey: p.string().unique(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    paymentMethod: p.string(),
    status: p.string().$type<'succeeded' | 'pending' | 'failed'>(),
    failureCode: p.string().nullable(),
    failureMessage: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type SandboxProcessorCharge = InferEntity<typeof SandboxProcessorCharge>;
