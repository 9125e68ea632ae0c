import { LockMode } from '@mikro-orm/core';
/**
 * Invoice items (issue #26): one-off charges of a customer, pending until an invoice takes them.
 *
 * An item is priced once, when created or changed: an `amount` (quantity 1), a `unit_amount` ×
 * `quantity`, or a `plan` (a price, recurring or one_time) at `quantity` through domain/pricing.ts,
 * in the plan's currency or one of its currency_options. It becomes an invoice line exactly
 * (itemLine), so the invoice that takes it adds up to the sum of its lines.
 *
 * Exactly once: an invoice takes its customer's pending items with one UPDATE whose WHERE
 * requires `invoice_id is null` (claimPendingItems). Two invoices claiming at once queue on the
 * rows' locks; the second re-checks the WHERE and finds them taken. Changing or deleting an item
 * attached to a draft locks that draft first (finalize locks it too), so an item never changes
 * under an invoice being finalized.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { Customer, Invoice, InvoiceItem, type InvoiceLine, Plan } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import type { EventType } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import { lineAmount } from '../../domain/invoice-lines.ts';
import { type DateStyle, humanizeInstants } from '../../domain/locale.ts';
import { priceFor, type PriceRow, PricingError } from '../../domain/pricing.ts';
import { serializeInvoiceItem } from '../../objects/invoice-item.ts';
import { planPricing } from '../catalog/plan-prices.ts';
import { recordEvents } from '../events/record.ts';
import { chosenCurrency } from '../subscriptions/terms.ts';
import { assignableTaxRates } from '../taxes/rates.ts';
import { clockTimeOf } from '../test-clocks/clocks.ts';

type Scope = { accountId: string; livemode: boolean };

export interface ItemPriceInput {
  amount?: number;
  unit_amount?: number;
  currency?: string;
  plan?: string;
  quantity?: number;
  description?: string;
}

export interface ItemPrice {
  currency: string;
  planId: string | null;
  quantity: number;
  unitAmount: number | null;
  amount: number;
  breakdown: PriceRow[] | null;
  description: string;
}

const maxAmount = 99_999_999;

/**
 * What an item charges: its amount, unit amount and breakdown, from the body (validated here; 400 names the field). A plan's
 * price is in `currency`, else the customer's (`customer`, when given; 400 when the plan has none in it), else the plan's own.
 */
export async function priceItem(
  em: EntityManager,
  scope: Scope,
  input: ItemPriceInput,
  customer: Pick<Customer, 'id' | 'currency'> | null = null,
): Promise<ItemPrice> {
  const given = (['amount', 'unit_amount', 'plan'] as const).filter((key) => input[key] !== undefined);
  if (given.length !== 1)
    throw new ApiError(
      'invalid_request',
      'Give exactly one of amount, unit_amount (with quantity) or plan (with quantity).',
    );
  const quantity = input.quantity ?? 1;
  if (input.amount !== undefined && input.quantity !== undefined && input.quantity !== 1)
    throw new ApiError(
      'invalid_request',
      'quantity: with amount (the whole line) the quantity is 1; use unit_amount with quantity.',
    );
  if (input.plan !== undefined) {
    const plan = await em.findOne(Plan, { id: input.plan, ...scope });
    if (!plan) throw new ApiError('not_found', `No such plan: ${input.plan}.`);
    if (!plan.active)
      throw new ApiError('plan_archived', `Plan ${plan.id} is archived; new invoice items cannot use it.`);
    const currency = chosenCurrency([plan], input.currency, customer);
    const priced = planPricing(plan, currency);
    if (!priced) throw new ApiError('currency_mismatch', `Plan ${plan.id} has no price in ${currency}.`);
    let amount: number;
    let rows: PriceRow[];
    try {
      ({ amount, rows } = priceFor(priced.pricing, quantity));
    } catch (error) {
      if (error instanceof PricingError) throw new ApiError('invalid_request', `quantity: ${error.message}`);
      throw error;
    }
    if (amount > maxAmount)
      throw new ApiError(
        'invalid_request',
        `The item would charge ${amount} (minor units), above the largest charge of ${maxAmount}.`,
      );
    const whole = quantity > 0 && amount % quantity === 0;
    return {
      currency,
      planId: plan.id,
      quantity,
      unitAmount: whole ? amount / quantity : null,
      amount,
      breakdown: priced.pricing.scheme === 'per_unit' ? null : rows,
      description: input.description ?? plan.name,
    };
  }
  if (!input.currency) throw new ApiError('invalid_request', 'currency: required with amount or unit_amount.');
  if (!input.description)
    throw new ApiError(
      'invalid_request',
      'description: required with amount or unit_amount (what the customer reads on the invoice).',
    );
  const unit = input.amount ?? input.unit_amount!;
  const amount = unit * quantity;
  if (Math.abs(amount) > maxAmount)
    throw new ApiError(
      'invalid_request',
      `The item would charge ${amount} (minor units); at most ${maxAmount} either way.`,
    );
  return {
    currency: input.currency,
    planId: null,
    quantity,
    unitAmount: unit,
    amount,
    breakdown: null,
    description: input.description,
  };
}

/** The invoice line an item becomes: the same amount, unit amount, quantity and breakdown. */
export function itemLine(item: InvoiceItem): InvoiceLine {
  const unit = item.unitAmount === null || item.unitAmount === undefined ? null : Number(item.unitAmount);
  return {
    description: item.description,
    amount: unit,
    quantity: item.quantity,
    ...(unit === null ? { total: Number(item.amount) } : {}),
    ...(item.planId ? { plan: item.planId } : {}),
    ...(item.breakdown ? { breakdown: item.breakdown } : {}),
    // The item's own tax rates, which the tax calculator applies to its line instead of the defaults.
    ...(item.taxRates?.length ? { item_tax_rates: item.taxRates } : {}),
    period_start: item.periodStart.toISOString(),
    period_end: item.periodEnd.toISOString(),
    proration: false,
  };
}

async function recordItemEvent(tx: EntityManager, item: InvoiceItem, type: EventType): Promise<void> {
  await recordEvents(tx, [
    {
      accountId: item.accountId,
      livemode: item.livemode,
      type,
      object: serializeInvoiceItem(item),
      transactionId: null,
    },
  ]);
}

/** A customer of the scope, or 404. */
export async function ownCustomer(em: EntityManager, scope: Scope, id: string): Promise<Customer> {
  const customer = await em.findOne(Customer, { id, ...scope });
  if (!customer) throw new ApiError('not_found', `No such customer: ${id}.`);
  return customer;
}

/** The time of the customer's world: its test clock's, or now. */
export async function customerNow(em: EntityManager, customer: Customer): Promise<Date> {
  const clock = await clockTimeOf(em, customer.testClockId);
  return clock ? new Date(clock.now) : new Date();
}

/** Locks a draft invoice of the customer in `tx` (for an item to attach to or leave), or 400/404/409. */
async function lockDraft(
  tx: EntityManager,
  scope: Scope,
  invoiceId: string,
  item: { customerId: string; currency: string },
): Promise<Invoice> {
  const invoice = await tx.findOne(Invoice, { id: invoiceId, ...scope }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!invoice) throw new ApiError('not_found', `No such invoice: ${invoiceId}.`);
  if (invoice.status !== 'draft')
    throw new ApiError(
      'invalid_state',
      `Invoice ${invoice.id} is ${invoice.status}: items attach to draft invoices only.`,
    );
  if (invoice.customerId !== item.customerId)
    throw new ApiError('invalid_request', `invoice: ${invoice.id} is another customer's invoice.`);
  if (invoice.currency !== item.currency)
    throw new ApiError(
      'currency_mismatch',
      `invoice: ${invoice.id} is in ${invoice.currency}, the item in ${item.currency}.`,
    );
  return invoice;
}

export interface CreateItemInput extends ItemPriceInput {
  customer: string;
  invoice?: string;
  period?: { start: string; end: string };
  /** Tax rate ids for its line (services/taxes/rates.ts assignableTaxRates checks them). */
  tax_rates?: string[];
}

export async function createInvoiceItem(em: EntityManager, scope: Scope, input: CreateItemInput): Promise<InvoiceItem> {
  const customer = await ownCustomer(em, scope, input.customer);
  const price = await priceItem(em, scope, input, customer);
  const now = await customerNow(em, customer);
  const period = input.period
    ? { start: new Date(input.period.start), end: new Date(input.period.end) }
    : { start: now, end: now };
  if (period.end < period.start) throw new ApiError('invalid_request', 'period: end is before start.');
  const taxRates = input.tax_rates?.length ? await assignableTaxRates(em, scope, input.tax_rates, 'tax_rates') : null;
  return em.transactional(async (tx) => {
    if (input.invoice) await lockDraft(tx, scope, input.invoice, { customerId: customer.id, currency: price.currency });
    const item = tx.create(InvoiceItem, {
      id: newId('invoiceItem'),
      ...scope,
      customerId: customer.id,
      invoiceId: input.invoice ?? null,
      ...price,
      periodStart: period.start,
      periodEnd: period.end,
      taxRates,
      createdAt: now,
      updatedAt: now,
    });
    await tx.flush();
    if (item.invoiceId) await refreshDraft(tx, item.invoiceId);
    await recordItemEvent(tx, item, 'invoiceitem.created');
    return item;
  });
}

export async function findOwnItem(em: EntityManager, scope: Scope, id: string): Promise<InvoiceItem> {
  const item = await em.findOne(InvoiceItem, { id, ...scope });
  if (!item) throw new ApiError('not_found', `No such invoice item: ${id}.`);
  return item;
}

/** Locks the item and, when attached, its invoice; refuses (409) an item an open (finalized) invoice took. */
async function lockEditable(tx: EntityManager, scope: Scope, id: string): Promise<InvoiceItem> {
  const seen = await tx.findOne(InvoiceItem, { id, ...scope });
  if (!seen) throw new ApiError('not_found', `No such invoice item: ${id}.`);
  // The invoice first (finalize's order: invoice, then its items), then the item.
  if (seen.invoiceId) {
    const invoice = await tx.findOne(Invoice, { id: seen.invoiceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (invoice && invoice.status !== 'draft')
      throw new ApiError(
        'invalid_state',
        `Invoice item ${id} was billed on invoice ${invoice.number} (${invoice.status}); it can no longer change.`,
      );
  }
  const item = await tx.findOneOrFail(InvoiceItem, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (item.invoiceId !== seen.invoiceId)
    throw new ApiError(
      'invalid_state',
      `Invoice item ${id} was just taken by invoice ${item.invoiceId}; it can no longer change.`,
    );
  return item;
}

export async function updateInvoiceItem(
  em: EntityManager,
  scope: Scope,
  id: string,
  input: ItemPriceInput & { invoice?: string | null; tax_rates?: string[] },
): Promise<InvoiceItem> {
  const taxRates =
    input.tax_rates === undefined ? undefined : await assignableTaxRates(em, scope, input.tax_rates, 'tax_rates');
  return em.transactional(async (tx) => {
    const item = await lockEditable(tx, scope, id);
    if (taxRates !== undefined) item.taxRates = taxRates.length > 0 ? taxRates : null;
    const repriced =
      input.amount !== undefined ||
      input.unit_amount !== undefined ||
      input.plan !== undefined ||
      input.quantity !== undefined ||
      input.currency !== undefined;
    if (repriced) {
      // Unnamed parts keep the item's: a new quantity reprices its plan or unit amount.
      const base: ItemPriceInput =
        input.amount !== undefined || input.unit_amount !== undefined || input.plan !== undefined
          ? { currency: item.currency, ...input, description: input.description ?? item.description }
          : item.planId
            ? {
                plan: item.planId,
                currency: item.currency,
                quantity: input.quantity,
                description: input.description ?? item.description,
              }
            : {
                unit_amount: Number(item.unitAmount ?? item.amount),
                currency: input.currency ?? item.currency,
                quantity: input.quantity,
                description: input.description ?? item.description,
              };
      Object.assign(item, await priceItem(tx, scope, base));
    } else if (input.description !== undefined) item.description = input.description;
    const left = item.invoiceId;
    if (input.invoice !== undefined && input.invoice !== item.invoiceId) {
      if (input.invoice !== null) await lockDraft(tx, scope, input.invoice, item);
      item.invoiceId = input.invoice;
    } else if (item.invoiceId && repriced) await lockDraft(tx, scope, item.invoiceId, item);
    const customer = await tx.findOneOrFail(Customer, { id: item.customerId });
    item.updatedAt = await customerNow(tx, customer);
    await tx.flush();
    for (const draft of new Set([left, item.invoiceId])) if (draft) await refreshDraft(tx, draft);
    await recordItemEvent(tx, item, 'invoiceitem.updated');
    return item;
  });
}

export async function deleteInvoiceItem(em: EntityManager, scope: Scope, id: string): Promise<InvoiceItem> {
  return em.transactional(async (tx) => {
    const item = await lockEditable(tx, scope, id);
    await recordItemEvent(tx, item, 'invoiceitem.deleted');
    await tx.nativeDelete(InvoiceItem, { id: item.id });
    if (item.invoiceId) await refreshDraft(tx, item.invoiceId);
    return item;
  });
}

/**
 * Takes the customer's pending items in `currency` for `invoiceId`, in the caller's transaction:
 * one UPDATE whose WHERE requires them pending, so an item is taken by exactly one invoice.
 * Answers them oldest first.
 */
export async function claimPendingItems(
  tx: EntityManager,
  input: { accountId: string; livemode: boolean; customerId: string; currency: string; invoiceId: string },
): Promise<InvoiceItem[]> {
  const claim = pendingItemsClaim(input);
  const rows = await tx
    .getConnection()
    .execute<Record<string, unknown>[]>(claim.sql, claim.bindings, 'all', tx.getTransactionContext());
  return claimedItems(tx, rows);
}

/**
 * claimPendingItems' UPDATE, to run as a part of a larger statement (services/invoices/cycle-invoices.ts runs it with the
 * late usage's claim, one round trip): it returns the claimed invoice_items rows, which `claimedItems` maps.
 */
export function pendingItemsClaim(input: {
  accountId: string;
  livemode: boolean;
  customerId: string;
  currency: string;
  invoiceId: string;
}): { sql: string; bindings: unknown[] } {
  return {
    sql: `update invoice_items set invoice_id = ? where account_id = ? and livemode = ? and customer_id = ? and currency = ? and invoice_id is null returning *`,
    bindings: [input.invoiceId, input.accountId, input.livemode, input.customerId, input.currency],
  };
}

/** The items of claimed invoice_items rows (as selected, or as JSON), oldest first. */
export function claimedItems(tx: EntityManager, rows: Record<string, unknown>[]): InvoiceItem[] {
  return rows.map((row) => tx.map(InvoiceItem, row)).sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** The items attached to an invoice, oldest first. */
export async function itemsOf(em: EntityManager, invoiceId: string): Promise<InvoiceItem[]> {
  return em.find(InvoiceItem, { invoiceId }, { orderBy: { id: 'asc' } });
}

/** The lines, subtotal and total of a set of items: the invoice adds up to the sum of its lines, exactly. */
export function totalsOf(items: InvoiceItem[]) {
  const lines = items.map(itemLine);
  const subtotal = lines.reduce((sum, line) => sum + lineAmount(line), 0);
  return { lines, subtotal, total: subtotal, amountDue: Math.max(0, subtotal) };
}

/** Rewrites a draft's lines and totals from the items attached to it (in `tx`, the draft locked by the caller), so GET shows what finalize will bill. */
export async function refreshDraft(tx: EntityManager, invoiceId: string): Promise<void> {
  const totals = totalsOf(await itemsOf(tx, invoiceId));
  await tx.nativeUpdate(Invoice, { id: invoiceId, status: 'draft' }, totals);
}

/** Which subscription invoices take the customer's pending items: a billing cycle's (the first charge, each renewal), not a plan change's. */
export const takesPendingItems = (billingKey: string): boolean => /:cycle:\d+$/.test(billingKey);

/**
 * The pickup by a subscription's next invoice (services/invoices/cycle-invoices.ts openOrCreateInvoice, in the transaction that
 * inserts it): the customer's pending items in the invoice's currency are claimed for `invoiceId` and answered as
 * lines, which go after the subscription's own.
 */
export async function pendingItemLines(
  tx: EntityManager,
  input: { accountId: string; livemode: boolean; customerId: string; currency: string; invoiceId: string },
  dateStyle: DateStyle,
): Promise<InvoiceLine[]> {
  return itemLines(await claimPendingItems(tx, input), dateStyle);
}

/** Claimed items as an invoice's lines, described in the account's words. */
export function itemLines(items: InvoiceItem[], dateStyle: DateStyle): InvoiceLine[] {
  return items.map((item) => ({ ...itemLine(item), description: humanizeInstants(item.description, dateStyle) }));
}
