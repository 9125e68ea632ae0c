import { z } from '@hono/zod-openapi';

import type { Customer } from '../db/entities/index.ts';
import { timestamp } from './common.ts';
import { AddressSchema, taxExemptField } from './customer-address.ts';
import { DiscountSchema } from './discount.ts';

/** A customer of an account, as the API shows it. */

export const CustomerSchema = z
  .object({
    id: z.string(),
    object: z.literal('customer'),
    email: z.string(),
    external_id: z.string().nullable().openapi({
      description:
        "The merchant's own id for this customer (unique in the account and mode), or null. Meter events may name the customer by it",
      example: 'user_4821',
    }),
    name: z.string().nullable(),
    payment_method: z.string().nullable(),
    currency: z.string().nullable().openapi({
      description:
        "The currency it is billed in (ISO 4217), or null: a subscription or invoice item that names no currency takes it among the plan's currency_options (docs/pricing.md#currencies)",
      example: 'EUR',
    }),
    livemode: z.boolean(),
    test_clock: z
      .string()
      .nullable()
      .openapi({ description: 'The test clock the customer lives on (sandbox), or null' }),
    address: AddressSchema.nullable().openapi({
      description:
        "The billing address, or null; its country and state choose the account's default tax rates (docs/discounts-and-taxes.md#taxes)",
    }),
    tax_exempt: taxExemptField,
    balances: z.record(z.string(), z.number().int()).openapi({
      description:
        "The customer's balance per currency (GET /v1/customers/{id}/balance_transactions), minor units with Stripe's sign: negative is credit its next invoices in that currency use before charging, positive is owed and added to its next invoice; {} when it never had one",
      example: { USD: -2500 },
    }),
    discount: DiscountSchema.nullable().optional().openapi({
      description:
        "Its own discount in force (POST /v1/customers/{id}/discount), for all its invoices unless a subscription has its own; null when none. On create, retrieve, list and update answers (events' data.object leaves it out)",
    }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Customer');

/** `balances`: the customer's balances by currency (services/customers/balance.ts customerBalances); {} for a customer that never had one. */
export function serializeCustomer(
  customer: Customer,
  balances: Record<string, number> = {},
): z.infer<typeof CustomerSchema> {
  return {
    id: customer.id,
    object: 'customer',
    email: customer.email,
    external_id: customer.externalId ?? null,
    name: customer.name ?? null,
    payment_method: customer.paymentMethod ?? null,
    currency: customer.currency ?? null,
    livemode: customer.livemode,
    test_clock: customer.testClockId ?? null,
    address: customer.address ?? null,
    tax_exempt: customer.taxExempt ?? 'none',
    balances,
    created_at: customer.createdAt.toISOString(),
    updated_at: customer.updatedAt.toISOString(),
  };
}
