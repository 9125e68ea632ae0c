import { describe, expect, it } from 'vitest';

import {
  abaRoutingProblem,
  bicProblem,
  checkDestination,
  destinationFingerprint,
  ibanOf,
  ibanProblem,
  normalizeIban,
  sortCodeProblem,
} from '../domain/bank-accounts.ts';
import {
  defaultScheduleSettings,
  earliestRun,
  isRunAt,
  nextRunAfter,
  scheduleProblem,
} from '../domain/payout-schedule.ts';
import { sandboxOutcome } from '../domain/payouts.ts';

/** Pure checks of payout destinations and schedules (no database). */
describe('ABA routing numbers (3-7-1 checksum)', () => {
  it.each(['011000015', '021000021', '026009593', '110000000', '121000358'])('accepts %s', (routing) => {
    expect(abaRoutingProblem(routing)).toBeNull();
  });
  it.each([
    ['021000022', 'the ABA checksum (3-7-1) fails for 021000022'],
    ['110000001', 'the ABA checksum (3-7-1) fails for 110000001'],
    ['12345678', 'must be exactly 9 digits (got "12345678")'],
    ['0210000210', 'must be exactly 9 digits (got "0210000210")'],
    ['02100002A', 'must be exactly 9 digits (got "02100002A")'],
  ])('refuses %s: %s', (routing, message) => {
    expect(abaRoutingProblem(routing)).toBe(message);
  });
});

describe('IBANs (length per country, ISO 7064 mod 97-10)', () => {
  it.each([
    'DE89370400440532013000',
    'GB29NWBK60161331926819',
    'FR1420041010050500013M02606',
    'NL91ABNA0417164300',
    'ES9121000418450200051332',
    'IT60X0542811101000000123456',
    'BE68539007547034',
    'AT611904300234573201',
    'NO9386011117947',
    'MT84MALT011000012345MTLCAST001S',
  ])('accepts %s', (iban) => {
    expect(ibanProblem(iban)).toBeNull();
  });
  it('normalizes spaces and case', () => {
    expect(normalizeIban('de89 3704 0044 0532 0130 00')).toBe('DE89370400440532013000');
  });
  it.each([
    ['DE89370400440532013001', 'the IBAN check digits (ISO 7064 mod 97-10) do not match'],
    ['GB29NWBK60161331926818', 'the IBAN check digits (ISO 7064 mod 97-10) do not match'],
    ['DE8937040044053201300', 'an IBAN of DE has 22 characters, not 21'],
    ['FR142004101005050001302606', 'an IBAN of FR has 27 characters, not 26'],
    ['US12345678901234567890', 'US has no IBAN'],
    ['1234', 'must be two letters of a country, two check digits, then letters and digits'],
  ])('refuses %s: %s', (iban, message) => {
    expect(ibanProblem(iban)).toBe(message);
  });
  it('computes check digits that pass', () => {
    expect(ibanOf('DE', '370400440532013000')).toBe('DE89370400440532013000');
    expect(ibanProblem(ibanOf('DE', '370400440000001116'))).toBeNull();
  });
});

describe('sort codes and BICs', () => {
  it('sort codes are 6 digits', () => {
    expect(sortCodeProblem('108800')).toBeNull();
    expect(sortCodeProblem('10880')).toBe('must be 6 digits (got "10880")');
    expect(sortCodeProblem('10-88-00')).toBe('must be 6 digits (got "10-88-00")');
  });
  it('BICs are 8 or 11 characters', () => {
    expect(bicProblem('DEUTDEFF')).toBeNull();
    expect(bicProblem('DEUTDEFF500')).toBeNull();
    expect(bicProblem('DEUTDEF')).toMatch(/^must be 8 or 11 characters/);
    expect(bicProblem('DEU1DEFF')).toMatch(/^must be 8 or 11 characters/);
  });
});

describe('checkDestination', () => {
  const base = { account_holder_name: 'Ada' };
  it('US ACH: normalized, last4, routing kept', () => {
    const r = checkDestination({
      ...base,
      type: 'us_ach',
      currency: 'usd',
      routing_number: '110000000',
      account_number: '000123456789',
    });
    expect(r).toMatchObject({
      ok: true,
      value: { country: 'US', currency: 'USD', last4: '6789', routingNumber: '110000000', secret: '000123456789' },
    });
  });
  it('names the failed check', () => {
    expect(
      checkDestination({
        ...base,
        type: 'us_ach',
        currency: 'USD',
        routing_number: '110000001',
        account_number: '000123456789',
      }),
    ).toEqual({ ok: false, message: 'routing_number: the ABA checksum (3-7-1) fails for 110000001' });
    expect(checkDestination({ ...base, type: 'us_ach', currency: 'USD', account_number: '000123456789' })).toEqual({
      ok: false,
      message: 'routing_number: required for a us_ach destination',
    });
    expect(
      checkDestination({ ...base, type: 'us_ach', currency: 'USD', routing_number: '110000000', account_number: '12' }),
    ).toEqual({ ok: false, message: 'account_number: a US account number has 4 to 17 digits' });
    expect(
      checkDestination({
        ...base,
        type: 'us_ach',
        currency: 'EUR',
        routing_number: '110000000',
        account_number: '000123456789',
      }),
    ).toEqual({
      ok: false,
      message:
        'currency: a us_ach destination takes USD, not EUR (EUR requires an IBAN: use sepa, or wire with an iban)',
    });
    expect(checkDestination({ ...base, type: 'sepa', currency: 'EUR', iban: 'DE89370400440532013001' })).toEqual({
      ok: false,
      message: 'iban: the IBAN check digits (ISO 7064 mod 97-10) do not match',
    });
    expect(
      checkDestination({ ...base, type: 'sepa', currency: 'EUR', iban: 'DE89370400440532013000', bic: 'XX' }),
    ).toMatchObject({ ok: false, message: expect.stringMatching(/^bic: must be 8 or 11/) });
    expect(
      checkDestination({
        ...base,
        type: 'sepa',
        currency: 'EUR',
        iban: 'DE89370400440532013000',
        routing_number: '110000000',
      }),
    ).toEqual({ ok: false, message: 'routing_number: a sepa destination does not take it (it takes iban, bic)' });
    expect(
      checkDestination({ ...base, type: 'uk', currency: 'GBP', sort_code: '10880', account_number: '00012345' }),
    ).toEqual({ ok: false, message: 'sort_code: must be 6 digits (got "10880")' });
    expect(
      checkDestination({ ...base, type: 'uk', currency: 'GBP', sort_code: '108800', account_number: '0001234' }),
    ).toEqual({ ok: false, message: 'account_number: a UK account number has 8 digits (got 7)' });
    expect(
      checkDestination({ ...base, type: 'wire', currency: 'EUR', bic: 'DEUTDEFF', account_number: '12345678' }),
    ).toEqual({ ok: false, message: 'account_number: a wire with an iban takes no account_number' });
    expect(checkDestination({ ...base, type: 'wire', currency: 'EUR', bic: 'DEUTDEFF' })).toEqual({
      ok: false,
      message: 'iban: required: EUR payouts go to an IBAN',
    });
    expect(checkDestination({ ...base, type: 'wire', currency: 'USD', account_number: '12345678' })).toEqual({
      ok: false,
      message: 'bic: required for a wire destination',
    });
    expect(checkDestination({ ...base, type: 'paypal', currency: 'USD', email: 'not-an-email' })).toEqual({
      ok: false,
      message: 'email: not an email address: "not-an-email"',
    });
    expect(
      checkDestination({ ...base, type: 'uk', currency: 'JPY', sort_code: '108800', account_number: '00012345' }),
    ).toEqual({ ok: false, message: 'currency: a uk destination takes GBP, not JPY' });
  });
  it('SEPA, UK, wire and PayPal accepted', () => {
    expect(
      checkDestination({
        ...base,
        type: 'sepa',
        currency: 'EUR',
        iban: 'fr14 2004 1010 0505 0001 3M02 606',
        bic: 'psstfrpp',
      }),
    ).toMatchObject({
      ok: true,
      value: { country: 'FR', secret: 'FR1420041010050500013M02606', last4: '2606', bic: 'PSSTFRPP' },
    });
    expect(
      checkDestination({ ...base, type: 'uk', currency: 'GBP', sort_code: '10-88-00', account_number: '00012345' }),
    ).toMatchObject({ ok: true, value: { country: 'GB', sortCode: '108800', last4: '2345' } });
    expect(
      checkDestination({ ...base, type: 'wire', currency: 'GBP', bic: 'NWBKGB2L', account_number: '31926819' }),
    ).toMatchObject({ ok: true, value: { country: 'GB', bic: 'NWBKGB2L' } });
    expect(
      checkDestination({ ...base, type: 'wire', currency: 'EUR', bic: 'DEUTDEFF', iban: 'DE89370400440532013000' }),
    ).toMatchObject({ ok: true, value: { secret: 'DE89370400440532013000' } });
    expect(checkDestination({ ...base, type: 'paypal', currency: 'EUR', email: 'Ada@Example.com' })).toMatchObject({
      ok: true,
      value: { secret: 'ada@example.com', emailMasked: 'a***@example.com' },
    });
  });
  it('fingerprints: equal for the same account, different otherwise and per secret', () => {
    expect(destinationFingerprint('s1', 'iban:DE89')).toBe(destinationFingerprint('s1', 'iban:DE89'));
    expect(destinationFingerprint('s1', 'iban:DE89')).not.toBe(destinationFingerprint('s1', 'iban:DE88'));
    expect(destinationFingerprint('s1', 'iban:DE89')).not.toBe(destinationFingerprint('s2', 'iban:DE89'));
  });
});

describe('sandbox rail outcomes', () => {
  it('by the last four characters, in test mode only', () => {
    expect(sandboxOutcome('6789', false)).toEqual({ kind: 'paid', transitMs: 86_400_000 });
    expect(sandboxOutcome('1116', false)).toEqual({ kind: 'failed', code: 'no_account', transitMs: 86_400_000 });
    expect(sandboxOutcome('7777', false)).toEqual({ kind: 'paid', transitMs: 4 * 86_400_000 });
    expect(sandboxOutcome('1116', true)).toEqual({ kind: 'paid', transitMs: 86_400_000 });
  });
});

describe('payout schedules', () => {
  const d = (iso: string) => new Date(iso);
  it('daily: the next UTC midnight', () => {
    expect(nextRunAfter({ ...defaultScheduleSettings, interval: 'daily' }, d('2027-01-30T10:00:00Z'))).toEqual(
      d('2027-01-31T00:00:00Z'),
    );
    expect(nextRunAfter({ ...defaultScheduleSettings, interval: 'daily' }, d('2027-01-31T00:00:00Z'))).toEqual(
      d('2027-02-01T00:00:00Z'),
    );
  });
  it('weekly: the next anchor day', () => {
    // 2027-01-01 is a Friday.
    expect(
      nextRunAfter(
        { ...defaultScheduleSettings, interval: 'weekly', weeklyAnchor: 'monday' },
        d('2027-01-01T12:00:00Z'),
      ),
    ).toEqual(d('2027-01-04T00:00:00Z'));
    expect(
      nextRunAfter(
        { ...defaultScheduleSettings, interval: 'weekly', weeklyAnchor: 'friday' },
        d('2027-01-01T00:00:00Z'),
      ),
    ).toEqual(d('2027-01-08T00:00:00Z'));
  });
  it('monthly: clamped to the end of a short month', () => {
    const s = { ...defaultScheduleSettings, interval: 'monthly' as const, monthlyAnchor: 31 };
    expect(nextRunAfter(s, d('2027-01-15T00:00:00Z'))).toEqual(d('2027-01-31T00:00:00Z'));
    expect(nextRunAfter(s, d('2027-01-31T00:00:00Z'))).toEqual(d('2027-02-28T00:00:00Z'));
    expect(nextRunAfter(s, d('2027-02-28T00:00:00Z'))).toEqual(d('2027-03-31T00:00:00Z'));
    expect(nextRunAfter(s, d('2028-01-31T00:00:00Z'))).toEqual(d('2028-02-29T00:00:00Z'));
    expect(nextRunAfter({ ...s, monthlyAnchor: 30 }, d('2027-03-31T00:00:00Z'))).toEqual(d('2027-04-30T00:00:00Z'));
    expect(isRunAt(s, d('2027-02-28T00:00:00Z'))).toBe(true);
    expect(isRunAt(s, d('2027-02-27T00:00:00Z'))).toBe(false);
  });
  it('manual never runs; the earliest of several; bad combinations named', () => {
    expect(nextRunAfter(defaultScheduleSettings, d('2027-01-01T00:00:00Z'))).toBeNull();
    expect(
      earliestRun(
        [defaultScheduleSettings, { ...defaultScheduleSettings, interval: 'weekly', weeklyAnchor: 'monday' }],
        d('2027-01-01T12:00:00Z'),
      ),
    ).toEqual(d('2027-01-04T00:00:00Z'));
    expect(scheduleProblem({ ...defaultScheduleSettings, interval: 'weekly' })).toBe(
      'weekly_anchor: required for a weekly schedule',
    );
    expect(scheduleProblem({ ...defaultScheduleSettings, interval: 'daily', monthlyAnchor: 3 })).toBe(
      'monthly_anchor: only a monthly schedule takes one (interval is daily)',
    );
  });
});
