/**
 * The usage window of a billing period: which meter events a period bills (docs/usage.md#timestamps).
 *
 * A period's bounds carry milliseconds (it starts at the instant the subscription was made or renewed),
 * while events are usually stamped in whole seconds (Unix time, as Stripe's). A period's usage is the
 * events with `floor_s(period start) <= timestamp < floor_s(period end)`, both bounds cut to their whole
 * second: an event stamped in the second a period began counts in that period even when the period began
 * later in that second. Consecutive periods chain (one's end is the next one's start), so their windows
 * chain too: every event from the first period's start second on belongs to exactly one period, with
 * neither a gap nor an overlap, whatever the precision of its timestamp (fractional seconds included).
 *
 * Every place that aggregates or checks a period's usage goes through usageWindow: the closing
 * (invoice-time aggregation and the watermark that refuses `period_invoiced`), the upcoming invoice,
 * the subscription's current usage, threshold invoices and billing alerts.
 */

export interface UsageWindow {
  start: Date;
  end: Date;
}

/** `at` cut to its whole second (toward the past, also before 1970). */
export function wholeSecond(at: Date): Date {
  const ms = at.getTime();
  return new Date(ms - (((ms % 1000) + 1000) % 1000));
}

/**
 * The events of `period` [start, end) a usage aggregation counts: [wholeSecond(start), wholeSecond(end)).
 * With `asOf` (the usage so far: a current period's now, a threshold's time), the window stops there
 * instead, never past the period's window nor before its start: the result may be empty (end = start),
 * which counts no event. `asOf` is not cut: "so far" is every event stamped before it.
 */
export function usageWindow(period: { start: Date; end: Date }, asOf?: Date): UsageWindow {
  const start = wholeSecond(period.start);
  const periodEnd = wholeSecond(period.end);
  let end = asOf && asOf.getTime() < periodEnd.getTime() ? asOf : periodEnd;
  if (end.getTime() < start.getTime()) end = start;
  return { start, end: new Date(end.getTime()) };
}

/** Whether the window counts no event (a period shorter than its first second's rest, or asOf at its start). */
export function isEmptyWindow(window: UsageWindow): boolean {
  return window.end.getTime() <= window.start.getTime();
}
