import { useQuery } from '@tanstack/react-query';
import { useEffect, useId, useState } from 'react';

import { currencyExponent } from '../../../domain/money.ts';
import { api, currentMode, date, money, type Schemas, toMinor, unwrap } from '../api.ts';
import { CustomerName } from '../pickers.tsx';
import { ActionButton, type Column, ErrorNote, PagedTable, PageTitle, Status } from '../ui.tsx';

/**
 * Refund a payment in full or in part: *Refund…* opens an amount (what is left to refund, by default);
 * the API refuses more than is left. The Idempotency-Key names the payment, what was refunded before
 * and the amount, so a double click refunds once.
 */
export function RefundControl({ t }: { t: Schemas['Transaction'] }) {
  const [open, setOpen] = useState(false);
  const left = t.amount - t.amount_refunded;
  const [amount, setAmount] = useState('');
  const id = useId();
  if (t.type !== 'payment' || t.status !== 'succeeded' || t.refunded || left <= 0) return null;
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)} aria-label={`Refund ${t.id}`}>
        Refund…
      </button>
    );
  }
  const minor = toMinor(amount || String(left / 10 ** currencyExponent(t.currency)), t.currency);
  return (
    <span className="refund-form" role="group" aria-label={`Refund of ${t.id}`}>
      <label htmlFor={id}>
        Amount to refund ({t.currency}, up to {money(left, t.currency)})
      </label>
      <input
        id={id}
        inputMode="decimal"
        value={amount}
        placeholder={(left / 10 ** currencyExponent(t.currency)).toFixed(currencyExponent(t.currency))}
        onChange={(e) => setAmount(e.target.value)}
      />
      <ActionButton
        label={minor !== null && minor > 0 ? `Refund ${money(minor, t.currency)}` : 'Refund'}
        action={async () => {
          if (minor === null || minor <= 0) throw new Error(`Type an amount in ${t.currency}, like 5.00.`);
          if (minor > left) throw new Error(`At most ${money(left, t.currency)} is left to refund.`);
          return unwrap(
            api.POST('/v1/transactions', {
              body: {
                account_id: t.account_id,
                type: 'refund',
                amount: minor,
                currency: t.currency,
                source_transaction: t.id,
              },
              headers: { 'Idempotency-Key': `refund-${t.id}-${t.amount_refunded}-${minor}` },
            }),
          );
        }}
        done={() => {
          setOpen(false);
          setAmount('');
        }}
      />
      <button type="button" onClick={() => setOpen(false)}>
        Close
      </button>
    </span>
  );
}

/** "Refunded $5.00 of $20.00" on a partly refunded payment. */
export function statusOf(t: Schemas['Transaction']) {
  if (t.refunded) return <Status value="refunded" />;
  return (
    <>
      <Status value={t.status} />
      {t.amount_refunded > 0 ? <span className="muted"> ({money(t.amount_refunded, t.currency)} refunded)</span> : null}
    </>
  );
}

const columns: Column<Schemas['Transaction']>[] = [
  { header: 'Amount', cell: (t) => money(t.amount, t.currency) },
  { header: 'Type', cell: (t) => t.type },
  { header: 'Customer', cell: (t) => (t.customer ? <CustomerName id={t.customer} withEmail /> : '—') },
  { header: 'Status', cell: (t) => statusOf(t) },
  { header: 'Reference', cell: (t) => t.reference ?? '—' },
  { header: 'Created', cell: (t) => date(t.created_at) },
  { header: 'Actions', cell: (t) => <RefundControl t={t} /> },
];

type ExportFormat = Schemas['Export']['format'];
/** Every format POST /v1/exports takes (db/entities/export.ts exportFormats). */
const exportFormatNames: Record<ExportFormat, string> = { csv: 'CSV', xlsx: 'Excel (XLSX)', json: 'JSON', pdf: 'PDF' };
const exportFormats = Object.keys(exportFormatNames) as ExportFormat[];

/** Starts an export of what the search shows (or everything), follows its progress, then offers the file. */
function ExportPanel({ query }: { query: string }) {
  const [exportId, setExportId] = useState<string | null>(null);
  const [format, setFormat] = useState<ExportFormat>('csv');
  const [error, setError] = useState<unknown>(null);
  const mode = currentMode();
  const current = useQuery({
    queryKey: [mode, 'export', exportId],
    enabled: exportId !== null,
    queryFn: () => unwrap(api.GET('/v1/exports/{id}', { params: { path: { id: exportId! } } })),
    refetchInterval: (q) =>
      q.state.data && ['succeeded', 'failed', 'expired'].includes(q.state.data.status) ? false : 500,
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
          <select id="export-format" value={format} onChange={(event) => setFormat(event.target.value as ExportFormat)}>
            {exportFormats.map((f) => (
              <option key={f} value={f}>
                {exportFormatNames[f]}
              </option>
            ))}
          </select>
        </div>
        <button
          type="button"
          onClick={async () => {
            setError(null);
            try {
              const started = await unwrap(
                api.POST('/v1/exports', { body: { resource: 'transactions', format, query: query || undefined } }),
              );
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
          <progress
            max={expected ?? undefined}
            value={e.status === 'succeeded' ? (expected ?? written) : written}
            aria-label="Export progress"
          />{' '}
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
    // A query the API refuses (400, naming the position) is said at once, not after retries.
    retry: false,
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
          <input
            id="tx-search"
            type="search"
            value={draft}
            onChange={(event) => {
              setDraft(event.target.value);
              // Emptying the box ends the search: the full list comes back.
              if (event.target.value.trim() === '') {
                setQuery('');
                setPage(undefined);
              }
            }}
            placeholder='status:succeeded amount>1000 email~"ada"'
          />
        </div>
        <button type="submit">Search</button>
        {query ? (
          <button
            type="button"
            onClick={() => {
              setDraft('');
              setQuery('');
              setPage(undefined);
            }}
          >
            Clear search
          </button>
        ) : null}
      </form>
      <ExportPanel query={query} />
      {query ? (
        <section aria-label="Search results">
          {search.error ? <p className="error">The search failed:</p> : null}
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
                {search.isSuccess && search.data.data.length === 0 ? (
                  <tr>
                    <td colSpan={columns.length}>No transaction matches {query}.</td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </div>
          <nav className="pager" aria-label="Search result pages">
            <button
              type="button"
              disabled={!search.data?.next_page}
              onClick={() => setPage(search.data?.next_page ?? undefined)}
            >
              Next page
            </button>
          </nav>
        </section>
      ) : (
        <PagedTable
          label="Transactions"
          queryKey={['transactions']}
          fetchPage={(cursor) => unwrap(api.GET('/v1/transactions', { params: { query: { limit: 20, ...cursor } } }))}
          columns={columns}
        />
      )}
    </>
  );
}
