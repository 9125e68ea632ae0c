import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** The sandbox processor's book of refunds, one per idempotency key, like its charges. */
export const SandboxProcessorRefund = defineEntity({
  name: 'SandboxProcessorRefund',
  tableName: 'sandbox_processor_refunds',
  properties: {
    id: p.string().primary(),
    idempotencyKey: p.string().unique(),
    chargeId: p.string().index(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    status: p.string().$type<'succeeded' | 'failed'>(),
    failureCode: p.string().nullable(),
    failureMessage: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type SandboxProcessorRefund = InferEntity<typeof SandboxProcessorRefund>;
