/**
 * A customer's usage on their page (docs/usage.md#usage-summaries): for every meter, a chart of
 * this month's usage per UTC day (GET /v1/meters/{id}/event_summaries with value_grouping_window=day)
 * and the month so far as the meter aggregates it (one summary over the month: for max, last and
 * weighted_sum that is not the sum of the days). "This month" is the customer's test clock's month
 * when they live on one. Then the upcoming invoice of each of their subscriptions that will invoice
 * by itself (GET /v1/invoices/upcoming?subscription=), line by line.
 */
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

import { api, currentMode, dateOnly, money, type Schemas, unwrap } from '../api.ts';
import { PlanName } from '../pickers.tsx';
import { ErrorNote } from '../ui.tsx';
import { type Meter, meterText } from './meters.tsx';

/** [start, end) of the UTC month holding `now`, in unix seconds. */
export function monthOf(now: Date): { start: number; end: number } {
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return { start: start / 1000, end: end / 1000 };
}

const monthName = (start: number) =>
  new Date(start * 1000).toLocaleDateString(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' });

function MeterUsage({
  meter,
  customerId,
  month,
}: {
  meter: Meter;
  customerId: string;
  month: { start: number; end: number };
}) {
  const query = (window?: 'day') => ({
    queryKey: [currentMode(), 'usage', meter.id, customerId, month.start, window ?? 'total'],
    queryFn: () =>
      unwrap(
        api.GET('/v1/meters/{id}/event_summaries', {
          params: {
            path: { id: meter.id },
            query: {
              customer: customerId,
              start_time: month.start,
              end_time: month.end,
              ...(window ? { value_grouping_window: window } : {}),
            },
          },
        }),
      ),
  });
  const days = useQuery(query('day'));
  const total = useQuery(query());
  const points = (days.data?.data ?? []).map((s) => ({
    day: new Date(s.start_time * 1000).toISOString().slice(5, 10),
    value: Number(s.aggregated_value),
    events: s.events,
  }));
  const events = points.reduce((n, p) => n + p.events, 0);
  const overall = total.data?.data[0];
  return (
    <figure
      className="card chart"
      aria-label={`Usage of ${meter.display_name}`}
      data-points={points.map((p) => p.value).join(',')}
    >
      <figcaption style={{ overflowWrap: 'anywhere' }}>
        {meter.display_name} <code>{meter.event_name}</code> ({meterText(meter)})
        {meter.status === 'inactive' ? ', inactive' : ''}
        {overall && events > 0 ? (
          <>
            : <strong>{overall.aggregated_value}</strong> in {monthName(month.start)} ({events} event
            {events === 1 ? '' : 's'})
          </>
        ) : null}
      </figcaption>
      <ErrorNote error={days.error ?? total.error} />
      {days.isLoading ? (
        <p className="no-data">Loading…</p>
      ) : events === 0 ? (
        <p className="no-data">No usage yet in {monthName(month.start)}.</p>
      ) : (
        <ResponsiveContainer width="100%" height={200}>
          <BarChart data={points}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="day" />
            <YAxis />
            <Tooltip />
            <Bar
              dataKey="value"
              fill="#4f46e5"
              name={`${meter.aggregation.replace('_', ' ')} per day`}
              isAnimationActive={false}
            />
          </BarChart>
        </ResponsiveContainer>
      )}
    </figure>
  );
}

export function CustomerUsage({ customerId, testClock }: { customerId: string; testClock?: string | null }) {
  const mode = currentMode();
  const meters = useQuery({
    queryKey: [mode, 'meters', 'all'],
    queryFn: () => unwrap(api.GET('/v1/meters', { params: { query: { limit: 100 } } })),
  });
  const clock = useQuery({
    queryKey: [mode, 'test-clock', testClock],
    enabled: Boolean(testClock),
    queryFn: () => unwrap(api.GET('/v1/test_clocks/{id}', { params: { path: { id: testClock! } } })),
  });
  const now = testClock ? (clock.data ? new Date(clock.data.frozen_time) : null) : new Date();
  const month = now ? monthOf(now) : null;
  const list = meters.data?.data ?? [];
  return (
    <section className="card" aria-label="Usage">
      <h2>Usage{month ? ` in ${monthName(month.start)}` : ''}</h2>
      <ErrorNote error={meters.error ?? clock.error} />
      {meters.data && list.length === 0 ? (
        <p>
          No usage yet: no meter counts any. <Link to="/meters">Create a meter</Link>, then send events naming it.
        </p>
      ) : null}
      {month ? (
        // The home page's chart grid, with columns that may shrink below 18rem: inside a card at 390 px there is less.
        <div className="charts" style={{ gridTemplateColumns: 'repeat(auto-fit, minmax(min(18rem, 100%), 1fr))' }}>
          {list.map((meter) => (
            <MeterUsage key={meter.id} meter={meter} customerId={customerId} month={month} />
          ))}
        </div>
      ) : null}
    </section>
  );
}

type Subscription = Schemas['Subscription'];
type Upcoming = NonNullable<Schemas['UpcomingInvoice']>;

/** Whether the subscription will make its next invoice by itself (GET /v1/invoices/upcoming answers 409 otherwise). */
const invoicesNext = (s: Subscription) =>
  (s.status === 'active' || s.status === 'trialing') && !s.cancel_at_period_end && !s.pause_collection;

function UpcomingInvoice({ subscription }: { subscription: Subscription }) {
  const upcoming = useQuery({
    queryKey: [currentMode(), 'upcoming-invoice', subscription.id],
    queryFn: () =>
      unwrap(
        api.GET('/v1/invoices/upcoming', { params: { query: { subscription: subscription.id } } }),
      ) as Promise<Upcoming | null>,
  });
  const invoice = upcoming.data;
  return (
    <div className="upcoming-invoice">
      <h3 style={{ overflowWrap: 'anywhere' }}>
        Next invoice of{' '}
        <Link to="/subscriptions/$id" params={{ id: subscription.id }}>
          <PlanName id={subscription.plan} />
        </Link>
        {invoice ? `: ${money(invoice.total, invoice.currency)} on ${dateOnly(invoice.created_at)}` : ''}
      </h3>
      <ErrorNote error={upcoming.error} />
      {invoice ? (
        <div className="table-wrap" tabIndex={0} role="region" aria-label={`Upcoming invoice of ${subscription.id}`}>
          <table>
            <caption className="visually-hidden">Upcoming invoice of {subscription.id}</caption>
            <thead>
              <tr>
                {['Line', 'Quantity', 'Period', 'Amount'].map((h) => (
                  <th key={h} scope="col">
                    {h}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {invoice.lines.map((line, index) => (
                <tr key={index}>
                  <td data-label="Line">{line.description}</td>
                  <td data-label="Quantity">{line.quantity_decimal ?? line.quantity}</td>
                  <td data-label="Period">
                    {dateOnly(line.period_start)} – {dateOnly(line.period_end)}
                  </td>
                  <td data-label="Amount">{money(line.amount, invoice.currency)}</td>
                </tr>
              ))}
              <tr>
                <td data-label="Line">Total</td>
                <td data-label="Quantity" />
                <td data-label="Period" />
                <td data-label="Amount">
                  <strong>{money(invoice.total, invoice.currency)}</strong>
                </td>
              </tr>
            </tbody>
          </table>
        </div>
      ) : upcoming.data === null ? (
        <p>No invoice is coming.</p>
      ) : null}
    </div>
  );
}

/** The upcoming invoice of each of the customer's subscriptions that will invoice next by itself. */
export function CustomerUpcomingInvoices({ customerId }: { customerId: string }) {
  const subscriptions = useQuery({
    queryKey: [currentMode(), 'subscriptions', 'customer', customerId, 'upcoming'],
    queryFn: () => unwrap(api.GET('/v1/subscriptions', { params: { query: { limit: 10, customer: customerId } } })),
  });
  const live = (subscriptions.data?.data ?? []).filter(invoicesNext);
  return (
    <section className="card" aria-label="Upcoming invoices">
      <h2>Upcoming invoices</h2>
      <ErrorNote error={subscriptions.error} />
      {subscriptions.data && live.length === 0 ? <p>No subscription will invoice next.</p> : null}
      {live.map((s) => (
        <UpcomingInvoice key={s.id} subscription={s} />
      ))}
    </section>
  );
}
