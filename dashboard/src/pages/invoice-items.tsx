/**
 * Invoice items (docs/invoices.md#invoice-items): a customer's one-off charges, pending until an
 * invoice takes them, or attached to a draft invoice. Shown on a customer's page (pending ones)
 * and on a draft invoice's page (attached ones, and the pending ones it can take).
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';

import { api, currentMode, date, money, type Schemas, toMinor, unwrap } from '../api.ts';
import { ActionButton, ErrorNote } from '../ui.tsx';

export type InvoiceItem = Schemas['InvoiceItem'];

export function useActivePlans() {
  return useQuery({
    queryKey: [currentMode(), 'plans', 'active'],
    queryFn: () => unwrap(api.GET('/v1/plans', { params: { query: { limit: 100, active: 'true' } } })),
  });
}

/** The amount of an item in words: "3 × $50.00 = $150.00", or the amount alone. */
export function itemAmount(item: Pick<InvoiceItem, 'quantity' | 'unit_amount' | 'amount' | 'currency'>): string {
  if (item.unit_amount !== null && item.quantity !== 1)
    return `${item.quantity} × ${money(item.unit_amount, item.currency)} = ${money(item.amount, item.currency)}`;
  if (item.unit_amount === null && item.quantity !== 1)
    return `${item.quantity} units = ${money(item.amount, item.currency)}`;
  return money(item.amount, item.currency);
}

type PriceBy = 'amount' | 'unit_amount' | 'plan';

/**
 * Creates an invoice item: a whole amount, a unit amount × quantity, or a plan × quantity priced by
 * its scheme. With `invoice` the item is attached to that draft (in its currency); without, pending.
 */
export function InvoiceItemForm(props: {
  customerId: string;
  invoice?: { id: string; currency: string };
  defaultCurrency?: string;
}) {
  const client = useQueryClient();
  const plans = useActivePlans();
  const [priceBy, setPriceBy] = useState<PriceBy>('amount');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();
  const title = props.invoice ? 'Add an item to this invoice' : 'New invoice item';
  const fixedCurrency = props.invoice?.currency;

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const v = Object.fromEntries([...new FormData(form).entries()].map(([k, value]) => [k, String(value).trim()]));
    const currency = fixedCurrency ?? v.currency ?? 'USD';
    const quantity = v.quantity ? Number(v.quantity) : undefined;
    const body: Record<string, unknown> = {
      customer: props.customerId,
      ...(props.invoice ? { invoice: props.invoice.id } : {}),
    };
    if (v.description) body.description = v.description;
    setError(null);
    if (priceBy === 'plan') {
      body.plan = v.plan;
      if (quantity !== undefined) body.quantity = quantity;
      if (fixedCurrency) body.currency = fixedCurrency;
    } else {
      const minor = toMinor(v.amount ?? '', currency);
      if (minor === null) {
        setError(new Error(`${priceBy}: must be an amount in ${currency} like 150.00.`));
        return;
      }
      body[priceBy] = minor;
      body.currency = currency;
      if (priceBy === 'unit_amount' && quantity !== undefined) body.quantity = quantity;
    }
    setBusy(true);
    try {
      await unwrap(api.POST('/v1/invoice_items', { body: body as never }));
      form.reset();
      setPriceBy('amount');
      await client.invalidateQueries();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="card form" onSubmit={onSubmit} aria-label={title}>
      <h2>{title}</h2>
      <div className="field">
        <label htmlFor={`${id}-by`}>Price by</label>
        <select id={`${id}-by`} value={priceBy} onChange={(e) => setPriceBy(e.target.value as PriceBy)}>
          <option value="amount">Amount</option>
          <option value="unit_amount">Unit amount × quantity</option>
          <option value="plan">Plan × quantity</option>
        </select>
      </div>
      {priceBy === 'plan' ? (
        <div className="field">
          <label htmlFor={`${id}-plan`}>Plan</label>
          <select id={`${id}-plan`} name="plan" required>
            {(plans.data?.data ?? []).map((plan) => (
              <option key={plan.id} value={plan.id}>
                {plan.name} ({plan.currency})
              </option>
            ))}
          </select>
        </div>
      ) : (
        <div className="field">
          <label htmlFor={`${id}-amount`}>{priceBy === 'amount' ? 'Amount' : 'Unit amount'}</label>
          <input id={`${id}-amount`} name="amount" inputMode="decimal" required placeholder="150.00" />
        </div>
      )}
      {priceBy !== 'amount' ? (
        <div className="field">
          <label htmlFor={`${id}-quantity`}>Quantity</label>
          <input id={`${id}-quantity`} name="quantity" type="number" min={1} step={1} defaultValue={1} />
        </div>
      ) : null}
      {priceBy !== 'plan' && !fixedCurrency ? (
        <div className="field">
          <label htmlFor={`${id}-currency`}>Currency</label>
          <input
            id={`${id}-currency`}
            name="currency"
            required
            defaultValue={props.defaultCurrency ?? 'USD'}
            maxLength={3}
            size={4}
          />
        </div>
      ) : null}
      <div className="field grow">
        <label htmlFor={`${id}-description`}>Description</label>
        <input
          id={`${id}-description`}
          name="description"
          required={priceBy !== 'plan'}
          placeholder={priceBy === 'plan' ? "The plan's name" : 'Onboarding workshop (2 hours)'}
        />
      </div>
      {fixedCurrency ? <p className="muted">In {fixedCurrency}, the invoice's currency.</p> : null}
      <ErrorNote error={error} />
      <button type="submit" disabled={busy}>
        {props.invoice ? 'Add item' : 'Create invoice item'}
      </button>
    </form>
  );
}

/** A table of invoice items with the actions their state allows (`actions` per row). */
export function InvoiceItemsTable(props: {
  label: string;
  items: InvoiceItem[];
  empty: string;
  actions: (item: InvoiceItem) => React.ReactNode;
}) {
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={props.label}>
      <table>
        <caption className="visually-hidden">{props.label}</caption>
        <thead>
          <tr>
            <th scope="col">Description</th>
            <th scope="col">Price</th>
            <th scope="col">Amount</th>
            <th scope="col">Period</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((item) => (
            <tr key={item.id}>
              <td data-label="Description">
                {item.description} <code>{item.id}</code>
              </td>
              <td data-label="Price">
                {item.plan ? (
                  <code>{item.plan}</code>
                ) : item.unit_amount !== null && item.quantity !== 1 ? (
                  'Unit amount'
                ) : (
                  'Amount'
                )}
              </td>
              <td data-label="Amount">{itemAmount(item)}</td>
              <td data-label="Period">
                {item.period_start === item.period_end
                  ? date(item.period_start)
                  : `${date(item.period_start)} – ${date(item.period_end)}`}
              </td>
              <td data-label="Actions">
                <div className="actions">{props.actions(item)}</div>
              </td>
            </tr>
          ))}
          {props.items.length === 0 ? (
            <tr>
              <td colSpan={5}>{props.empty}</td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </div>
  );
}

/** A customer's pending invoice items: what their next invoice will bill. */
export function PendingItems({ customerId, defaultCurrency }: { customerId: string; defaultCurrency?: string }) {
  const items = useQuery({
    queryKey: [currentMode(), 'invoice-items', customerId, 'pending'],
    queryFn: () =>
      unwrap(
        api.GET('/v1/invoice_items', { params: { query: { customer: customerId, pending: 'true', limit: 100 } } }),
      ),
  });
  return (
    <section aria-label="Pending invoice items">
      <h2>Pending invoice items</h2>
      <p className="muted">
        One-off charges the customer's next invoice bills (a renewal of a subscription in their currency, or a one-off
        invoice).
      </p>
      <ErrorNote error={items.error} />
      <InvoiceItemsTable
        label="Pending invoice items of the customer"
        items={items.data?.data ?? []}
        empty={items.isLoading ? 'Loading…' : 'No pending invoice items.'}
        actions={(item) => (
          <ActionButton
            label={`Delete ${item.description}`}
            className="danger"
            confirm={`Delete the pending item "${item.description}"?`}
            action={() => unwrap(api.DELETE('/v1/invoice_items/{id}', { params: { path: { id: item.id } } }))}
          />
        )}
      />
      <InvoiceItemForm customerId={customerId} defaultCurrency={defaultCurrency} />
    </section>
  );
}
