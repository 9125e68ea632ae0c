/**
 * The usage billing activity (#28): the subscription workflow closes a period for usage through this,
 * as ONE local activity per period (patched('usage-billing'), workflows/subscription.ts). Idempotent:
 * UsageStore.closePeriod stores its result per (subscription, period start) and answers it again.
 */
import type { MikroORM } from '@mikro-orm/postgresql';

import { type CloseUsageInput, closeUsagePeriod, type CloseUsageResult } from '../services/usage/billing.ts';

export function createUsageActivities(deps: { orm: MikroORM }) {
  return {
    async closeUsagePeriod(input: CloseUsageInput): Promise<CloseUsageResult> {
      return closeUsagePeriod(deps.orm, input);
    },
  };
}
