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
 *
 * A declined threshold invoice goes into the subscription's dunning, as a declined renewal does (Stripe retries
 * threshold invoices with the subscription's retry rules): behind patched('usage-threshold-dunning'); before it, the
 * invoice stayed open with no retries. While another invoice is already in dunning, the threshold invoice stays
 * open (one invoice in dunning at a time; docs/usage.md "Billing thresholds").
 */
import { defineSignal, workflowInfo } from '@temporalio/workflow';

import type { Activities } from '../activities/index.ts';
import type { PriceTerms, SubscriptionSnapshot } from '../domain/subscription.ts';
import type { RenewCycleResult } from '../services/subscriptions/renew-cycle.ts';

export const usageThresholdsPatch = 'usage-thresholds';
/** A declined threshold invoice starts the subscription's dunning (workflows/subscription.ts, the billUsageThreshold command). */
export const usageThresholdDunningPatch = 'usage-threshold-dunning';

/** Sent by ingestion when a subscription's unbilled usage of its current period reached its threshold. */
export const usageThresholdReachedSignal = defineSignal('usageThresholdReached');

type Local = Pick<Activities, 'prepareUsageThreshold' | 'renewCycle'>;

/**
 * Bills the current period's usage not yet billed, if it (still) reaches the threshold: answers renewCycle's
 * result (paid: the snapshot it recorded; unpaid: the open invoice and the declined charge, for the caller's
 * dunning — the period's usage is not billed twice either way), or null when there was nothing to bill.
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
): Promise<(RenewCycleResult & { billingKey: string }) | null> {
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
  return { ...result, billingKey: prepared.billingKey };
}
