import { z } from '@hono/zod-openapi';
import type { Plan } from '../db/entities/index.ts';
import { intervalUnits } from '../domain/billing-calendar.ts';
import { timestamp } from './common.ts';

/** A plan (price and interval) of the catalog. */


export const PlanSchema = z
  .object({
    id: z.string(),
    object: z.literal('plan'),
    name: z.string(),
    product: z.string().nullable().openapi({ description: 'The product this plan prices, or null' }),
    amount: z.number().int(),
    currency: z.string(),
    interval: z.enum(intervalUnits),
    interval_count: z.number().int(),
    trial_period_days: z.number().int(),
    active: z.boolean(),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('Plan');

export function serializePlan(plan: Plan): z.infer<typeof PlanSchema> {
  return {
    id: plan.id,
    object: 'plan',
    name: plan.name,
    product: plan.productId ?? null,
    amount: Number(plan.amount),
    currency: plan.currency,
    interval: plan.interval,
    interval_count: plan.intervalCount,
    trial_period_days: plan.trialPeriodDays,
    active: plan.active,
    livemode: plan.livemode,
    created_at: plan.createdAt.toISOString(),
  };
}
