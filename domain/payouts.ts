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
  return (payoutCurrencies as readonly string[]).includes(currency) ? null : `Payouts go out in ${payoutCurrencies.join(', ')} only, not ${currency}.`;
}
