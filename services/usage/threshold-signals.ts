/**
 * The maintenance sweep's re-send of threshold crossings (#28, docs/usage.md "Billing thresholds"). Ingestion
 * claims a crossing (a row of usage_threshold_crossings) and then signals the subscription's workflow; a crash
 * between the two left the claim with no signal, and since the claim's primary key refuses a second one, the
 * usage waited for the period's end. A crossing is acknowledged by the workflow's step: it either records the
 * threshold invoice of that sequence (usage_threshold_invoices) or gives the claim back (deletes it). So a claim
 * older than `olderThanMs` with neither is re-signalled here (a second signal is harmless: the workflow queues
 * one, and its step decides again at its own time), and its time is renewed so the next sweep waits again.
 * A claim of a period that is no longer the subscription's current one, or of a subscription no longer billing,
 * is dropped: the period's closing billed that usage.
 */
import { usageThresholdReachedSignal } from '../../workflows/subscription-usage-thresholds.ts';
import type { ServiceContext, TemporalContext } from '../context.ts';
import { usageStoreFor } from './postgres-store.ts';

export interface ThresholdResignalResult {
  resent: number;
  dropped: number;
  failed: number;
}

/** At most this many claims per sweep (the oldest first); the next sweep takes the rest. */
const batch = 500;

export async function resignalThresholdCrossings(
  ctx: Pick<ServiceContext, 'orm'> & { temporal: Pick<TemporalContext, 'client'> },
  olderThanMs: number,
  log?: { warn: (message: string, meta?: Record<string, unknown>) => void },
): Promise<ThresholdResignalResult> {
  const db = usageStoreFor(ctx.orm).pool;
  const { rows } = await db.query<{ subscriptionId: string; periodStart: Date; sequence: number; current: boolean }>(
    `select c.subscription_id as "subscriptionId", c.period_start as "periodStart", c.sequence,
       (s.status in ('active', 'past_due') and s.current_period_start = c.period_start) as current
     from usage_threshold_crossings c
     left join subscriptions s on s.id = c.subscription_id
     where c.signalled_at < now() - make_interval(secs => $1::double precision / 1000)
       and not exists (select 1 from usage_threshold_invoices u
                       where u.subscription_id = c.subscription_id and u.period_start = c.period_start and u.sequence = c.sequence)
     order by c.signalled_at
     limit ${batch}`,
    [olderThanMs],
  );
  const result: ThresholdResignalResult = { resent: 0, dropped: 0, failed: 0 };
  for (const row of rows) {
    const key = [row.subscriptionId, row.periodStart, row.sequence];
    if (!row.current) {
      await db.query(
        `delete from usage_threshold_crossings where subscription_id = $1 and period_start = $2 and sequence = $3`,
        key,
      );
      result.dropped++;
      continue;
    }
    try {
      // The time first: should the signal's answer be lost, the claim is re-sent one interval later, not at once.
      await db.query(
        `update usage_threshold_crossings set signalled_at = now() where subscription_id = $1 and period_start = $2 and sequence = $3`,
        key,
      );
      await ctx.temporal.client.workflow.getHandle(row.subscriptionId).signal(usageThresholdReachedSignal);
      result.resent++;
    } catch (error) {
      result.failed++;
      log?.warn('threshold crossing not re-signalled', { subscription: row.subscriptionId, error: String(error) });
    }
  }
  return result;
}
