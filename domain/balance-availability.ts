/**
 * When money from a payment becomes available. Pure: the caller passes the
 * processor, the mode and the configured override.
 *
 * - sandbox processor: 2 days in both modes (so the pending → available step can
 *   be seen and tested), unless BALANCE_AVAILABILITY_DELAY_SECONDS overrides it;
 * - Stripe: 2 days, Stripe's standard payout schedule for US accounts (T+2); the
 *   override applies too.
 * Credits, refunds, payouts and payout failures move the available balance at once.
 */
export type ProcessorName = 'sandbox' | 'stripe';

export const defaultAvailabilityDelayMs: Record<ProcessorName, { test: number; live: number }> = {
  sandbox: { test: 2 * 86_400_000, live: 2 * 86_400_000 },
  stripe: { test: 2 * 86_400_000, live: 2 * 86_400_000 },
};

/** How long a payment's money stays pending; `overrideSeconds` (BALANCE_AVAILABILITY_DELAY_SECONDS) wins when set. */
export function availabilityDelayMs(
  processor: ProcessorName,
  livemode: boolean,
  overrideSeconds?: number | null,
): number {
  if (overrideSeconds != null && Number.isFinite(overrideSeconds) && overrideSeconds >= 0)
    return Math.round(overrideSeconds * 1000);
  return defaultAvailabilityDelayMs[processor][livemode ? 'live' : 'test'];
}

/** Reads BALANCE_AVAILABILITY_DELAY_SECONDS from an environment (absent or empty: no override). */
export function availabilityOverrideSeconds(env: Record<string, string | undefined>): number | null {
  const raw = env.BALANCE_AVAILABILITY_DELAY_SECONDS;
  if (raw === undefined || raw.trim() === '') return null;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`BALANCE_AVAILABILITY_DELAY_SECONDS must be a number of seconds >= 0, not ${raw}.`);
  return value;
}
