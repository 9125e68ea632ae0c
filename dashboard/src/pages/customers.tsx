import { Link } from '@tanstack/react-router';

import { api, call, currentMode, date, unwrap } from '../api.ts';
import { ActionForm, Field, PagedTable, PageTitle } from '../ui.tsx';
import { balanceText } from './customer-billing.tsx';
import type { CustomerView } from './customer-detail.tsx';
import { PortalLinkButton } from './portal-link.tsx';

export function Customers() {
  return (
    <>
      <PageTitle>Customers</PageTitle>
      <ActionForm
        title="New customer"
        submit="Create customer"
        action={(v) =>
          // currency (issue #26) is newer than the generated SDK types: the body goes through call().
          call('POST', '/v1/customers', {
            body: {
              email: v.email!,
              name: v.name || undefined,
              payment_method: currentMode() === 'test' && v.payment_method ? v.payment_method : undefined,
              currency: v.currency ? v.currency.toUpperCase() : undefined,
            },
          })
        }
      >
        <Field label="Email" name="email" type="email" required />
        <Field label="Name" name="name" />
        <Field label="Currency (optional)" name="currency" placeholder="USD" />
        {currentMode() === 'test' ? (
          <Field
            label="Test payment method"
            name="payment_method"
            options={['pm_card_visa', 'pm_card_mastercard', 'pm_card_chargeDeclined', '']}
          />
        ) : null}
      </ActionForm>
      <PagedTable
        label="Customers"
        queryKey={['customers']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/customers', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          {
            header: 'Email',
            cell: (c) => (
              <Link to="/customers/$id" params={{ id: c.id }}>
                {c.email}
              </Link>
            ),
          },
          { header: 'Name', cell: (c) => c.name ?? '—' },
          { header: 'Currency', cell: (c) => (c as CustomerView).currency ?? '—' },
          {
            header: 'Balance',
            cell: (c) =>
              Object.entries((c as CustomerView).balances ?? {})
                .filter(([, amount]) => amount !== 0)
                .map(([currency, amount]) => balanceText(amount, currency))
                .join(', ') || '—',
          },
          { header: 'ID', cell: (c) => <code>{c.id}</code> },
          { header: 'Created', cell: (c) => date(c.created_at) },
          { header: 'Portal', cell: (c) => <PortalLinkButton customerId={c.id} /> },
        ]}
      />
    </>
  );
}
