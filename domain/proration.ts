/**
 * Proration in exact integer arithmetic. A prorated line is
 * amount × remaining ÷ period, rounded half away from zero to the minor unit;
 * an invoice's total is the sum of its rounded lines (never re-rounded).
 * BigInt because amount × milliseconds passes 2^53.
 */
export function prorate(amount: number, remainingMs: number, periodMs: number): number {
  if (periodMs <= 0) throw new RangeError('period must be positive');
  const clamped = BigInt(Math.max(0, Math.min(remainingMs, periodMs)));
  const sign = amount < 0 ? -1n : 1n;
  const numerator = BigInt(Math.abs(amount)) * clamped;
  const period = BigInt(periodMs);
  const rounded = (2n * numerator + period) / (2n * period);
  return Number(sign * rounded);
}

/** Per-day price, to tell an upgrade from a downgrade across intervals. */
export function dailyRate(
  amount: number,
  interval: { unit: 'day' | 'week' | 'month' | 'year'; count: number },
): number {
  const days = { day: 1, week: 7, month: 30.436875, year: 365.2425 }[interval.unit] * interval.count;
  return amount / days;
}
