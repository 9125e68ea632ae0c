/**
 * Meters (docs/usage.md#meters): what usage the account counts and how it aggregates. Create one
 * (event name, aggregation, value property, up to three group-by properties) and take it out of
 * use (deactivate: new events naming it are refused; its events and summaries stay) or back
 * (reactivate: 409 while another active meter has its event name).
 */
import { useId, useState } from 'react';

import { api, date, type Schemas, unwrap } from '../api.ts';
import { ActionButton, ActionForm, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

export type Meter = Schemas['Meter'];

export const aggregations: { value: Meter['aggregation']; label: string }[] = [
  { value: 'count', label: 'count: the number of events' },
  { value: 'sum', label: 'sum: Σ the value property' },
  { value: 'max', label: 'max: the largest value' },
  { value: 'unique_count', label: 'unique_count: distinct values of the property' },
  { value: 'last', label: 'last: the latest value' },
  { value: 'weighted_sum', label: 'weighted_sum: time-weighted average level (a gauge)' },
];

/** "sum of tokens by model": a meter's aggregation in words. */
export function meterText(meter: Pick<Meter, 'aggregation' | 'value_property' | 'group_by'>): string {
  const what =
    meter.aggregation === 'count'
      ? 'count of events'
      : `${meter.aggregation.replace('_', ' ')} of ${meter.value_property}`;
  return meter.group_by.length ? `${what} by ${meter.group_by.join(', ')}` : what;
}

function MeterForm() {
  const [aggregation, setAggregation] = useState<Meter['aggregation']>('sum');
  const id = useId();
  return (
    <ActionForm
      title="New meter"
      submit="Create meter"
      action={(v) => {
        const groupBy = (v.group_by ?? '')
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean);
        return unwrap(
          api.POST('/v1/meters', {
            body: {
              display_name: v.display_name!,
              event_name: v.event_name!,
              aggregation,
              ...(aggregation !== 'count' && v.value_property ? { value_property: v.value_property } : {}),
              ...(groupBy.length ? { group_by: groupBy } : {}),
            },
          }),
        );
      }}
      done={() => setAggregation('sum')}
    >
      <Field label="Display name" name="display_name" required placeholder="API tokens" />
      <Field label="Event name" name="event_name" required placeholder="api_tokens" />
      <div className="field">
        <label htmlFor={`${id}-aggregation`}>Aggregation</label>
        <select
          id={`${id}-aggregation`}
          value={aggregation}
          onChange={(e) => setAggregation(e.target.value as Meter['aggregation'])}
        >
          {aggregations.map((a) => (
            <option key={a.value} value={a.value}>
              {a.label}
            </option>
          ))}
        </select>
      </div>
      {aggregation === 'count' ? null : (
        <Field label="Value property" name="value_property" defaultValue="value" placeholder="tokens" />
      )}
      <Field label="Group by (comma-separated, up to 3)" name="group_by" placeholder="model, region" />
    </ActionForm>
  );
}

export function Meters() {
  return (
    <>
      <PageTitle>Meters</PageTitle>
      <p>
        A meter counts the usage events whose event name it names (POST /v1/meter_events,{' '}
        <code>billing meter-events send</code>); a metered plan bills it at the end of each period. A customer&apos;s
        page charts their usage of the month.
      </p>
      <MeterForm />
      <PagedTable
        label="Meters"
        queryKey={['meters']}
        empty="No meters yet."
        fetchPage={(cursor) => unwrap(api.GET('/v1/meters', { params: { query: { limit: 20, ...cursor } } }))}
        columns={[
          { header: 'Name', cell: (m: Meter) => m.display_name },
          { header: 'Event name', cell: (m) => <code>{m.event_name}</code> },
          { header: 'Aggregation', cell: (m) => meterText(m) },
          { header: 'ID', cell: (m) => <code>{m.id}</code> },
          { header: 'Created', cell: (m) => date(m.created_at) },
          { header: 'Status', cell: (m) => <Status value={m.status} /> },
          {
            header: 'Actions',
            cell: (m) =>
              m.status === 'active' ? (
                <ActionButton
                  label={`Deactivate ${m.event_name}`}
                  className="danger"
                  confirm={`Deactivate meter ${m.display_name}? Events named ${m.event_name} are refused from then on (unknown_meter); its events and summaries stay.`}
                  action={() => unwrap(api.POST('/v1/meters/{id}/deactivate', { params: { path: { id: m.id } } }))}
                />
              ) : (
                <ActionButton
                  label={`Reactivate ${m.event_name}`}
                  action={() => unwrap(api.POST('/v1/meters/{id}/reactivate', { params: { path: { id: m.id } } }))}
                />
              ),
          },
        ]}
      />
    </>
  );
}
