import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';

import { api, currentMode, date, money, toMinor, unwrap } from '../api.ts';
import { CustomerByEmail } from '../pickers.tsx';
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
  // A payment request is in the account's currency (the API answers currency_mismatch to any other): it is the only choice.
  const account = useQuery({ queryKey: [currentMode(), 'account'], queryFn: () => unwrap(api.GET('/v1/account')) });
  const currency = account.data?.settings?.currency;
  return (
    <>
      <PageTitle>Payment requests</PageTitle>
      <ActionForm
        title="New payment request"
        submit="Create payment request"
        action={(v) => {
          const amount = toMinor(v.amount ?? '', v.currency!);
          if (amount === null || amount <= 0)
            return Promise.reject(new Error(`Type an amount in ${v.currency}, like 49.00.`));
          return unwrap(
            api.POST('/v1/payments', {
              body: {
                account_id: session.account!.id,
                amount,
                currency: v.currency!,
                customer_email: v.customer_email!,
                reference: v.reference || undefined,
              },
            }),
          );
        }}
      >
        <Field label="Amount" name="amount" required placeholder="49.00" />
        {currency ? (
          <Field key={currency} label="Currency" name="currency" options={[currency]} defaultValue={currency} />
        ) : (
          <p>Loading the account's currency…</p>
        )}
        <Field label="Customer email" name="customer_email" type="email" required />
        <Field label="Reference" name="reference" />
      </ActionForm>
      <PagedTable
        label="Payment requests"
        queryKey={['payment-requests']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/payments', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Amount', cell: (p) => money(p.amount, p.currency) },
          { header: 'Customer', cell: (p) => <CustomerByEmail email={p.customer_email} /> },
          { header: 'Status', cell: (p) => <Status value={p.status} /> },
          { header: 'Expires', cell: (p) => date(p.expires_at) },
          {
            header: 'Actions',
            cell: (p) => (
              <div className="actions">
                {p.payment_url ? <CopyLink url={p.payment_url} /> : null}
                {p.status === 'pending' ? (
                  <ActionButton
                    label="Cancel"
                    confirm="Cancel this payment request?"
                    action={() => unwrap(api.POST('/v1/payments/{id}/cancel', { params: { path: { id: p.id } } }))}
                  />
                ) : null}
              </div>
            ),
          },
        ]}
      />
    </>
  );
}
