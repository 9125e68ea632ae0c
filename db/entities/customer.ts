import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { TaxExempt } from '../../domain/invoice-totals.ts';

/** A customer's address; every field optional, country upper case ISO 3166-1 alpha-2. */
export interface CustomerAddress {
  line1: string | null;
  line2: string | null;
  city: string | null;
  state: string | null;
  postal_code: string | null;
  country: string | null;
}

/** A person or business that is billed. `paymentMethod` is a sandbox test method (see services/processors/sandbox.ts). */
export const Customer = defineEntity({
  name: 'Customer',
  tableName: 'customers',
  indexes: [
    { properties: ['accountId', 'livemode', 'id'] },
    { properties: ['accountId', 'livemode', 'email'] },
    { properties: ['testClockId'] },
  ],
  properties: {
    id: p.string().primary(),
    email: p.string(),
    /** The merchant's own id for it (unique per account and mode when set; a partial unique index in the migration): meter events may name the customer by it. */
    externalId: p.string().nullable(),
    name: p.string().nullable(),
    paymentMethod: p.string().nullable(),
    /** The currency it is billed in (ISO 4217), or null: it chooses among a plan's currency_options when a subscription or invoice item names none (docs/pricing.md#currencies). */
    currency: p.string().length(3).nullable(),
    /** The customer at its mode's processor (Stripe: cus_…); null on the sandbox (services/customers/processor-twins.ts). */
    processorCustomerId: p.string().nullable(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    /** The test clock the customer lives on (sandbox), or null. */
    testClockId: p.string().nullable(),
    /** The billing address (country ISO 3166-1 alpha-2, state...): which tax rates' jurisdictions match (docs/discounts-and-taxes.md#taxes). */
    address: p.json<CustomerAddress>().nullable(),
    /** none, exempt (no tax) or reverse (reverse charge: no tax, the legal note on the invoice). */
    taxExempt: p.string().$type<TaxExempt>().default('none'),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Customer = InferEntity<typeof Customer>;
