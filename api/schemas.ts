import { z } from '@hono/zod-openapi';

import { passwordPolicyProblem } from '../domain/passwords.ts';

/** zod schemas shared by validation and the OpenAPI document. */
export const ErrorSchema = z
  .object({ error: z.string().openapi({ example: 'invalid_request' }), message: z.string() })
  .openapi('Error');

export const idParam = (prefix: string) =>
  z.object({
    id: z
      .string()
      .min(1)
      .max(64)
      .openapi({ param: { name: 'id', in: 'path' }, example: `${prefix}_01jd3x5k8q0m2v7c9r4t6y1w3e` }),
  });

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: 'Error', content: { 'application/json': { schema: ErrorSchema } } },
    ]),
  );

/** `customer_id` and `customer` name the same thing on creates and lists: one of them, not both (a zod `.refine(...oneCustomerName)`). */
export const oneCustomerName = [
  (value: { customer_id?: string; customer?: string }) =>
    !(value.customer_id !== undefined && value.customer !== undefined),
  { message: 'customer and customer_id name the same thing: give one of them, not both' },
] as const;

/** A test clock's id (`clock_…`), as the `test_clock` body and query fields take it. */
export const testClockId = z.string().regex(/^clock_[0-9a-z]{26}$/, 'must be a clock_ id');

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
  .refine((date) => date.getUTCFullYear() >= 1970 && date.getUTCFullYear() <= 9999, {
    message: 'must be between 1970 and 9999',
  });

/** A new password: SPEC.md's policy, with what is missing in the message. */
export const passwordField = z
  .string()
  .max(256)
  .superRefine((value, ctx) => {
    const problem = passwordPolicyProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
