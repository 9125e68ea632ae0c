import { z } from '@hono/zod-openapi';

import { isCurrencyCode } from '../domain/money.ts';

/** Field schemas shared by resource objects and request bodies. */

export const currency = z
  .string()
  .transform((value) => value.toUpperCase())
  .refine(isCurrencyCode, { message: 'must be an ISO 4217 currency code' })
  .openapi({ example: 'USD' });

/** Minor units, positive, at most 99,999,999 (as Stripe caps a single charge). */
export const amount = z.number().int().positive().max(99_999_999).openapi({ example: 2000 });
export const timestamp = z.string().openapi({ format: 'date-time', example: '2026-01-31T00:00:00.000Z' });

/** Metadata limits (Stripe's): 50 keys, keys up to 40 characters, values up to 500. */
export const metadataLimits = { keys: 50, keyLength: 40, valueLength: 500 };
export const metadata = z
  .record(z.string().min(1).max(metadataLimits.keyLength), z.string().max(metadataLimits.valueLength))
  .refine((value) => Object.keys(value).length <= metadataLimits.keys, {
    message: `at most ${metadataLimits.keys} keys`,
  });

/** An instant as the API writes it (ISO 8601, UTC), or null. */
export const isoOrNull = (value: Date | string | null | undefined): string | null =>
  value == null ? null : new Date(value).toISOString();
