import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  compactTaxId,
  gstinCheckCharacter,
  luhnValid,
  mod11_10Valid,
  taxIdDescriptions,
  type TaxIdType,
  taxIdTypes,
  validateTaxId,
} from '../domain/tax-ids.ts';
import {
  isCountryCode,
  jurisdictionMatches,
  normalizePercentage,
  ratesForLine,
  type TaxRateRecord,
} from '../domain/tax-rules.ts';

/**
 * domain/tax-ids.ts: each type's format and check digits, with published example numbers (python-stdnum's
 * documented examples, the ATO's and the IRS's) that must pass, and the same numbers with one digit changed
 * or two swapped, which a check digit must catch. domain/tax-rules.ts: which rates apply to a line.
 */
const valid: [TaxIdType, string, string, string][] = [
  // type, as written, compact value, country
  ['eu_vat', 'DE 136,695 976', 'DE136695976', 'DE'],
  ['eu_vat', 'IT 00743110157', 'IT00743110157', 'IT'],
  ['eu_vat', 'FR 40 303 265 045', 'FR40303265045', 'FR'],
  ['eu_vat', 'NL004495445B01', 'NL004495445B01', 'NL'],
  ['eu_vat', 'NL000099998B57', 'NL000099998B57', 'NL'],
  ['eu_vat', 'BE 0403.019.261', 'BE0403019261', 'BE'],
  ['eu_vat', 'ATU13585627', 'ATU13585627', 'AT'],
  ['eu_vat', 'PL 856-734-62-15', 'PL8567346215', 'PL'],
  ['eu_vat', 'DK 13 58 56 28', 'DK13585628', 'DK'],
  ['eu_vat', 'FI 20774740', 'FI20774740', 'FI'],
  ['eu_vat', 'SE 123456789701', 'SE123456789701', 'SE'],
  ['eu_vat', 'LU 150 274 42', 'LU15027442', 'LU'],
  ['eu_vat', 'PT 501 964 843', 'PT501964843', 'PT'],
  ['eu_vat', 'EL 094259216', 'EL094259216', 'GR'],
  ['eu_vat', 'GR 094259216', 'EL094259216', 'GR'],
  ['eu_vat', 'HR 33392005961', 'HR33392005961', 'HR'],
  ['eu_vat', 'ESB58378431', 'ESB58378431', 'ES'],
  ['eu_vat', 'XI 980 7806 84', 'XI980780684', 'GB'],
  ['gb_vat', 'GB 980 7806 84', 'GB980780684', 'GB'],
  ['gb_vat', '980780684', 'GB980780684', 'GB'],
  ['gb_vat', 'GBGD001', 'GBGD001', 'GB'],
  ['ch_vat', 'CHE-107.787.577 IVA', 'CHE107787577IVA', 'CH'],
  ['ch_vat', 'CHE-107.787.577', 'CHE107787577MWST', 'CH'],
  ['no_vat', 'NO 995 525 828 MVA', 'NO995525828MVA', 'NO'],
  ['au_abn', '83 914 571 673', '83914571673', 'AU'],
  ['au_abn', '51 824 753 556', '51824753556', 'AU'],
  ['ca_bn', '12302 6635', '123026635', 'CA'],
  ['ca_bn', '123026635RT0001', '123026635RT0001', 'CA'],
  ['in_gst', '27AAPFU0939F1ZV', '27AAPFU0939F1ZV', 'IN'],
  ['in_gst', '27aasCS2460H1Z0', '27AASCS2460H1Z0', 'IN'],
  ['us_ein', '91-1144442', '91-1144442', 'US'],
  ['us_ein', '041234567', '04-1234567', 'US'],
];
/** The types whose last digits check the rest (the digit positions a corruption is tried on). */
const checked: Partial<Record<string, true>> = {
  DE: true,
  IT: true,
  FR: true,
  NL: true,
  BE: true,
  AT: true,
  PL: true,
  DK: true,
  FI: true,
  SE: true,
  LU: true,
  PT: true,
  EL: true,
  HR: true,
  GB: true,
  XI: true,
  CH: true,
  NO: true,
  AU: true,
  CA: true,
  IN: true,
};

describe('tax ids', () => {
  it('published example numbers are valid, compacted, with their country', () => {
    for (const [type, written, value, country] of valid) {
      expect(validateTaxId(type, written), `${type} ${written}`).toEqual({ valid: true, value, country });
    }
  });

  it('every type has a description and an example that validates', () => {
    for (const type of taxIdTypes) expect(validateTaxId(type, taxIdDescriptions[type].example).valid, type).toBe(true);
  });

  it('one digit changed is caught by every check digit; GB and NL, which accept two residues, let through only the few that land on the other', () => {
    for (const [type, written, value] of valid) {
      const key =
        type === 'eu_vat'
          ? value.slice(0, 2)
          : (
              {
                gb_vat: 'GB',
                ch_vat: 'CH',
                no_vat: 'NO',
                au_abn: 'AU',
                ca_bn: 'CA',
                in_gst: 'IN',
                us_ein: 'US',
              } as const
            )[type as Exclude<TaxIdType, 'eu_vat'>];
      if (!checked[key] || /GD\d{3}$/.test(value)) continue;
      const compact = compactTaxId(written);
      const positions = [...compact].map((c, i) => (/\d/.test(c) ? i : -1)).filter((i) => i >= 0);
      // The checked digits: not a CA program account, a GB branch, nor the NL B-suffix (outside the mod 11 of the RSIN).
      const body =
        type === 'ca_bn' || key === 'NL'
          ? positions.slice(0, 9)
          : key === 'GB' || key === 'XI'
            ? positions.slice(0, 9)
            : positions;
      let tried = 0;
      const accepted: string[] = [];
      for (const at of body) {
        for (let d = 0; d <= 9; d++) {
          if (String(d) === compact[at]) continue;
          const corrupted = compact.slice(0, at) + d + compact.slice(at + 1);
          tried++;
          if (validateTaxId(type, corrupted).valid) accepted.push(corrupted);
        }
      }
      // GB: the sum may be 0 or 42 mod 97 (the 9755 series); NL: mod 11 of the RSIN or mod 97 of the whole, so a sole proprietor's number changed still fits mod 11 about 1 time in 11.
      if (key === 'GB' || key === 'XI')
        expect(accepted.length / tried, `${compact}: ${accepted.join(', ')}`).toBeLessThan(0.05);
      else if (key === 'NL') expect(accepted.length / tried, `${compact}: ${accepted.join(', ')}`).toBeLessThan(0.1);
      else expect(accepted, `${type} ${compact}`).toEqual([]);
    }
  });

  it('Luhn-checked numbers catch swapped neighbours; other formats refuse wrong lengths and letters', () => {
    // NL: a changed RSIN digit fails mod 11 and, here, mod 97 too.
    expect(validateTaxId('eu_vat', 'NL004495446B01').valid).toBe(false);
    expect(validateTaxId('eu_vat', 'NL000099998B58').valid).toBe(false);
    expect(validateTaxId('au_abn', '38 914 571 673').valid).toBe(false);
    expect(validateTaxId('eu_vat', 'IT00743111057').valid).toBe(false);
    expect(validateTaxId('in_gst', '27AAPFU0939F1ZW')).toMatchObject({
      valid: false,
      reason: expect.stringContaining('check character'),
    });
    expect(validateTaxId('eu_vat', 'DE13669597')).toMatchObject({
      valid: false,
      reason: expect.stringContaining('format'),
    });
    expect(validateTaxId('eu_vat', 'US136695976')).toMatchObject({
      valid: false,
      reason: expect.stringContaining('prefix'),
    });
    expect(validateTaxId('gb_vat', 'GB98078068')).toMatchObject({ valid: false });
    expect(validateTaxId('gb_vat', 'GBHA001').valid).toBe(false); // HA numbers are 500 and up
    expect(validateTaxId('ch_vat', 'CHE-107.787.577 VAT').valid).toBe(false);
    expect(validateTaxId('us_ein', '00-1234567')).toMatchObject({
      valid: false,
      reason: expect.stringContaining('prefix 00'),
    });
    expect(validateTaxId('us_ein', '12-345678').valid).toBe(false);
    expect(validateTaxId('ca_bn', '123026635XX01').valid).toBe(false);
  });

  it('property: a random body with its computed check digit validates, and any other check digit does not', () => {
    const digitsOf = (n: number) =>
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''));
    fc.assert(
      fc.property(digitsOf(8), (body) => {
        // DE: ISO 7064 MOD 11,10 over a first digit 1-9.
        const de = `1${body}`.slice(0, 8);
        const good = [...'0123456789'].filter((c) => mod11_10Valid(de + c));
        expect(good).toHaveLength(1);
        expect(validateTaxId('eu_vat', `DE${de}${good[0]}`).valid).toBe(true);
        // Luhn: exactly one check digit fits any body.
        const luhn = [...'0123456789'].filter((c) => luhnValid(body + c));
        expect(luhn).toHaveLength(1);
      }),
    );
    const alnum = fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ');
    fc.assert(
      fc.property(fc.array(alnum, { minLength: 3, maxLength: 3 }), fc.integer({ min: 1, max: 37 }), (tail, state) => {
        const first14 =
          `${String(state).padStart(2, '0')}AAPFU0939F${tail.join('').slice(0, 1).replace(/0/, '1')}Z`.slice(0, 14);
        if (first14.length !== 14) return;
        const check = gstinCheckCharacter(first14);
        expect(validateTaxId('in_gst', first14 + check).valid).toBe(true);
        for (const other of '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'.replace(check, ''))
          expect(validateTaxId('in_gst', first14 + other).valid).toBe(false);
      }),
    );
  });
});

describe('tax rules', () => {
  const rate = (id: string, over: Partial<TaxRateRecord> = {}): TaxRateRecord => ({
    id,
    display_name: id,
    percentage: '10',
    inclusive: false,
    country: null,
    state: null,
    active: true,
    ...over,
  });

  it('jurisdiction: no country matches all; a country its customers; a state only its own', () => {
    expect(jurisdictionMatches({ country: null, state: null }, { country: null, state: null })).toBe(true);
    expect(jurisdictionMatches({ country: 'DE', state: null }, { country: 'de', state: null })).toBe(true);
    expect(jurisdictionMatches({ country: 'DE', state: null }, { country: null, state: null })).toBe(false);
    expect(jurisdictionMatches({ country: 'US', state: 'CA' }, { country: 'US', state: 'CA' })).toBe(true);
    expect(jurisdictionMatches({ country: 'US', state: 'CA' }, { country: 'US', state: 'NY' })).toBe(false);
    expect(jurisdictionMatches({ country: 'US', state: 'CA' }, { country: 'US', state: null })).toBe(false);
    expect(jurisdictionMatches({ country: 'US', state: 'CA' }, { country: 'CA', state: 'CA' })).toBe(false);
  });

  it("a line takes the first of its own, its item's, its subscription's rates; else the active account defaults matching the customer", () => {
    const rates = new Map(
      [
        rate('own'),
        rate('item'),
        rate('sub'),
        rate('de', { country: 'DE' }),
        rate('all'),
        rate('off', { active: false }),
      ].map((r) => [r.id, r]),
    );
    const de = { country: 'DE', state: null, tax_exempt: 'none' as 'none' | 'exempt' | 'reverse' };
    const ids = (sources: Parameters<typeof ratesForLine>[0], customer = de) =>
      ratesForLine(sources, rates, customer).map((r) => r.id);
    const account = ['de', 'all', 'off'];
    expect(ids({ line: ['own'], item: ['item'], subscription: ['sub'], account })).toEqual(['own']);
    expect(ids({ line: [], item: ['item'], subscription: ['sub'], account })).toEqual(['item']);
    expect(ids({ item: null, subscription: ['sub'], account })).toEqual(['sub']);
    expect(ids({ subscription: [], account })).toEqual(['de', 'all']);
    expect(ids({ account }, { country: 'FR', state: null, tax_exempt: 'none' })).toEqual(['all']);
    expect(ids({ line: ['own', 'own', 'missing'] })).toEqual(['own']);
    expect(ids({ line: ['own'], account }, { ...de, tax_exempt: 'exempt' })).toEqual([]);
    expect(ids({ line: ['own'], account }, { ...de, tax_exempt: 'reverse' })).toEqual([]);
    // A rate named on the subscription applies even if deactivated since (as Stripe keeps it on existing subscriptions).
    expect(ids({ subscription: ['off'] })).toEqual(['off']);
  });

  it('percentages: numbers and decimal strings, 0–100, at most 4 places, written once', () => {
    const cases: [number | string, string | null][] = [
      [19, '19'],
      ['19', '19'],
      ['19.0', '19'],
      [8.875, '8.875'],
      ['08.8750', '8.875'],
      [0, '0'],
      ['0.0001', '0.0001'],
      [100, '100'],
      ['100.0000', '100'],
      [100.0001, null],
      [-1, null],
      ['1e2', null],
      [1e-7, null],
      ['19.00001', null],
      ['', null],
      [' 7 ', '7'],
      ['1,5', null],
      [Number.NaN, null],
      [1000, null],
    ];
    for (const [input, expected] of cases) expect(normalizePercentage(input), String(input)).toBe(expected);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (tenThousandths) => {
        const text = (tenThousandths / 10_000).toFixed(4);
        const normalized = normalizePercentage(text);
        expect(normalized).not.toBeNull();
        expect(Number(normalized)).toBe(Number(text));
        expect(normalizePercentage(normalized!)).toBe(normalized);
      }),
    );
  });

  it('country codes: ISO 3166-1 alpha-2 only', () => {
    for (const code of ['DE', 'US', 'GB', 'CH', 'NO', 'AU', 'IN', 'XK']) expect(isCountryCode(code), code).toBe(true);
    for (const code of ['EU', 'UK', 'ZZ', 'XX', 'de', 'DEU', '']) expect(isCountryCode(code), code).toBe(false);
  });
});
