/**
 * A customer's tax details, tax ids, discount and balance (issue #27), shown as the engine's APIs
 * have them: a section whose fields the customer object does not carry is left out.
 */
import { useId, useState } from 'react';

import { call, date, money, toMinor } from '../api.ts';
import {
  type CustomerBalanceTransaction,
  type Discount,
  type ListOf,
  type TaxId,
  taxIdTypes,
} from '../billing-types.ts';
import { ActionButton, ActionForm, Field, PagedTable } from '../ui.tsx';
import { CouponSelect, couponText } from './coupons.tsx';
import type { CustomerView } from './customer-detail.tsx';

type Customer = CustomerView & { balances?: Record<string, number>; discount?: Discount | null };

/** A balance in words with Stripe's sign: negative is credit the customer holds. */
export function balanceText(amount: number, currency: string): string {
  if (amount === 0) return `${money(0, currency)}`;
  return amount < 0 ? `${money(-amount, currency)} credit` : `${money(amount, currency)} owed`;
}

function TaxDetails({ customer }: { customer: Customer }) {
  const id = useId();
  if (!('tax_exempt' in customer) && !('address' in customer)) return null;
  const address = customer.address ?? null;
  return (
    <ActionForm
      title="Tax details"
      submit="Save tax details"
      action={(v) => {
        const body: Record<string, unknown> = {};
        if ('tax_exempt' in customer) body.tax_exempt = v.tax_exempt;
        if ('address' in customer) {
          const next = {
            country: v.country || null,
            state: v.state || null,
            postal_code: v.postal_code || null,
            city: v.city || null,
            line1: v.line1 || null,
            line2: v.line2 || null,
          };
          body.address = Object.values(next).some(Boolean)
            ? Object.fromEntries(Object.entries(next).filter(([, value]) => value !== null))
            : null;
        }
        return call('PATCH', `/v1/customers/${customer.id}`, { body });
      }}
    >
      {'tax_exempt' in customer ? (
        <div className="field">
          <label htmlFor={`${id}-exempt`}>Tax exempt</label>
          <select
            id={`${id}-exempt`}
            name="tax_exempt"
            key={`exempt-${customer.updated_at}`}
            defaultValue={customer.tax_exempt ?? 'none'}
          >
            <option value="none">None (taxed)</option>
            <option value="exempt">Exempt (no tax)</option>
            <option value="reverse">Reverse charge (no tax, the legal note)</option>
          </select>
        </div>
      ) : null}
      {'address' in customer ? (
        <>
          <Field
            key={`country-${customer.updated_at}`}
            label="Country"
            name="country"
            defaultValue={address?.country ?? ''}
            placeholder="DE"
          />
          <Field
            key={`state-${customer.updated_at}`}
            label="State"
            name="state"
            defaultValue={address?.state ?? ''}
            placeholder="CA"
          />
          <Field
            key={`postal-${customer.updated_at}`}
            label="Postal code"
            name="postal_code"
            defaultValue={address?.postal_code ?? ''}
          />
          <Field key={`city-${customer.updated_at}`} label="City" name="city" defaultValue={address?.city ?? ''} />
          <Field
            key={`line1-${customer.updated_at}`}
            label="Address line 1"
            name="line1"
            defaultValue={address?.line1 ?? ''}
          />
          <Field
            key={`line2-${customer.updated_at}`}
            label="Address line 2"
            name="line2"
            defaultValue={address?.line2 ?? ''}
          />
        </>
      ) : null}
    </ActionForm>
  );
}

function TaxIds({ customer }: { customer: Customer }) {
  const id = useId();
  const path = `/v1/customers/${customer.id}/tax_ids`;
  return (
    <section aria-label="Tax IDs">
      <h2>Tax IDs</h2>
      <PagedTable
        label="Tax IDs of the customer"
        queryKey={['tax-ids', customer.id]}
        empty="No tax IDs."
        fetchPage={(cursor) => call<ListOf<TaxId>>('GET', path, { query: { limit: 20, ...cursor } })}
        columns={[
          { header: 'Type', cell: (t: TaxId) => t.type },
          { header: 'Value', cell: (t) => <code>{t.value}</code> },
          { header: 'Country', cell: (t) => t.country ?? '—' },
          { header: 'Added', cell: (t) => date(t.created_at) },
          {
            header: 'Actions',
            cell: (t) => (
              <ActionButton
                label={`Delete ${t.value}`}
                className="danger"
                confirm={`Delete the tax ID ${t.value}?`}
                action={() => call('DELETE', `${path}/${t.id}`)}
              />
            ),
          },
        ]}
      />
      <ActionForm
        title="Add a tax ID"
        submit="Add tax ID"
        action={(v) => call('POST', path, { body: { type: v.type, value: v.value } })}
      >
        <div className="field">
          <label htmlFor={`${id}-type`}>Type</label>
          <select id={`${id}-type`} name="type" defaultValue="eu_vat">
            {taxIdTypes.map(([type, label]) => (
              <option key={type} value={type}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <Field label="Tax ID" name="value" required placeholder="DE136695976" />
      </ActionForm>
    </section>
  );
}

/**
 * A discount in force and the forms that change it: a customer's own (`/v1/customers/{id}/discount`, all its invoices) or a
 * subscription's (`/v1/subscriptions/{id}/discount`, which comes first). `known` is the discount the object carries, when it
 * carries one (undefined: the object has no such field, so the page shows what it last applied).
 */
export function DiscountCard({
  path,
  known,
  about,
}: {
  path: string;
  known: Discount | null | undefined;
  about: string;
}) {
  const id = useId();
  const [by, setBy] = useState<'coupon' | 'promotion_code'>('coupon');
  const [applied, setApplied] = useState<Discount | null | undefined>(undefined);
  const current = applied !== undefined ? applied : known;
  return (
    <section className="card" aria-label="Discount">
      <h2>Discount</h2>
      {current ? (
        <p>
          <strong>{current.coupon.name ?? current.coupon.id}</strong>: {couponText(current.coupon)}
          {current.promotion_code ? ` (code ${current.promotion_code})` : ''}, since {date(current.start)}
          {current.end ? `, until ${date(current.end)}` : ''}.
        </p>
      ) : current === null ? (
        <p>No discount.</p>
      ) : null}
      <p className="muted">{about}</p>
      <ActionForm
        title="Apply a discount"
        submit="Apply discount"
        action={(v) =>
          call<{ discount: Discount | null }>('POST', path, {
            body: by === 'coupon' ? { coupon: v.coupon } : { promotion_code: v.promotion_code },
          })
        }
        done={(answer) => setApplied((answer as { discount: Discount | null }).discount)}
      >
        <div className="field">
          <label htmlFor={`${id}-by`}>Apply</label>
          <select id={`${id}-by`} value={by} onChange={(e) => setBy(e.target.value as typeof by)}>
            <option value="coupon">A coupon</option>
            <option value="promotion_code">A promotion code</option>
          </select>
        </div>
        {by === 'coupon' ? (
          <CouponSelect id={`${id}-coupon`} />
        ) : (
          <Field label="Promotion code" name="promotion_code" required placeholder="SPRING20" />
        )}
      </ActionForm>
      {current !== null ? (
        <ActionButton
          label="Remove discount"
          className="danger"
          confirm="Remove this discount? It stops applying now."
          action={() => call('DELETE', path)}
          done={() => setApplied(null)}
        />
      ) : null}
    </section>
  );
}

function Balance({ customer }: { customer: Customer }) {
  const id = useId();
  const [direction, setDirection] = useState<'credit' | 'debit'>('credit');
  const balances = Object.entries(customer.balances ?? {});
  const path = `/v1/customers/${customer.id}/balance_transactions`;
  return (
    <section aria-label="Balance">
      <h2>Balance</h2>
      <p data-testid="customer-balance">
        {balances.length
          ? balances.map(([currency, amount]) => balanceText(amount, currency)).join(', ')
          : 'No balance.'}
      </p>
      <p className="muted">
        Credit is used by the customer's next invoices in its currency before anything is charged; an amount owed is
        added to the next invoice.
      </p>
      <PagedTable
        label="Balance transactions"
        queryKey={['balance-transactions', customer.id]}
        empty="No balance transactions."
        fetchPage={(cursor) =>
          call<ListOf<CustomerBalanceTransaction>>('GET', path, { query: { limit: 20, ...cursor } })
        }
        columns={[
          { header: 'Type', cell: (t: CustomerBalanceTransaction) => t.type.replaceAll('_', ' ') },
          {
            header: 'Amount',
            cell: (t) =>
              t.amount < 0 ? `${money(-t.amount, t.currency)} credit` : `${money(t.amount, t.currency)} debit`,
          },
          { header: 'Balance after', cell: (t) => balanceText(t.ending_balance, t.currency) },
          { header: 'Description', cell: (t) => t.description ?? t.invoice ?? t.credit_note ?? '—' },
          { header: 'Date', cell: (t) => date(t.created_at) },
        ]}
      />
      <ActionForm
        title="Adjust the balance"
        submit="Add adjustment"
        action={(v) => {
          const currency = (v.currency || 'USD').toUpperCase();
          const minor = toMinor(v.amount ?? '', currency);
          if (minor === null || minor <= 0)
            throw new Error(`amount: must be an amount above zero in ${currency}, like 25.00.`);
          return call('POST', path, {
            body: {
              amount: direction === 'credit' ? -minor : minor,
              currency,
              description: v.description || undefined,
            },
          });
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-direction`}>Adjustment</label>
          <select
            id={`${id}-direction`}
            value={direction}
            onChange={(e) => setDirection(e.target.value as typeof direction)}
          >
            <option value="credit">Credit the customer</option>
            <option value="debit">Charge on the next invoice</option>
          </select>
        </div>
        <Field label="Amount" name="amount" required placeholder="25.00" />
        <Field label="Currency" name="currency" defaultValue={customer.currency ?? 'USD'} />
        <Field label="Description" name="description" placeholder="Goodwill credit" />
      </ActionForm>
    </section>
  );
}

/** Tax details, tax ids, discount and balance. */
export function CustomerBilling({ customer }: { customer: CustomerView }) {
  const c = customer as Customer;
  return (
    <>
      <TaxDetails customer={c} />
      <TaxIds customer={c} />
      <DiscountCard
        path={`/v1/customers/${c.id}/discount`}
        known={'discount' in c ? (c.discount ?? null) : undefined}
        about="The customer's own discount applies to all of their invoices (a subscription's own discount comes first)."
      />
      <Balance customer={c} />
    </>
  );
}
