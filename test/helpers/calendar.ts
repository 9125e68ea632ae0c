/**
 * The same UTC instant one calendar month later, on the last day of the month when
 * the next month is shorter (Aug 31 → Sep 30, Jan 31 → Feb 28 or 29): how a monthly
 * plan's period ends. Written apart from domain/billing-calendar.ts on purpose, so a
 * test checks the engine's calendar against a second reading of it.
 *
 * Date#setUTCMonth(month + 1) would roll Aug 31 over into Oct 1; the test clock lies
 * on whatever day earlier files skipped it to, so a naive expectation fails on the
 * 29th-31st of some months only.
 */
export function oneMonthAfter(instant: number | string | Date): Date {
  const from = new Date(instant);
  const year = from.getUTCFullYear();
  const month = from.getUTCMonth() + 1;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(from.getUTCDate(), lastDay),
      from.getUTCHours(),
      from.getUTCMinutes(),
      from.getUTCSeconds(),
      from.getUTCMilliseconds(),
    ),
  );
}
