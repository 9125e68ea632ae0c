import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** A person or business that is billed. `paymentMethod` is a sandbox test method (see activities/processor). */
export const Customer = defineEntity({
  name: 'Customer',
  tableName: 'customers',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }, { properties: ['accountId', 'livemode', 'email'] }, { properties: ['testClockId'] }],
  properties: {
    id: p.string().primary(),
    email: p.string(),
    name: p.string().nullable(),
    paymentMethod: p.string().nullable(),
    /** The customer at its mode's processor (Stripe: cus_…); null on the sandbox (services/processor-customers.ts). */
    processorCustomerId: p.string().nullable(),
    accountId: p.string().index(),
    livemode: p.boolean(),
    /** The test clock the customer lives on (sandbox), or null. */
    testClockId: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Customer = InferEntity<typeof Customer>;
