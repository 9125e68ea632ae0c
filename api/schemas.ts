import { z } from '@hono/zod-openapi';
import { intervalUnits } from '../domain/billing-calendar.ts';
import { isCurrencyCode } from '../domain/money.ts';
import { passwordPolicyProblem } from '../domain/passwords.ts';
import { billingCycleModes, subscriptionStatuses } from '../domain/subscription.ts';

/** zod schemas shared by validation and the OpenAPI document. */
export const ErrorSchema = z
  .object({ error: z.string().openapi({ example: 'invalid_request' }), message: z.string() })
  .openapi('Error');

export const currency = z
  .string()
  .transform((value) => value.toUpperCase())
  .refine(isCurrencyCode, { message: 'must be an ISO 4217 currency code' })
  .openapi({ example: 'USD' });

/** Minor units, positive, within JavaScript's exact integer range. */
/** Minor units, positive, at most 99,999,999 (as Stripe caps a single charge). */
export const amount = z.number().int().positive().max(99_999_999).openapi({ example: 2000 });
export const timestamp = z.string().openapi({ format: 'date-time', example: '2026-01-31T00:00:00.000Z' });
export const idParam = (prefix: string) =>
  z.object({ id: z.string().min(1).max(64).openapi({ param: { name: 'id', in: 'path' }, example: `${prefix}_01jd3x5k8q0m2v7c9r4t6y1w3e` }) });

export const CustomerSchema = z
  .object({
    id: z.string(),
    object: z.literal('customer'),
    email: z.string(),
    name: z.string().nullable(),
    payment_method: z.string().nullable(),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Customer');

export const PlanSchema = z
  .object({
    id: z.string(),
    object: z.literal('plan'),
    name: z.string(),
    product: z.string().nullable().openapi({ description: 'The product this plan prices, or null' }),
    amount: z.number().int(),
    currency: z.string(),
    interval: z.enum(intervalUnits),
    interval_count: z.number().int(),
    trial_period_days: z.number().int(),
    active: z.boolean(),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('Plan');

export const ProductSchema = z
  .object({
    id: z.string(),
    object: z.literal('product'),
    name: z.string(),
    description: z.string().nullable(),
    active: z.boolean(),
    metadata: z.record(z.string(), z.string()),
    livemode: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Product');

export const SubscriptionSchema = z
  .object({
    id: z.string(),
    object: z.literal('subscription'),
    status: z.enum(subscriptionStatuses),
    customer_id: z.string(),
    plan: z.string(),
    pending_plan: z.string().nullable().openapi({ description: 'A downgrade that takes effect at the next renewal' }),
    livemode: z.boolean(),
    billing_cycle_anchor: timestamp.nullable().openapi({ description: 'Periods are counted from here' }),
    billing_cycle_mode: z.enum(billingCycleModes),
    trial_start: timestamp.nullable(),
    trial_end: timestamp.nullable(),
    current_period_start: timestamp.nullable(),
    current_period_end: timestamp.nullable(),
    billing_cycle: z.number().int().openapi({ description: '0-based index of the current (or first) billing period' }),
    latest_invoice: z.string().nullable(),
    cancel_at_period_end: z.boolean(),
    canceled_at: timestamp.nullable(),
    ended_reason: z.string().nullable().openapi({ description: 'requested, payment_failed, trial_without_payment_method, account_closed' }),
    pause_collection: z
      .object({ paused_at: timestamp, resumes_at: timestamp.nullable(), reason: z.string() })
      .nullable()
      .openapi({ description: 'Set while paused; resumes_at null means until resumed' }),
    grace_period_days: z.number().int().nullable().openapi({ description: "Overrides the account's grace period" }),
    dunning: z
      .object({
        invoice: z.string(),
        attempt_count: z.number().int(),
        first_failed_at: timestamp.openapi({ description: 'Retries are scheduled from here' }),
        next_payment_attempt: timestamp.nullable(),
        grace_period_ends_at: timestamp.nullable(),
        final_action: z.enum(['cancel', 'pause']),
        last_payment_error: z.object({ code: z.string(), message: z.string() }),
      })
      .nullable()
      .openapi({ description: 'Set while past due' }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Subscription');

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, { description: 'Error', content: { 'application/json': { schema: ErrorSchema } } }]));

export const UserSchema = z
  .object({
    id: z.string(),
    object: z.literal('user'),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(['admin', 'owner', 'member']),
    status: z.enum(['active', 'suspended', 'pending']),
    account_id: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('User');

export const AccountSettingsSchema = z
  .object({ currency: z.string(), timezone: z.string(), language: z.string() })
  .openapi('AccountSettings');

export const AccountSchema = z
  .object({
    id: z.string(),
    object: z.literal('account'),
    email: z.string(),
    name: z.string(),
    type: z.enum(['individual', 'business']),
    status: z.enum(['active', 'suspended', 'pending', 'closed']),
    created_at: timestamp,
    updated_at: timestamp,
    closed_at: timestamp.optional(),
    settings: AccountSettingsSchema.optional(),
  })
  .openapi('Account');

export const ApiKeySchema = z
  .object({
    id: z.string(),
    object: z.literal('api_key'),
    name: z.string().nullable(),
    livemode: z.boolean(),
    redacted_secret: z.string(),
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
    secret: z.string().optional().openapi({ description: 'Only in the response that creates the key' }),
  })
  .openapi('ApiKey');

/** Page-number query parameters: out-of-range values are refused, never clamped. */
export const pageQuery = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(25),
};

/** An email as a login name: trimmed, lower-case. */
export const emailField = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email().max(254))
  .openapi({ example: 'ada@example.com' });

/** An ISO 8601 instant within years 1970 to 9999 (PostgreSQL refuses year 0 and far offsets past 9999). */
export const isoInstant = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value))
  .refine((date) => date.getUTCFullYear() >= 1970 && date.getUTCFullYear() <= 9999, { message: 'must be between 1970 and 9999' });

/** A new password: SPEC.md's policy, with what is missing in the message. */
export const passwordField = z.string().max(256).superRefine((value, ctx) => {
  const problem = passwordPolicyProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
