import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { RetryPolicy } from '../../domain/dunning.ts';
import type { NotificationPreferences } from '../../domain/notifications.ts';
import type { DunningFinalAction } from '../../domain/subscription.ts';

/**
 * An account's settings for one mode: billing (dunning) and email notifications.
 *
 * Why a row per (account, mode) rather than keys in `accounts.settings` or two
 * json columns on the account: everything else that belongs to a mode in this
 * schema is keyed by `livemode` (subscriptions, invoice number counters,
 * balances), so reading "the caller's mode's settings" is the same `where
 * account_id = ? and livemode = ?` as any other read, and a write in one mode
 * locks and changes only that mode's row: a sandbox change cannot reach live.
 * `accounts.settings` keeps only what is account-wide (currency, timezone,
 * language). A null column, or no row at all, means "the default" (SPEC.md's
 * retry policy, 7 days of grace, cancel, every notification on), so accounts
 * need no row until they change something.
 */
export const AccountModeSettings = defineEntity({
  name: 'AccountModeSettings',
  tableName: 'account_mode_settings',
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    /** Days a subscription stays past due after its last failed retry (default 7). */
    gracePeriodDays: p.integer().nullable(),
    /** Failed-payment retries (default SPEC.md's 4 attempts: immediate, 24h, 3d, 7d). */
    retryPolicy: p.json<RetryPolicy>().nullable(),
    /** What ends dunning: cancel (default) or pause the subscription. */
    dunningFinalAction: p.string().$type<DunningFinalAction>().nullable(),
    /** Email notification preferences; a key left out is on (domain/notifications.ts). */
    notifications: p.json<Partial<NotificationPreferences>>(),
    /** Tax rate ids applied to this mode's invoices whose lines have none of their own (their jurisdiction matching the customer's); null: none. */
    defaultTaxRates: p.json<string[]>().nullable(),
    /** Seconds after a period's end that late meter events still count before its usage is invoiced (default 3600). */
    usageGracePeriodSeconds: p.integer().nullable(),
    /** Meter events stamped before a period already invoiced: refused (null, 'refuse') or billed on the next invoice as an adjustment. */
    usageLateEvents: p.string().$type<'refuse' | 'bill_next_invoice'>().nullable(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type AccountModeSettings = InferEntity<typeof AccountModeSettings>;
