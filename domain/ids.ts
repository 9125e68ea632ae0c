import { monotonicFactory } from 'ulidx';

/** Prefixes of every resource id: the prefix tells a reader what the id names. */
export const idPrefixes = {
  customer: 'cus',
  plan: 'plan',
  product: 'prod',
  subscription: 'sub',
  invoice: 'inv',
  charge: 'ch',
  transaction: 'txn',
  account: 'acct',
  user: 'usr',
  session: 'ses',
  refreshToken: 'rt',
  apiKey: 'key',
  sandboxProcessorCharge: 'sbch',
  paymentRequest: 'pay',
  recurringPaymentRequest: 'preq',
  event: 'evt',
  webhookEndpoint: 'we',
  webhookAttempt: 'wha',
  payout: 'po',
  balanceTransaction: 'btxn',
  sandboxProcessorRefund: 'sbre',
} as const;

export type IdKind = keyof typeof idPrefixes;

const ulid = monotonicFactory();

/**
 * A new time-sortable id such as `sub_01JD3...`: ULIDs sort by creation time, so
 * ids double as cursors. Not for workflow code (it reads the clock and randomness).
 */
export function newId(kind: IdKind): string {
  return `${idPrefixes[kind]}_${ulid().toLowerCase()}`;
}

export function hasPrefix(id: string, kind: IdKind): boolean {
  return id.startsWith(`${idPrefixes[kind]}_`);
}
