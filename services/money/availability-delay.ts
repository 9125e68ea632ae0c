/**
 * How long a payment's money stays pending: the processor's delay in that mode (domain/balance-availability.ts), or
 * the process's override (config.balanceAvailabilityDelaySeconds, BALANCE_AVAILABILITY_DELAY_SECONDS). A module of
 * its own, without the availability workflow's imports, because every composition sets it (services/compose.ts).
 */
import { availabilityDelayMs, type ProcessorName } from '../../domain/balance-availability.ts';

/** The process's config.balanceAvailabilityDelaySeconds (BALANCE_AVAILABILITY_DELAY_SECONDS), set by composeServiceContext. */
let availabilityOverride: number | null = null;

/**
 * Sets how long every payment's money stays pending in this process, over the processors' delays (null: theirs).
 * Once per process, from the configuration, by services/compose.ts: the ledger's callers (webhooks, activities,
 * routes) record payments without carrying the setting.
 */
export function useAvailabilityOverride(seconds: number | null): void {
  availabilityOverride = seconds;
}

/** How long a payment through `processor` stays pending in this mode (config.balanceAvailabilityDelaySeconds overrides). */
export function paymentAvailabilityDelayMs(processor: ProcessorName | undefined, livemode: boolean): number {
  return availabilityDelayMs(processor ?? 'sandbox', livemode, availabilityOverride);
}
