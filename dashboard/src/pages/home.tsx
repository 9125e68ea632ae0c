import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

import { api, currentMode, date, money, unwrap } from '../api.ts';
import { ErrorNote, PageTitle, Status } from '../ui.tsx';

/** The chart of one currency: its series from a report of the API (GET /v1/reports/revenue, /v1/reports/mrr: aggregated in SQL), in major units. */
function seriesOf<P extends { period_start: string }, K extends keyof P>(
  report: { data: { currency: string; points: P[] }[] } | undefined,
  currency: string,
  key: K,
) {
  const series = report?.data.find((d) => d.currency === currency);
  return (series?.points ?? []).map((p) => ({ day: p.period_start.slice(0, 10), value: Number(p[key]) / 100 }));
}

/** What a chart with nothing to draw says instead of an empty frame. */
function NoDataYet({ loading, what }: { loading: boolean; what: string }) {
  return <p className="no-data">{loading ? 'Loading…' : what}</p>;
}

export function Home() {
  const mode = currentMode();
  const balance = useQuery({ queryKey: [mode, 'balance'], queryFn: () => unwrap(api.GET('/v1/balance')) });
  const transactions = useQuery({
    queryKey: [mode, 'home-transactions'],
    queryFn: () => unwrap(api.GET('/v1/transactions', { params: { query: { limit: 100 } } })),
  });
  const subscriptions = useQuery({
    queryKey: [mode, 'home-subscriptions'],
    queryFn: () => unwrap(api.GET('/v1/subscriptions', { params: { query: { limit: 100 } } })),
  });
  const [interval, setChartInterval] = useState<'day' | 'month'>('day');
  const revenueReport = useQuery({
    queryKey: [mode, 'report-revenue', interval],
    queryFn: () => unwrap(api.GET('/v1/reports/revenue', { params: { query: { interval } } })),
  });
  const mrrReport = useQuery({
    queryKey: [mode, 'report-mrr', interval],
    queryFn: () => unwrap(api.GET('/v1/reports/mrr', { params: { query: { interval } } })),
  });
  const currencies = [
    ...new Set([...(revenueReport.data?.data ?? []), ...(mrrReport.data?.data ?? [])].map((d) => d.currency)),
  ].sort();
  const [chosen, setChosen] = useState('');
  const currency = currencies.includes(chosen) ? chosen : (currencies[0] ?? '');
  const payouts = useQuery({
    queryKey: [mode, 'home-payouts'],
    queryFn: () => unwrap(api.GET('/v1/payouts', { params: { query: { limit: 5 } } })),
  });
  const failed = (transactions.data?.data ?? []).filter((t) => t.status === 'failed').slice(0, 5);
  const dunning = (subscriptions.data?.data ?? []).filter((s) => s.status === 'past_due' || s.dunning);
  const revenue = seriesOf(revenueReport.data, currency, 'net');
  const mrr = seriesOf(mrrReport.data, currency, 'mrr');
  return (
    <>
      <PageTitle>Home</PageTitle>
      <ErrorNote error={balance.error ?? transactions.error ?? subscriptions.error} />
      <section className="cards" aria-label="Balance">
        {(balance.data?.available ?? []).map((b) => (
          <div className="card stat" key={`a-${b.currency}`}>
            <h2>Available {b.currency}</h2>
            <p className="figure">{money(b.amount, b.currency)}</p>
          </div>
        ))}
        {(balance.data?.pending ?? []).map((b) => (
          <div className="card stat" key={`p-${b.currency}`}>
            <h2>Pending {b.currency}</h2>
            <p className="figure">{money(b.amount, b.currency)}</p>
          </div>
        ))}
        {balance.data && balance.data.available.length + balance.data.pending.length === 0 ? (
          <p className="card">No balance yet.</p>
        ) : null}
      </section>
      <form className="filters" aria-label="Charts" onSubmit={(e) => e.preventDefault()}>
        <div className="field">
          <label htmlFor="chart-interval">Per</label>
          <select
            id="chart-interval"
            value={interval}
            onChange={(e) => setChartInterval(e.target.value as 'day' | 'month')}
          >
            <option value="day">Day (last 30 days)</option>
            <option value="month">Month (last 12 months)</option>
          </select>
        </div>
        {currencies.length > 1 ? (
          <div className="field">
            <label htmlFor="chart-currency">Currency</label>
            <select id="chart-currency" value={currency} onChange={(e) => setChosen(e.target.value)}>
              {currencies.map((c) => (
                <option key={c}>{c}</option>
              ))}
            </select>
          </div>
        ) : null}
      </form>
      <ErrorNote error={revenueReport.error ?? mrrReport.error} />
      <section className="charts">
        <figure
          className="card chart"
          aria-label={`Net revenue per ${interval}`}
          data-currency={currency}
          data-points={revenue.map((p) => p.value).join(',')}
        >
          <figcaption>
            Net revenue per {interval}
            {currency ? ` (${currency})` : ''}
          </figcaption>
          {revenue.every((p) => p.value === 0) ? (
            <NoDataYet loading={revenueReport.isLoading} what="No revenue yet: payments show here per day or month." />
          ) : (
            <ResponsiveContainer width="100%" height={220}>
              <BarChart data={revenue}>
                <CartesianGrid strokeDasharray="3 3" />
                <XAxis dataKey="day" />
                <YAxis />
                <Tooltip />
                <Bar dataKey="value" fill="#4f46e5" name="Net revenue" isAnimationActive={false} />
              </BarChart>
            </ResponsiveContainer>
          )}
        </figure>
        <figure
          className="card chart"
          aria-label="Monthly recurring revenue"
          data-currency={currency}
          data-points={mrr.map((p) => p.value).join(',')}
        >
          <figcaption>Monthly recurring revenue{currency ? ` (${currency})` : ''}</figcaption>
          {mrr.every((p) => p.value === 0) ? (
            <NoDataYet loading={mrrReport.isLoading} what="No recurring revenue yet: active subscriptions show here." />
          ) : (
            <ResponsiveContainer width="100%" height={220}>
              <LineChart data={mrr}>
                <CartesianGrid strokeDasharray="3 3" />
                <XAxis dataKey="day" />
                <YAxis />
                <Tooltip />
                <Line dataKey="value" stroke="#0f766e" name="MRR" isAnimationActive={false} />
              </LineChart>
            </ResponsiveContainer>
          )}
        </figure>
      </section>
      <section className="cards">
        <div className="card">
          <h2>Failed payments</h2>
          {failed.length === 0 ? <p>None recently.</p> : null}
          <ul>
            {failed.map((t) => (
              <li key={t.id}>
                {money(t.amount, t.currency)} · {t.failure_message ?? t.failure_code ?? 'failed'} · {date(t.created_at)}
              </li>
            ))}
          </ul>
        </div>
        <div className="card">
          <h2>Dunning in progress</h2>
          {dunning.length === 0 ? <p>No subscription is past due.</p> : null}
          <ul>
            {dunning.map((s) => (
              <li key={s.id}>
                <Link to="/subscriptions/$id" params={{ id: s.id }}>
                  {s.id}
                </Link>{' '}
                <Status value={s.status} />
              </li>
            ))}
          </ul>
        </div>
        <div className="card">
          <h2>Latest payouts</h2>
          {(payouts.data?.data ?? []).length === 0 ? <p>No payouts yet.</p> : null}
          <ul>
            {(payouts.data?.data ?? []).map((p) => (
              <li key={p.id}>
                {money(p.amount, p.currency)} <Status value={p.status} /> {date(p.created_at)}
              </li>
            ))}
          </ul>
        </div>
      </section>
    </>
  );
}
