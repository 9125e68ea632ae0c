import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, currentMode, date, unwrap } from '../api.ts';
import { ActionButton, ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

const statuses = ['trialing', 'active', 'past_due', 'paused', 'canceled', 'expired'] as const;
type SubscriptionStatus = (typeof statuses)[number];

export function Subscriptions() {
  const [status, setStatus] = useState<SubscriptionStatus | ''>('');
  const [customer, setCustomer] = useState('');
  return (
    <>
      <PageTitle>Subscriptions</PageTitle>
      <ActionForm
        title="New subscription"
        submit="Create subscription"
        action={(v) => unwrap(api.POST('/v1/subscriptions', { body: { customer_id: v.customer_id!, plan: v.plan! } }))}
      >
        <Field label="Customer ID" name="customer_id" required placeholder="cus_…" />
        <Field label="Plan ID" name="plan" required placeholder="plan_…" />
      </ActionForm>
      <div className="filters" role="search" aria-label="Filter subscriptions">
        <div className="field">
          <label htmlFor="sub-status">Status</label>
          <select id="sub-status" value={status} onChange={(e) => setStatus(e.target.value as SubscriptionStatus | '')}>
            <option value="">any</option>
            {statuses.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="sub-customer">Customer ID</label>
          <input id="sub-customer" value={customer} onChange={(e) => setCustomer(e.target.value.trim())} placeholder="cus_…" />
        </div>
      </div>
      <PagedTable
        key={`${status}:${customer}`}
        label="Subscriptions"
        queryKey={['subscriptions', status, customer]}
        fetchPage={(cursor) =>
          unwrap(api.GET('/v1/subscriptions', { params: { query: { limit: 20, ...cursor, status: status || undefined, customer_id: customer || undefined } } }))
        }
        columns={[
          {
            header: 'Subscription',
            cell: (s) => (
              <Link to="/subscriptions/$id" params={{ id: s.id }}>
                {s.id}
              </Link>
            ),
          },
          { header: 'Customer', cell: (s) => <code>{s.customer_id}</code> },
          { header: 'Plan', cell: (s) => <code>{s.plan}</code> },
          { header: 'Status', cell: (s) => <Status value={s.status} /> },
          { header: 'Period ends', cell: (s) => date(s.current_period_end) },
        ]}
      />
    </>
  );
}

export function SubscriptionDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const mode = currentMode();
  const subscription = useQuery({ queryKey: [mode, 'subscription', id], queryFn: () => unwrap(api.GET('/v1/subscriptions/{id}', { params: { path: { id } } })) });
  const events = useQuery({ queryKey: [mode, 'subscription-events', id], queryFn: () => unwrap(api.GET('/v1/events', { params: { query: { limit: 100 } } })) });
  const s = subscription.data;
  const timeline = (events.data?.data ?? []).filter((e) => JSON.stringify(e.data).includes(id));
  return (
    <>
      <PageTitle>Subscription {id}</PageTitle>
      <ErrorNote error={subscription.error} />
      {s ? (
        <section className="card">
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Status value={s.status} />
              {s.cancel_at_period_end ? ' (cancels at period end)' : ''}
            </dd>
            <dt>Customer</dt>
            <dd>
              <code>{s.customer_id}</code>
            </dd>
            <dt>Plan</dt>
            <dd>
              <code>{s.plan}</code>
              {s.pending_plan ? ` → ${s.pending_plan}` : ''}
            </dd>
            <dt>Current period</dt>
            <dd>
              {date(s.current_period_start)} – {date(s.current_period_end)}
            </dd>
          </dl>
          <div className="actions">
            {s.status === 'paused' ? (
              <ActionButton label="Resume" action={() => unwrap(api.POST('/v1/subscriptions/{id}/resume', { params: { path: { id } } }))} />
            ) : (
              <ActionButton label="Pause" action={() => unwrap(api.POST('/v1/subscriptions/{id}/pause', { params: { path: { id } }, body: {} }))} />
            )}
            {s.cancel_at_period_end ? (
              <ActionButton label="Keep subscription (undo cancel)" action={() => unwrap(api.POST('/v1/subscriptions/{id}/undo_cancel', { params: { path: { id } } }))} />
            ) : (
              <ActionButton
                label="Cancel at period end"
                action={() => unwrap(api.POST('/v1/subscriptions/{id}/cancel', { params: { path: { id } }, body: { at_period_end: true } }))}
              />
            )}
            <ActionButton
              label="Cancel now"
              className="danger"
              confirm="Cancel this subscription now?"
              action={() => unwrap(api.POST('/v1/subscriptions/{id}/cancel', { params: { path: { id } }, body: { at_period_end: false } }))}
            />
          </div>
        </section>
      ) : null}
      <ActionForm title="Change plan" submit="Change plan" action={(v) => unwrap(api.POST('/v1/subscriptions/{id}/update', { params: { path: { id } }, body: { plan: v.plan! } }))}>
        <Field label="New plan ID" name="plan" required placeholder="plan_…" />
      </ActionForm>
      <section className="card" aria-label="Timeline">
        <h2>Timeline</h2>
        <ol className="timeline">
          {timeline.map((e) => (
            <li key={e.id}>
              <time dateTime={e.created_at}>{date(e.created_at)}</time> <strong>{e.type}</strong>
            </li>
          ))}
          {timeline.length === 0 ? <li>No events yet.</li> : null}
        </ol>
      </section>
    </>
  );
}
