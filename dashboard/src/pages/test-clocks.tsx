/**
 * Test clocks (sandbox only; docs/testing-your-integration.md): create one at a time of your choosing,
 * put customers and subscriptions on it, and advance it — by a day, a week, a month or to an instant —
 * while the page follows the clock until every piece of work due has run (status advancing → ready).
 */
import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { useId, useState } from 'react';

import { api, currentMode, date, money, type Schemas, unwrap } from '../api.ts';
import { PlanName, PlanPicker } from '../pickers.tsx';
import { ActionButton, ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

type Clock = Schemas['TestClock'];

/** "2026-11-27T10:00" for a datetime-local input, in the browser's time zone. */
function localInputValue(instant: Date): string {
  const shifted = new Date(instant.getTime() - instant.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
}

/** The sandbox's test cards a clock's customer may have: one that pays, one declined (dunning on the clock). */
const testCards = ['pm_card_visa', 'pm_card_chargeDeclined'] as const;

const sandboxOnly = <p className="card">Test clocks exist in the sandbox only: switch to Sandbox to use them.</p>;

export function TestClocks() {
  const navigate = useNavigate();
  if (currentMode() !== 'test') {
    return (
      <>
        <PageTitle>Test clocks</PageTitle>
        {sandboxOnly}
      </>
    );
  }
  return (
    <>
      <PageTitle>Test clocks</PageTitle>
      <p className="muted">
        A clock's customers, subscriptions and invoices take its time and move only when you advance it.
      </p>
      <ActionForm
        title="New test clock"
        submit="Create test clock"
        action={(v) =>
          unwrap(
            api.POST('/v1/test_clocks', {
              body: { name: v.name || undefined, frozen_time: new Date(v.frozen_time!).toISOString() },
            }),
          )
        }
        done={(clock) => void navigate({ to: '/test-clocks/$id', params: { id: (clock as Clock).id } })}
      >
        <Field label="Name" name="name" placeholder="Monthly renewal, declined card" />
        <Field
          label="Start time (your time zone)"
          name="frozen_time"
          type="datetime-local"
          required
          defaultValue={localInputValue(new Date())}
        />
      </ActionForm>
      <PagedTable
        label="Test clocks"
        queryKey={['test-clocks']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/test_clocks', { params: { query: { limit: 20, ...cursor } } }))}
        empty="No test clocks yet."
        columns={[
          {
            header: 'Clock',
            cell: (c) => (
              <Link to="/test-clocks/$id" params={{ id: c.id }}>
                {c.name ?? c.id}
              </Link>
            ),
          },
          { header: 'Time', cell: (c) => date(c.frozen_time) },
          { header: 'Status', cell: (c) => <Status value={c.status} /> },
          { header: 'Deleted after', cell: (c) => date(c.deletes_after) },
        ]}
      />
    </>
  );
}

const steps = [
  { label: '+1 day', ms: 86_400_000 },
  { label: '+1 week', ms: 7 * 86_400_000 },
  { label: '+1 month', months: 1 },
] as const;

/** The instant `step` after `from` (a month is a calendar month, as renewals count it). */
function after(from: Date, step: (typeof steps)[number]): Date {
  if ('months' in step) {
    const next = new Date(from);
    next.setUTCMonth(next.getUTCMonth() + step.months);
    return next;
  }
  return new Date(from.getTime() + step.ms);
}

/** Advance to an instant; the clock is then followed (GET every half second) until it is ready again. */
/** One advance the page follows: where the clock was and where it is going. */
interface Advance {
  from: string;
  to: string;
}

function AdvanceClock({ clock, onStarted }: { clock: Clock; onStarted: (advance: Advance) => void }) {
  const id = useId();
  const [target, setTarget] = useState(() =>
    localInputValue(new Date(new Date(clock.frozen_time).getTime() + 86_400_000)),
  );
  const advance = async (to: Date) => {
    const from = clock.frozen_time;
    const advancing = await unwrap(
      api.POST('/v1/test_clocks/{id}/advance', {
        params: { path: { id: clock.id } },
        body: { frozen_time: to.toISOString() },
      }),
    );
    onStarted({ from, to: to.toISOString() });
    return advancing;
  };
  const busy = clock.status === 'advancing';
  return (
    <section className="card" aria-label="Advance the clock">
      <h2>Advance</h2>
      <div className="actions">
        {steps.map((step) => (
          <ActionButton
            key={step.label}
            label={`Advance ${step.label}`}
            action={() =>
              busy
                ? Promise.reject(new Error('The clock is still advancing.'))
                : advance(after(new Date(clock.frozen_time), step))
            }
          />
        ))}
      </div>
      <div className="filters">
        <div className="field">
          <label htmlFor={id}>Advance to (your time zone)</label>
          <input id={id} type="datetime-local" value={target} onChange={(e) => setTarget(e.target.value)} />
        </div>
        <ActionButton label="Advance to this time" action={() => advance(new Date(target))} />
      </div>
    </section>
  );
}

/** How far the clock is between where it started and where it is going (its frozen time moves as the work due runs). */
function AdvanceProgress({ clock, advance }: { clock: Clock; advance: Advance | null }) {
  if (clock.status === 'internal_failure')
    return <p className="error">The clock failed to advance: {clock.status_details.internal_failure?.message}</p>;
  // Ready once the clock has reached the time asked for (until the next read, the clock may still show the time before).
  const arrived = advance === null || Date.parse(clock.frozen_time) >= Date.parse(advance.to);
  if (clock.status !== 'advancing' && arrived)
    return advance ? <p role="status">Ready at {date(clock.frozen_time)}: everything due up to then has run.</p> : null;
  const to = clock.status_details.advancing?.target_frozen_time ?? advance?.to;
  const start = advance ? Date.parse(advance.from) : Date.parse(clock.frozen_time);
  const end = to ? Date.parse(to) : start;
  const done = end > start ? Math.min(1, Math.max(0, (Date.parse(clock.frozen_time) - start) / (end - start))) : 0;
  return (
    <p role="status">
      <progress max={100} value={Math.round(done * 100)} aria-label="Advance progress" /> Advancing to {date(to)}… (
      {date(clock.frozen_time)} so far)
    </p>
  );
}

export function TestClockDetail() {
  const { id } = useParams({ strict: false }) as { id: string };
  const navigate = useNavigate();
  const mode = currentMode();
  const [advance, setAdvance] = useState<Advance | null>(null);
  const clock = useQuery({
    queryKey: [mode, 'test-clock', id],
    queryFn: () => unwrap(api.GET('/v1/test_clocks/{id}', { params: { path: { id } } })),
    // Followed every half second while advancing, and until it shows the time an advance asked for.
    refetchInterval: (q) =>
      q.state.data?.status === 'advancing' ||
      (advance && q.state.data && Date.parse(q.state.data.frozen_time) < Date.parse(advance.to))
        ? 500
        : false,
  });
  const c = clock.data;
  const customers = useQuery({
    queryKey: [mode, 'test-clock-customers', id, c?.frozen_time],
    queryFn: () => unwrap(api.GET('/v1/customers', { params: { query: { limit: 100, test_clock: id } } })),
  });
  const clockCustomers = customers.data?.data ?? [];
  return (
    <>
      <PageTitle>Test clock {c?.name ?? id}</PageTitle>
      <p>
        <Link to="/test-clocks">All test clocks</Link>
      </p>
      {mode !== 'test' ? sandboxOnly : null}
      <ErrorNote error={clock.error} />
      {c ? (
        <>
          <section className="card" aria-label="Clock">
            <dl className="facts">
              <dt>Time</dt>
              <dd>
                <time dateTime={c.frozen_time}>{date(c.frozen_time)}</time>
              </dd>
              <dt>Status</dt>
              <dd>
                <Status value={c.status} />
              </dd>
              <dt>Deleted after</dt>
              <dd>{date(c.deletes_after)}</dd>
            </dl>
            <AdvanceProgress clock={c} advance={advance} />
            <ActionButton
              label="Delete clock"
              className="danger"
              confirm="Delete this clock and every customer, subscription and invoice on it?"
              action={() => unwrap(api.DELETE('/v1/test_clocks/{id}', { params: { path: { id } } }))}
              done={() => void navigate({ to: '/test-clocks' })}
            />
          </section>
          <AdvanceClock key={c.frozen_time} clock={c} onStarted={setAdvance} />
          <ActionForm
            title="New customer on this clock"
            submit="Add customer"
            action={(v) =>
              unwrap(
                api.POST('/v1/customers', {
                  body: {
                    email: v.email!,
                    name: v.name || undefined,
                    payment_method: testCards.find((card) => card === v.payment_method),
                    test_clock: id,
                  },
                }),
              )
            }
          >
            <Field label="Email" name="email" type="email" required />
            <Field label="Name" name="name" />
            <Field label="Test payment method" name="payment_method" options={[...testCards, '']} />
          </ActionForm>
          {clockCustomers.length ? (
            <ActionForm
              title="New subscription on this clock"
              submit="Start subscription"
              action={(v) =>
                unwrap(api.POST('/v1/subscriptions', { body: { customer_id: v.customer_id!, plan: v.plan! } }))
              }
            >
              <ClockCustomerSelect customers={clockCustomers} />
              <PlanPicker name="plan" required />
            </ActionForm>
          ) : null}
          <ClockObjects clockId={id} frozenTime={c.frozen_time} customers={clockCustomers} />
        </>
      ) : null}
    </>
  );
}

function ClockCustomerSelect({ customers }: { customers: Schemas['Customer'][] }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>Customer</label>
      <select id={id} name="customer_id" required>
        {customers.map((c) => (
          <option key={c.id} value={c.id}>
            {c.name ? `${c.name} (${c.email})` : c.email}
          </option>
        ))}
      </select>
    </div>
  );
}

/** The customers on the clock, their subscriptions and invoices, read again whenever the clock's time moves. */
function ClockObjects({
  clockId,
  frozenTime,
  customers,
}: {
  clockId: string;
  frozenTime: string;
  customers: Schemas['Customer'][];
}) {
  const mode = currentMode();
  const subscriptions = useQuery({
    queryKey: [mode, 'test-clock-subscriptions', clockId, frozenTime],
    queryFn: () => unwrap(api.GET('/v1/subscriptions', { params: { query: { limit: 100, test_clock: clockId } } })),
  });
  const invoices = useQuery({
    queryKey: [mode, 'test-clock-invoices', clockId, frozenTime, customers.map((c) => c.id).join()],
    enabled: customers.length > 0,
    queryFn: async () =>
      (
        await Promise.all(
          customers.map((c) => unwrap(api.GET('/v1/invoices', { params: { query: { limit: 20, customer: c.id } } }))),
        )
      ).flatMap((page) => page.data),
  });
  const name = (customerId: string) => {
    const c = customers.find((x) => x.id === customerId);
    return c ? (c.name ?? c.email) : customerId;
  };
  return (
    <section className="card" aria-label="Objects on this clock">
      <h2>On this clock</h2>
      <h3>Customers</h3>
      {customers.length === 0 ? <p>No customers on this clock yet.</p> : null}
      <ul className="plain">
        {customers.map((c) => (
          <li key={c.id}>
            <Link to="/customers/$id" params={{ id: c.id }}>
              {c.name ?? c.email}
            </Link>{' '}
            <span className="muted">{c.payment_method ?? 'no payment method'}</span>
          </li>
        ))}
      </ul>
      <h3>Subscriptions</h3>
      {(subscriptions.data?.data ?? []).length === 0 ? <p>No subscriptions on this clock yet.</p> : null}
      <ul className="plain">
        {(subscriptions.data?.data ?? []).map((s) => (
          <li key={s.id}>
            <Link to="/subscriptions/$id" params={{ id: s.id }}>
              <PlanName id={s.plan} />
            </Link>{' '}
            for {name(s.customer_id)} <Status value={s.status} /> · period ends {date(s.current_period_end)}
          </li>
        ))}
      </ul>
      <h3>Invoices</h3>
      {(invoices.data ?? []).length === 0 ? <p>No invoices on this clock yet.</p> : null}
      <ul className="plain">
        {(invoices.data ?? []).map((i) => (
          <li key={i.id}>
            <Link to="/invoices/$id" params={{ id: i.id }}>
              {i.number ?? i.id}
            </Link>{' '}
            {name(i.customer_id)} · {money(i.total, i.currency)} <Status value={i.status} /> · {date(i.created_at)}
          </li>
        ))}
      </ul>
    </section>
  );
}
