import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, currentMode, date, unwrap, type Schemas } from '../api.ts';
import { ActionButton, ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

function SecretNote({ secret }: { secret: string | null }) {
  if (!secret) return null;
  return (
    <p className="card secret" role="status">
      Signing secret (shown once): <code>{secret}</code>
    </p>
  );
}

export function Webhooks() {
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <>
      <PageTitle>Webhooks</PageTitle>
      <SecretNote secret={secret} />
      <ActionForm
        title="New endpoint"
        submit="Add endpoint"
        action={(v) => unwrap(api.POST('/v1/webhooks', { body: { url: v.url!, events: ['*'], description: v.description || undefined } }))}
        done={(created) => setSecret((created as { secret?: string }).secret ?? null)}
      >
        <Field label="URL" name="url" type="url" required placeholder="https://example.com/webhooks" />
        <Field label="Description" name="description" />
      </ActionForm>
      <PagedTable
        label="Webhook endpoints"
        queryKey={['webhooks']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/webhooks', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          {
            header: 'URL',
            cell: (w) => (
              <Link to="/webhooks/$id" params={{ id: w.id }}>
                {w.url}
              </Link>
            ),
          },
          { header: 'Events', cell: (w) => w.events.join(', ') },
          { header: 'Status', cell: (w) => <Status value={w.enabled ? 'enabled' : 'disabled'} /> },
          { header: 'Created', cell: (w) => date(w.created_at) },
        ]}
      />
    </>
  );
}

function DeliveryDetail({ delivery, onClose }: { delivery: Schemas['WebhookDelivery']; onClose: () => void }) {
  const event = useQuery({
    queryKey: [currentMode(), 'event', delivery.event_id],
    queryFn: () => unwrap(api.GET('/v1/events/{id}', { params: { path: { id: delivery.event_id } } })),
  });
  return (
    <section className="card" aria-label={`Delivery ${delivery.id}`}>
      <h2>
        Delivery of {delivery.event_type} <Status value={delivery.status} />
      </h2>
      <button type="button" onClick={onClose}>
        Close delivery
      </button>
      <h3>Request body</h3>
      <pre className="code" tabIndex={0} aria-label="Request body">{event.data ? JSON.stringify(event.data, null, 2) : '…'}</pre>
      <h3>Attempts</h3>
      <ol>
        {delivery.attempts.map((a) => (
          <li key={a.attempt}>
            {date(a.attempted_at)} → {a.status_code ?? 'no answer'} {a.latency_ms !== null ? `in ${a.latency_ms} ms` : ''} {a.error ?? ''}
            {a.response_body ? (
              <>
                <h4>Response body</h4>
                <pre className="code" tabIndex={0} aria-label={`Response body of attempt ${a.attempt}`}>{a.response_body}</pre>
              </>
            ) : null}
          </li>
        ))}
      </ol>
      <ActionButton
        label="Redeliver"
        action={() => unwrap(api.POST('/v1/events/{id}/redeliver', { params: { path: { id: delivery.event_id } }, body: { endpoint_id: delivery.endpoint_id } }))}
      />
    </section>
  );
}

export function WebhookDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<Schemas['WebhookDelivery'] | null>(null);
  const endpoint = useQuery({ queryKey: [currentMode(), 'webhook', id], queryFn: () => unwrap(api.GET('/v1/webhooks/{id}', { params: { path: { id } } })) });
  return (
    <>
      <PageTitle>Endpoint {endpoint.data?.url ?? id}</PageTitle>
      <ErrorNote error={endpoint.error} />
      <SecretNote secret={secret} />
      <div className="actions">
        <ActionButton
          label="Rotate secret"
          confirm="Rotate the signing secret? The old one keeps working for a while."
          action={() => unwrap(api.POST('/v1/webhooks/{id}/rotate_secret', { params: { path: { id } } }))}
          done={(rotated) => setSecret((rotated as { secret?: string }).secret ?? null)}
        />
      </div>
      {open ? <DeliveryDetail delivery={open} onClose={() => setOpen(null)} /> : null}
      <PagedTable
        label="Deliveries"
        queryKey={['deliveries', id]}
        fetchPage={(cursor) => unwrap(api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Event', cell: (d) => d.event_type },
          { header: 'Status', cell: (d) => <Status value={d.status} /> },
          { header: 'Attempts', cell: (d) => d.attempt_count },
          { header: 'Last attempt', cell: (d) => date(d.last_attempt_at) },
          {
            header: 'Details',
            cell: (d) => (
              <button type="button" onClick={() => setOpen(d)} aria-label={`Inspect delivery of ${d.event_type} ${d.id}`}>
                Inspect
              </button>
            ),
          },
        ]}
      />
    </>
  );
}
