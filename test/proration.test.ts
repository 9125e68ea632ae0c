import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { calendarBoundaryAtOrBefore, nextCalendarBoundary, subscriptionPeriod } from '../domain/billing-calendar.ts';
import { parseRetryInterval, retryPolicyProblem, scheduledAttemptAt } from '../domain/dunning.ts';
import { dailyRate, prorate } from '../domain/proration.ts';

describe('proration', () => {
  it('rounds half away from zero, per line, in exact integers', () => {
    expect(prorate(3000, 1, 2)).toBe(1500);
    expect(prorate(1, 1, 2)).toBe(1); // 0.5 up
    expect(prorate(-1, 1, 2)).toBe(-1); // -0.5 away from zero
    expect(prorate(1000, 1, 3)).toBe(333);
    expect(prorate(2000, 1, 3)).toBe(667);
    expect(prorate(1000, 0, 3)).toBe(0);
    expect(prorate(1000, 5, 3)).toBe(1000); // clamped to the period
    // Past 2^53: 99,999,999 x a year in ms, where floating point would drift.
    const year = 366 * 86_400_000;
    expect(prorate(99_999_999, year - 1, year)).toBe(99_999_999);
    expect(prorate(99_999_999, year / 2, year)).toBe(50_000_000);
  });

  it('matches exact rational rounding for any amount and fraction', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -99_999_999, max: 99_999_999 }),
        fc.integer({ min: 1, max: 31_622_400_000 }),
        fc.integer({ min: 0, max: 31_622_400_000 }),
        (amount, period, remaining) => {
          const r = BigInt(Math.min(remaining, period));
          const exact2 = 2n * BigInt(Math.abs(amount)) * r; // 2 x |amount| x r / period, compared in integers
          const result = BigInt(Math.abs(prorate(amount, remaining, period)));
          // |result - exact| <= 1/2, and exactly 1/2 only when rounding up.
          const diff2 = 2n * result * BigInt(period) - exact2;
          expect(diff2 <= BigInt(period) && diff2 > -BigInt(period)).toBe(true);
          expect(Math.sign(prorate(amount, remaining, period)) * Math.sign(amount)).not.toBe(-1);
        },
      ),
    );
  });

  it('tells upgrades from downgrades by price per day', () => {
    expect(dailyRate(1200, { unit: 'month', count: 1 }) > dailyRate(12000, { unit: 'year', count: 1 })).toBe(true);
    expect(dailyRate(700, { unit: 'week', count: 1 })).toBe(100);
  });
});

describe('calendar billing', () => {
  it('finds the next calendar boundary and the one at or before, in UTC', () => {
    const t = new Date('2027-03-17T15:30:00Z'); // a Wednesday
    expect(nextCalendarBoundary(t, 'day').toISOString()).toBe('2027-03-18T00:00:00.000Z');
    expect(nextCalendarBoundary(t, 'week').toISOString()).toBe('2027-03-22T00:00:00.000Z');
    expect(nextCalendarBoundary(t, 'month').toISOString()).toBe('2027-04-01T00:00:00.000Z');
    expect(nextCalendarBoundary(t, 'year').toISOString()).toBe('2028-01-01T00:00:00.000Z');
    expect(calendarBoundaryAtOrBefore(t, 'week').toISOString()).toBe('2027-03-15T00:00:00.000Z');
    expect(calendarBoundaryAtOrBefore(new Date('2027-03-15T00:00:00Z'), 'week').toISOString()).toBe(
      '2027-03-15T00:00:00.000Z',
    );
    expect(nextCalendarBoundary(new Date('2027-03-21T23:00:00Z'), 'week').toISOString()).toBe(
      '2027-03-22T00:00:00.000Z',
    ); // Sunday
    expect(nextCalendarBoundary(new Date('2027-12-31T12:00:00Z'), 'month').toISOString()).toBe(
      '2028-01-01T00:00:00.000Z',
    );
  });

  it('counts periods from a moved anchor, with a stub before it', () => {
    const anchor = { billingAnchor: '2027-04-01T00:00:00.000Z', anchorCycle: 1, stubStart: '2027-03-17T15:30:00.000Z' };
    const month = { unit: 'month' as const, count: 1 };
    expect(subscriptionPeriod(anchor, month, 0)).toEqual({
      index: 0,
      start: new Date(anchor.stubStart),
      end: new Date(anchor.billingAnchor),
    });
    expect(subscriptionPeriod(anchor, month, 1).end.toISOString()).toBe('2027-05-01T00:00:00.000Z');
    expect(subscriptionPeriod(anchor, month, 3).start.toISOString()).toBe('2027-06-01T00:00:00.000Z');
    // A resume re-anchors at cycle 5: cycle 5 starts at the new anchor.
    const moved = { billingAnchor: '2027-09-10T08:00:00.000Z', anchorCycle: 5, stubStart: null };
    expect(subscriptionPeriod(moved, month, 5).start.toISOString()).toBe('2027-09-10T08:00:00.000Z');
    expect(subscriptionPeriod(moved, month, 6).start.toISOString()).toBe('2027-10-10T08:00:00.000Z');
    expect(() => subscriptionPeriod(moved, month, 4)).toThrow(RangeError);
  });
});

describe('retry policy', () => {
  it('parses intervals and schedules attempts from the first failure', () => {
    expect(['immediate', '30m', '24h', '3d'].map(parseRetryInterval)).toEqual([0, 1_800_000, 86_400_000, 259_200_000]);
    expect(['', '0h', '1w', '-1d', '24 h', '99999d'].map(parseRetryInterval)).toEqual([
      null,
      null,
      null,
      null,
      null,
      null,
    ]);
    const policy = { max_attempts: 4, intervals: ['immediate', '24h', '3d', '7d'] };
    expect(retryPolicyProblem(policy)).toBeNull();
    const first = new Date('2027-01-31T10:00:00Z');
    expect([1, 2, 3, 4, 5].map((n) => scheduledAttemptAt(policy, first, n)?.toISOString() ?? null)).toEqual([
      '2027-01-31T10:00:00.000Z',
      '2027-02-01T10:00:00.000Z',
      '2027-02-03T10:00:00.000Z',
      '2027-02-07T10:00:00.000Z',
      null,
    ]);
    expect(retryPolicyProblem({ max_attempts: 2, intervals: ['1h', '2h'] })).toMatch(/first interval/);
    expect(retryPolicyProblem({ max_attempts: 3, intervals: ['immediate', '3d', '1d'] })).toMatch(/increase/);
    expect(retryPolicyProblem({ max_attempts: 2, intervals: ['immediate', '61d'] })).toMatch(/60 days/);
    expect(retryPolicyProblem({ max_attempts: 0, intervals: [] })).toMatch(/max_attempts/);
  });
});
