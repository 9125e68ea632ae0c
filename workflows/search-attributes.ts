import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes, so ops staff can ask the Temporal UI for, say,
 * `SubscriptionStatus = "past_due" AND CustomerId = "cus_..."`. The dev server
 * registers them at start (dev/temporal-dev-server.ts); a production cluster
 * needs `temporal operator search-attribute create` once (README).
 */
export const SubscriptionStatusKey = defineSearchAttributeKey('SubscriptionStatus', SearchAttributeType.KEYWORD);
export const AccountIdKey = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const CustomerIdKey = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);
export const PlanIdKey = defineSearchAttributeKey('PlanId', SearchAttributeType.KEYWORD);
export const LivemodeKey = defineSearchAttributeKey('Livemode', SearchAttributeType.BOOL);

export const customSearchAttributes = [SubscriptionStatusKey, AccountIdKey, CustomerIdKey, PlanIdKey, LivemodeKey];
