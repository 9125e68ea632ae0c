/**
 * Tax rates and where they are assigned (docs/discounts-and-taxes.md#taxes): an account's rates per
 * mode, the mode's default rates, a subscription's defaults and its items' rates. Every id assigned
 * is checked here: the caller's account and mode, and active (400 otherwise).
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { AccountModeSettings, SubscriptionTaxRates, TaxRate } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { normalizePercentage, taxTypes } from '../../domain/tax-rules.ts';
import { serializeTaxRate } from '../../objects/tax-rate.ts';
import { recordEvent } from '../events/record.ts';

type Scope = { accountId: string; livemode: boolean };

/** Rates one line (an item, a subscription's defaults, an invoice item) may name; as Stripe. */
export const maxTaxRatesPerLine = 5;
/** The account's default rates in a mode (one per jurisdiction, say). */
export const maxDefaultTaxRates = 25;

export { taxTypes };

export interface TaxRateInput {
  display_name: string;
  description?: string | null;
  percentage: number | string;
  inclusive: boolean;
  country?: string | null;
  state?: string | null;
  jurisdiction?: string | null;
  tax_type?: (typeof taxTypes)[number] | null;
  active?: boolean;
  metadata?: Record<string, string>;
}

export async function findOwnTaxRate(em: EntityManager, scope: Scope, id: string): Promise<TaxRate> {
  const rate = await em.findOne(TaxRate, { id, ...scope });
  if (rate) return rate;
  const elsewhere = await em.fork().count(TaxRate, { id, accountId: scope.accountId, livemode: !scope.livemode });
  if (elsewhere === 0) throw new ApiError('not_found', 'No such tax rate.');
  const [there, yours] = scope.livemode ? ['sandbox mode', 'live'] : ['live mode', 'sandbox'];
  throw new ApiError('not_found', `No such tax rate: ${id} exists in ${there}; you are using a ${yours} credential.`);
}

export async function createTaxRate(em: EntityManager, scope: Scope, input: TaxRateInput): Promise<TaxRate> {
  const percentage = normalizePercentage(input.percentage);
  if (percentage === null)
    throw new ApiError(
      'invalid_request',
      'percentage: must be a number from 0 to 100 with at most 4 decimal places (e.g. 19 or "8.875").',
    );
  if (input.state && !input.country)
    throw new ApiError('invalid_request', 'state: give the country too (a state is within a country).');
  const now = new Date();
  const rate = em.create(TaxRate, {
    id: newId('taxRate'),
    ...scope,
    displayName: input.display_name,
    description: input.description ?? null,
    percentage,
    inclusive: input.inclusive,
    country: input.country ?? null,
    state: input.state ?? null,
    jurisdiction: input.jurisdiction ?? null,
    taxType: input.tax_type ?? null,
    active: input.active ?? true,
    metadata: input.metadata ?? {},
    createdAt: now,
    updatedAt: now,
  });
  await em.transactional(async (tx) => {
    await tx.flush();
    await recordEvent(tx, { ...scope, type: 'tax_rate.created', object: serializeTaxRate(rate), transactionId: null });
  });
  return rate;
}

export type TaxRateChange = Partial<
  Pick<
    TaxRateInput,
    'display_name' | 'description' | 'country' | 'state' | 'jurisdiction' | 'tax_type' | 'active' | 'metadata'
  >
>;

export async function updateTaxRate(
  em: EntityManager,
  scope: Scope,
  id: string,
  change: TaxRateChange,
): Promise<TaxRate> {
  return em.transactional(async (tx) => {
    await findOwnTaxRate(tx, scope, id);
    const rate = await tx.findOneOrFail(
      TaxRate,
      { id, ...scope },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    const before = serializeTaxRate(rate);
    if (change.display_name !== undefined) rate.displayName = change.display_name;
    if (change.description !== undefined) rate.description = change.description;
    if (change.country !== undefined) rate.country = change.country;
    if (change.state !== undefined) rate.state = change.state;
    if (change.jurisdiction !== undefined) rate.jurisdiction = change.jurisdiction;
    if (change.tax_type !== undefined) rate.taxType = change.tax_type;
    if (change.active !== undefined) rate.active = change.active;
    if (change.metadata !== undefined) rate.metadata = change.metadata;
    if (rate.state && !rate.country)
      throw new ApiError('invalid_request', 'state: give the country too (a state is within a country).');
    const after = serializeTaxRate(rate);
    const previous = Object.fromEntries(
      Object.entries(before).filter(
        ([key, value]) => JSON.stringify(value) !== JSON.stringify(after[key as keyof typeof after]),
      ),
    );
    if (Object.keys(previous).length === 0) return rate;
    rate.updatedAt = new Date();
    await tx.flush();
    await recordEvent(tx, {
      ...scope,
      type: 'tax_rate.updated',
      object: after,
      previousAttributes: previous,
      transactionId: null,
    });
    return rate;
  });
}

/**
 * The ids as assignable rates, in the order given: each of the caller's account and mode and active,
 * none twice, at most `max` (400 `invalid_request` naming `field` otherwise).
 */
export async function assignableTaxRates(
  em: EntityManager,
  scope: Scope,
  ids: readonly string[],
  field: string,
  max = maxTaxRatesPerLine,
): Promise<string[]> {
  if (ids.length > max) throw new ApiError('invalid_request', `${field}: at most ${max} tax rates.`);
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i);
  if (repeated) throw new ApiError('invalid_request', `${field}: ${repeated} is given twice.`);
  if (ids.length === 0) return [];
  const found = await em.find(TaxRate, { id: { $in: [...ids] }, ...scope });
  for (const id of ids) {
    const rate = found.find((r) => r.id === id);
    if (!rate) throw new ApiError('invalid_request', `${field}: no such tax rate in this account and mode: ${id}.`);
    if (!rate.active)
      throw new ApiError('invalid_request', `${field}: tax rate ${id} is inactive; only active rates can be assigned.`);
  }
  return [...ids];
}

/** The mode's default tax rate ids. */
export async function defaultTaxRates(em: EntityManager, scope: Scope): Promise<string[]> {
  const row = await em.findOne(AccountModeSettings, scope, { refresh: true });
  return row?.defaultTaxRates ?? [];
}

/** Sets the mode's default tax rates (checked by assignableTaxRates), under the mode's settings row lock. */
export async function setDefaultTaxRates(em: EntityManager, scope: Scope, ids: readonly string[]): Promise<string[]> {
  const checked = await assignableTaxRates(em, scope, ids, 'default_tax_rates', maxDefaultTaxRates);
  return em.transactional(async (tx) => {
    await tx.execute(
      `insert into "account_mode_settings" ("account_id", "livemode", "notifications", "updated_at") values (?, ?, '{}', now()) on conflict do nothing`,
      [scope.accountId, scope.livemode],
      'run',
    );
    const row = await tx.findOneOrFail(AccountModeSettings, scope, {
      lockMode: LockMode.PESSIMISTIC_WRITE,
      refresh: true,
    });
    row.defaultTaxRates = checked;
    await tx.flush();
    return checked;
  });
}

/** A subscription's tax rates as the API shows them. */
export interface SubscriptionTaxRatesBody {
  object: 'subscription_tax_rates';
  subscription: string;
  default_tax_rates: string[];
  items: { id: string; tax_rates: string[] }[];
}

export function serializeSubscriptionTaxRates(
  subscriptionId: string,
  row: SubscriptionTaxRates | null,
): SubscriptionTaxRatesBody {
  return {
    object: 'subscription_tax_rates',
    subscription: subscriptionId,
    default_tax_rates: row?.defaultTaxRates ?? [],
    items: Object.entries(row?.itemTaxRates ?? {})
      .filter(([, item]) => item.tax_rates.length > 0)
      .map(([id, item]) => ({ id, tax_rates: item.tax_rates })),
  };
}

/**
 * Writes a subscription's tax rates on `tx` (ids already checked): its defaults when given, and the
 * given items' rates (with the plan each bills); others stay as they were. Creates the row if missing.
 */
export async function writeSubscriptionTaxRates(
  tx: EntityManager,
  scope: Scope,
  subscriptionId: string,
  change: { defaultTaxRates?: string[]; items?: { id: string; plan: string; taxRates: string[] }[] },
): Promise<SubscriptionTaxRates> {
  await tx.execute(
    `insert into "subscription_tax_rates" ("subscription_id", "account_id", "livemode", "default_tax_rates", "item_tax_rates", "updated_at") values (?, ?, ?, '[]', '{}', now()) on conflict do nothing`,
    [subscriptionId, scope.accountId, scope.livemode],
    'run',
  );
  const row = await tx.findOneOrFail(
    SubscriptionTaxRates,
    { subscriptionId, ...scope },
    { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
  );
  if (change.defaultTaxRates !== undefined) row.defaultTaxRates = change.defaultTaxRates;
  if (change.items) {
    const items = { ...row.itemTaxRates };
    for (const item of change.items) items[item.id] = { plan: item.plan, tax_rates: item.taxRates };
    row.itemTaxRates = items;
  }
  row.updatedAt = new Date();
  await tx.flush();
  return row;
}

/** A subscription's items' tax rates by item id (none set: {}). */
export async function subscriptionItemTaxRates(
  em: EntityManager,
  subscription: { id: string; accountId: string; livemode: boolean },
): Promise<Record<string, string[]>> {
  const row = await em.findOne(SubscriptionTaxRates, {
    subscriptionId: subscription.id,
    accountId: subscription.accountId,
    livemode: subscription.livemode,
  });
  return Object.fromEntries(Object.entries(row?.itemTaxRates ?? {}).map(([id, item]) => [id, item.tax_rates]));
}
