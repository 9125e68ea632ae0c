import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export interface InvoiceLine {
  description: string;
  amount: number;
  quantity: number;
  period_start: string;
  period_end: string;
}

/**
 * One invoice per charge attempt series of a billing cycle. `billingKey` is the
 * deterministic key of the cycle (subscription + cycle), so recording the same
 * invoice twice (activity retry, worker crash) finds the first one.
 */
export const Invoice = defineEntity({
  name: 'Invoice',
  tableName: 'invoices',
  properties: {
    id: p.string().primary(),
    number: p.string().unique(),
    billingKey: p.string().unique(),
    subscriptionId: p.string().index(),
    customerId: p.string(),
    status: p.string().$type<'open' | 'paid' | 'void' | 'uncollectible'>(),
    currency: p.string().length(3),
    amountDue: p.integer(),
    amountPaid: p.integer(),
    lines: p.json<InvoiceLine[]>(),
    periodStart: p.datetime(),
    periodEnd: p.datetime(),
    chargeId: p.string().nullable(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    createdAt: p.datetime(),
  },
});
export type Invoice = InferEntity<typeof Invoice>;
