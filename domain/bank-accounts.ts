/**
 * Payout destinations, checked before anything is stored (pure: no I/O).
 *
 * Rails (SPEC.md: bank transfer ACH/SEPA, PayPal, wire transfer; payouts in USD,
 * EUR which requires an IBAN, and GBP):
 * - `us_ach`: USD, a 9-digit ABA routing number with its 3-7-1 checksum and a
 *   4-17 digit account number;
 * - `sepa`: EUR, an IBAN (length of its country, ISO 7064 mod 97-10), optional BIC;
 * - `uk`: GBP, a 6-digit sort code and an 8-digit account number;
 * - `wire`: USD, EUR or GBP with a BIC/SWIFT code; in EUR the account is an IBAN,
 *   otherwise an account number (4-34 letters and digits);
 * - `paypal`: any of the three currencies, to a receiver email.
 *
 * Every refusal names the check that failed, e.g. "routing_number: the ABA
 * checksum (3-7-1) fails for 110000001".
 */

import { createHash, createHmac } from 'node:crypto';

export const destinationTypes = ['us_ach', 'sepa', 'uk', 'wire', 'paypal'] as const;
export type DestinationType = (typeof destinationTypes)[number];

export const accountHolderTypes = ['individual', 'company'] as const;
export type AccountHolderType = (typeof accountHolderTypes)[number];

/** The payout method a destination is (SPEC.md's names). */
export type DestinationMethod = 'bank_transfer' | 'wire' | 'paypal';
export function methodOf(type: DestinationType): DestinationMethod {
  return type === 'paypal' ? 'paypal' : type === 'wire' ? 'wire' : 'bank_transfer';
}

/** IBAN length by country (ISO 13616 registry, SWIFT release 2024). */
export const ibanLengths: Record<string, number> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SC: 31,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
};

/** ABA routing number: 9 digits, 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). Returns the failed check, or null. */
export function abaRoutingProblem(routing: string): string | null {
  if (!/^\d{9}$/.test(routing)) return `must be exactly 9 digits (got ${JSON.stringify(routing)})`;
  const d = [...routing].map(Number) as number[];
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!);
  if (sum % 10 !== 0) return `the ABA checksum (3-7-1) fails for ${routing}`;
  return null;
}

/** The IBAN as stored: upper case, no spaces. */
export function normalizeIban(iban: string): string {
  return iban.replace(/[\s-]/g, '').toUpperCase();
}

/** ISO 7064 mod 97-10 of an IBAN (country and check digits moved to the end, letters as 10..35). */
export function ibanMod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const value = ch >= 'A' && ch <= 'Z' ? String(ch.charCodeAt(0) - 55) : ch;
    for (const digit of value) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder;
}

/** Why an (already normalized) IBAN is not valid, or null. */
export function ibanProblem(iban: string): string | null {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban))
    return 'must be two letters of a country, two check digits, then letters and digits';
  const country = iban.slice(0, 2);
  const length = ibanLengths[country];
  if (length === undefined) return `${country} has no IBAN`;
  if (iban.length !== length) return `an IBAN of ${country} has ${length} characters, not ${iban.length}`;
  if (ibanMod97(iban) !== 1) return 'the IBAN check digits (ISO 7064 mod 97-10) do not match';
  return null;
}

/** The IBAN of `country` and `bban` with its check digits computed (for documentation and tests). */
export function ibanOf(country: string, bban: string): string {
  const remainder = ibanMod97(`${country}00${bban}`);
  return `${country}${String(98 - remainder).padStart(2, '0')}${bban}`;
}

/** BIC/SWIFT (ISO 9362): 4 letters of the bank, 2 of its country, 2 of the location, optionally 3 of the branch. */
export function bicProblem(bic: string): string | null {
  if (!/^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$/.test(bic))
    return `must be 8 or 11 characters: 4 letters (bank), 2 letters (country), 2 letters or digits (location), optionally 3 more (branch); got ${JSON.stringify(bic)}`;
  return null;
}

export function sortCodeProblem(sortCode: string): string | null {
  return /^\d{6}$/.test(sortCode) ? null : `must be 6 digits (got ${JSON.stringify(sortCode)})`;
}

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A destination as the API receives it (its fields depend on `type`). */
export interface DestinationInput {
  type: DestinationType;
  account_holder_name: string;
  account_holder_type?: AccountHolderType | undefined;
  country?: string | undefined;
  currency: string;
  routing_number?: string | undefined;
  account_number?: string | undefined;
  iban?: string | undefined;
  bic?: string | undefined;
  sort_code?: string | undefined;
  email?: string | undefined;
}

/** What is stored of a valid destination: `secret` is sealed before it is written, `fingerprintMaterial` only hashed. */
export interface CheckedDestination {
  type: DestinationType;
  country: string;
  currency: string;
  /** The full account number, IBAN or email: stored encrypted, never shown again. */
  secret: string;
  last4: string;
  routingNumber: string | null;
  sortCode: string | null;
  bic: string | null;
  /** Shown, masked: the PayPal receiver email. */
  emailMasked: string | null;
  fingerprintMaterial: string;
}

export type DestinationCheck = { ok: true; value: CheckedDestination } | { ok: false; message: string };

const fail = (field: string, problem: string): DestinationCheck => ({ ok: false, message: `${field}: ${problem}` });
const digitsOnly = (value: string) => value.replace(/[\s-]/g, '');

/** The currencies each rail pays out in. */
export const destinationCurrencies: Record<DestinationType, readonly string[]> = {
  us_ach: ['USD'],
  sepa: ['EUR'],
  uk: ['GBP'],
  wire: ['USD', 'EUR', 'GBP'],
  paypal: ['USD', 'EUR', 'GBP'],
};

/** Fields each rail takes; any other is refused, so a misplaced number is not silently dropped. */
const allowedFields: Record<DestinationType, readonly (keyof DestinationInput)[]> = {
  us_ach: ['routing_number', 'account_number'],
  sepa: ['iban', 'bic'],
  uk: ['sort_code', 'account_number'],
  wire: ['bic', 'account_number', 'iban'],
  paypal: ['email'],
};
const railFields: (keyof DestinationInput)[] = [
  'routing_number',
  'account_number',
  'iban',
  'bic',
  'sort_code',
  'email',
];

export function maskEmail(email: string): string {
  const [local = '', domain = ''] = email.split('@');
  return `${local.slice(0, 1)}***@${domain}`;
}

/** Checks a destination and normalizes it, or says which check failed. */
export function checkDestination(input: DestinationInput): DestinationCheck {
  const { type } = input;
  const currency = input.currency.toUpperCase();
  if (!destinationCurrencies[type].includes(currency)) {
    return fail(
      'currency',
      `a ${type} destination takes ${destinationCurrencies[type].join(', ')}, not ${currency}${currency === 'EUR' ? ' (EUR requires an IBAN: use sepa, or wire with an iban)' : ''}`,
    );
  }
  for (const field of railFields) {
    if (input[field] !== undefined && !allowedFields[type].includes(field))
      return fail(field, `a ${type} destination does not take it (it takes ${allowedFields[type].join(', ')})`);
  }
  const need = (field: keyof DestinationInput): string | DestinationCheck => {
    const value = input[field];
    return typeof value === 'string' && value.trim() !== ''
      ? value.trim()
      : fail(field, `required for a ${type} destination`);
  };
  const bicOf = (required: boolean): string | null | DestinationCheck => {
    if (input.bic === undefined) return required ? fail('bic', `required for a ${type} destination`) : null;
    const bic = input.bic.replace(/\s/g, '').toUpperCase();
    const problem = bicProblem(bic);
    return problem ? fail('bic', problem) : bic;
  };
  const country = input.country?.toUpperCase();
  if (country !== undefined && !/^[A-Z]{2}$/.test(country))
    return fail('country', 'must be an ISO 3166-1 alpha-2 code such as US, DE or GB');

  switch (type) {
    case 'us_ach': {
      const routing = need('routing_number');
      if (typeof routing !== 'string') return routing;
      const account = need('account_number');
      if (typeof account !== 'string') return account;
      const routingProblem = abaRoutingProblem(digitsOnly(routing));
      if (routingProblem) return fail('routing_number', routingProblem);
      const number = digitsOnly(account);
      if (!/^\d{4,17}$/.test(number)) return fail('account_number', 'a US account number has 4 to 17 digits');
      if (country && country !== 'US') return fail('country', `an ACH destination is in US, not ${country}`);
      return ok({
        type,
        country: 'US',
        currency,
        secret: number,
        routingNumber: digitsOnly(routing),
        material: `us_ach:${digitsOnly(routing)}:${number}`,
      });
    }
    case 'sepa': {
      const raw = need('iban');
      if (typeof raw !== 'string') return raw;
      const iban = normalizeIban(raw);
      const problem = ibanProblem(iban);
      if (problem) return fail('iban', problem);
      const bic = bicOf(false);
      if (bic !== null && typeof bic !== 'string') return bic;
      if (country && country !== iban.slice(0, 2))
        return fail('country', `the IBAN is of ${iban.slice(0, 2)}, not ${country}`);
      return ok({ type, country: iban.slice(0, 2), currency, secret: iban, bic, material: `iban:${iban}` });
    }
    case 'uk': {
      const sort = need('sort_code');
      if (typeof sort !== 'string') return sort;
      const account = need('account_number');
      if (typeof account !== 'string') return account;
      const sortCode = digitsOnly(sort);
      const sortProblem = sortCodeProblem(sortCode);
      if (sortProblem) return fail('sort_code', sortProblem);
      const number = digitsOnly(account);
      if (!/^\d{8}$/.test(number))
        return fail('account_number', `a UK account number has 8 digits (got ${number.length})`);
      if (country && country !== 'GB') return fail('country', `a UK destination is in GB, not ${country}`);
      return ok({ type, country: 'GB', currency, secret: number, sortCode, material: `uk:${sortCode}:${number}` });
    }
    case 'wire': {
      const bic = bicOf(true);
      if (typeof bic !== 'string') return bic as DestinationCheck;
      if (currency === 'EUR' || input.iban !== undefined) {
        if (input.account_number !== undefined)
          return fail('account_number', 'a wire with an iban takes no account_number');
        const raw = need('iban');
        if (typeof raw !== 'string')
          return currency === 'EUR' ? fail('iban', 'required: EUR payouts go to an IBAN') : raw;
        const iban = normalizeIban(raw);
        const problem = ibanProblem(iban);
        if (problem) return fail('iban', problem);
        return ok({
          type,
          country: country ?? iban.slice(0, 2),
          currency,
          secret: iban,
          bic,
          material: `iban:${iban}`,
        });
      }
      const account = need('account_number');
      if (typeof account !== 'string') return account;
      const number = account.replace(/[\s-]/g, '').toUpperCase();
      if (!/^[A-Z0-9]{4,34}$/.test(number))
        return fail('account_number', 'a wire account number has 4 to 34 letters and digits');
      return ok({
        type,
        country: country ?? bic.slice(4, 6),
        currency,
        secret: number,
        bic,
        material: `wire:${bic.slice(0, 8)}:${number}`,
      });
    }
    case 'paypal': {
      const raw = need('email');
      if (typeof raw !== 'string') return raw;
      const email = raw.toLowerCase();
      if (email.length > 254 || !emailPattern.test(email))
        return fail('email', `not an email address: ${JSON.stringify(raw)}`);
      return {
        ok: true,
        value: {
          type,
          country: country ?? 'US',
          currency,
          secret: email,
          last4: email.split('@')[0]!.slice(-4),
          routingNumber: null,
          sortCode: null,
          bic: null,
          emailMasked: maskEmail(email),
          fingerprintMaterial: `paypal:${email}`,
        },
      };
    }
  }
}

function ok(v: {
  type: DestinationType;
  country: string;
  currency: string;
  secret: string;
  material: string;
  routingNumber?: string;
  sortCode?: string;
  bic?: string | null;
}): DestinationCheck {
  return {
    ok: true,
    value: {
      type: v.type,
      country: v.country,
      currency: v.currency,
      secret: v.secret,
      last4: v.secret.slice(-4),
      routingNumber: v.routingNumber ?? null,
      sortCode: v.sortCode ?? null,
      bic: v.bic ?? null,
      emailMasked: null,
      fingerprintMaterial: v.material,
    },
  };
}

/**
 * The fingerprint of an account number: the same for the same account (so a
 * duplicate is found), useless to recover it (an HMAC under a key derived from
 * AUTH_SECRET for this purpose only).
 */
export function destinationFingerprint(authSecret: string, material: string): string {
  const key = createHash('sha256').update(`bank-account-fingerprints:${authSecret}`).digest();
  return createHmac('sha256', key).update(material).digest('base64url').slice(0, 16);
}
