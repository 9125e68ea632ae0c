/**
 * Why an invoice was made: Stripe's `billing_reason` (docs/invoices.md "Billing reason"). The engine's
 * billing keys say it (every invoice's key is unique and made by the step that bills it), so the reason is
 * derived from the key when the invoice is inserted, and the migration backfills older invoices the same way.
 *
 * - `<sub>:cycle:0`: the subscription's first invoice (at its trial's end when it has one): subscription_create
 * - `<sub>:cycle:<n>`, n > 0: a renewal: subscription_cycle
 * - `<sub>:plan_change:<v>` and `<sub>:item_change:<v>` (an upgrade or an item change invoiced now), and
 *   `<sub>:final_usage` (the usage of a subscription that ends): subscription_update
 * - `<sub>:threshold:<period start>:<n>` (progressive billing, docs/usage.md "Billing thresholds"): subscription_threshold
 * - `invoice:<id>` (POST /v1/invoices, one-off) and any invoice without a subscription: manual
 */
export const billingReasons = [
  'subscription_create',
  'subscription_cycle',
  'subscription_update',
  'subscription_threshold',
  'manual',
] as const;
export type BillingReason = (typeof billingReasons)[number];

export function billingReasonOf(billingKey: string, subscriptionId: string | null | undefined): BillingReason {
  if (!subscriptionId || billingKey.startsWith('invoice:')) return 'manual';
  if (/:threshold:/.test(billingKey)) return 'subscription_threshold';
  if (/:(plan_change|item_change):\d+$/.test(billingKey) || billingKey.endsWith(':final_usage'))
    return 'subscription_update';
  if (billingKey.endsWith(':cycle:0')) return 'subscription_create';
  return 'subscription_cycle';
}
