import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { useId, useState } from 'react';

import { eventTypes } from '../../../domain/events.ts';
import { api, currentMode, date, type Schemas, unwrap } from '../api.ts';
import { ActionButton, ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

function SecretNote({ secret }: { secret: string | null }) {
  if (!secret) return null;
  return (
    <p className="card secret" role="status">
      Signing secret (shown once): <code>{secret}</code>
    </p>
  );
}

type Endpoint = Schemas['WebhookEndpoint'];

/** Enabled, or why not ("disabled (failing since …)" when the dispatcher turned it off). */
function EndpointStatus({ endpoint }: { endpoint: Endpoint }) {
  if (endpoint.enabled) return <Status value="enabled" />;
  return (
    <>
      <Status value="disabled" />
      {endpoint.disabled_reason === 'failing' ? <span className="muted"> (kept failing)</span> : null}
    </>
  );
}

/** Disable or enable (PATCH enabled; enabling clears the run of failures), and delete after a confirmation. */
function EndpointActions({ endpoint, onDeleted }: { endpoint: Endpoint; onDeleted?: () => void }) {
  const path = { params: { path: { id: endpoint.id } } };
  return (
    <div className="actions">
      {endpoint.enabled ? (
        <ActionButton
          label="Disable"
          action={() => unwrap(api.PATCH('/v1/webhooks/{id}', { ...path, body: { enabled: false } }))}
        />
      ) : (
        <ActionButton
          label="Enable"
          action={() => unwrap(api.PATCH('/v1/webhooks/{id}', { ...path, body: { enabled: true } }))}
        />
      )}
      <ActionButton
        label="Delete"
        className="danger"
        confirm={`Delete the endpoint ${endpoint.url}? Deliveries still retrying stop.`}
        action={() => unwrap(api.DELETE('/v1/webhooks/{id}', path))}
        done={onDeleted}
      />
    </div>
  );
}

/** All events, or the chosen types (a multiple select of the catalog). */
function EventsChoice() {
  const id = useId();
  const [all, setAll] = useState(true);
  return (
    <fieldset className="field">
      <legend>Events</legend>
      <label>
        <input type="radio" name="events_mode" value="all" checked={all} onChange={() => setAll(true)} /> Every event
      </label>
      <label>
        <input type="radio" name="events_mode" value="chosen" checked={!all} onChange={() => setAll(false)} /> Chosen
        event types
      </label>
      {all ? null : (
        <>
          <label htmlFor={id}>Event types</label>
          <select id={id} name="events" multiple size={8} required>
            {eventTypes.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </>
      )}
    </fieldset>
  );
}

export function Webhooks() {
  const [secret, setSecret] = useState<string | null>(null);
  const [eventType, setEventType] = useState('');
  const typeFilterId = useId();
  return (
    <>
      <PageTitle>Webhooks</PageTitle>
      <SecretNote secret={secret} />
      <ActionForm
        title="New endpoint"
        submit="Add endpoint"
        action={(_v, form) => {
          const chosen = form.getAll('events').map(String);
          const events = form.get('events_mode') === 'chosen' ? chosen : ['*'];
          return unwrap(
            api.POST('/v1/webhooks', {
              body: {
                url: String(form.get('url')),
                events,
                description: String(form.get('description') ?? '') || undefined,
              },
            }),
          );
        }}
        done={(created) => setSecret((created as { secret?: string }).secret ?? null)}
      >
        <Field label="URL" name="url" type="url" required placeholder="https://example.com/webhooks" />
        <Field label="Description" name="description" />
        <EventsChoice />
      </ActionForm>
      <div className="filters" role="search" aria-label="Filter endpoints">
        <div className="field">
          <label htmlFor={typeFilterId}>Receives event type</label>
          <select id={typeFilterId} value={eventType} onChange={(e) => setEventType(e.target.value)}>
            <option value="">any</option>
            {eventTypes.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
      </div>
      <PagedTable
        key={eventType}
        label="Webhook endpoints"
        queryKey={['webhooks', eventType]}
        // An account has few endpoints: a page of 100 filtered here by the type each one receives ("*" receives all).
        fetchPage={async (cursor) => {
          const page = await unwrap(api.GET('/v1/webhooks', { params: { query: { limit: 100, ...cursor } } }));
          return eventType
            ? { ...page, data: page.data.filter((w) => w.events.includes('*') || w.events.includes(eventType)) }
            : page;
        }}
        empty={eventType ? `No endpoint receives ${eventType}.` : 'No endpoints yet.'}
        columns={[
          {
            header: 'URL',
            cell: (w) => (
              <Link to="/webhooks/$id" params={{ id: w.id }}>
                {w.url}
              </Link>
            ),
          },
          { header: 'Events', cell: (w) => (w.events.includes('*') ? 'every event' : w.events.join(', ')) },
          { header: 'Status', cell: (w) => <EndpointStatus endpoint={w} /> },
          { header: 'Created', cell: (w) => date(w.created_at) },
          { header: 'Actions', cell: (w) => <EndpointActions endpoint={w} /> },
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
      <pre className="code" tabIndex={0} aria-label="Request body">
        {event.data ? JSON.stringify(event.data, null, 2) : '…'}
      </pre>
      <h3>Attempts</h3>
      <ol>
        {delivery.attempts.map((a) => (
          <li key={a.attempt}>
            {date(a.attempted_at)} → {a.status_code ?? 'no answer'}{' '}
            {a.latency_ms !== null ? `in ${a.latency_ms} ms` : ''} {a.error ?? ''}
            {a.response_body ? (
              <>
                <h4>Response body</h4>
                <pre className="code" tabIndex={0} aria-label={`Response body of attempt ${a.attempt}`}>
                  {a.response_body}
                </pre>
              </>
            ) : null}
          </li>
        ))}
      </ol>
      <ActionButton
        label="Redeliver"
        action={() =>
          unwrap(
            api.POST('/v1/events/{id}/redeliver', {
              params: { path: { id: delivery.event_id } },
              body: { endpoint_id: delivery.endpoint_id },
            }),
          )
        }
      />
    </section>
  );
}

export function WebhookDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<Schemas['WebhookDelivery'] | null>(null);
  const navigate = useNavigate();
  const endpoint = useQuery({
    queryKey: [currentMode(), 'webhook', id],
    queryFn: () => unwrap(api.GET('/v1/webhooks/{id}', { params: { path: { id } } })),
  });
  const e = endpoint.data;
  return (
    <>
      <PageTitle>Endpoint {endpoint.data?.url ?? id}</PageTitle>
      <ErrorNote error={endpoint.error} />
      <SecretNote secret={secret} />
      <p>
        <Link to="/webhooks">All endpoints</Link>
      </p>
      {e ? (
        <section className="card" aria-label="Endpoint">
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <EndpointStatus endpoint={e} />
              {e.disabled_at ? ` since ${date(e.disabled_at)}` : ''}
            </dd>
            <dt>Events</dt>
            <dd>{e.events.includes('*') ? 'every event' : e.events.join(', ')}</dd>
            <dt>Description</dt>
            <dd>{e.description ?? '—'}</dd>
          </dl>
          <EndpointActions endpoint={e} onDeleted={() => void navigate({ to: '/webhooks' })} />
        </section>
      ) : null}
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
        fetchPage={(cursor) =>
          unwrap(api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 20, ...cursor } } }))
        }
        columns={[
          { header: 'Event', cell: (d) => d.event_type },
          { header: 'Status', cell: (d) => <Status value={d.status} /> },
          { header: 'Attempts', cell: (d) => d.attempt_count },
          { header: 'Last attempt', cell: (d) => date(d.last_attempt_at) },
          {
            header: 'Details',
            cell: (d) => (
              <button
                type="button"
                onClick={() => setOpen(d)}
                aria-label={`Inspect delivery of ${d.event_type} ${d.id}`}
              >
                Inspect
              </button>
            ),
          },
        ]}
      />
    </>
  );
}
