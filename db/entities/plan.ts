import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { IntervalUnit } from '../../domain/billing-calendar.ts';

/** A price: amount per interval, with a default trial length, optionally of a product. */
export const Plan = defineEntity({
  name: 'Plan',
  tableName: 'plans',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    name: p.string(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    interval: p.string().$type<IntervalUnit>(),
    intervalCount: p.integer().default(1),
    trialPeriodDays: p.integer().default(0),
    /** Archived plans (false) stay readable and keep billing their subscriptions, but take no new ones. */
    active: p.boolean().default(true),
    /** The product this plan prices, of the same account and mode; null for a plan on its own. */
    productId: p.string().nullable().index(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Plan = InferEntity<typeof Plan>;
