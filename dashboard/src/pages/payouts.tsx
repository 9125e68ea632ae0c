import { api, date, money, unwrap } from '../api.ts';
import { PagedTable, PageTitle, Status } from '../ui.tsx';

export function Payouts() {
  return (
    <>
      <PageTitle>Payouts</PageTitle>
      <section className="card" aria-label="Bank accounts" id="bank-accounts">
        <h2>Bank accounts and schedule</h2>
        {/* Bank accounts (/v1/bank_accounts), the payout schedule (/v1/payout_settings) and holds (/v1/payout_holds) are being rebuilt; their forms go here. */}
        <p>Bank account setup, the payout schedule and holds arrive with the new payouts API.</p>
      </section>
      <PagedTable
        label="Payouts"
        queryKey={['payouts']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/payouts', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Amount', cell: (p) => money(p.amount, p.currency) },
          { header: 'Status', cell: (p) => <Status value={p.status} /> },
          { header: 'Method', cell: (p) => p.method },
          { header: 'Created', cell: (p) => date(p.created_at) },
          { header: 'Paid', cell: (p) => date(p.paid_at) },
        ]}
      />
    </>
  );
}
