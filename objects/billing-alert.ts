import { z } from '@hono/zod-openapi';

import { timestamp } from './common.ts';

/** A usage alert as stored (services/usage/alerts.ts reads rows of billing_alerts into this). */
export interface BillingAlertRow {
  id: string;
  livemode: boolean;
  title: string;
  meterId: string;
  gte: number;
  customerId: string | null;
  status: 'active' | 'inactive' | 'archived';
  createdAt: Date;
  updatedAt: Date;
}

/** A usage alert, as the API shows it (Stripe's Billing Alert; docs/usage.md#usage-alerts). */
export const BillingAlertSchema = z
  .object({
    id: z.string().openapi({ example: 'alrt_01jd5a2b3c4d5e6f7g8h9j0k1m' }),
    object: z.literal('billing.alert'),
    title: z.string().openapi({ example: 'API tokens: 1M reached' }),
    alert_type: z.literal('usage_threshold'),
    usage_threshold: z.object({
      gte: z
        .number()
        .int()
        .openapi({ description: "Fires when the customer's usage on the meter reaches this value", example: 1000000 }),
      meter: z.string().openapi({ example: 'mtr_01jd5a2b3c4d5e6f7g8h9j0k1m' }),
      recurrence: z.literal('one_time').openapi({ description: 'one_time: at most once per customer' }),
    }),
    filter: z
      .object({ customer: z.string().openapi({ example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }) })
      .nullable()
      .openapi({ description: 'Only this customer; null: every customer' }),
    status: z.enum(['active', 'inactive', 'archived']).openapi({
      description: 'inactive: does not fire (activate again); archived: for good, not listed',
      example: 'active',
    }),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('BillingAlert');
export type BillingAlertBody = z.infer<typeof BillingAlertSchema>;

export function serializeBillingAlert(alert: BillingAlertRow): BillingAlertBody {
  return {
    id: alert.id,
    object: 'billing.alert',
    title: alert.title,
    alert_type: 'usage_threshold',
    usage_threshold: { gte: alert.gte, meter: alert.meterId, recurrence: 'one_time' },
    filter: alert.customerId ? { customer: alert.customerId } : null,
    status: alert.status,
    livemode: alert.livemode,
    created_at: alert.createdAt.toISOString(),
    updated_at: alert.updatedAt.toISOString(),
  };
}

/** data.object of a `billing.alert.triggered` event (Stripe's billing.alert_triggered). */
export function serializeAlertTriggered(alert: BillingAlertRow, customerId: string, value: string, at: Date) {
  return {
    object: 'billing.alert_triggered' as const,
    alert: serializeBillingAlert(alert),
    customer: customerId,
    value,
    livemode: alert.livemode,
    created_at: at.toISOString(),
  };
}
