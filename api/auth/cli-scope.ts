import type { MiddlewareHandler } from 'hono';

import { ApiError } from '../../domain/errors.ts';

/**
 * What a CLI key (`x-cli-key`) may do: one row for every operation of the OpenAPI
 * document, the one place that restricts CLI keys (documented in docs/cli.md).
 *
 * - `allowed`: what an API key of the same mode may do;
 * - `test_only`: allowed with a `ck_test_` key, refused with a `ck_live_` key: everything
 *   that decides where or when live money goes (payouts, their destinations, holds and
 *   schedule), and the sandbox's own email notification settings;
 * - `denied`: refused in both modes (users, account, keys, settings, sessions).
 *
 * test/access-matrix.test.ts checks that the rows are exactly the document's operations
 * (a new route without a row fails the build) and tries every row with a live and a test
 * CLI key. A request under /v1 or /api/v1 that matches no row is refused (fail closed).
 * Rows outside /v1 and /api/v1 (health, signed links) are listed for completeness: the
 * middleware is not mounted there.
 */
export type CliScope = { scope: 'allowed' } | { scope: 'test_only' | 'denied'; why: string };

const allowed: CliScope = { scope: 'allowed' };
const denied = (why: string): CliScope => ({ scope: 'denied', why });
const testOnly = (why: string): CliScope => ({ scope: 'test_only', why });

const users = denied('user management');
const account = denied('account management');
const apiKeys = denied('API key management');
const settings = denied('account settings');
const sessions = denied('sessions');
const payouts = testOnly('live payouts');
const bankAccounts = testOnly('live payout bank accounts (where live money goes)');
const payoutHolds = testOnly('live payout holds (when live money goes)');
const payoutSettings = testOnly('the live payout schedule (when live money goes)');
// The sandbox's own email preferences: what a sk_test API key may change already, per mode (never live's),
// and not the account's identity; `billing trigger account.updated` saves them unchanged.
const notificationSettings = testOnly("the live mode's email notifications");

export const cliKeyScope: Record<string, CliScope> = {
  'GET /health': allowed,
  'POST /v1/auth/login': allowed,
  'POST /v1/auth/refresh': allowed,
  'DELETE /v1/auth/session': sessions,
  // Public, like login: the credential is the password in the body (no key is looked at).
  'POST /v1/auth/browser_session': allowed,
  'GET /v1/auth/browser_session': sessions,
  'DELETE /v1/auth/browser_session': sessions,
  // Public, like login: the emailed link's token is the credential (no key is looked at).
  'POST /v1/auth/password_reset': allowed,
  'POST /v1/auth/password_reset/confirm': allowed,
  'POST /v1/accounts': account,
  'GET /v1/accounts': account,
  'GET /v1/account': allowed,
  'PATCH /v1/account': account,
  'DELETE /v1/account': account,
  'GET /v1/users': users,
  'POST /v1/users': users,
  'GET /v1/users/{id}': users,
  'PATCH /v1/users/{id}': users,
  'DELETE /v1/users/{id}': users,
  'POST /v1/api_keys': apiKeys,
  'GET /v1/api_keys': apiKeys,
  'DELETE /v1/api_keys/{id}': apiKeys,
  'POST /v1/cli/device': allowed,
  'POST /v1/cli/device/approve': denied('approving logins'),
  'POST /v1/cli/token': allowed,
  'POST /v1/cli_keys': denied('minting keys'),
  'GET /v1/cli_keys': allowed,
  'DELETE /v1/cli_keys/current': allowed,
  'DELETE /v1/cli_keys/{id}': allowed,
  'GET /v1/cli/whoami': allowed,
  'GET /v1/events/stream': allowed,
  'GET /v1/logs/stream': allowed,
  'POST /v1/customers/{id}/portal_link': allowed,
  'GET /v1/settings/customer_portal': settings,
  'PATCH /v1/settings/customer_portal': settings,
  'GET /v1/portal': allowed,
  'GET /v1/portal/invoices': allowed,
  'POST /v1/portal/subscriptions/{id}/cancel': allowed,
  'POST /v1/portal/subscriptions/{id}/resume': allowed,
  'POST /v1/portal/subscriptions/{id}/undo_cancel': allowed,
  'POST /v1/portal/subscriptions/{id}/change_plan': allowed,
  'GET /v1/portal/subscriptions/{id}/change_plan': allowed,
  'POST /v1/portal/subscriptions/{id}/quantity': allowed,
  'POST /v1/portal/subscriptions/{id}/promotion_code': allowed,
  'GET /v1/customers/search': allowed,
  'POST /v1/customers': allowed,
  'GET /v1/customers': allowed,
  'GET /v1/customers/{id}': allowed,
  'POST /v1/customers/{id}/tax_ids': allowed,
  'GET /v1/customers/{id}/tax_ids': allowed,
  'GET /v1/customers/{id}/tax_ids/{tax_id}': allowed,
  'DELETE /v1/customers/{id}/tax_ids/{tax_id}': allowed,
  'POST /v1/tax_rates': allowed,
  'GET /v1/tax_rates': allowed,
  'GET /v1/tax_rates/{id}': allowed,
  'PATCH /v1/tax_rates/{id}': allowed,
  'GET /v1/subscriptions/{id}/tax_rates': allowed,
  'POST /v1/subscriptions/{id}/tax_rates': allowed,
  'PATCH /v1/customers/{id}': allowed,
  'POST /v1/customers/{id}': allowed,
  'GET /v1/customers/{id}/balance_transactions': allowed,
  'POST /v1/customers/{id}/balance_transactions': allowed,
  'GET /v1/customers/{id}/balance_transactions/{txn}': allowed,
  'POST /v1/meters': allowed,
  'GET /v1/meters': allowed,
  'GET /v1/meters/{id}': allowed,
  'POST /v1/meters/{id}': allowed,
  'POST /v1/meters/{id}/deactivate': allowed,
  'POST /v1/meters/{id}/reactivate': allowed,
  'GET /v1/meters/{id}/event_summaries': allowed,
  'POST /v1/meter_events': allowed,
  'POST /v1/meter_events/batch': allowed,
  'GET /v1/meter_events/{identifier}': allowed,
  'POST /v1/meter_events/{identifier}/cancel': allowed,
  'POST /v1/billing/alerts': allowed,
  'GET /v1/billing/alerts': allowed,
  'GET /v1/billing/alerts/{id}': allowed,
  'POST /v1/billing/alerts/{id}/activate': allowed,
  'POST /v1/billing/alerts/{id}/deactivate': allowed,
  'POST /v1/billing/alerts/{id}/archive': allowed,
  'POST /v1/credit_notes': allowed,
  'GET /v1/credit_notes': allowed,
  'GET /v1/credit_notes/preview': allowed,
  'GET /v1/credit_notes/search': allowed,
  'GET /v1/credit_notes/{id}': allowed,
  'GET /v1/credit_notes/{id}/pdf': allowed,
  'POST /v1/credit_notes/{id}/void': allowed,
  'GET /credit_notes/{id}/pdf': allowed,
  'POST /v1/products': allowed,
  'GET /v1/products': allowed,
  'GET /v1/products/{id}': allowed,
  'PATCH /v1/products/{id}': allowed,
  'POST /v1/products/{id}': allowed,
  'POST /v1/plans': allowed,
  'GET /v1/plans': allowed,
  'GET /v1/plans/{id}': allowed,
  'PATCH /v1/plans/{id}': allowed,
  'POST /v1/plans/{id}': allowed,
  'DELETE /v1/plans/{id}': allowed,
  'POST /v1/subscriptions': allowed,
  'GET /v1/subscriptions': allowed,
  'GET /v1/subscriptions/{id}': allowed,
  'POST /v1/subscriptions/{id}/update': allowed,
  'POST /v1/subscription_items': allowed,
  'GET /v1/subscription_items': allowed,
  'GET /v1/subscription_items/{id}': allowed,
  'PATCH /v1/subscription_items/{id}': allowed,
  'DELETE /v1/subscription_items/{id}': allowed,
  'GET /v1/invoices/upcoming': allowed,
  'POST /v1/subscriptions/{id}/pause': allowed,
  'POST /v1/subscriptions/{id}/resume': allowed,
  'POST /v1/subscriptions/{id}/cancel': allowed,
  'POST /v1/subscriptions/{id}/undo_cancel': allowed,
  'POST /v1/coupons': allowed,
  'GET /v1/coupons': allowed,
  'GET /v1/coupons/{id}': allowed,
  'PATCH /v1/coupons/{id}': allowed,
  'DELETE /v1/coupons/{id}': allowed,
  'POST /v1/promotion_codes': allowed,
  'GET /v1/promotion_codes': allowed,
  'GET /v1/promotion_codes/{id}': allowed,
  'PATCH /v1/promotion_codes/{id}': allowed,
  'POST /v1/customers/{id}/discount': allowed,
  'DELETE /v1/customers/{id}/discount': allowed,
  'POST /v1/subscriptions/{id}/discount': allowed,
  'DELETE /v1/subscriptions/{id}/discount': allowed,
  'POST /v1/test_clocks': allowed,
  'GET /v1/test_clocks': allowed,
  'GET /v1/test_clocks/{id}': allowed,
  'DELETE /v1/test_clocks/{id}': allowed,
  'POST /v1/test_clocks/{id}/advance': allowed,
  // Sandbox only (live mode answers livemode_not_allowed): `billing trigger export.failed` and `test_clock.internal_failure`.
  'POST /v1/test_helpers/exports': allowed,
  'POST /v1/test_helpers/test_clocks/{id}/stall': allowed,
  'GET /v1/settings/notifications': notificationSettings,
  'PATCH /v1/settings/notifications': notificationSettings,
  'GET /v1/settings/tax': settings,
  'PATCH /v1/settings/tax': settings,
  'GET /v1/settings/branding': settings,
  'PATCH /v1/settings/branding': settings,
  'GET /v1/settings': settings,
  'PATCH /v1/settings': settings,
  'POST /v1/settings/grace_period': settings,
  'GET /v1/settings/usage': settings,
  'POST /v1/settings/usage': settings,
  'GET /v1/transactions/search': allowed,
  'POST /v1/transactions': allowed,
  'GET /v1/transactions': allowed,
  'GET /v1/transactions/{id}': allowed,
  'PATCH /v1/transactions/{id}': allowed,
  'DELETE /v1/transactions/{id}': allowed,
  'POST /v1/webhooks': allowed,
  'GET /v1/webhooks': allowed,
  'GET /v1/webhooks/{id}': allowed,
  'PATCH /v1/webhooks/{id}': allowed,
  'DELETE /v1/webhooks/{id}': allowed,
  'POST /v1/webhooks/{id}/rotate_secret': allowed,
  'GET /v1/webhooks/{id}/deliveries': allowed,
  'POST /v1/events/{id}/redeliver': allowed,
  'POST /v1/payments': allowed,
  'GET /v1/payments': allowed,
  'GET /v1/payments/{id}': allowed,
  'GET /v1/payments/{id}/status': allowed,
  'POST /v1/payments/{id}/cancel': allowed,
  'POST /v1/payouts': payouts,
  'GET /v1/payouts': payouts,
  'GET /v1/payouts/{id}': payouts,
  'POST /v1/payouts/{id}/cancel': payouts,
  'POST /v1/bank_accounts': bankAccounts,
  'GET /v1/bank_accounts': bankAccounts,
  'GET /v1/bank_accounts/{id}': bankAccounts,
  'PATCH /v1/bank_accounts/{id}': bankAccounts,
  'DELETE /v1/bank_accounts/{id}': bankAccounts,
  'POST /v1/payout_holds': payoutHolds,
  'GET /v1/payout_holds': payoutHolds,
  'DELETE /v1/payout_holds/{id}': payoutHolds,
  'GET /v1/payout_settings': payoutSettings,
  'PATCH /v1/payout_settings': payoutSettings,
  'GET /v1/balance': allowed,
  'GET /v1/reports/revenue': allowed,
  'GET /v1/reports/mrr': allowed,
  'GET /v1/reports/invoiced': allowed,
  'GET /v1/balance_transactions': allowed,
  'GET /v1/balance_transactions/{id}': allowed,
  'GET /v1/events': allowed,
  'GET /v1/events/{id}': allowed,
  'POST /api/v1/payment-requests': allowed,
  'GET /api/v1/payment-requests/{id}': allowed,
  'POST /api/v1/payment-requests/{id}/cancel': allowed,
  'GET /v1/invoices/search': allowed,
  'GET /v1/invoices': allowed,
  'GET /v1/invoices/{id}': allowed,
  'GET /v1/invoices/{id}/pdf': allowed,
  'POST /v1/invoices/{id}/void': allowed,
  'POST /v1/invoices/{id}/mark_uncollectible': allowed,
  'GET /invoices': allowed,
  'GET /invoices/{id}/pdf': allowed,
  'POST /v1/exports': allowed,
  'GET /v1/exports': allowed,
  'GET /v1/exports/{id}': allowed,
  'GET /v1/exports/{id}/file': allowed,
  'POST /v1/invoices': allowed,
  'POST /v1/invoices/{id}/finalize': allowed,
  'POST /v1/invoices/{id}/pay': allowed,
  'POST /v1/invoices/{id}/discounts': allowed,
  'DELETE /v1/invoices/{id}': allowed,
  'POST /v1/invoice_items': allowed,
  'GET /v1/invoice_items': allowed,
  'GET /v1/invoice_items/{id}': allowed,
  'PATCH /v1/invoice_items/{id}': allowed,
  'DELETE /v1/invoice_items/{id}': allowed,
  'GET /exports/{id}/file': allowed,
};

interface Matcher {
  method: string;
  pattern: RegExp;
  /** Literal segments: `/v1/cli_keys/current` wins over `/v1/cli_keys/{id}`. */
  literals: number;
  row: string;
  rule: CliScope;
}

const matchers: Matcher[] = Object.entries(cliKeyScope)
  .map(([row, rule]) => {
    const [method, path] = row.split(' ') as [string, string];
    const segments = path.split('/').slice(1);
    const pattern = new RegExp(
      `^/${segments.map((s) => (/^\{\w+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\-]/g, '\\$&'))).join('/')}$`,
    );
    return { method, pattern, literals: segments.filter((s) => !s.startsWith('{')).length, row, rule };
  })
  .sort((a, b) => b.literals - a.literals);

/** The row a request falls under (HEAD as GET, a trailing slash ignored), or undefined. */
export function cliScopeRowOf(method: string, path: string): { row: string; rule: CliScope } | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  const p = path.length > 1 ? path.replace(/\/+$/, '') : path;
  const found = matchers.find((matcher) => matcher.method === m && matcher.pattern.test(p));
  return found && { row: found.row, rule: found.rule };
}

/** The refusal a CLI key gets, or null when the request is in its scope. */
export function cliScopeRefusal(method: string, path: string, livemode: boolean): string | null {
  const found = cliScopeRowOf(method, path);
  if (!found) return 'CLI keys can only be used on the documented API routes; this one is not one of them.';
  const { rule } = found;
  if (rule.scope === 'denied' || (rule.scope === 'test_only' && livemode)) {
    return `CLI keys cannot be used for ${rule.why}; use the dashboard or an owner session.`;
  }
  return null;
}

export function restrictCliKeys(): MiddlewareHandler {
  return async (c, next) => {
    const principal = c.get('principal');
    if (principal?.kind === 'cli_key') {
      const refusal = cliScopeRefusal(c.req.method, c.req.path, principal.livemode);
      if (refusal) throw new ApiError('forbidden', refusal);
    }
    return next();
  };
}
