import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { BrandingSettings } from '../../domain/branding.ts';

/**
 * The account-wide settings. Billing and notification settings belong to a mode
 * and live in account_mode_settings (AccountModeSettings), one row per mode.
 */
export interface AccountSettings {
  currency: string;
  timezone: string;
  language: string;
  /** What customers may do in the customer portal (api/routes/customer-portal.ts); defaults when unset. */
  customer_portal?: CustomerPortalPermissions;
  /** Business name, brand colour and logo customers see (domain/branding.ts); defaults when unset. */
  branding?: BrandingSettings;
}

export interface CustomerPortalPermissions {
  plan_changes: boolean;
  cancellation: boolean;
  resume: boolean;
  /** Customers may change their subscription's quantity (seats); off by default. */
  quantity_changes: boolean;
  /** Customers may enter a promotion code, applied as their subscription's discount; off by default (unset on accounts before it). */
  promotion_codes?: boolean;
  /** The plans the portal offers for a plan change, by id; unset or null: every active recurring plan of the mode. */
  plans?: string[] | null;
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
    createdAt: p
      .datetime()
      .onCreate(() => new Date())
      .index(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
    closedAt: p.datetime().nullable(),
  },
});
export type Account = InferEntity<typeof Account>;
