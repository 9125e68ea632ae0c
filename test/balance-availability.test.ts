import { describe, expect, it } from 'vitest';

import { availabilityDelayMs, availabilityOverrideSeconds } from '../domain/balance-availability.ts';

describe('when payment money becomes available', () => {
  it('sandbox and Stripe: 2 days in both modes; BALANCE_AVAILABILITY_DELAY_SECONDS overrides', () => {
    for (const processor of ['sandbox', 'stripe'] as const) {
      for (const livemode of [false, true]) expect(availabilityDelayMs(processor, livemode)).toBe(2 * 86_400_000);
    }
    expect(
      availabilityDelayMs('sandbox', true, availabilityOverrideSeconds({ BALANCE_AVAILABILITY_DELAY_SECONDS: '90' })),
    ).toBe(90_000);
    expect(
      availabilityDelayMs('stripe', false, availabilityOverrideSeconds({ BALANCE_AVAILABILITY_DELAY_SECONDS: '0' })),
    ).toBe(0);
    expect(availabilityOverrideSeconds({})).toBeNull();
    expect(availabilityOverrideSeconds({ BALANCE_AVAILABILITY_DELAY_SECONDS: ' ' })).toBeNull();
    expect(() => availabilityOverrideSeconds({ BALANCE_AVAILABILITY_DELAY_SECONDS: '-1' })).toThrow(
      /BALANCE_AVAILABILITY_DELAY_SECONDS/,
    );
    expect(() => availabilityOverrideSeconds({ BALANCE_AVAILABILITY_DELAY_SECONDS: 'soon' })).toThrow();
  });
});
