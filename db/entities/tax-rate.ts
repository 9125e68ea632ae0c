import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

import type { TaxExempt } from '../../domain/invoice-totals.ts';

/**
 * A tax rate of an account in one mode (POST /v1/tax_rates, docs/discounts-and-taxes.md#taxes).
 * `percentage` and `inclusive` never change once created (as Stripe): an invoice that applied
 * the rate keeps meaning the same thing. `percentage` is a decimal string of at most 4 places
 * ("19", "8.875"). An inactive rate is not applied as an account default, nor assigned anew.
 */
export const TaxRate = defineEntity({
  name: 'TaxRate',
  tableName: 'tax_rates',
  indexes: [{ properties: ['accountId', 'livemode', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    displayName: p.string(),
    description: p.text().nullable(),
    percentage: p.string(),
    inclusive: p.boolean(),
    /** ISO 3166-1 alpha-2 country, upper case; null: any jurisdiction. */
    country: p.string().length(2).nullable(),
    /** ISO 3166-2 subdivision code without the country ("CA", "NY"), upper case; null: the whole country. */
    state: p.string().nullable(),
    jurisdiction: p.string().nullable(),
    taxType: p.string().nullable(),
    active: p.boolean(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type TaxRate = InferEntity<typeof TaxRate>;

/** A tax id of a customer (POST /v1/customers/{id}/tax_ids), validated by domain/tax-ids.ts. */
export const CustomerTaxId = defineEntity({
  name: 'CustomerTaxId',
  tableName: 'customer_tax_ids',
  indexes: [{ properties: ['accountId', 'livemode', 'customerId', 'id'] }],
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    customerId: p.string(),
    type: p.string(),
    /** Normalized: upper case, without spaces, dots or dashes (as domain/tax-ids.ts normalizes it). */
    value: p.string(),
    /** The country the id belongs to (ISO 3166-1 alpha-2). */
    country: p.string().length(2).nullable(),
    createdAt: p.datetime(),
  },
});
export type CustomerTaxId = InferEntity<typeof CustomerTaxId>;

/**
 * A subscription's tax rates: its default_tax_rates and its items' tax_rates (by subscription
 * item id). Apart from the subscription's projection row (written only by its workflow), because a
 * create sets them before the workflow starts and bills its first invoice. No row: none set.
 */
export const SubscriptionTaxRates = defineEntity({
  name: 'SubscriptionTaxRates',
  tableName: 'subscription_tax_rates',
  properties: {
    subscriptionId: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    defaultTaxRates: p.json<string[]>(),
    /** By subscription item id: its plan when set (to find the item of an invoice line's plan) and its rate ids. */
    itemTaxRates: p.json<Record<string, { plan: string; tax_rates: string[] }>>(),
    updatedAt: p.datetime(),
  },
});
export type SubscriptionTaxRates = InferEntity<typeof SubscriptionTaxRates>;

export type { TaxExempt };
