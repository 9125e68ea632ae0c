/**
 * Progressive billing in the subscription workflow (#28, docs/usage.md "Billing thresholds"): ingestion
 * (services/usage/thresholds.ts) signals `usageThresholdReached` ONCE per crossing of a subscription's
 * billing_thresholds.amount_gte; the workflow queues it like any message, and the main loop bills it
 * between timers, so a threshold invoice never races a renewal or the period's closing.
 *
 * Billing one is two local activities: prepareUsageThreshold (decides at the workflow's time whether the
 * unbilled usage still reaches the threshold and records the lines, once per workflow step)
 * and renewCycle (invoice keyed `${subscription}:threshold:${period start}:${sequence}`, charge, settle),
 * the same step billFinalUsage uses. New behaviour behind patched('usage-thresholds'): no recorded history
 * ever received the signal.
 */
import { defineSignal, workflowInfo } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import type { PriceTerms, SubscriptionSnapshot } from '../domain/subscription.ts';

export const usageThresholdsPatch = 'usage-thresholds';

/** Sent by ingestion when a subscription's unbilled usage of its current period reached its threshold. */
export const usageThresholdReachedSignal = defineSignal('usageThresholdReached');

type Local = Pick<Activities, 'prepareUsageThreshold' | 'renewCycle'>;

/**
 * Bills the current period's usage not yet billed, if it (still) reaches the threshold: answers the snapshot
 * the renewCycle activity recorded when the invoice was paid, else null (nothing to bill, or a declined charge:
 * the threshold invoice stays open, and the period's usage is not billed twice).
 */
export async function billUsageThreshold(
  activities: Local,
  ctx: {
    subscription: SubscriptionSnapshot;
    items: readonly PriceTerms[];
    now: Date;
    currency: string;
    recorded: (changes: Partial<SubscriptionSnapshot>) => SubscriptionSnapshot;
  },
): Promise<SubscriptionSnapshot | null> {
  const s = ctx.subscription;
  if (!s.currentPeriodStart || !s.currentPeriodEnd) return null;
  const customer = { accountId: s.accountId, customerId: s.customerId, livemode: s.livemode };
  const prepared = await activities.prepareUsageThreshold({
    ...customer,
    subscriptionId: s.id,
    periodStart: s.currentPeriodStart,
    periodEnd: s.currentPeriodEnd,
    asOf: ctx.now.toISOString(),
    // Unique per step and the same on replay: on a test clock two threshold invoices may share a time.
    stepKey: `${workflowInfo().runId}:${workflowInfo().historyLength}`,
    items: [...ctx.items],
  });
  if (!prepared) return null;
  const result = await activities.renewCycle({
    invoice: {
      billingKey: prepared.billingKey,
      subscriptionId: s.id,
      accountId: s.accountId,
      customerId: s.customerId,
      currency: ctx.currency,
      lines: prepared.lines,
      periodStart: s.currentPeriodStart,
      periodEnd: prepared.asOf,
      issuedAt: ctx.now.toISOString(),
      livemode: s.livemode,
    },
    charge: { idempotencyKey: `${prepared.billingKey}:attempt:1`, ...customer, currency: ctx.currency },
    paidAt: ctx.now.toISOString(),
    paid: ctx.recorded({}),
    free: ctx.recorded({}),
  });
  return result.status === 'paid' ? result.snapshot : null;
}
