/**
 * A customer's twin at its mode's processor (docs/processors.md). On Stripe, charging a
 * saved card off-session needs a Stripe Customer holding that card: the engine creates
 * (or finds, by `metadata.billing_customer_id`) one, attaches the payment method, makes it
 * the default, and keeps its id in `customers.processor_customer_id`. The sandbox has no
 * customers: nothing is stored.
 */
import { createHash } from 'node:crypto';

import type { EntityManager } from '@mikro-orm/postgresql';

import { Customer } from '../../db/entities/index.ts';
import type { Processors } from '../processors/index.ts';

export class ProcessorCustomerError extends Error {}

/**
 * Creates or updates the processor's customer of `customer` (its email, name and payment
 * method now) and returns its id (null on the sandbox). The idempotency key is made of the
 * customer and what is sent, so a retry of the same change is the same request at the
 * processor and a later change is a new one. Does not write the row: the caller stores the id.
 */
export async function upsertProcessorCustomer(
  processors: Processors,
  customer: Pick<Customer, 'id' | 'email' | 'name' | 'paymentMethod' | 'livemode'>,
): Promise<string | null> {
  const processor = processors.forMode(customer.livemode);
  if (processor.name === 'sandbox') return null;
  const sent = [customer.email, customer.name ?? null, customer.paymentMethod ?? null];
  const key = `${customer.id}:customer:${createHash('sha256').update(JSON.stringify(sent)).digest('hex').slice(0, 24)}`;
  try {
    return await processor.upsertCustomer({
      customerId: customer.id,
      email: customer.email,
      name: customer.name ?? null,
      paymentMethod: customer.paymentMethod ?? null,
      idempotencyKey: key,
    });
  } catch (error) {
    throw new ProcessorCustomerError(
      `The ${processor.name} processor did not take the customer: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** The processor customer id of a customer about to be charged: the stored one, else made now and stored. */
export async function ensureProcessorCustomer(
  em: EntityManager,
  processors: Processors,
  customer: Customer,
): Promise<string | null> {
  if (customer.processorCustomerId) return customer.processorCustomerId;
  const id = await upsertProcessorCustomer(processors, customer);
  if (id) await em.fork().nativeUpdate(Customer, { id: customer.id }, { processorCustomerId: id });
  return id;
}
