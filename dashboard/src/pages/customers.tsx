import { Link } from '@tanstack/react-router';
import { api, currentMode, date, unwrap } from '../api.ts';
import { ActionForm, Field, PagedTable, PageTitle } from '../ui.tsx';
import { PortalLinkButton } from './portal-link.tsx';

export function Customers() {
  return (
    <>
      <PageTitle>Customers</PageTitle>
      <ActionForm
        title="New customer"
        submit="Create customer"
        action={(v) =>
          unwrap(
            api.POST('/v1/customers', {
              body: { email: v.email!, name: v.name || undefined, payment_method: currentMode() === 'test' && v.payment_method ? (v.payment_method as 'pm_card_visa') : undefined },
            }),
          )
        }
      >
        <Field label="Email" name="email" type="email" required />
        <Field label="Name" name="name" />
        {currentMode() === 'test' ? <Field label="Test payment method" name="payment_method" options={['pm_card_visa', 'pm_card_mastercard', 'pm_card_chargeDeclined', '']} /> : null}
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
          { header: 'ID', cell: (c) => <code>{c.id}</code> },
          { header: 'Created', cell: (c) => date(c.created_at) },
          { header: 'Portal', cell: (c) => <PortalLinkButton customerId={c.id} /> },
        ]}
      />
    </>
  );
}
