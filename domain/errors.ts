/**
 * Error codes of the API and the one place that maps them to HTTP statuses.
 * SPEC.md names most codes; the ones it leaves open are marked "ours".
 */
export const errorStatus = {
  invalid_request: 400,
  invalid_credentials: 401,
  unauthorized: 401,
  invalid_grant: 400,
  invalid_session: 404,
  forbidden: 403,
  not_found: 404,
  account_not_found: 404,
  email_exists: 409,
  insufficient_funds: 402,
  currency_mismatch: 400,
  conflict: 409,
  not_cancellable: 409,
  active_subscriptions: 409,
  // ours: the HTTP edge
  method_not_allowed: 405,
  unsupported_media_type: 415,
  payload_too_large: 413,
  rate_limited: 429,
  // ours: a new subscription (or plan change) to a plan that was archived
  plan_archived: 409,
  // ours: a charge that had to succeed for the request to take effect was declined (plan upgrade)
  payment_failed: 402,
  // ours: a subscription whose first charge is due at once (no trial) for a customer with no payment method
  payment_method_required: 402,
  // ours: a message a subscription cannot take in its current state
  invalid_state: 409,
  // as Stripe: test clocks exist only in the sandbox
  livemode_not_allowed: 400,
  // ours: Idempotency-Key misuse (another body with the same key; a retry while the first runs)
  idempotency_key_reused: 422,
  idempotency_in_progress: 409,
  // ours: a webhook url that may not receive webhooks in this mode (SSRF rules)
  url_not_allowed: 400,
  // ours: a processor webhook (POST /webhooks/stripe) whose signature does not verify with either mode's secret
  invalid_signature: 400,
  // ours: the account was closed (a subscription created while it closed; a charge of a closed account)
  account_closed: 409,
  // ours: the CLI device login (POST /v1/cli/token): not approved yet; the device code expired or was used
  authorization_pending: 400,
  expired_token: 400,
  // ours: a signed link (an export's file) past its expiry
  link_expired: 410,
  // ours: an export's file asked for before it succeeded, or after it expired
  export_not_ready: 409,
  // ours: the mode's payment processor refused or could not be reached (a customer's card sent to Stripe)
  processor_error: 502,
  // ours: a meter event refused (docs/usage.md#refusals): no active meter has its event_name; no such customer in the mode;
  // its value is not a decimal the meter takes; its timestamp is outside [now − 35 days, now + 5 minutes]
  unknown_meter: 400,
  unknown_customer: 400,
  invalid_value: 400,
  timestamp_out_of_window: 400,
  // ours: a meter event (or its cancel) in a usage period already invoiced (docs/usage.md#late-events)
  period_invoiced: 409,
  // ours: a dependency (database, Temporal) is down
  service_unavailable: 503,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof errorStatus;

/** An error the API answers with as `{ error, message }`. Anything else becomes internal_error. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details?: unknown;
  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.details = details;
  }
  get status(): number {
    return errorStatus[this.code];
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(errorStatus, value);
}
