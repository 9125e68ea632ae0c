/**
 * The mode's usage settings (GET/POST /v1/settings/usage): the grace window before a period is invoiced and what
 * happens to late events. Both live on the mode's account_mode_settings row: read together, written in one upsert.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { AccountModeSettings } from '../../db/entities/index.ts';
import { defaultUsageGraceSeconds } from '../../domain/usage-billing.ts';
import { defaultLateEventsPolicy, type LateEventsPolicy } from '../../domain/usage-late-events.ts';

export interface UsageSettings {
  graceSeconds: number;
  lateEvents: LateEventsPolicy;
}

/** The mode's usage settings, defaults where unset (one read of the row). */
export async function usageSettingsOf(em: EntityManager, accountId: string, livemode: boolean): Promise<UsageSettings> {
  const row = await em.findOne(AccountModeSettings, { accountId, livemode }, { refresh: true });
  return {
    graceSeconds: row?.usageGracePeriodSeconds ?? defaultUsageGraceSeconds,
    lateEvents: row?.usageLateEvents ?? defaultLateEventsPolicy,
  };
}

/** Sets the fields given (the row made if missing) in one statement; ingestion reads late_events in its own statement. */
export async function setUsageSettings(
  em: EntityManager,
  accountId: string,
  livemode: boolean,
  change: Partial<UsageSettings>,
): Promise<void> {
  const columns: Array<[string, unknown]> = [];
  if (change.graceSeconds !== undefined) columns.push(['usage_grace_period_seconds', change.graceSeconds]);
  if (change.lateEvents !== undefined) columns.push(['usage_late_events', change.lateEvents]);
  if (columns.length === 0) return;
  const names = columns.map(([name]) => `"${name}"`);
  await em.execute(
    `insert into "account_mode_settings" ("account_id", "livemode", "notifications", ${names.join(', ')}, "updated_at")
     values (?, ?, '{}', ${columns.map(() => '?').join(', ')}, now())
     on conflict ("account_id", "livemode") do update set ${names.map((n) => `${n} = excluded.${n}`).join(', ')}, "updated_at" = now()`,
    [accountId, livemode, ...columns.map(([, value]) => value)],
    'run',
  );
}
