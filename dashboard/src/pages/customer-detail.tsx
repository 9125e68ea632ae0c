/**
 * A customer's page: their facts (and currency, when the engine has one), the portal link, their
 * subscriptions, their usage of the month per meter and their upcoming invoices, payments and
 * refunds (a refund in part from here), edit, billing details, pending invoice items, a new one-off
 * invoice, their invoices and their timeline.
 */
import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { useId, useState } from 'react';

import { api, call, currentMode, date, money, type Schemas, unwrap } from '../api.ts';
import { CustomerPicker } from '../pickers.tsx';
import { ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';
import { CustomerPayments, CustomerSubscriptions, CustomerTimeline } from './customer-activity.tsx';
import { CustomerBilling } from './customer-billing.tsx';
import { CustomerUpcomingInvoices, CustomerUsage } from './customer-usage.tsx';
import { PendingItems } from './invoice-items.tsx';
import { PortalLinkButton } from './portal-link.tsx';

/** The customer as the API answers it; `currency` and the tax fields arrive in this release (the generated types may not name them yet). */
export type CustomerView = Schemas['Customer'] & {
  currency?: string | null;
  balances?: Record<string, number>;
  tax_exempt?: 'none' | 'exempt' | 'reverse';
  address?: {
    country?: string | null;
    state?: string | null;
    postal_code?: string | null;
    city?: string | null;
    line1?: string | null;
    line2?: string | null;
  } | null;
  discount?: unknown;
};

export function useCustomer(id: string) {
  return useQuery({
    queryKey: [currentMode(), 'customer', id],
    queryFn: () => unwrap(api.GET('/v1/customers/{id}', { params: { path: { id } } })) as Promise<CustomerView>,
  });
}

/** A one-off invoice's draft for this customer; the page of the new draft opens. */
export function NewInvoiceForm({
  customerId,
  defaultCurrency,
}: {
  customerId?: string;
  defaultCurrency?: string | null;
}) {
  const navigate = useNavigate();
  const [method, setMethod] = useState<'charge_automatically' | 'send_invoice'>('charge_automatically');
  const id = useId();
  return (
    <ActionForm
      title="New one-off invoice"
      submit="Create draft invoice"
      action={(v) =>
        unwrap(
          api.POST('/v1/invoices', {
            body: {
              customer: customerId ?? v.customer!,
              collection_method: method,
              days_until_due: method === 'send_invoice' ? Number(v.days_until_due || 0) : undefined,
              description: v.description || undefined,
              currency: v.currency ? v.currency.toUpperCase() : undefined,
              pending_invoice_items_behavior: v.pending === 'exclude' ? 'exclude' : 'include',
            },
          }),
        )
      }
      done={(invoice) => navigate({ to: '/invoices/$id', params: { id: (invoice as { id: string }).id } })}
    >
      {customerId ? null : <CustomerPicker name="customer" required />}
      <div className="field">
        <label htmlFor={`${id}-method`}>Collection</label>
        <select id={`${id}-method`} value={method} onChange={(e) => setMethod(e.target.value as typeof method)}>
          <option value="charge_automatically">Charge the payment method at finalize</option>
          <option value="send_invoice">Email the invoice with a pay link</option>
        </select>
      </div>
      {method === 'send_invoice' ? (
        <Field label="Days until due" name="days_until_due" type="number" required defaultValue={30} />
      ) : null}
      <Field
        label="Currency"
        name="currency"
        defaultValue={defaultCurrency ?? ''}
        placeholder="from the pending items"
      />
      <div className="field">
        <label htmlFor={`${id}-pending`}>Pending items</label>
        <select id={`${id}-pending`} name="pending" defaultValue="include">
          <option value="include">Include the pending items now</option>
          <option value="exclude">Leave them pending</option>
        </select>
      </div>
      <Field label="Note to the customer" name="description" />
    </ActionForm>
  );
}

function EditCustomer({ customer }: { customer: CustomerView }) {
  const hasCurrency = 'currency' in customer;
  return (
    <ActionForm
      title="Edit customer"
      submit="Save customer"
      action={(v) => {
        const body: Record<string, unknown> = {};
        if (v.email && v.email !== customer.email) body.email = v.email;
        if ((v.name ?? '') !== (customer.name ?? '')) body.name = v.name ? v.name : null;
        if (hasCurrency && (v.currency ?? '').toUpperCase() !== (customer.currency ?? ''))
          body.currency = v.currency ? v.currency.toUpperCase() : null;
        return call('PATCH', `/v1/customers/${customer.id}`, { body });
      }}
    >
      <Field
        key={`email-${customer.updated_at}`}
        label="Email"
        name="email"
        type="email"
        defaultValue={customer.email}
      />
      <Field key={`name-${customer.updated_at}`} label="Name" name="name" defaultValue={customer.name ?? ''} />
      {hasCurrency ? (
        <Field
          key={`currency-${customer.updated_at}`}
          label="Currency"
          name="currency"
          defaultValue={customer.currency ?? ''}
          placeholder="USD"
        />
      ) : null}
    </ActionForm>
  );
}

export function CustomerDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const customer = useCustomer(id);
  const c = customer.data;
  return (
    <>
      <PageTitle>Customer {c ? (c.name ?? c.email) : id}</PageTitle>
      <p>
        <Link to="/customers">All customers</Link>
      </p>
      <ErrorNote error={customer.error} />
      {c ? (
        <>
          <section className="card" aria-label="Customer">
            <dl className="facts">
              <dt>Email</dt>
              <dd>{c.email}</dd>
              <dt>Name</dt>
              <dd>{c.name ?? '—'}</dd>
              <dt>ID</dt>
              <dd>
                <code>{c.id}</code>
              </dd>
              {'currency' in c ? (
                <>
                  <dt>Currency</dt>
                  <dd>{c.currency ?? 'not set (the first subscription or invoice sets it)'}</dd>
                </>
              ) : null}
              <dt>Payment method</dt>
              <dd>{c.payment_method ?? 'none'}</dd>
              {c.test_clock ? (
                <>
                  <dt>Test clock</dt>
                  <dd>
                    <code>{c.test_clock}</code>
                  </dd>
                </>
              ) : null}
              <dt>Created</dt>
              <dd>{date(c.created_at)}</dd>
            </dl>
            <PortalLinkButton customerId={c.id} />
          </section>
          <CustomerSubscriptions customerId={c.id} />
          <CustomerUsage customerId={c.id} testClock={c.test_clock} />
          <CustomerUpcomingInvoices customerId={c.id} />
          <CustomerPayments customerId={c.id} />
          <EditCustomer customer={c} />
          <CustomerBilling customer={c} />
          <PendingItems key={`items-${c.currency ?? ''}`} customerId={c.id} defaultCurrency={c.currency ?? undefined} />
          <NewInvoiceForm key={`invoice-${c.currency ?? ''}`} customerId={c.id} defaultCurrency={c.currency} />
          <h2>Invoices</h2>
          <PagedTable
            label="Invoices of the customer"
            queryKey={['invoices', 'customer', c.id]}
            fetchPage={(cursor) =>
              unwrap(api.GET('/v1/invoices', { params: { query: { limit: 20, ...cursor, customer: c.id } } }))
            }
            empty="No invoices yet."
            columns={[
              {
                header: 'Number',
                cell: (i: Schemas['Invoice']) => (
                  <Link to="/invoices/$id" params={{ id: i.id }}>
                    {i.number ?? `Draft ${i.id}`}
                  </Link>
                ),
              },
              { header: 'Total', cell: (i) => money(i.total, i.currency) },
              { header: 'Status', cell: (i) => <Status value={i.status} /> },
              { header: 'Created', cell: (i) => date(i.created_at) },
            ]}
          />
          <CustomerTimeline customerId={c.id} />
        </>
      ) : null}
    </>
  );
}
