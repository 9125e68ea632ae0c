import { z } from '@hono/zod-openapi';

import type { CustomerTaxId, TaxRate } from '../db/entities/index.ts';
import { type TaxIdType, taxIdTypes } from '../domain/tax-ids.ts';
import { timestamp } from './common.ts';

/** A tax rate, as the API shows it (Stripe's shape; docs/discounts-and-taxes.md#taxes). */
export const TaxRateSchema = z
  .object({
    id: z.string().openapi({ example: 'txr_01jd4a2b3c4d5e6f7g8h9j0k1m' }),
    object: z.literal('tax_rate'),
    display_name: z
      .string()
      .openapi({ description: 'The name on invoices, e.g. "VAT" or "Sales tax"', example: 'VAT' }),
    description: z
      .string()
      .nullable()
      .openapi({ description: 'For the merchant; not shown to customers', example: 'German VAT, standard rate' }),
    percentage: z.string().openapi({
      description: 'The rate in percent, a decimal string of at most 4 places (0–100); never changes',
      example: '19',
    }),
    inclusive: z.boolean().openapi({
      description:
        'true: prices already include the tax (it is taken out of them); false: it is added on top. Never changes',
      example: false,
    }),
    country: z.string().nullable().openapi({
      description:
        'ISO 3166-1 alpha-2 country the rate is for; as an account default it applies only to customers there. null: anywhere',
      example: 'DE',
    }),
    state: z.string().nullable().openapi({
      description:
        'ISO 3166-2 subdivision code without the country (e.g. "CA", "NY"); with country, only customers in that state',
      example: null,
    }),
    jurisdiction: z
      .string()
      .nullable()
      .openapi({ description: 'The jurisdiction, as shown to the customer', example: 'DE' }),
    tax_type: z.string().nullable().openapi({
      description:
        'vat, gst, hst, pst, qst, rst, jct, sales_tax, service_tax, lease_tax, amusement_tax or communications_tax',
      example: 'vat',
    }),
    active: z.boolean().openapi({
      description:
        'false: no longer applied as an account default nor assignable anew; subscriptions and items that already name it keep it (as Stripe)',
      example: true,
    }),
    metadata: z.record(z.string(), z.string()).openapi({ example: { ledger_code: 'VAT-DE-19' } }),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('TaxRate');
export type TaxRateBody = z.infer<typeof TaxRateSchema>;

export function serializeTaxRate(rate: TaxRate): TaxRateBody {
  return {
    id: rate.id,
    object: 'tax_rate',
    display_name: rate.displayName,
    description: rate.description ?? null,
    percentage: rate.percentage,
    inclusive: rate.inclusive,
    country: rate.country ?? null,
    state: rate.state ?? null,
    jurisdiction: rate.jurisdiction ?? null,
    tax_type: rate.taxType ?? null,
    active: rate.active,
    metadata: rate.metadata ?? {},
    livemode: rate.livemode,
    created_at: rate.createdAt.toISOString(),
  };
}

/** A customer's tax id, as the API shows it. */
export const TaxIdSchema = z
  .object({
    id: z.string().openapi({ example: 'txi_01jd4a7n8p9q0r1s2t3v4w5x6y' }),
    object: z.literal('tax_id'),
    customer: z.string().openapi({ example: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e' }),
    type: z.enum(taxIdTypes).openapi({ example: 'eu_vat' }),
    value: z.string().openapi({
      description: 'Compact: upper case, without spaces, dots or dashes (an EIN as 12-3456789)',
      example: 'DE136695976',
    }),
    country: z
      .string()
      .nullable()
      .openapi({ description: 'The country that issued it (ISO 3166-1 alpha-2)', example: 'DE' }),
    livemode: z.boolean(),
    created_at: timestamp,
  })
  .openapi('TaxId');
export type TaxIdBody = z.infer<typeof TaxIdSchema>;

export function serializeTaxId(taxId: CustomerTaxId): TaxIdBody {
  return {
    id: taxId.id,
    object: 'tax_id',
    customer: taxId.customerId,
    type: taxId.type as TaxIdType,
    value: taxId.value,
    country: taxId.country ?? null,
    livemode: taxId.livemode,
    created_at: taxId.createdAt.toISOString(),
  };
}
