import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { RetryPolicy } from '../../domain/dunning.ts';
import type { NotificationPreferences } from '../../domain/notifications.ts';
import type { DunningFinalAction } from '../../domain/subscription.ts';

export interface AccountSettings {
  currency: string;
  timezone: string;
  language: string;
  /** Days a subscription stays past due after its last failed retry (default 7). */
  grace_period_days?: number;
  /** Failed-payment retries (default SPEC.md's 4 attempts: immediate, 24h, 3d, 7d). */
  retry_policy?: RetryPolicy;
  /** What ends dunning: cancel (default) or pause the subscription. */
  dunning_final_action?: DunningFinalAction;
  /** Email notification preferences; a key left out is on (domain/notifications.ts). */
  notifications?: Partial<NotificationPreferences>;
}

export const accountTypes = ['individual', 'business'] as const;
export const accountStatuses = ['active', 'suspended', 'pending', 'closed'] as const;
export type AccountType = (typeof accountTypes)[number];
export type AccountStatus = (typeof accountStatuses)[number];

/** A tenant. Every customer, plan, subscription, user and key belongs to one. */
export const Account = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: p.string().primary(),
    email: p.string().unique(),
    name: p.string(),
    type: p.string().$type<AccountType>(),
    status: p.string().$type<AccountStatus>().index(),
    settings: p.json<AccountSettings>(),
    createdAt: p.datetime().onCreate(() => new Date()).index(),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    closedAt: p.datetime().nullable(),
  },
});
export type Account = InferEntity<typeof Account>;
