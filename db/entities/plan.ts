import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { IntervalUnit } from '../../domain/billing-calendar.ts';

/** A price: amount per interval, with a default trial length. */
export const Plan = defineEntity({
  name: 'Plan',
  tableName: 'plans',
  properties: {
    id: p.string().primary(),
    name: p.string(),
    amount: p.integer(),
    currency: p.string().length(3),
    interval: p.string().$type<IntervalUnit>(),
    intervalCount: p.integer().default(1),
    trialPeriodDays: p.integer().default(0),
    active: p.boolean().default(true),
    accountId: p.string().index(),
    livemode: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Plan = InferEntity<typeof Plan>;
