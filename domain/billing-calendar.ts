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
        Date.UTC(
          year,
          month,
          day,
          anchor.getUTCHours(),
          anchor.getUTCMinutes(),
          anchor.getUTCSeconds(),
          anchor.getUTCMilliseconds(),
        ),
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

/** The first calendar boundary of `unit` strictly after `instant` (UTC): next midnight, Monday, 1st, or January 1st. */
export function nextCalendarBoundary(instant: Date, unit: IntervalUnit): Date {
  const y = instant.getUTCFullYear();
  const m = instant.getUTCMonth();
  const d = instant.getUTCDate();
  switch (unit) {
    case 'day':
      return new Date(Date.UTC(y, m, d + 1));
    case 'week': {
      const daysToMonday = (8 - instant.getUTCDay()) % 7 || 7;
      return new Date(Date.UTC(y, m, d + daysToMonday));
    }
    case 'month':
      return new Date(Date.UTC(y, m + 1, 1));
    case 'year':
      return new Date(Date.UTC(y + 1, 0, 1));
  }
}

/** The calendar boundary of `unit` at or before `instant` (UTC). */
export function calendarBoundaryAtOrBefore(instant: Date, unit: IntervalUnit): Date {
  const y = instant.getUTCFullYear();
  const m = instant.getUTCMonth();
  const d = instant.getUTCDate();
  switch (unit) {
    case 'day':
      return new Date(Date.UTC(y, m, d));
    case 'week':
      return new Date(Date.UTC(y, m, d - ((instant.getUTCDay() + 6) % 7)));
    case 'month':
      return new Date(Date.UTC(y, m, 1));
    case 'year':
      return new Date(Date.UTC(y, 0, 1));
  }
}

/** Where a subscription's periods are counted from (the fields of SubscriptionSnapshot that say so). */
export interface PeriodAnchor {
  billingAnchor: string;
  anchorCycle: number;
  /** Start of a partial period just before the anchor (calendar billing), or null. */
  stubStart: string | null;
}

/** Period `cycle` of a subscription: the stub before the anchor, or a full period counted from it. */
export function subscriptionPeriod(anchor: PeriodAnchor, interval: BillingInterval, cycle: number): BillingPeriod {
  const start = new Date(anchor.billingAnchor);
  if (cycle < anchor.anchorCycle) {
    if (anchor.stubStart === null || cycle !== anchor.anchorCycle - 1)
      throw new RangeError(`cycle ${cycle} comes before the anchor`);
    return { index: cycle, start: new Date(anchor.stubStart), end: start };
  }
  const period = billingPeriod(start, interval, cycle - anchor.anchorCycle);
  return { ...period, index: cycle };
}
