import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { PayoutInterval, Weekday } from '../../domain/payout-schedule.ts';

/** The schedule itself, the same for an account's settings and a test clock's own (fresh builders for each entity). */
const scheduleColumns = () => ({
  interval: p.string().$type<PayoutInterval>(),
  weeklyAnchor: p.string().$type<Weekday>().nullable(),
  monthlyAnchor: p.integer().nullable(),
  delayDays: p.integer().default(0),
  minimumAmount: p.bigint('number').default(0),
  updatedAt: p.datetime(),
});

/**
 * An account's payout schedule for one mode and currency (GET/PATCH
 * /v1/payout_settings). No row: the default (docs/payouts.md).
 */
export const PayoutSettings = defineEntity({
  name: 'PayoutSettings',
  tableName: 'payout_settings',
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    currency: p.string().length(3).primary(),
    ...scheduleColumns(),
  },
});
export type PayoutSettings = InferEntity<typeof PayoutSettings>;

/**
 * A test clock's own payout schedule for one currency (PATCH /v1/payout_settings with
 * `test_clock`): run on the clock's time by the clock's payoutScheduleWorkflow, apart
 * from the account's. Deleted with the clock.
 */
export const TestClockPayoutSettings = defineEntity({
  name: 'TestClockPayoutSettings',
  tableName: 'test_clock_payout_settings',
  properties: {
    testClockId: p.string().primary(),
    currency: p.string().length(3).primary(),
    accountId: p.string(),
    ...scheduleColumns(),
  },
});
export type TestClockPayoutSettings = InferEntity<typeof TestClockPayoutSettings>;

/**
 * A payout hold (`ph_…`): on the whole account in one mode (`payoutId` null), or on
 * one payout. Active while `releasedAt` is null and `until` (if any) is ahead.
 */
export const PayoutHold = defineEntity({
  name: 'PayoutHold',
  tableName: 'payout_holds',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    payoutId: p.string().nullable(),
    reason: p.string().length(500),
    until: p.datetime().nullable(),
    /** Who placed it: `admin`, `owner` or `api_key`. */
    createdBy: p.string(),
    createdAt: p.datetime(),
    releasedAt: p.datetime().nullable(),
  },
});
export type PayoutHold = InferEntity<typeof PayoutHold>;

/**
 * The sandbox payout rail's own record of what it was asked to send, keyed by
 * the payout id (its idempotency key): a retried send finds it and sends nothing
 * more, as a real rail's idempotency key would. Tests count these.
 */
export const SandboxPayoutTransfer = defineEntity({
  name: 'SandboxPayoutTransfer',
  tableName: 'sandbox_payout_transfers',
  properties: {
    idempotencyKey: p.string().primary(),
    amount: p.bigint('number'),
    currency: p.string().length(3),
    destination: p.string().nullable(),
    createdAt: p.datetime(),
  },
});
export type SandboxPayoutTransfer = InferEntity<typeof SandboxPayoutTransfer>;
