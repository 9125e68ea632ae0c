/**
 * Payout schedules (pure): when an account's payouts of one currency are due.
 * Every run is at 00:00 UTC of its day:
 * - `daily`: every day;
 * - `weekly`: every `weekly_anchor` (monday … sunday);
 * - `monthly`: on day `monthly_anchor` (1-31) of each month, clamped to the
 *   month's last day (31 → Feb 28 or 29, Apr 30);
 * - `manual`: never (payouts only by POST /v1/payouts).
 * `delay_days` keeps money credited within the last N days out of a scheduled
 * payout; `minimum_amount` skips a run whose amount would be smaller.
 */

export const payoutIntervals = ['daily', 'weekly', 'monthly', 'manual'] as const;
export type PayoutInterval = (typeof payoutIntervals)[number];
export const weekdays = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
export type Weekday = (typeof weekdays)[number];

export interface ScheduleSettings {
  interval: PayoutInterval;
  weeklyAnchor: Weekday | null;
  monthlyAnchor: number | null;
  delayDays: number;
  minimumAmount: number;
}

export const defaultScheduleSettings: ScheduleSettings = {
  interval: 'manual',
  weeklyAnchor: null,
  monthlyAnchor: null,
  delayDays: 0,
  minimumAmount: 0,
};

const DAY = 86_400_000;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** Whether a schedule runs on the UTC day that starts at `midnight`. */
export function runsOn(settings: ScheduleSettings, midnight: Date): boolean {
  switch (settings.interval) {
    case 'manual':
      return false;
    case 'daily':
      return true;
    case 'weekly':
      return weekdays[midnight.getUTCDay()] === (settings.weeklyAnchor ?? 'monday');
    case 'monthly': {
      const anchor = settings.monthlyAnchor ?? 1;
      const day = Math.min(anchor, daysInMonth(midnight.getUTCFullYear(), midnight.getUTCMonth()));
      return midnight.getUTCDate() === day;
    }
  }
}

/** The first run strictly after `after`, or null for `manual`. */
export function nextRunAfter(settings: ScheduleSettings, after: Date): Date | null {
  if (settings.interval === 'manual') return null;
  let midnight = Math.floor(after.getTime() / DAY) * DAY + DAY;
  // At most 31 days ahead for any interval.
  for (let i = 0; i < 32; i++, midnight += DAY) {
    const day = new Date(midnight);
    if (runsOn(settings, day)) return day;
  }
  throw new Error('unreachable: every schedule runs within 31 days');
}

/** Whether `at` is exactly one of the schedule's runs. */
export function isRunAt(settings: ScheduleSettings, at: Date): boolean {
  return at.getTime() % DAY === 0 && runsOn(settings, at);
}

/** The earliest next run of several schedules (one per currency), or null when all are manual. */
export function earliestRun(schedules: ScheduleSettings[], after: Date): Date | null {
  let best: Date | null = null;
  for (const s of schedules) {
    const next = nextRunAfter(s, after);
    if (next && (!best || next < best)) best = next;
  }
  return best;
}

/** Why a settings patch is invalid, or null (the patch merged over what is there). */
export function scheduleProblem(s: ScheduleSettings): string | null {
  if (s.interval === 'weekly' && !s.weeklyAnchor) return 'weekly_anchor: required for a weekly schedule';
  if (s.interval !== 'weekly' && s.weeklyAnchor)
    return `weekly_anchor: only a weekly schedule takes one (interval is ${s.interval})`;
  if (s.interval === 'monthly' && s.monthlyAnchor === null)
    return 'monthly_anchor: required for a monthly schedule (1-31)';
  if (s.interval !== 'monthly' && s.monthlyAnchor !== null)
    return `monthly_anchor: only a monthly schedule takes one (interval is ${s.interval})`;
  return null;
}
