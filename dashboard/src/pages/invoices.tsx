import { useState } from 'react';
import { api, blobUrl, date, money, unwrap } from '../api.ts';
import { ActionButton, PagedTable, PageTitle, Status } from '../ui.tsx';

const statuses = ['open', 'paid', 'void', 'uncollectible'] as const;

export function Invoices() {
  const [status, setStatus] = useState<(typeof statuses)[number] | ''>('');
  return (
    <>
      <PageTitle>Invoices</PageTitle>
      <div className="filters" role="search" aria-label="Filter invoices">
        <div className="field">
          <label htmlFor="inv-status">Status</label>
          <select id="inv-status" value={status} onChange={(e) => setStatus(e.target.value as typeof status)}>
            <option value="">any</option>
            {statuses.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </div>
      </div>
      <PagedTable
        key={status}
        label="Invoices"
        queryKey={['invoices', status]}
        fetchPage={(cursor) => unwrap(api.GET('/v1/invoices', { params: { query: { limit: 20, ...cursor, status: status || undefined } } }))}
        columns={[
          { header: 'Number', cell: (i) => i.number ?? i.id },
          { header: 'Customer', cell: (i) => i.customer_email ?? i.customer_id },
          { header: 'Total', cell: (i) => money(i.total, i.currency) },
          { header: 'Status', cell: (i) => <Status value={i.status} /> },
          { header: 'Created', cell: (i) => date(i.created_at) },
          {
            header: 'Actions',
            cell: (i) => (
              <div className="actions">
                <ActionButton label={`PDF ${i.number ?? ''}`.trim()} action={async () => window.open(await blobUrl(`/v1/invoices/${i.id}/pdf`), '_blank')} />
                {i.status === 'open' ? (
                  <>
                    <ActionButton label="Void" confirm="Void this invoice?" action={() => unwrap(api.POST('/v1/invoices/{id}/void', { params: { path: { id: i.id } } }))} />
                    <ActionButton
                      label="Mark uncollectible"
                      action={() => unwrap(api.POST('/v1/invoices/{id}/mark_uncollectible', { params: { path: { id: i.id } } }))}
                    />
                  </>
                ) : null}
              </div>
            ),
          },
        ]}
      />
    </>
  );
}
