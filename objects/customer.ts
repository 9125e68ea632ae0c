import { z } from '@hono/zod-openapi';
import type { Customer } from '../db/entities/index.ts';
import { timestamp } from './common.ts';

/** A customer of an account, as the API shows it. */


export const CustomerSchema = z
  .object({
    id: z.string(),
    object: z.literal('customer'),
    email: z.string(),
    name: z.string().nullable(),
    payment_method: z.string().nullable(),
    livemode: z.boolean(),
    test_clock: z.string().nullable().openapi({ description: 'The test clock the customer lives on (sandbox), or null' }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Customer');

export function serializeCustomer(customer: Customer): z.infer<typeof CustomerSchema> {
  return {
    id: customer.id,
    object: 'customer',
    email: customer.email,
    name: customer.name ?? null,
    payment_method: customer.paymentMethod ?? null,
    livemode: customer.livemode,
    test_clock: customer.testClockId ?? null,
    created_at: customer.createdAt.toISOString(),
    updated_at: customer.updatedAt.toISOString(),
  };
}
