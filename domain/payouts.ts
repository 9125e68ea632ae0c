/** Payout rules shared by the API and the activities (pure). */

/** SPEC.md: payouts go out in USD, EUR or GBP only. */
export const payoutCurrencies = ['USD', 'EUR', 'GBP'] as const;

/**
 * How long a sandbox payout stays `pending` before the payoutWorkflow hands it to
 * the rail and records it `paid`: a short, durable timer, so the pending state can
 * be seen (and tested in skipped time) the way a real transfer's would.
 */
export const sandboxPayoutArrivalMs = 60_000;

/** Why `currency` cannot be paid out, or null. */
export function payoutCurrencyProblem(currency: string): string | null {
  return (payoutCurrencies as readonly string[]).includes(currency)
    ? null
    : `Payouts go out in ${payoutCurrencies.join(', ')} only, not ${currency}.`;
}

/**
 * Why a payout failed (`failure_code`), in the spirit of Stripe's list; the
 * message is `failure_message`. docs/payouts.md lists them with their test numbers.
 */
export const payoutFailures = {
  account_closed: 'The bank account has been closed.',
  account_frozen: 'The bank account has been frozen.',
  bank_account_restricted: 'The bank account has restrictions on the type or number of payouts it accepts.',
  bank_ownership_changed: 'The destination bank account is no longer valid because its branch has changed ownership.',
  could_not_process: 'The bank could not process this payout.',
  declined: 'The bank has declined this transfer.',
  incorrect_account_holder_name: 'The account holder name does not match the bank account.',
  invalid_account_number: 'The routing number seems correct, but the account number is invalid.',
  invalid_currency: 'The bank was unable to process this payout because of its currency.',
  no_account: 'The bank account details on file are probably incorrect: no account was located with them.',
  canceled: 'The payout was canceled before it was sent.',
} as const;
export type PayoutFailureCode = keyof typeof payoutFailures;

/**
 * The sandbox rail's outcomes, by the last four characters of the destination's
 * account number or IBAN (a PayPal receiver: the last four characters of the
 * email's local part): anything else is paid. Test mode only; in live mode the
 * sandbox rail pays everything.
 */
export const sandboxOutcomeBySuffix: Record<string, PayoutFailureCode | 'slow'> = {
  '1116': 'no_account',
  '1113': 'account_closed',
  '2227': 'account_frozen',
  '3335': 'bank_account_restricted',
  '4440': 'invalid_currency',
  '5559': 'could_not_process',
  '6661': 'declined',
  '7771': 'incorrect_account_holder_name',
  '8883': 'invalid_account_number',
  '9996': 'bank_ownership_changed',
  '7777': 'slow',
};

/** How long a payout stays `pending` (cancelable) before it is sent. */
export const payoutPendingMs = sandboxPayoutArrivalMs;
/** From sent (`in_transit`) to arrival: 1 day, 4 days for a `slow` test account. */
export const payoutTransitMs = 86_400_000;
export const slowPayoutTransitMs = 4 * 86_400_000;

export type SandboxOutcome =
  | { kind: 'paid'; transitMs: number }
  | { kind: 'failed'; code: PayoutFailureCode; transitMs: number };

/** The sandbox rail's outcome for a destination's last four characters. */
export function sandboxOutcome(last4: string, livemode: boolean): SandboxOutcome {
  const outcome = livemode ? undefined : sandboxOutcomeBySuffix[last4];
  if (outcome === undefined) return { kind: 'paid', transitMs: payoutTransitMs };
  if (outcome === 'slow') return { kind: 'paid', transitMs: slowPayoutTransitMs };
  return { kind: 'failed', code: outcome, transitMs: payoutTransitMs };
}
