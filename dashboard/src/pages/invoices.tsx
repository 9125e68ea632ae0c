import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { formatMinor } from '../../../domain/price-text.ts';
import { api, blobUrl, currentMode, date, money, unwrap, type Schemas } from '../api.ts';
import { ActionButton, ErrorNote, PagedTable, PageTitle, Status } from '../ui.tsx';

/** A breakdown row in words: "Units 11 and up: 5 × $7.505 + $5.00 flat" (a package row: "3 packages × $5.00"). */
function breakdownText(row: Schemas['PriceRow'], currency: string, packaged: boolean): string {
  const units = row.up_to === null ? `Units ${row.from_unit} and up` : row.up_to === row.from_unit ? `Unit ${row.from_unit}` : `Units ${row.from_unit}–${row.up_to}`;
  const each = `${row.quantity} × ${formatMinor(row.unit_amount_decimal, currency)}`;
  const flat = row.flat_amount ? ` + ${formatMinor(row.flat_amount, currency)} flat` : '';
  if (packaged) return `${units}: ${row.quantity} package${row.quantity === 1 ? '' : 's'} × ${formatMinor(row.unit_amount_decimal, currency)}`;
  return `${units}: ${each}${flat} = ${formatMinor(row.amount_decimal, currency)}`;
}

/** An invoice's lines: description, plan, quantity, unit amount (— when not a whole amount per unit), amount, and the tier breakdown under a line. */
export function InvoiceLines({ invoice }: { invoice: Schemas['Invoice'] }) {
  const label = `Lines of ${invoice.number ?? invoice.id}`;
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={label}>
      <table>
        <caption className="visually-hidden">{label}</caption>
        <thead>
          <tr>
            <th scope="col">Description</th>
            <th scope="col">Quantity</th>
            <th scope="col">Unit amount</th>
            <th scope="col">Amount</th>
          </tr>
        </thead>
        <tbody>
          {invoice.lines.map((line, index) => (
            <tr key={index}>
              <td data-label="Description">
                {line.description}
                {line.proration ? <span className="muted"> (prorated {date(line.period_start)} – {date(line.period_end)})</span> : null}
                {line.plan ? (
                  <>
                    {' '}
                    <code>{line.plan}</code>
                  </>
                ) : null}
                {line.breakdown?.length ? (
                  <ul className="breakdown" aria-label="Tier breakdown">
                    {line.breakdown.map((row, r) => (
                      <li key={r}>{breakdownText(row, invoice.currency, line.breakdown!.length === 1 && row.tier === null)}</li>
                    ))}
                  </ul>
                ) : null}
              </td>
              <td data-label="Quantity">{line.quantity}</td>
              <td data-label="Unit amount">{line.unit_amount === null ? '—' : money(line.unit_amount, invoice.currency)}</td>
              <td data-label="Amount">{money(line.amount, invoice.currency)}</td>
            </tr>
          ))}
          <tr>
            <th scope="row" colSpan={3}>
              Total
            </th>
            <td data-label="Total">{money(invoice.total, invoice.currency)}</td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

export function InvoiceDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const mode = currentMode();
  const invoice = useQuery({ queryKey: [mode, 'invoice', id], queryFn: () => unwrap(api.GET('/v1/invoices/{id}', { params: { path: { id } } })) });
  const i = invoice.data;
  return (
    <>
      <PageTitle>Invoice {i?.number ?? id}</PageTitle>
      <ErrorNote error={invoice.error} />
      {i ? (
        <section className="card" aria-label="Invoice">
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Status value={i.status} />
            </dd>
            <dt>Customer</dt>
            <dd>{i.customer_email ?? i.customer_id}</dd>
            {i.subscription_id ? (
              <>
                <dt>Subscription</dt>
                <dd>
                  <Link to="/subscriptions/$id" params={{ id: i.subscription_id }}>
                    {i.subscription_id}
                  </Link>
                </dd>
              </>
            ) : null}
            <dt>Period</dt>
            <dd>
              {date(i.period_start)} – {date(i.period_end)}
            </dd>
            <dt>Total</dt>
            <dd>{money(i.total, i.currency)}</dd>
          </dl>
          <h2>Lines</h2>
          <InvoiceLines invoice={i} />
        </section>
      ) : null}
    </>
  );
}

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
          {
            header: 'Number',
            cell: (i) => (
              <Link to="/invoices/$id" params={{ id: i.id }}>
                {i.number ?? i.id}
              </Link>
            ),
          },
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
