import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { useState } from 'react';

import { formatMinor } from '../../../domain/price-text.ts';
import { api, blobUrl, currentMode, date, dateOnly, money, type Schemas, unwrap } from '../api.ts';
import type { InvoiceLineTotalsFields } from '../billing-types.ts';
import { CustomerCell } from '../pickers.tsx';
import { ActionButton, ErrorNote, PagedTable, PageTitle, Status } from '../ui.tsx';
import { NewInvoiceForm } from './customer-detail.tsx';
import { InvoiceExtras, InvoiceTotals } from './invoice-extras.tsx';
import { InvoiceItemForm, InvoiceItemsTable } from './invoice-items.tsx';

/** A breakdown row in words: "Units 11 and up: 5 × $7.505 + $5.00 flat" (a package row: "3 packages × $5.00"). */
function breakdownText(row: Schemas['PriceRow'], currency: string, packaged: boolean): string {
  const units =
    row.up_to === null
      ? `Units ${row.from_unit} and up`
      : row.up_to === row.from_unit
        ? `Unit ${row.from_unit}`
        : `Units ${row.from_unit}–${row.up_to}`;
  const each = `${row.quantity} × ${formatMinor(row.unit_amount_decimal, currency)}`;
  const flat = row.flat_amount ? ` + ${formatMinor(row.flat_amount, currency)} flat` : '';
  if (packaged)
    return `${units}: ${row.quantity} package${row.quantity === 1 ? '' : 's'} × ${formatMinor(row.unit_amount_decimal, currency)}`;
  return `${units}: ${each}${flat} = ${formatMinor(row.amount_decimal, currency)}`;
}

/** A line's share of the discount and its taxes, in words: " · discount −$20.00 · VAT 19% $15.20". */
function lineAdjustments(
  line: Schemas['Invoice']['lines'][number] & InvoiceLineTotalsFields,
  currency: string,
): string {
  const parts = [
    ...(line.discount_amounts ?? []).filter((d) => d.amount).map((d) => `discount ${money(-d.amount, currency)}`),
    ...(line.tax_amounts ?? []).map(
      (t) => `${t.display_name} ${t.percentage}%${t.inclusive ? ' included' : ''} ${money(t.amount, currency)}`,
    ),
  ];
  return parts.map((part) => ` · ${part}`).join('');
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
                {line.proration ? (
                  <span className="muted">
                    {' '}
                    (prorated {date(line.period_start)} – {date(line.period_end)})
                  </span>
                ) : null}
                <br />
                <span className="muted line-period">
                  {line.period_start === line.period_end
                    ? `On ${dateOnly(line.period_start)}`
                    : `Period ${dateOnly(line.period_start)} – ${dateOnly(line.period_end)}`}
                  {line.proration ? ' · proration' : ''}
                  {lineAdjustments(line, invoice.currency)}
                </span>
                {line.plan ? (
                  <>
                    {' '}
                    <code>{line.plan}</code>
                  </>
                ) : null}
                {line.breakdown?.length ? (
                  <ul className="breakdown" aria-label="Tier breakdown">
                    {line.breakdown.map((row, r) => (
                      <li key={r}>
                        {breakdownText(row, invoice.currency, line.breakdown!.length === 1 && row.tier === null)}
                      </li>
                    ))}
                  </ul>
                ) : null}
              </td>
              <td data-label="Quantity">{line.quantity}</td>
              <td data-label="Unit amount">
                {line.unit_amount === null ? '—' : money(line.unit_amount, invoice.currency)}
              </td>
              <td data-label="Amount">{money(line.amount, invoice.currency)}</td>
            </tr>
          ))}
          {invoice.subtotal !== invoice.total ? (
            <tr>
              <th scope="row" colSpan={3}>
                Subtotal
              </th>
              <td data-label="Subtotal">{money(invoice.subtotal, invoice.currency)}</td>
            </tr>
          ) : null}
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

type Invoice = Schemas['Invoice'];
const oneOff = (invoice: Invoice) => !invoice.subscription_id;
const invoiceName = (invoice: Invoice) => invoice.number ?? `draft ${invoice.id}`;

/**
 * The actions an invoice's status allows (the API refuses the others with 409): a one-off draft is
 * finalized or deleted; an open one-off invoice is paid (charged now, or marked paid out of band),
 * voided or marked uncollectible; an uncollectible one paid or voided. A subscription's invoice is
 * collected by its subscription: voided or marked uncollectible only.
 */
export function InvoiceActions({
  invoice,
  compact,
  onDeleted,
}: {
  invoice: Invoice;
  compact?: boolean;
  onDeleted?: () => void;
}) {
  const id = invoice.id;
  const name = invoiceName(invoice);
  const path = { params: { path: { id } } };
  const suffix = compact ? ` ${name}` : '';
  const buttons: React.ReactNode[] = [];
  if (invoice.status === 'draft' && oneOff(invoice)) {
    buttons.push(
      <ActionButton
        key="finalize"
        label={`${invoice.collection_method === 'send_invoice' ? 'Finalize and send' : 'Finalize and charge'}${suffix}`}
        action={() => unwrap(api.POST('/v1/invoices/{id}/finalize', path))}
      />,
      <ActionButton
        key="delete"
        label={`Delete draft${suffix}`}
        className="danger"
        confirm="Delete this draft? Its items become pending again."
        action={() => unwrap(api.DELETE('/v1/invoices/{id}', path))}
        done={onDeleted}
      />,
    );
  }
  if ((invoice.status === 'open' || invoice.status === 'uncollectible') && oneOff(invoice)) {
    buttons.push(
      <ActionButton
        key="pay"
        label={`Charge now${suffix}`}
        action={() => unwrap(api.POST('/v1/invoices/{id}/pay', { ...path, body: { paid_out_of_band: false } }))}
      />,
      <ActionButton
        key="oob"
        label={`Mark paid out of band${suffix}`}
        confirm="Mark this invoice paid? Nothing is charged (the customer paid outside the engine)."
        action={() => unwrap(api.POST('/v1/invoices/{id}/pay', { ...path, body: { paid_out_of_band: true } }))}
      />,
    );
  }
  if (invoice.status === 'open' || invoice.status === 'uncollectible') {
    buttons.push(
      <ActionButton
        key="void"
        label={`Void${suffix}`}
        className="danger"
        confirm="Void this invoice? Nothing will be due."
        action={() => unwrap(api.POST('/v1/invoices/{id}/void', path))}
      />,
    );
  }
  if (invoice.status === 'open') {
    buttons.push(
      <ActionButton
        key="uncollectible"
        label={`Mark uncollectible${suffix}`}
        action={() => unwrap(api.POST('/v1/invoices/{id}/mark_uncollectible', path))}
      />,
    );
  }
  return <div className="actions">{buttons}</div>;
}

/** A draft's items (attached: remove back to pending, or delete), the customer's pending items it can take, and a new item. */
function DraftItems({ invoice }: { invoice: Invoice }) {
  const mode = currentMode();
  const attached = useQuery({
    queryKey: [mode, 'invoice-items', 'invoice', invoice.id],
    queryFn: () => unwrap(api.GET('/v1/invoice_items', { params: { query: { invoice: invoice.id, limit: 100 } } })),
  });
  const pending = useQuery({
    queryKey: [mode, 'invoice-items', invoice.customer_id, 'pending'],
    queryFn: () =>
      unwrap(
        api.GET('/v1/invoice_items', {
          params: { query: { customer: invoice.customer_id, pending: 'true', limit: 100 } },
        }),
      ),
  });
  const takeable = (pending.data?.data ?? []).filter((item) => item.currency === invoice.currency);
  const patch = (itemId: string, to: string | null) =>
    unwrap(api.PATCH('/v1/invoice_items/{id}', { params: { path: { id: itemId } }, body: { invoice: to } }));
  return (
    <section className="card" aria-label="Items of the draft">
      <h2>Items</h2>
      <p className="muted">The draft bills these items; its lines and total follow them until it is finalized.</p>
      <ErrorNote error={attached.error ?? pending.error} />
      <InvoiceItemsTable
        label="Items on this draft"
        items={attached.data?.data ?? []}
        empty={
          attached.isLoading
            ? 'Loading…'
            : 'No items yet: add one below, or take a pending one. A draft without items cannot be finalized.'
        }
        actions={(item) => (
          <>
            <ActionButton label={`Remove ${item.description}`} action={() => patch(item.id, null)} />
            <ActionButton
              label={`Delete ${item.description}`}
              className="danger"
              confirm={`Delete the item "${item.description}"?`}
              action={() => unwrap(api.DELETE('/v1/invoice_items/{id}', { params: { path: { id: item.id } } }))}
            />
          </>
        )}
      />
      {takeable.length ? (
        <>
          <h3>Pending items of the customer in {invoice.currency}</h3>
          <InvoiceItemsTable
            label="Pending items to add"
            items={takeable}
            empty=""
            actions={(item) => (
              <ActionButton label={`Add ${item.description}`} action={() => patch(item.id, invoice.id)} />
            )}
          />
        </>
      ) : null}
      <InvoiceItemForm customerId={invoice.customer_id} invoice={{ id: invoice.id, currency: invoice.currency }} />
    </section>
  );
}

export function InvoiceDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const mode = currentMode();
  const navigate = useNavigate();
  const invoice = useQuery({
    queryKey: [mode, 'invoice', id],
    queryFn: () => unwrap(api.GET('/v1/invoices/{id}', { params: { path: { id } } })),
    // A one-off invoice's workflow charges it a moment after finalize: follow it until it settles.
    refetchInterval: (query) => {
      const i = query.state.data;
      return i &&
        oneOff(i) &&
        i.status === 'open' &&
        i.collection_method === 'charge_automatically' &&
        i.attempt_count === 0
        ? 1000
        : false;
    },
  });
  const i = invoice.data;
  return (
    <>
      <PageTitle>{i ? (i.number ? `Invoice ${i.number}` : `Draft invoice ${i.id}`) : `Invoice ${id}`}</PageTitle>
      <p>
        <Link to="/invoices">All invoices</Link>
      </p>
      <ErrorNote error={invoice.error} />
      {i ? (
        <>
          <section className="card" aria-label="Invoice">
            <dl className="facts">
              <dt>Status</dt>
              <dd>
                <Status value={i.status} /> <ThresholdBadge invoice={i} />
              </dd>
              <dt>Billing reason</dt>
              <dd>{i.billing_reason.replaceAll('_', ' ')}</dd>
              <dt>Number</dt>
              <dd>{i.number ?? 'none yet: numbered at finalize'}</dd>
              <dt>Customer</dt>
              <dd>
                <Link to="/customers/$id" params={{ id: i.customer_id }}>
                  {i.customer_email ?? i.customer_id}
                </Link>
              </dd>
              {i.subscription_id ? (
                <>
                  <dt>Subscription</dt>
                  <dd>
                    <Link to="/subscriptions/$id" params={{ id: i.subscription_id }}>
                      {i.subscription_id}
                    </Link>
                  </dd>
                </>
              ) : (
                <>
                  <dt>Collection</dt>
                  <dd>
                    {i.collection_method === 'send_invoice'
                      ? `Emailed with a pay link, due ${i.days_until_due} days after finalize`
                      : "Charged to the customer's payment method"}
                  </dd>
                </>
              )}
              {i.description ? (
                <>
                  <dt>Note</dt>
                  <dd>{i.description}</dd>
                </>
              ) : null}
              {i.subscription_id ? (
                <>
                  <dt>Period</dt>
                  <dd>
                    {date(i.period_start)} – {date(i.period_end)}
                  </dd>
                </>
              ) : null}
              {i.finalized_at ? (
                <>
                  <dt>Finalized</dt>
                  <dd>{date(i.finalized_at)}</dd>
                </>
              ) : null}
              {i.due_date ? (
                <>
                  <dt>Due</dt>
                  <dd>{dateOnly(i.due_date)}</dd>
                </>
              ) : null}
              {i.paid_at ? (
                <>
                  <dt>Paid</dt>
                  <dd>{date(i.paid_at)}</dd>
                </>
              ) : null}
              {i.voided_at ? (
                <>
                  <dt>Voided</dt>
                  <dd>{date(i.voided_at)}</dd>
                </>
              ) : null}
              {i.marked_uncollectible_at ? (
                <>
                  <dt>Marked uncollectible</dt>
                  <dd>{date(i.marked_uncollectible_at)}</dd>
                </>
              ) : null}
              {i.attempt_count ? (
                <>
                  <dt>Payment attempts</dt>
                  <dd>{i.attempt_count}</dd>
                </>
              ) : null}
              <dt>Documents</dt>
              <dd>
                <a href={i.pdf} target="_blank" rel="noopener">
                  PDF of {invoiceName(i)}
                </a>
                {i.status !== 'draft' && i.collection_method === 'send_invoice' && !i.subscription_id ? (
                  <span className="muted"> · the customer's pay link is in the invoice email</span>
                ) : null}
              </dd>
            </dl>
            <InvoiceActions invoice={i} onDeleted={() => navigate({ to: '/invoices' })} />
          </section>
          {i.status === 'draft' && oneOff(i) ? <DraftItems invoice={i} /> : null}
          <section className="card" aria-label="Lines and totals">
            <h2>Lines</h2>
            <InvoiceLines invoice={i} />
            <InvoiceTotals invoice={i} />
          </section>
          <InvoiceExtras invoice={i} />
        </>
      ) : null}
    </>
  );
}

const statuses = ['draft', 'open', 'paid', 'void', 'uncollectible'] as const;

/** A threshold invoice (billing_reason subscription_threshold): usage billed early (docs/usage.md "Billing thresholds"). */
function ThresholdBadge({ invoice }: { invoice: Pick<Schemas['Invoice'], 'billing_reason'> }) {
  return invoice.billing_reason === 'subscription_threshold' ? (
    <span
      className="status status-threshold"
      title="Usage that reached the subscription's billing threshold, billed early"
    >
      Threshold
    </span>
  ) : null;
}

export function Invoices() {
  const [status, setStatus] = useState<(typeof statuses)[number] | ''>('');
  const [thresholdOnly, setThresholdOnly] = useState(false);
  return (
    <>
      <PageTitle>Invoices</PageTitle>
      <NewInvoiceForm />
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
        <div className="field">
          <label>
            <input type="checkbox" checked={thresholdOnly} onChange={(e) => setThresholdOnly(e.target.checked)} />{' '}
            Threshold invoices only
          </label>
        </div>
      </div>
      <PagedTable
        key={`${status}:${thresholdOnly}`}
        label="Invoices"
        queryKey={['invoices', status, thresholdOnly]}
        empty={
          status
            ? `No ${status} invoices.`
            : 'No invoices yet: a subscription issues them, or create a one-off invoice above.'
        }
        fetchPage={(cursor) =>
          unwrap(
            api.GET('/v1/invoices', {
              params: {
                query: {
                  limit: 20,
                  ...cursor,
                  status: status || undefined,
                  billing_reason: thresholdOnly ? 'subscription_threshold' : undefined,
                },
              },
            }),
          )
        }
        columns={[
          {
            header: 'Number',
            cell: (i) => (
              <Link to="/invoices/$id" params={{ id: i.id }}>
                {i.number ?? `Draft ${i.id}`}
              </Link>
            ),
          },
          {
            header: 'Customer',
            cell: (i) => <CustomerCell id={i.customer_id} name={i.customer_name} email={i.customer_email} />,
          },
          { header: 'Total', cell: (i) => money(i.total, i.currency) },
          {
            header: 'Status',
            cell: (i) => (
              <>
                <Status value={i.status} /> <ThresholdBadge invoice={i} />
              </>
            ),
          },
          {
            header: 'Lines',
            cell: (i) => (
              <details>
                <summary>
                  {i.lines.length} line{i.lines.length === 1 ? '' : 's'}
                </summary>
                <InvoiceLines invoice={i} />
              </details>
            ),
          },
          { header: 'Created', cell: (i) => date(i.created_at) },
          {
            header: 'Actions',
            cell: (i) => (
              <div className="actions">
                <ActionButton
                  label={`PDF ${i.number ?? ''}`.trim()}
                  action={async () => window.open(await blobUrl(`/v1/invoices/${i.id}/pdf`), '_blank')}
                />
                <InvoiceActions invoice={i} compact />
              </div>
            ),
          },
        ]}
      />
    </>
  );
}
