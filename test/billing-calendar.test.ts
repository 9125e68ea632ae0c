import { describe, expect, it } from 'vitest';

import { addIntervals, billingPeriod } from '../domain/billing-calendar.ts';

const at = (iso: string) => new Date(iso);
const dates = (anchor: string, unit: 'day' | 'week' | 'month' | 'year', steps: number, count = 1) =>
  Array.from({ length: steps }, (_, i) => addIntervals(at(anchor), { unit, count }, i).toISOString().slice(0, 10));

describe('billing calendar', () => {
  it('monthly from Jan 31 bills Feb 28 in a common year, then Mar 31 again', () => {
    expect(dates('2027-01-31T09:30:00Z', 'month', 4)).toEqual(['2027-01-31', '2027-02-28', '2027-03-31', '2027-04-30']);
  });

  it('monthly from Jan 31 bills Feb 29 in a leap year', () => {
    expect(dates('2028-01-31T00:00:00Z', 'month', 3)).toEqual(['2028-01-31', '2028-02-29', '2028-03-31']);
  });

  it('yearly from Feb 29 bills Feb 28 in common years and Feb 29 in leap years', () => {
    expect(dates('2028-02-29T00:00:00Z', 'year', 5)).toEqual([
      '2028-02-29',
      '2029-02-28',
      '2030-02-28',
      '2031-02-28',
      '2032-02-29',
    ]);
  });

  it('keeps the time of day, in UTC', () => {
    expect(addIntervals(at('2027-01-31T23:59:59.500Z'), { unit: 'month', count: 1 }, 1).toISOString()).toBe(
      '2027-02-28T23:59:59.500Z',
    );
  });

  it('counts every period from the anchor, so a short month does not shift later ones', () => {
    const anchor = at('2027-08-31T00:00:00Z');
    const periods = [0, 1, 2, 3].map((i) => billingPeriod(anchor, { unit: 'month', count: 1 }, i));
    expect(periods.map((p) => p.start.toISOString().slice(0, 10))).toEqual([
      '2027-08-31',
      '2027-09-30',
      '2027-10-31',
      '2027-11-30',
    ]);
    for (let i = 1; i < periods.length; i++) expect(periods[i].start).toEqual(periods[i - 1].end);
  });

  it('handles day, week, multi-month and year-crossing intervals', () => {
    expect(dates('2027-12-30T00:00:00Z', 'day', 3, 1)).toEqual(['2027-12-30', '2027-12-31', '2028-01-01']);
    expect(dates('2027-12-25T00:00:00Z', 'week', 3, 2)).toEqual(['2027-12-25', '2028-01-08', '2028-01-22']);
    expect(dates('2027-11-30T00:00:00Z', 'month', 3, 3)).toEqual(['2027-11-30', '2028-02-29', '2028-05-30']);
  });

  it('refuses negative or fractional steps', () => {
    expect(() => addIntervals(at('2027-01-01T00:00:00Z'), { unit: 'day', count: 1 }, -1)).toThrow(RangeError);
    expect(() => addIntervals(at('2027-01-01T00:00:00Z'), { unit: 'day', count: 1 }, 1.5)).toThrow(RangeError);
  });
});
