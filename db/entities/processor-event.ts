import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * A processor webhook (Stripe) the engine received and verified: one row per
 * processor event id, so a redelivery (Stripe retries until it gets a 2xx) is
 * recognised and acted on once. `processedAt` is set when the engine has acted on it.
 */
export const ProcessorEvent = defineEntity({
  name: 'ProcessorEvent',
  tableName: 'processor_events',
  uniques: [{ properties: ['processor', 'processorEventId'] }],
  properties: {
    id: p.string().primary(),
    processor: p.string().$type<'sandbox' | 'stripe'>(),
    processorEventId: p.string(),
    type: p.string(),
    livemode: p.boolean(),
    /** The processor's charge (Stripe: pi_...) the event is about, when it names one. */
    processorChargeId: p.string().nullable().index(),
    /** The engine's transaction it was matched to, when found. */
    transactionId: p.string().nullable(),
    payload: p.json<Record<string, unknown>>(),
    processedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ProcessorEvent = InferEntity<typeof ProcessorEvent>;
