import { useState } from 'react';
import { api, date, money, unwrap } from '../api.ts';
import { useSession } from '../session.tsx';
import { ActionButton, ActionForm, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

function CopyLink({ url }: { url: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        await navigator.clipboard?.writeText(url).catch(() => undefined);
        setCopied(true);
      }}
      aria-label={`Copy payment link ${url}`}
    >
      {copied ? 'Copied' : 'Copy link'}
    </button>
  );
}

export function PaymentRequests() {
  const session = useSession();
  return (
    <>
      <PageTitle>Payment requests</PageTitle>
      <ActionForm
        title="New payment request"
        submit="Create payment request"
        action={(v) =>
          unwrap(
            api.POST('/v1/payments', {
              body: {
                account_id: session.account!.id,
                amount: Math.round(Number(v.amount) * 100),
                currency: v.currency!,
                customer_email: v.customer_email!,
                reference: v.reference || undefined,
              },
            }),
          )
        }
      >
        <Field label="Amount" name="amount" type="number" required placeholder="49.00" />
        <Field label="Currency" name="currency" options={['USD', 'EUR', 'GBP']} />
        <Field label="Customer email" name="customer_email" type="email" required />
        <Field label="Reference" name="reference" />
      </ActionForm>
      <PagedTable
        label="Payment requests"
        queryKey={['payment-requests']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/payments', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Amount', cell: (p) => money(p.amount, p.currency) },
          { header: 'Customer', cell: (p) => p.customer_email },
          { header: 'Status', cell: (p) => <Status value={p.status} /> },
          { header: 'Expires', cell: (p) => date(p.expires_at) },
          {
            header: 'Actions',
            cell: (p) => (
              <div className="actions">
                {p.payment_url ? <CopyLink url={p.payment_url} /> : null}
                {p.status === 'pending' ? (
                  <ActionButton label="Cancel" confirm="Cancel this payment request?" action={() => unwrap(api.POST('/v1/payments/{id}/cancel', { params: { path: { id: p.id } } }))} />
                ) : null}
              </div>
            ),
          },
        ]}
      />
    </>
  );
}
