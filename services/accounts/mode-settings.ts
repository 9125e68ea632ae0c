import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { AccountModeSettings } from '../../db/entities/index.ts';
import { defaultGracePeriodDays, defaultRetryPolicy, type RetryPolicy } from '../../domain/dunning.ts';
import { type NotificationPreferences, notificationPreferences } from '../../domain/notifications.ts';
import type { DunningFinalAction } from '../../domain/subscription.ts';

/**
 * An account's settings in one mode (live or sandbox): billing (dunning) and
 * email notifications. A change in one mode never touches the other; workflows
 * and senders read the mode of the subscription or payout they act for.
 */

export interface BillingSettings {
  retryPolicy: RetryPolicy;
  gracePeriodDays: number;
  finalAction: DunningFinalAction;
}

export interface ModeSettings {
  billing: BillingSettings;
  notifications: NotificationPreferences;
}

function withDefaults(row: AccountModeSettings | null): ModeSettings {
  return {
    billing: {
      retryPolicy: row?.retryPolicy ?? defaultRetryPolicy,
      gracePeriodDays: row?.gracePeriodDays ?? defaultGracePeriodDays,
      finalAction: row?.dunningFinalAction ?? 'cancel',
    },
    notifications: notificationPreferences({ notifications: row?.notifications }),
  };
}

/** The mode's settings, with SPEC.md's defaults where it set none. */
export async function loadModeSettings(em: EntityManager, accountId: string, livemode: boolean): Promise<ModeSettings> {
  return withDefaults(await em.findOne(AccountModeSettings, { accountId, livemode }, { refresh: true }));
}

export interface ModeSettingsChange {
  gracePeriodDays?: number;
  retryPolicy?: RetryPolicy;
  finalAction?: DunningFinalAction;
  notifications?: Partial<NotificationPreferences>;
}

/**
 * Changes the mode's settings on the caller's transaction: the mode's row is
 * created if missing, then locked, so concurrent changes of the same mode queue
 * and notification keys merge one by one. Returns the settings after the change.
 */
export async function changeModeSettings(
  tx: EntityManager,
  accountId: string,
  livemode: boolean,
  change: ModeSettingsChange,
): Promise<ModeSettings> {
  await tx.execute(
    `insert into "account_mode_settings" ("account_id", "livemode", "notifications", "updated_at") values (?, ?, '{}', now()) on conflict do nothing`,
    [accountId, livemode],
    'run',
  );
  const row = await tx.findOneOrFail(
    AccountModeSettings,
    { accountId, livemode },
    { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
  );
  if (change.gracePeriodDays !== undefined) row.gracePeriodDays = change.gracePeriodDays;
  if (change.retryPolicy !== undefined) row.retryPolicy = change.retryPolicy;
  if (change.finalAction !== undefined) row.dunningFinalAction = change.finalAction;
  if (change.notifications !== undefined)
    row.notifications = { ...notificationPreferences({ notifications: row.notifications }), ...change.notifications };
  await tx.flush();
  return withDefaults(row);
}
