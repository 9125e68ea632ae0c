import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api, currentMode, date, money, unwrap, type Schemas } from '../api.ts';
import { ActionButton, ErrorNote, PagedTable, PageTitle, Status, type Column } from '../ui.tsx';

function RefundButton({ t }: { t: Schemas['Transaction'] }) {
  if (t.type !== 'payment' || t.status !== 'succeeded' || t.refunded) return null;
  return (
    <ActionButton
      label={`Refund ${money(t.amount - t.amount_refunded, t.currency)}`}
      confirm={`Refund ${money(t.amount - t.amount_refunded, t.currency)} of ${t.id}?`}
      action={() =>
        unwrap(
          api.POST('/v1/transactions', {
            body: { account_id: t.account_id, type: 'refund', amount: t.amount - t.amount_refunded, currency: t.currency, source_transaction: t.id },
            headers: { 'Idempotency-Key': `refund-${t.id}-${t.amount_refunded}` },
          }),
        )
      }
    />
  );
}

const columns: Column<Schemas['Transaction']>[] = [
  { header: 'Amount', cell: (t) => money(t.amount, t.currency) },
  { header: 'Type', cell: (t) => t.type },
  { header: 'Status', cell: (t) => <Status value={t.refunded ? 'refunded' : t.status} /> },
  { header: 'Reference', cell: (t) => t.reference ?? '—' },
  { header: 'Created', cell: (t) => date(t.created_at) },
  { header: 'Actions', cell: (t) => <RefundButton t={t} /> },
];

/** Starts an export of what the search shows (or everything), follows its progress, then offers the file. */
function ExportPanel({ query }: { query: string }) {
  const [exportId, setExportId] = useState<string | null>(null);
  const [format, setFormat] = useState<'csv' | 'xlsx'>('csv');
  const [error, setError] = useState<unknown>(null);
  const mode = currentMode();
  const current = useQuery({
    queryKey: [mode, 'export', exportId],
    enabled: exportId !== null,
    queryFn: () => unwrap(api.GET('/v1/exports/{id}', { params: { path: { id: exportId! } } })),
    refetchInterval: (q) => (q.state.data && ['succeeded', 'failed', 'expired'].includes(q.state.data.status) ? false : 500),
  });
  useEffect(() => setExportId(null), [query]);
  const e = current.data;
  const written = e?.progress.rows_written ?? 0;
  const expected = e?.progress.rows_expected ?? null;
  return (
    <section className="card" aria-label="Export">
      <h2>Export</h2>
      <div className="filters">
        <div className="field">
          <label htmlFor="export-format">Format</label>
          <select id="export-format" value={format} onChange={(event) => setFormat(event.target.value as 'csv' | 'xlsx')}>
            <option>csv</option>
            <option>xlsx</option>
          </select>
        </div>
        <button
          type="button"
          onClick={async () => {
            setError(null);
            try {
              const started = await unwrap(api.POST('/v1/exports', { body: { resource: 'transactions', format, query: query || undefined } }));
              setExportId(started.id);
            } catch (failure) {
              setError(failure);
            }
          }}
        >
          Export transactions
        </button>
      </div>
      <ErrorNote error={error ?? current.error} />
      {e ? (
        <div className="export-status" aria-live="polite">
          <progress max={expected ?? undefined} value={e.status === 'succeeded' ? (expected ?? written) : written} aria-label="Export progress" />{' '}
          <span>
            {e.status} · {written}
            {expected !== null ? ` of ${expected}` : ''} rows
          </span>{' '}
          {e.status === 'succeeded' && e.url ? (
            <a href={e.url} download>
              Download {e.format.toUpperCase()}
            </a>
          ) : null}
          {e.error ? <span className="error">{e.error}</span> : null}
        </div>
      ) : null}
    </section>
  );
}

export function Transactions() {
  const [draft, setDraft] = useState('');
  const [query, setQuery] = useState('');
  const [page, setPage] = useState<string | undefined>(undefined);
  const mode = currentMode();
  const search = useQuery({
    queryKey: [mode, 'transaction-search', query, page],
    enabled: query !== '',
    queryFn: () => unwrap(api.GET('/v1/transactions/search', { params: { query: { query, limit: 20, page } } })),
  });
  return (
    <>
      <PageTitle>Transactions</PageTitle>
      <form
        className="filters"
        role="search"
        aria-label="Search transactions"
        onSubmit={(event) => {
          event.preventDefault();
          setPage(undefined);
          setQuery(draft.trim());
        }}
      >
        <div className="field grow">
          <label htmlFor="tx-search">Search</label>
          <input id="tx-search" value={draft} onChange={(event) => setDraft(event.target.value)} placeholder='status:succeeded amount>1000 email~"ada"' />
        </div>
        <button type="submit">Search</button>
      </form>
      <ExportPanel query={query} />
      {query ? (
        <section aria-label="Search results">
          <ErrorNote error={search.error} />
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Search results table">
            <table>
              <caption className="visually-hidden">Search results</caption>
              <thead>
                <tr>
                  {columns.map((c) => (
                    <th key={c.header} scope="col">
                      {c.header}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {(search.data?.data ?? []).map((t) => (
                  <tr key={t.id}>
                    {columns.map((c) => (
                      <td key={c.header} data-label={c.header}>
                        {c.cell(t)}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav className="pager" aria-label="Search result pages">
            <button type="button" disabled={!search.data?.next_page} onClick={() => setPage(search.data?.next_page ?? undefined)}>
              Next page
            </button>
          </nav>
        </section>
      ) : (
        <PagedTable label="Transactions" queryKey={['transactions']} fetchPage={(cursor) => unwrap(api.GET('/v1/transactions', { params: { query: { limit: 20, ...cursor } } }))} columns={columns} />
      )}
    </>
  );
}
