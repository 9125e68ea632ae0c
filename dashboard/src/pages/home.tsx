import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { Bar, BarChart, CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, currentMode, date, money, unwrap, type Schemas } from '../api.ts';
import { ErrorNote, PageTitle, Status } from '../ui.tsx';

const monthlyFactor: Record<string, number> = { day: 30, week: 30 / 7, month: 1, year: 1 / 12 };

/** Revenue per day from the latest succeeded payments (up to 100), in the first currency seen. */
function revenueSeries(transactions: Schemas['Transaction'][]) {
  const byDay = new Map<string, number>();
  for (const t of transactions) {
    if (t.type !== 'payment' || t.status !== 'succeeded') continue;
    const day = t.created_at.slice(0, 10);
    byDay.set(day, (byDay.get(day) ?? 0) + (t.amount - t.amount_refunded) / 100);
  }
  return [...byDay.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([day, amount]) => ({ day, amount }));
}

/** MRR over time: each subscription's plan normalized to a month, from its start until it ended. */
function mrrSeries(subscriptions: Schemas['Subscription'][], plans: Map<string, Schemas['Plan']>) {
  const days = new Set(subscriptions.map((s) => s.created_at.slice(0, 10)));
  for (const s of subscriptions) if (s.canceled_at) days.add(s.canceled_at.slice(0, 10));
  return [...days].sort().map((day) => ({
    day,
    mrr:
      subscriptions
        .filter((s) => s.created_at.slice(0, 10) <= day && (!s.canceled_at || s.canceled_at.slice(0, 10) > day) && s.status !== 'trialing')
        .reduce((sum, s) => {
          const plan = plans.get(s.plan);
          return plan ? sum + (plan.amount * (monthlyFactor[plan.interval] ?? 1)) / Math.max(1, plan.interval_count ?? 1) : sum;
        }, 0) / 100,
  }));
}

export function Home() {
  const mode = currentMode();
  const balance = useQuery({ queryKey: [mode, 'balance'], queryFn: () => unwrap(api.GET('/v1/balance')) });
  const transactions = useQuery({ queryKey: [mode, 'home-transactions'], queryFn: () => unwrap(api.GET('/v1/transactions', { params: { query: { limit: 100 } } })) });
  const subscriptions = useQuery({ queryKey: [mode, 'home-subscriptions'], queryFn: () => unwrap(api.GET('/v1/subscriptions', { params: { query: { limit: 100 } } })) });
  const plans = useQuery({ queryKey: [mode, 'home-plans'], queryFn: () => unwrap(api.GET('/v1/plans', { params: { query: { limit: 100 } } })) });
  const payouts = useQuery({ queryKey: [mode, 'home-payouts'], queryFn: () => unwrap(api.GET('/v1/payouts', { params: { query: { limit: 5 } } })) });
  const failed = (transactions.data?.data ?? []).filter((t) => t.status === 'failed').slice(0, 5);
  const dunning = (subscriptions.data?.data ?? []).filter((s) => s.status === 'past_due' || s.dunning);
  const revenue = revenueSeries(transactions.data?.data ?? []);
  const mrr = mrrSeries(subscriptions.data?.data ?? [], new Map((plans.data?.data ?? []).map((p) => [p.id, p])));
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
        {balance.data && balance.data.available.length + balance.data.pending.length === 0 ? <p className="card">No balance yet.</p> : null}
      </section>
      <section className="charts">
        <figure className="card chart" aria-label="Revenue per day">
          <figcaption>Revenue per day (latest payments)</figcaption>
          <ResponsiveContainer width="100%" height={220}>
            <BarChart data={revenue}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="day" />
              <YAxis />
              <Tooltip />
              <Bar dataKey="amount" fill="#4f46e5" name="Revenue" isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        </figure>
        <figure className="card chart" aria-label="Monthly recurring revenue">
          <figcaption>Monthly recurring revenue</figcaption>
          <ResponsiveContainer width="100%" height={220}>
            <LineChart data={mrr}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="day" />
              <YAxis />
              <Tooltip />
              <Line dataKey="mrr" stroke="#0f766e" name="MRR" isAnimationActive={false} />
            </LineChart>
          </ResponsiveContainer>
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
