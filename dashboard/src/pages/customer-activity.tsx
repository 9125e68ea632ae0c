/**
 * What a customer's page shows of their activity: their subscriptions (plan by name, status, period),
 * their payments and refunds (GET /v1/transactions/search `customer:<id>`, a payment refundable in
 * part from here) and their timeline (GET /v1/events?related_object=<id>: the customer's events and
 * those of their subscriptions, invoices and payments).
 */
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';

import { api, currentMode, date, money, unwrap } from '../api.ts';
import { PlanName } from '../pickers.tsx';
import { ErrorNote, PagedTable, Status } from '../ui.tsx';
import { RefundControl, statusOf } from './transactions.tsx';

export function CustomerSubscriptions({ customerId }: { customerId: string }) {
  return (
    <section className="card" aria-label="Subscriptions of the customer">
      <h2>Subscriptions</h2>
      <PagedTable
        label="Subscriptions of the customer"
        queryKey={['subscriptions', 'customer', customerId]}
        fetchPage={(cursor) =>
          unwrap(api.GET('/v1/subscriptions', { params: { query: { limit: 10, ...cursor, customer: customerId } } }))
        }
        empty="No subscriptions yet."
        columns={[
          {
            header: 'Subscription',
            cell: (s) => (
              <Link to="/subscriptions/$id" params={{ id: s.id }}>
                <PlanName id={s.plan} />
                {s.quantity !== 1 ? ` × ${s.quantity}` : ''}
              </Link>
            ),
          },
          {
            header: 'Status',
            cell: (s) => (
              <Status value={s.cancel_at_period_end && s.status !== 'canceled' ? 'cancels_at_period_end' : s.status} />
            ),
          },
          { header: 'Period ends', cell: (s) => date(s.current_period_end) },
        ]}
      />
    </section>
  );
}

export function CustomerPayments({ customerId }: { customerId: string }) {
  const payments = useQuery({
    queryKey: [currentMode(), 'customer-transactions', customerId],
    queryFn: () =>
      unwrap(api.GET('/v1/transactions/search', { params: { query: { query: `customer:${customerId}`, limit: 20 } } })),
  });
  const rows = payments.data?.data ?? [];
  return (
    <section className="card" aria-label="Payments and refunds">
      <h2>Payments and refunds</h2>
      <ErrorNote error={payments.error} />
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Payments and refunds table">
        <table>
          <caption className="visually-hidden">Payments and refunds</caption>
          <thead>
            <tr>
              {['Amount', 'Type', 'Status', 'Invoice', 'Created', 'Actions'].map((h) => (
                <th key={h} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((t) => (
              <tr key={t.id}>
                <td data-label="Amount">{money(t.amount, t.currency)}</td>
                <td data-label="Type">{t.type}</td>
                <td data-label="Status">{statusOf(t)}</td>
                <td data-label="Invoice">
                  {t.invoice ? (
                    <Link to="/invoices/$id" params={{ id: t.invoice }}>
                      {t.invoice}
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                <td data-label="Created">{date(t.created_at)}</td>
                <td data-label="Actions">
                  <RefundControl t={t} />
                </td>
              </tr>
            ))}
            {payments.isSuccess && rows.length === 0 ? (
              <tr>
                <td colSpan={6}>No payments yet.</td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export function CustomerTimeline({ customerId }: { customerId: string }) {
  const events = useQuery({
    queryKey: [currentMode(), 'customer-events', customerId],
    queryFn: () => unwrap(api.GET('/v1/events', { params: { query: { limit: 50, related_object: customerId } } })),
  });
  const timeline = events.data?.data ?? [];
  return (
    <section className="card" aria-label="Customer timeline">
      <h2>Timeline</h2>
      <ErrorNote error={events.error} />
      <ol className="timeline">
        {timeline.map((e) => (
          <li key={e.id}>
            <time dateTime={e.created_at}>{date(e.created_at)}</time> <strong>{e.type}</strong>
            {e.data.object.id !== customerId ? <span className="muted"> ({String(e.data.object.id)})</span> : null}
          </li>
        ))}
        {events.isSuccess && timeline.length === 0 ? <li>No events yet.</li> : null}
      </ol>
    </section>
  );
}
