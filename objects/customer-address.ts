import { z } from '@hono/zod-openapi';

import type { CustomerAddress } from '../db/entities/index.ts';
import { taxExemptions } from '../domain/invoice-totals.ts';
import { isCountryCode } from '../domain/tax-rules.ts';

/** An ISO 3166-1 alpha-2 country code, any case in, upper case out. */
export const countryCode = z
  .string()
  .transform((value) => value.toUpperCase())
  .refine(isCountryCode, { message: 'must be an ISO 3166-1 alpha-2 country code (e.g. DE, US)' })
  .openapi({ example: 'DE' });

/** An ISO 3166-2 subdivision code without its country ("CA", "NY", "BY"), upper case out. */
export const stateCode = z
  .string()
  .regex(/^[A-Za-z0-9]{1,3}$/, 'must be an ISO 3166-2 subdivision code without the country (e.g. CA, NY)')
  .transform((value) => value.toUpperCase())
  .openapi({ example: 'CA' });

const line = z.string().min(1).max(200);

/** A customer's address as a request gives it: every field optional; it replaces the whole address. */
export const AddressInput = z
  .object({
    line1: line.optional(),
    line2: line.optional(),
    city: line.optional(),
    state: stateCode.optional().openapi({
      description: 'ISO 3166-2 subdivision code without the country (CA, NY, BY): matches tax rates with that state',
    }),
    postal_code: z.string().min(1).max(20).optional(),
    country: countryCode
      .optional()
      .openapi({ description: 'ISO 3166-1 alpha-2: which tax rates (account defaults with a country) apply' }),
  })
  .strict()
  .openapi({ example: { line1: 'Friedrichstraße 68', city: 'Berlin', postal_code: '10117', country: 'DE' } });

export const AddressSchema = z
  .object({
    line1: z.string().nullable(),
    line2: z.string().nullable(),
    city: z.string().nullable(),
    state: z.string().nullable(),
    postal_code: z.string().nullable(),
    country: z.string().nullable().openapi({ example: 'DE' }),
  })
  .openapi('Address', {
    example: {
      line1: 'Friedrichstraße 68',
      line2: null,
      city: 'Berlin',
      state: null,
      postal_code: '10117',
      country: 'DE',
    },
  });

export const taxExemptField = z.enum(taxExemptions).openapi({
  description:
    'none: taxed; exempt: no tax; reverse: reverse charge (no tax, and the invoice carries the note that the recipient accounts for the VAT)',
  example: 'none',
});

export function toAddress(input: z.infer<typeof AddressInput>): CustomerAddress {
  return {
    line1: input.line1 ?? null,
    line2: input.line2 ?? null,
    city: input.city ?? null,
    state: input.state ?? null,
    postal_code: input.postal_code ?? null,
    country: input.country ?? null,
  };
}
