/**
 * Invoice numbers are per account and mode: `<PREFIX>-<n>`, n from 1 without
 * gaps, at least four digits (`ACME-0001`, ..., `ACME-9999`, `ACME-10000`).
 *
 * The prefix comes from the account's name when its first invoice in a mode is
 * numbered, and stays with that counter afterwards (renaming the account does not
 * change later numbers):
 * 1. accents are dropped and letters upper-cased; words are the runs of A-Z and 0-9;
 * 2. the first word, cut to 6 characters ("Acme Inc." gives ACME, "Tenant 7" TENANT);
 * 3. if that is shorter than 3 characters, all words run together, cut to 6
 *    ("X Corp" gives XCORP);
 * 4. if that is still shorter than 3 (a name with no Latin letters or digits),
 *    the last 6 characters of the account id, upper-cased.
 */
export function invoicePrefix(accountName: string, accountId: string): string {
  const words = accountName
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .split(/[^A-Z0-9]+/)
    .filter(Boolean);
  const first = (words[0] ?? '').slice(0, 6);
  if (first.length >= 3) return first;
  const joined = words.join('').slice(0, 6);
  if (joined.length >= 3) return joined;
  return accountId.slice(-6).toUpperCase();
}

export function formatInvoiceNumber(prefix: string, sequence: number): string {
  return `${prefix}-${String(sequence).padStart(4, '0')}`;
}
