/**
 * Billing-period calendar math, in UTC. Pure: used by workflows, so no clock reads.
 *
 * A subscription's periods are counted from one anchor instant (when billing
 * began). Period n starts at anchor + n intervals, computed from the anchor every
 * time rather than from the previous period, so a monthly plan anchored on Jan 31
 * bills Feb 28 (or 29), then Mar 31 again; a yearly plan anchored on Feb 29 bills
 * Feb 28 in common years and Feb 29 in leap years.
 */
export const intervalUnits = ['day', 'week', 'month', 'year'] as const;
export type IntervalUnit = (typeof intervalUnits)[number];

export interface BillingInterval {
  unit: IntervalUnit;
  count: number;
}

const dayMs = 86_400_000;

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** The instant `steps` intervals after `anchor` (steps may be 0). */
export function addIntervals(anchor: Date, interval: BillingInterval, steps: number): Date {
  if (!Number.isInteger(steps) || steps < 0) throw new RangeError(`steps must be a non-negative integer, got ${steps}`);
  const total = interval.count * steps;
  switch (interval.unit) {
    case 'day':
      return new Date(anchor.getTime() + total * dayMs);
    case 'week':
      return new Date(anchor.getTime() + total * 7 * dayMs);
    case 'month':
    case 'year': {
      const months = interval.unit === 'year' ? total * 12 : total;
      const monthIndex = anchor.getUTCMonth() + months;
      const year = anchor.getUTCFullYear() + Math.floor(monthIndex / 12);
      const month = ((monthIndex % 12) + 12) % 12;
      const day = Math.min(anchor.getUTCDate(), daysInMonth(year, month));
      return new Date(
        Date.UTC(year, month, day, anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds()),
      );
    }
  }
}

export interface BillingPeriod {
  /** 0 for the first paid period. */
  index: number;
  start: Date;
  end: Date;
}

export function billingPeriod(anchor: Date, interval: BillingInterval, index: number): BillingPeriod {
  return { index, start: addIntervals(anchor, interval, index), end: addIntervals(anchor, interval, index + 1) };
}

export function addDays(instant: Date, days: number): Date {
  return new Date(instant.getTime() + days * dayMs);
}
