/**
 * What POST /v1/payments and POST /api/v1/payment-requests (one_time) share: the
 * body fields, the requesting account's checks, and reading a request the caller
 * owns. The workflow commands themselves are in services/payment-requests/commands.ts.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { Account, PaymentRequest } from '../db/entities/index.ts';
import { brandOf } from '../domain/branding.ts';
import { ApiError } from '../domain/errors.ts';
import { defaultExpiryMs, maxExpiryMs, minExpiryMs, type PaymentRequestSnapshot } from '../domain/payment-requests.ts';
import { amount, currency, metadata } from '../objects/common.ts';
import { startPaymentRequest } from '../services/payment-requests/commands.ts';
import { checkClockPaymentRequestRoom, clockBindingOf, findOwnTestClock } from '../services/test-clocks/clocks.ts';
import type { ClockBinding } from '../workflows/clock-sleep.ts';
import { accountScope } from './auth/principal.ts';
import type { AppDeps } from './deps.ts';
import { resourceId } from './middleware/idempotency.ts';
import { notFoundInMode } from './not-found.ts';
import { emailField, isoInstant, testClockId } from './schemas.ts';

/** Body fields both POST /v1/payments and POST /api/v1/payment-requests take. */
export const paymentRequestFields = {
  amount,
  currency,
  customer_email: emailField,
  reference: z.string().max(500).optional(),
  metadata: metadata.optional(),
  expires_at: isoInstant
    .optional()
    .openapi({ type: 'string', format: 'date-time', description: 'At least a minute and at most 30 days ahead' }),
  expires_in: z
    .number()
    .int()
    .min(minExpiryMs / 1000)
    .max(maxExpiryMs / 1000)
    .optional()
    .openapi({ description: 'Seconds the link stays payable (60 to 2592000); default 604800 (7 days)' }),
  test_clock: testClockId.optional().openapi({
    description: 'A test clock (sandbox): the request lives on its time (docs/testing-your-integration.md)',
  }),
};

export interface NewPaymentRequest {
  account_id?: string | undefined;
  amount: number;
  currency: string;
  customer_email: string;
  reference?: string | undefined;
  metadata?: Record<string, string> | undefined;
  expires_at?: Date | undefined;
  expires_in?: number | undefined;
  test_clock?: string | undefined;
}

/**
 * The account a new payment request (one-off or recurring) asks money for: the
 * caller's own, named or by default. An unknown or foreign id is
 * `account_not_found`, as SPEC.md names it; the currency must be the account's,
 * because the payment lands on its ledger as a transaction.
 */
export async function requestingAccount(
  deps: AppDeps,
  c: Context,
  body: Pick<NewPaymentRequest, 'account_id' | 'currency'>,
) {
  const { orm } = deps.context;
  const scope = await accountScope(c, orm);
  if (body.account_id !== undefined && body.account_id !== scope.accountId)
    throw new ApiError('account_not_found', `No such account: ${body.account_id}.`);
  const account = await orm.em.fork().findOne(Account, { id: scope.accountId });
  if (!account) throw new ApiError('account_not_found', `No such account: ${scope.accountId}.`);
  if (body.currency !== account.settings.currency) {
    throw new ApiError(
      'currency_mismatch',
      `The account's currency is ${account.settings.currency}, not ${body.currency}.`,
    );
  }
  return { scope, account };
}

/** What a one-off and a recurring request start with: the caller's account and mode, its name and language, and the body's money and payer. */
export function requestStartFields(
  scope: { accountId: string; livemode: boolean },
  account: Account,
  body: Pick<NewPaymentRequest, 'amount' | 'currency' | 'customer_email' | 'reference' | 'metadata'>,
) {
  return {
    accountId: scope.accountId,
    livemode: scope.livemode,
    account: { name: brandOf(account, '').name, language: account.settings.language },
    amount: body.amount,
    currency: body.currency,
    customerEmail: body.customer_email,
    reference: body.reference ?? null,
    metadata: body.metadata ?? {},
  };
}

/** Checks the caller's account, works out the expiry, and starts the request's workflow. */
export async function createPaymentRequest(
  deps: AppDeps,
  c: Context,
  body: NewPaymentRequest,
): Promise<PaymentRequestSnapshot> {
  const { scope, account } = await requestingAccount(deps, c, body);
  const testClock = await testClockOf(deps, scope, body.test_clock);
  let expiresAt: string | null = null;
  let expiresInMs = defaultExpiryMs;
  if (body.expires_at) {
    const ahead = body.expires_at.getTime() - (testClock ? Date.parse(testClock.now) : Date.now());
    if (ahead < minExpiryMs)
      throw new ApiError('invalid_request', 'expires_at: must be at least a minute in the future.');
    if (ahead > maxExpiryMs) throw new ApiError('invalid_request', 'expires_at: must be at most 30 days ahead.');
    expiresAt = body.expires_at.toISOString();
  } else if (body.expires_in !== undefined) {
    expiresInMs = body.expires_in * 1000;
  }
  return startPaymentRequest(deps.context, {
    ...requestStartFields(scope, account, body),
    expiresAt,
    expiresInMs,
    ...(testClock ? { testClock } : {}),
    ...(c.get('idempotency') ? { id: resourceId(c, 'paymentRequest') } : {}),
  });
}

/** The binding of a new request to the caller's test clock `id` (sandbox only), or undefined. */
export async function testClockOf(
  deps: AppDeps,
  scope: { accountId: string; livemode: boolean },
  id: string | undefined,
): Promise<ClockBinding | undefined> {
  if (!id) return undefined;
  const em = deps.context.orm.em.fork();
  const clock = await findOwnTestClock(em, id, scope);
  const binding = await clockBindingOf(em, { testClockId: clock.id });
  // At most config.testClocks.paymentRequestsPerClock on one clock (docs/testing-your-integration.md#limits).
  await checkClockPaymentRequestRoom(em, clock.id, deps.config.testClocks);
  return binding;
}

export async function findOwnPaymentRequest(deps: AppDeps, c: Context, id: string): Promise<PaymentRequest> {
  const { orm } = deps.context;
  const scope = await accountScope(c, orm);
  const request = await orm.em
    .fork()
    .findOne(PaymentRequest, { id, accountId: scope.accountId, livemode: scope.livemode });
  if (!request) throw await notFoundInMode(orm.em, PaymentRequest, id, scope, 'payment request');
  return request;
}
