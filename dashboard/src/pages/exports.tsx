import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';

import { api, currentMode, date, type Schemas, unwrap } from '../api.ts';
import { ErrorNote, PagedTable, PageTitle, Status } from '../ui.tsx';

type Export = Schemas['Export'];

/** Every resource POST /v1/exports takes (db/entities/export.ts exportResources), as the page names it. */
const resourceNames: Record<Export['resource'], string> = {
  transactions: 'Transactions',
  balance_transactions: 'Balance transactions',
  invoices: 'Invoices',
  customers: 'Customers',
  subscriptions: 'Subscriptions',
  payouts: 'Payouts',
  plans: 'Plans',
  credit_notes: 'Credit notes',
  coupons: 'Coupons',
  promotion_codes: 'Promotion codes',
  tax_rates: 'Tax rates',
};
/** Every format it takes (exportFormats). */
const formatNames: Record<Export['format'], string> = { csv: 'CSV', xlsx: 'Excel (XLSX)', json: 'JSON', pdf: 'PDF' };
/** The resources a search query narrows (the API refuses `query` on the others). */
const searchable = new Set<Export['resource']>(['transactions', 'invoices', 'customers', 'credit_notes']);
const finished = ['succeeded', 'failed', 'expired'];

/** A file's size as people read it. */
const size = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KB`
      : `${(bytes / 1048576).toFixed(1)} MB`;

/** The exports page: any resource in any format the API offers, the account's exports with progress and download. */
export function Exports() {
  const mode = currentMode();
  const [resource, setResource] = useState<Export['resource']>('transactions');
  const [format, setFormat] = useState<Export['format']>('csv');
  const [query, setQuery] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [started, setStarted] = useState<string | null>(null);
  const latest = useQuery({
    queryKey: [mode, 'export', started],
    enabled: started !== null,
    queryFn: () => unwrap(api.GET('/v1/exports/{id}', { params: { path: { id: started! } } })),
    refetchInterval: (q) => (q.state.data && finished.includes(q.state.data.status) ? false : 500),
  });
  const e = latest.data;
  return (
    <>
      <PageTitle>Exports</PageTitle>
      <form
        className="card form"
        aria-label="New export"
        onSubmit={async (event) => {
          event.preventDefault();
          setError(null);
          try {
            const made = await unwrap(
              api.POST('/v1/exports', {
                body: {
                  resource,
                  format,
                  query: searchable.has(resource) && query.trim() ? query.trim() : undefined,
                  time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC',
                },
              }),
            );
            setStarted(made.id);
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        <h2>New export</h2>
        <div className="filters">
          <div className="field">
            <label htmlFor="export-resource">What</label>
            <select
              id="export-resource"
              value={resource}
              onChange={(event) => setResource(event.target.value as Export['resource'])}
            >
              {(Object.keys(resourceNames) as Export['resource'][]).map((r) => (
                <option key={r} value={r}>
                  {resourceNames[r]}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="export-format">Format</label>
            <select
              id="export-format"
              value={format}
              onChange={(event) => setFormat(event.target.value as Export['format'])}
            >
              {(Object.keys(formatNames) as Export['format'][]).map((f) => (
                <option key={f} value={f}>
                  {formatNames[f]}
                </option>
              ))}
            </select>
          </div>
          {searchable.has(resource) ? (
            <div className="field">
              <label htmlFor="export-query">Search (optional)</label>
              <input
                id="export-query"
                value={query}
                placeholder="status:succeeded"
                onChange={(event) => setQuery(event.target.value)}
              />
            </div>
          ) : null}
        </div>
        <ErrorNote error={error ?? latest.error} />
        <button type="submit">Export</button>
        {e ? (
          <div className="export-status" aria-live="polite">
            <span>
              {resourceNames[e.resource]} ({formatNames[e.format]}): {e.status} · {e.progress.rows_written}
              {e.progress.rows_expected !== null ? ` of ${e.progress.rows_expected}` : ''} rows
            </span>{' '}
            <Download e={e} />
            {e.error ? <span className="error">{e.error}</span> : null}
          </div>
        ) : null}
      </form>
      <PagedTable<Export>
        label="Exports"
        queryKey={['exports', started, e?.status]}
        empty="No exports yet."
        fetchPage={(cursor) => unwrap(api.GET('/v1/exports', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'What', cell: (x) => resourceNames[x.resource] ?? x.resource },
          { header: 'Format', cell: (x) => formatNames[x.format] ?? x.format },
          { header: 'Status', cell: (x) => <Status value={x.status} /> },
          { header: 'Rows', cell: (x) => String(x.progress.rows_written) },
          { header: 'Size', cell: (x) => (x.file ? size(x.file.size) : '—') },
          { header: 'Created', cell: (x) => date(x.created_at) },
          { header: 'File', cell: (x) => <Download e={x} /> },
        ]}
      />
    </>
  );
}

/** The file of a finished export (its link, valid until it expires), else what it is waiting for. */
function Download({ e }: { e: Export }) {
  if (e.status === 'succeeded' && e.url)
    return (
      <a href={e.url} download>
        Download {e.format.toUpperCase()}
      </a>
    );
  return <span className="muted">{e.status === 'expired' ? 'expired' : '—'}</span>;
}
