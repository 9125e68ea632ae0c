/**
 * The usage billing activities (#28): the subscription workflow closes a period for usage through
 * closeUsagePeriod, as ONE local activity per period (patched('usage-billing'), workflows/subscription.ts).
 * Idempotent: UsageStore.closePeriod stores its result per (subscription, period start) and answers it again.
 * prepareUsageThreshold is progressive billing's step (patched('usage-thresholds'),
 * workflows/subscription-usage-thresholds.ts), idempotent per workflow step.
 */
import type { MikroORM } from '@mikro-orm/postgresql';

import { type CloseUsageInput, closeUsagePeriod, type CloseUsageResult } from '../services/usage/billing.ts';
import {
  type PreparedThreshold,
  type PrepareThresholdInput,
  prepareThresholdInvoice,
  thresholdBilledOf,
} from '../services/usage/thresholds.ts';

export function createUsageActivities(deps: { orm: MikroORM }) {
  return {
    async closeUsagePeriod(input: CloseUsageInput): Promise<CloseUsageResult> {
      const closed = await closeUsagePeriod(deps.orm, input);
      // What threshold invoices of the period billed already: the closing's lines bill only the rest.
      const thresholdBilled = await thresholdBilledOf(deps.orm, input.subscriptionId, new Date(input.start));
      return Object.keys(thresholdBilled).length > 0 ? { ...closed, thresholdBilled } : closed;
    },
    async prepareUsageThreshold(input: PrepareThresholdInput): Promise<PreparedThreshold | null> {
      return prepareThresholdInvoice(deps.orm, input);
    },
  };
}
