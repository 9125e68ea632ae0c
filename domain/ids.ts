import { createHash, randomFillSync } from 'node:crypto';

import { decodeTime, monotonicFactory } from 'ulidx';

/** Prefixes of every resource id: the prefix tells a reader what the id names. */
export const idPrefixes = {
  customer: 'cus',
  plan: 'plan',
  product: 'prod',
  subscription: 'sub',
  subscriptionItem: 'si',
  invoice: 'inv',
  invoiceItem: 'ii',
  charge: 'ch',
  transaction: 'txn',
  account: 'acct',
  user: 'usr',
  session: 'ses',
  refreshToken: 'rt',
  apiKey: 'key',
  sandboxProcessorCharge: 'sbch',
  sandboxProcessorRefund: 'sbre',
  processorEvent: 'pev',
  paymentRequest: 'pay',
  recurringPaymentRequest: 'preq',
  event: 'evt',
  webhookEndpoint: 'we',
  webhookAttempt: 'wha',
  payout: 'po',
  bankAccount: 'ba',
  payoutHold: 'ph',
  balanceTransaction: 'btxn',
  cliKey: 'ck',
  cliDevice: 'dev',
  export: 'exp',
  testClock: 'clock',
  creditNote: 'cn',
  coupon: 'cpn',
  promotionCode: 'promo',
  discount: 'di',
  taxRate: 'txr',
  customerTaxId: 'txi',
  customerBalanceTransaction: 'cbtxn',
  meter: 'mtr',
  meterEvent: 'mev',
  billingAlert: 'alrt',
} as const;

export type IdKind = keyof typeof idPrefixes;

/**
 * ulidx draws a fresh crypto random value per character (16 calls per id); this
 * hands it numbers from a pool refilled by the same CSPRNG 1,024 at a time.
 */
const randomPool = new Uint32Array(1024);
let randomAt = randomPool.length;
function pooledRandom(): number {
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  return randomPool[randomAt++]! / 0x1_0000_0000;
}

const ulid = monotonicFactory(pooledRandom);

/**
 * A new time-sortable id such as `sub_01JD3...`: ULIDs sort by creation time, so
 * ids double as cursors. Not for workflow code (it reads the clock and randomness).
 */
export function newId(kind: IdKind): string {
  return `${idPrefixes[kind]}_${ulid().toLowerCase()}`;
}

/**
 * When an id of newId was made (the wall clock's ms in its ULID): the real order of creation, whatever
 * time the object carries (an event on a test clock is stamped with the clock's). Null for another shape.
 */
export function idCreatedAt(id: string): Date | null {
  const ulidPart = id.slice(id.indexOf('_') + 1).toUpperCase();
  try {
    return new Date(decodeTime(ulidPart));
  } catch {
    return null;
  }
}

export function hasPrefix(id: string, kind: IdKind): boolean {
  return id.startsWith(`${idPrefixes[kind]}_`);
}

const crockford = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * An id shaped like newId's, but a function of `seed`: its time part is `time`
 * (so it still sorts by creation), its random part the seed's SHA-256. The same
 * seed and time always give the same id; used for resources bound to an
 * Idempotency-Key, so a retry after a crash reaches what the first request made.
 */
export function derivedId(kind: IdKind, seed: string, time: Date): string {
  let ms = Math.max(0, Math.floor(time.getTime()));
  let timePart = '';
  for (let i = 0; i < 10; i++) {
    timePart = crockford[ms % 32] + timePart;
    ms = Math.floor(ms / 32);
  }
  const hash = createHash('sha256').update(seed).digest();
  let randomPart = '';
  // 16 characters of 5 bits each, from the hash's first 80 bits.
  let bits = 0;
  let value = 0;
  for (const byte of hash) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && randomPart.length < 16) {
      randomPart += crockford[(value >> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
    if (randomPart.length === 16) break;
  }
  return `${idPrefixes[kind]}_${timePart}${randomPart}`;
}
