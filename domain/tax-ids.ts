/**
 * Customer tax ids (POST /v1/customers/{id}/tax_ids, docs/discounts-and-taxes.md#taxes): each type's
 * format and, where the issuing authority publishes one, its check digits. Pure.
 *
 * Checksums: EU VAT numbers of AT, BE, DE, DK, EL (GR), FI, FR, HR, IT, LU, NL, PL, PT and SE (the other
 * member states' by format only); GB VAT (mod 97, and the "9755" series); CH UID (mod 11); NO
 * organisation number (mod 11); AU ABN (mod 89); CA BN (Luhn over its 9-digit root); IN GSTIN (mod 36
 * check character); US EIN (the IRS's assigned campus prefixes; an EIN has no check digit).
 */

export const taxIdTypes = ['eu_vat', 'gb_vat', 'ch_vat', 'no_vat', 'au_abn', 'ca_bn', 'in_gst', 'us_ein'] as const;
export type TaxIdType = (typeof taxIdTypes)[number];

/** What each type is, for documents and error messages. */
export const taxIdDescriptions: Record<TaxIdType, { country: string | null; name: string; example: string }> = {
  eu_vat: { country: null, name: 'European VAT number, with its country prefix', example: 'DE136695976' },
  gb_vat: { country: 'GB', name: 'United Kingdom VAT number', example: 'GB980780684' },
  ch_vat: { country: 'CH', name: 'Swiss VAT number (UID with MWST, TVA or IVA)', example: 'CHE-107.787.577 IVA' },
  no_vat: { country: 'NO', name: 'Norwegian VAT number (organisation number with MVA)', example: 'NO995525828MVA' },
  au_abn: { country: 'AU', name: 'Australian Business Number', example: '83914571673' },
  ca_bn: {
    country: 'CA',
    name: 'Canadian Business Number (9-digit root, or with its program account)',
    example: '123026635',
  },
  in_gst: { country: 'IN', name: 'Indian GSTIN', example: '27AAPFU0939F1ZV' },
  us_ein: { country: 'US', name: 'United States Employer Identification Number', example: '91-1144442' },
};

export type TaxIdCheck = { valid: true; value: string; country: string } | { valid: false; reason: string };

const digits = (text: string) => [...text].map(Number);
/** Σ digit × weight over the first weights.length digits. */
const weighted = (text: string, weights: readonly number[]) =>
  digits(text.slice(0, weights.length)).reduce((sum, d, i) => sum + d * weights[i]!, 0);

/** Luhn (mod 10) over all the digits, the last being the check digit. */
export function luhnValid(text: string): boolean {
  let sum = 0;
  [...text].reverse().forEach((c, i) => {
    let d = Number(c);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  });
  return sum % 10 === 0;
}

/** ISO 7064 MOD 11,10 over all the digits (the last is the check digit). */
export function mod11_10Valid(text: string): boolean {
  let product = 10;
  for (const d of digits(text.slice(0, -1))) {
    let sum = (d + product) % 10;
    if (sum === 0) sum = 10;
    product = (2 * sum) % 11;
  }
  return (11 - product) % 10 === Number(text.at(-1));
}

/** A big decimal string mod m. */
function mod(text: string, m: number): number {
  let r = 0;
  for (const c of text) r = (r * 10 + Number(c)) % m;
  return r;
}

/** The EU VAT numbers: the part after the prefix, its format and (where published) check. */
const euVat: Record<string, { country: string; format: RegExp; check?: (n: string) => boolean }> = {
  AT: {
    country: 'AT',
    format: /^U\d{8}$/,
    check: (n) => {
      const sum = digits(n.slice(1, 8)).reduce(
        (s, d, i) => s + (i % 2 === 0 ? d : Math.floor((2 * d) / 10) + ((2 * d) % 10)),
        0,
      );
      return (10 - ((sum + 4) % 10)) % 10 === Number(n[8]);
    },
  },
  BE: { country: 'BE', format: /^[01]\d{9}$/, check: (n) => 97 - (Number(n.slice(0, 8)) % 97) === Number(n.slice(8)) },
  BG: { country: 'BG', format: /^\d{9,10}$/ },
  CY: { country: 'CY', format: /^\d{8}[A-Z]$/ },
  CZ: { country: 'CZ', format: /^\d{8,10}$/ },
  DE: { country: 'DE', format: /^[1-9]\d{8}$/, check: mod11_10Valid },
  DK: { country: 'DK', format: /^[1-9]\d{7}$/, check: (n) => weighted(n, [2, 7, 6, 5, 4, 3, 2, 1]) % 11 === 0 },
  EE: { country: 'EE', format: /^10\d{7}$/ },
  EL: {
    country: 'GR',
    format: /^\d{9}$/,
    check: (n) => {
      const c = digits(n.slice(0, 8)).reduce((s, d) => s * 2 + d, 0);
      return ((c * 2) % 11) % 10 === Number(n[8]);
    },
  },
  ES: { country: 'ES', format: /^[0-9A-Z]\d{7}[0-9A-Z]$/ },
  FI: { country: 'FI', format: /^\d{8}$/, check: (n) => weighted(n, [7, 9, 10, 5, 8, 4, 2, 1]) % 11 === 0 },
  FR: {
    country: 'FR',
    format: /^[0-9A-HJ-NP-Z]{2}\d{9}$/,
    check: (n) => (/^\d\d/.test(n) ? Number(n.slice(0, 2)) === (12 + 3 * mod(n.slice(2), 97)) % 97 : true),
  },
  HR: { country: 'HR', format: /^\d{11}$/, check: mod11_10Valid },
  HU: { country: 'HU', format: /^\d{8}$/ },
  IE: { country: 'IE', format: /^(\d{7}[A-W][A-IW]?|\d[A-Z+*]\d{5}[A-W])$/ },
  IT: { country: 'IT', format: /^\d{11}$/, check: luhnValid },
  LT: { country: 'LT', format: /^(\d{9}|\d{12})$/ },
  LU: { country: 'LU', format: /^\d{8}$/, check: (n) => Number(n.slice(0, 6)) % 89 === Number(n.slice(6)) },
  LV: { country: 'LV', format: /^\d{11}$/ },
  MT: { country: 'MT', format: /^[1-9]\d{7}$/ },
  NL: {
    country: 'NL',
    format: /^\d{9}B\d{2}$/,
    check: (n) => {
      // The mod 11 of the RSIN, or (sole proprietors since 2020) mod 97 of "NL" + the number with letters as 10–35.
      if (weighted(n.slice(0, 9), [9, 8, 7, 6, 5, 4, 3, 2, -1]) % 11 === 0) return true;
      return mod(`2321${n.slice(0, 9)}11${n.slice(10)}`, 97) === 1;
    },
  },
  PL: {
    country: 'PL',
    format: /^\d{10}$/,
    check: (n) => weighted(n, [6, 5, 7, 2, 3, 4, 5, 6, 7]) % 11 === Number(n[9]),
  },
  PT: {
    country: 'PT',
    format: /^[1-9]\d{8}$/,
    check: (n) => {
      const s = weighted(n, [9, 8, 7, 6, 5, 4, 3, 2]);
      return ((((11 - s) % 11) + 11) % 11) % 10 === Number(n[8]);
    },
  },
  RO: { country: 'RO', format: /^[1-9]\d{1,9}$/ },
  SE: { country: 'SE', format: /^\d{10}01$/, check: (n) => luhnValid(n.slice(0, 10)) },
  SI: { country: 'SI', format: /^[1-9]\d{7}$/ },
  SK: { country: 'SK', format: /^[1-9]\d{9}$/ },
  XI: { country: 'GB', format: /^(\d{9}|\d{12}|GD\d{3}|HA\d{3})$/, check: (n) => gbVatValid(n) },
};
export const euVatPrefixes = Object.keys(euVat);

/** GB VAT: weights 8..2 and the last two digits as a number, the sum ≡ 0 or 42 (the "9755" series) mod 97; government departments (GD, HA) by format. */
function gbVatValid(n: string): boolean {
  if (/^(GD|HA)/.test(n)) return n.startsWith('GD') ? Number(n.slice(2)) < 500 : Number(n.slice(2)) >= 500;
  const sum = weighted(n.slice(0, 9), [8, 7, 6, 5, 4, 3, 2, 10, 1]) % 97;
  return sum === 0 || sum === 42;
}

/** EIN prefixes the IRS has never assigned. */
const unassignedEinPrefixes = new Set([
  '00',
  '07',
  '08',
  '09',
  '17',
  '18',
  '19',
  '28',
  '29',
  '49',
  '69',
  '70',
  '78',
  '79',
  '89',
  '96',
  '97',
]);

const base36 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** The GSTIN's check character: each of the first 14 characters in base 36, weighted 1, 2, 1, 2…, each product's base-36 digits summed. */
export function gstinCheckCharacter(first14: string): string {
  let total = 0;
  [...first14].forEach((c, i) => {
    const product = base36.indexOf(c) * ((i % 2) + 1);
    total += Math.floor(product / 36) + (product % 36);
  });
  return base36[(36 - (total % 36)) % 36]!;
}

/** Upper case, without spaces, dots, dashes, commas or slashes. */
export function compactTaxId(value: string): string {
  return value.toUpperCase().replace(/[\s.\-,/]/g, '');
}

const invalid = (type: TaxIdType, why: string): TaxIdCheck => ({
  valid: false,
  reason: `Invalid value for ${type}: ${why} (e.g. ${taxIdDescriptions[type].example}).`,
});

/** Whether `value` is a valid tax id of `type`; its compact form and country when it is. */
export function validateTaxId(type: TaxIdType, value: string): TaxIdCheck {
  const n = compactTaxId(value);
  switch (type) {
    case 'eu_vat': {
      const prefix = n.slice(0, 2);
      const rule = euVat[prefix === 'GR' ? 'EL' : prefix];
      if (!rule) return invalid(type, `it starts with a member state's prefix (${euVatPrefixes.join(', ')})`);
      const rest = n.slice(2);
      if (!rule.format.test(rest)) return invalid(type, `the format of a ${prefix} VAT number does not fit`);
      if (rule.check && !rule.check(rest)) return invalid(type, 'its check digits do not match');
      return { valid: true, value: (prefix === 'GR' ? 'EL' : prefix) + rest, country: rule.country };
    }
    case 'gb_vat': {
      const rest = n.startsWith('GB') ? n.slice(2) : n;
      if (!/^(\d{9}|\d{12}|GD\d{3}|HA\d{3})$/.test(rest))
        return invalid(type, 'GB and 9 digits (12 for a branch) or GD/HA and 3');
      if (!gbVatValid(rest)) return invalid(type, 'its check digits do not match');
      return { valid: true, value: `GB${rest}`, country: 'GB' };
    }
    case 'ch_vat': {
      const match = /^CHE(\d{9})(MWST|TVA|IVA|TPV)?$/.exec(n);
      if (!match) return invalid(type, 'CHE, 9 digits and MWST, TVA or IVA');
      const body = match[1]!;
      if ((11 - (weighted(body, [5, 4, 3, 2, 7, 6, 5, 4]) % 11)) % 11 !== Number(body[8]))
        return invalid(type, 'its check digit does not match');
      return { valid: true, value: `CHE${body}${match[2] ?? 'MWST'}`, country: 'CH' };
    }
    case 'no_vat': {
      const match = /^(?:NO)?(\d{9})(MVA)?$/.exec(n);
      if (!match) return invalid(type, 'NO, the 9-digit organisation number and MVA');
      if (weighted(match[1]!, [3, 2, 7, 6, 5, 4, 3, 2, 1]) % 11 !== 0)
        return invalid(type, 'its check digit does not match');
      return { valid: true, value: `NO${match[1]}MVA`, country: 'NO' };
    }
    case 'au_abn': {
      if (!/^\d{11}$/.test(n)) return invalid(type, '11 digits');
      if ((weighted(n, [10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19]) - 10) % 89 !== 0)
        return invalid(type, 'its check digits do not match');
      return { valid: true, value: n, country: 'AU' };
    }
    case 'ca_bn': {
      if (!/^\d{9}([A-Z]{2}\d{4})?$/.test(n))
        return invalid(type, 'the 9-digit root, optionally with a program account (RT0001)');
      if (!luhnValid(n.slice(0, 9))) return invalid(type, 'its check digit does not match');
      return { valid: true, value: n, country: 'CA' };
    }
    case 'in_gst': {
      if (!/^\d{2}[A-Z]{5}\d{4}[A-Z][1-9A-Z][0-9A-Z][0-9A-Z]$/.test(n))
        return invalid(type, 'a 2-digit state code, the 10-character PAN, the entity number, Z and a check character');
      if (gstinCheckCharacter(n.slice(0, 14)) !== n[14]) return invalid(type, 'its check character does not match');
      return { valid: true, value: n, country: 'IN' };
    }
    case 'us_ein': {
      if (!/^\d{9}$/.test(n)) return invalid(type, '9 digits, as 12-3456789');
      if (unassignedEinPrefixes.has(n.slice(0, 2)))
        return invalid(type, `the IRS never assigns the prefix ${n.slice(0, 2)}`);
      return { valid: true, value: `${n.slice(0, 2)}-${n.slice(2)}`, country: 'US' };
    }
  }
}
