import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';

import { api, currentMode, date, money, type Schemas, unwrap } from '../api.ts';
import { canManage, useSession } from '../session.tsx';
import { ActionButton, ActionForm, ErrorNote, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

type BankAccount = Schemas['BankAccount'];
type Rail = BankAccount['type'];
type Schedule = Schemas['PayoutSettings']['schedules'][number];

const currencies = ['USD', 'EUR', 'GBP'];
const rails: { value: Rail; label: string; currencies: string[] }[] = [
  { value: 'us_ach', label: 'US bank account (ACH)', currencies: ['USD'] },
  { value: 'sepa', label: 'SEPA (IBAN)', currencies: ['EUR'] },
  { value: 'uk', label: 'UK bank account (sort code)', currencies: ['GBP'] },
  { value: 'wire', label: 'Wire (BIC/SWIFT)', currencies: ['USD', 'EUR', 'GBP'] },
  { value: 'paypal', label: 'PayPal', currencies: ['USD', 'EUR', 'GBP'] },
];
const weekdays = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const;

const describeAccount = (b: BankAccount) => `${b.type === 'paypal' ? (b.email ?? 'PayPal') : `•••• ${b.last4}`}`;
/** Minor units from a typed amount ("49.00" → 4900). */
/** A run's day: runs are at 00:00 UTC, so the day is read in UTC. */
const utcDay = (value: string) =>
  new Date(value).toLocaleDateString(undefined, {
    timeZone: 'UTC',
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
  });
const minor = (value: string | undefined) => Math.round(Number(value ?? 0) * 100);

export function Payouts() {
  const session = useSession();
  const readOnly = !canManage(session);
  const mode = currentMode();
  const destinations = useQuery({
    queryKey: [mode, 'bank-accounts-all'],
    queryFn: () => unwrap(api.GET('/v1/bank_accounts', { params: { query: { limit: 100 } } })),
  });
  return (
    <>
      <PageTitle>Payouts</PageTitle>
      {readOnly ? (
        <p className="card">
          Members can read payouts, destinations, schedules and holds; an owner or admin changes them.
        </p>
      ) : null}

      <section aria-labelledby="bank-accounts-title" id="bank-accounts">
        <h2 id="bank-accounts-title">Bank accounts</h2>
        <PagedTable
          label="Bank accounts"
          queryKey={['bank-accounts']}
          fetchPage={(cursor) => unwrap(api.GET('/v1/bank_accounts', { params: { query: { limit: 20, ...cursor } } }))}
          empty="No destination yet: add one below."
          columns={[
            { header: 'Account', cell: (b) => `${b.account_holder_name} ${describeAccount(b)}` },
            { header: 'Rail', cell: (b) => rails.find((r) => r.value === b.type)?.label ?? b.type },
            { header: 'Currency', cell: (b) => b.currency },
            { header: 'Status', cell: (b) => <Status value={b.status} /> },
            { header: 'Default', cell: (b) => (b.default_for_currency ? `Default for ${b.currency}` : 'No') },
            ...(readOnly
              ? []
              : [
                  {
                    header: 'Actions',
                    cell: (b: BankAccount) => (
                      <div className="actions">
                        {b.default_for_currency ? null : (
                          <ActionButton
                            label={`Make ${describeAccount(b)} the ${b.currency} default`}
                            action={() =>
                              unwrap(
                                api.PATCH('/v1/bank_accounts/{id}', {
                                  params: { path: { id: b.id } },
                                  body: { default_for_currency: true },
                                }),
                              )
                            }
                          />
                        )}
                        <ActionButton
                          className="danger"
                          label={`Delete ${describeAccount(b)}`}
                          confirm={`Delete the ${b.currency} destination ${describeAccount(b)}? Payouts keep naming it.`}
                          action={() =>
                            unwrap(api.DELETE('/v1/bank_accounts/{id}', { params: { path: { id: b.id } } }))
                          }
                        />
                      </div>
                    ),
                  },
                ]),
          ]}
        />
        {readOnly ? null : <AddBankAccount />}
      </section>

      <Schedules readOnly={readOnly} />

      <section aria-labelledby="payouts-title">
        <h2 id="payouts-title">Payouts made</h2>
        {readOnly ? null : <NewPayout destinations={destinations.data?.data ?? []} />}
        <PagedTable
          label="Payouts"
          queryKey={['payouts']}
          fetchPage={(cursor) => unwrap(api.GET('/v1/payouts', { params: { query: { limit: 20, ...cursor } } }))}
          columns={[
            { header: 'Amount', cell: (p) => money(p.amount, p.currency) },
            { header: 'Status', cell: (p) => <Status value={p.status} /> },
            {
              header: 'Destination',
              cell: (p) => {
                const d = destinations.data?.data.find((b) => b.id === p.destination);
                return d ? `${d.account_holder_name} ${describeAccount(d)}` : (p.destination ?? p.method);
              },
            },
            { header: 'Description', cell: (p) => p.description ?? (p.automatic ? 'Scheduled' : '—') },
            { header: 'Hold', cell: (p) => (p.hold ? `Held: ${p.hold.reason}` : '—') },
            { header: 'Failure', cell: (p) => (p.failure_message ? `${p.failure_message} (${p.failure_code})` : '—') },
            { header: 'Created', cell: (p) => date(p.created_at) },
            { header: 'Arrival', cell: (p) => date(p.paid_at ?? p.arrival_date) },
            ...(readOnly
              ? []
              : [
                  {
                    header: 'Actions',
                    cell: (p: Schemas['Payout']) =>
                      p.status === 'pending' ? (
                        <ActionButton
                          label={`Cancel payout of ${money(p.amount, p.currency)}`}
                          confirm={`Cancel this payout of ${money(p.amount, p.currency)}? The money goes back to the available balance.`}
                          action={() => unwrap(api.POST('/v1/payouts/{id}/cancel', { params: { path: { id: p.id } } }))}
                        />
                      ) : (
                        '—'
                      ),
                  },
                ]),
          ]}
        />
      </section>

      <Holds readOnly={readOnly} />
    </>
  );
}

/** The add form: the fields follow the chosen rail, and the API's refusal (which names the field and the check) is shown as it is. */
function AddBankAccount() {
  const [rail, setRail] = useState<Rail>('us_ach');
  const [currency, setCurrency] = useState('USD');
  const railId = useId();
  const currencyId = useId();
  const allowed = rails.find((r) => r.value === rail)!.currencies;
  const chosenCurrency = allowed.includes(currency) ? currency : allowed[0]!;
  return (
    <ActionForm
      title="Add bank account"
      submit="Add bank account"
      action={(v) => {
        const text = (name: string) => (v[name] ? v[name]!.trim() || undefined : undefined);
        return unwrap(
          api.POST('/v1/bank_accounts', {
            body: {
              type: rail,
              currency: chosenCurrency,
              account_holder_name: v.account_holder_name!,
              account_holder_type: v.account_holder_type as 'individual' | 'company',
              country: text('country'),
              routing_number: text('routing_number'),
              account_number: text('account_number'),
              iban: text('iban'),
              bic: text('bic'),
              sort_code: text('sort_code'),
              email: text('email'),
              default_for_currency: v.default_for_currency === 'on' ? true : undefined,
            },
          }),
        );
      }}
    >
      <div className="field">
        <label htmlFor={railId}>Rail</label>
        <select id={railId} name="type" value={rail} onChange={(event) => setRail(event.target.value as Rail)}>
          {rails.map((r) => (
            <option key={r.value} value={r.value}>
              {r.label}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={currencyId}>Currency</label>
        <select
          id={currencyId}
          name="currency"
          value={chosenCurrency}
          onChange={(event) => setCurrency(event.target.value)}
        >
          {allowed.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </select>
      </div>
      <Field label="Holder name" name="account_holder_name" required />
      <Field label="Holder type" name="account_holder_type" options={['individual', 'company']} />
      <Field
        label="Country (optional, 2 letters)"
        name="country"
        placeholder={rail === 'us_ach' ? 'US' : rail === 'uk' ? 'GB' : 'DE'}
      />
      {rail === 'us_ach' ? (
        <>
          <Field key="routing" label="Routing number" name="routing_number" required placeholder="110000000" />
          <Field key="us-account" label="Account number" name="account_number" required />
        </>
      ) : null}
      {rail === 'sepa' ? (
        <>
          <Field key="iban" label="IBAN" name="iban" required placeholder="DE89 3704 0044 0532 0130 00" />
          <Field key="sepa-bic" label="BIC (optional)" name="bic" />
        </>
      ) : null}
      {rail === 'uk' ? (
        <>
          <Field key="sort" label="Sort code" name="sort_code" required placeholder="10-88-00" />
          <Field key="uk-account" label="Account number" name="account_number" required />
        </>
      ) : null}
      {rail === 'wire' ? (
        <>
          <Field key="wire-bic" label="BIC/SWIFT" name="bic" required />
          {chosenCurrency === 'EUR' ? (
            <Field key="wire-iban" label="IBAN" name="iban" required />
          ) : (
            <Field key="wire-account" label="Account number" name="account_number" required />
          )}
        </>
      ) : null}
      {rail === 'paypal' ? <Field key="paypal" label="PayPal email" name="email" type="email" required /> : null}
      <div className="field checkbox">
        <input id={`${railId}-default`} type="checkbox" name="default_for_currency" />
        <label htmlFor={`${railId}-default`}>Make it the default for its currency</label>
      </div>
    </ActionForm>
  );
}

function Schedules({ readOnly }: { readOnly: boolean }) {
  const mode = currentMode();
  const settings = useQuery({
    queryKey: [mode, 'payout-settings'],
    queryFn: () => unwrap(api.GET('/v1/payout_settings')),
  });
  return (
    <section aria-labelledby="schedule-title">
      <h2 id="schedule-title">Payout schedule</h2>
      <ErrorNote error={settings.error} />
      <div className="cards">
        {(settings.data?.schedules ?? []).map((s) => (
          <ScheduleForm key={`${s.currency}-${JSON.stringify(s)}`} schedule={s} readOnly={readOnly} />
        ))}
      </div>
    </section>
  );
}

function ScheduleForm({ schedule, readOnly }: { schedule: Schedule; readOnly: boolean }) {
  const [interval, setInterval] = useState(schedule.interval);
  const intervalId = useId();
  const next = schedule.next_payout_at
    ? `Next payout ${utcDay(schedule.next_payout_at)}, 00:00 UTC`
    : 'Manual: payouts only when you make them';
  if (readOnly) {
    return (
      <section className="card schedule-card" aria-label={`${schedule.currency} schedule`}>
        <h3>{schedule.currency}</h3>
        <dl className="facts">
          <dt>Interval</dt>
          <dd>{schedule.interval}</dd>
          {schedule.weekly_anchor ? (
            <>
              <dt>On</dt>
              <dd>{schedule.weekly_anchor}</dd>
            </>
          ) : null}
          {schedule.monthly_anchor ? (
            <>
              <dt>Day of month</dt>
              <dd>{schedule.monthly_anchor}</dd>
            </>
          ) : null}
          <dt>Delay</dt>
          <dd>{schedule.delay_days} days</dd>
          <dt>Minimum</dt>
          <dd>{money(schedule.minimum_amount, schedule.currency)}</dd>
        </dl>
        <p>{next}</p>
      </section>
    );
  }
  return (
    <ActionForm
      title={`${schedule.currency} schedule`}
      submit={`Save ${schedule.currency} schedule`}
      action={(v) =>
        unwrap(
          api.PATCH('/v1/payout_settings', {
            body: {
              currency: schedule.currency,
              interval,
              weekly_anchor: interval === 'weekly' ? (v.weekly_anchor as (typeof weekdays)[number]) : null,
              monthly_anchor: interval === 'monthly' ? Number(v.monthly_anchor) : null,
              delay_days: Number(v.delay_days),
              minimum_amount: minor(v.minimum_amount),
            },
          }),
        )
      }
    >
      <p className="next-payout" aria-live="polite">
        {next}
      </p>
      <div className="field">
        <label htmlFor={intervalId}>{`${schedule.currency} interval`}</label>
        <select
          id={intervalId}
          name="interval"
          value={interval}
          onChange={(event) => setInterval(event.target.value as Schedule['interval'])}
        >
          {['manual', 'daily', 'weekly', 'monthly'].map((i) => (
            <option key={i}>{i}</option>
          ))}
        </select>
      </div>
      {interval === 'weekly' ? (
        <Field
          label={`${schedule.currency} weekday`}
          name="weekly_anchor"
          options={[...weekdays]}
          defaultValue={schedule.weekly_anchor ?? 'monday'}
        />
      ) : null}
      {interval === 'monthly' ? (
        <Field
          label={`${schedule.currency} day of month`}
          name="monthly_anchor"
          type="number"
          required
          defaultValue={schedule.monthly_anchor ?? 1}
        />
      ) : null}
      <Field
        label={`${schedule.currency} delay (days)`}
        name="delay_days"
        type="number"
        defaultValue={schedule.delay_days}
      />
      <Field
        label={`${schedule.currency} minimum`}
        name="minimum_amount"
        type="number"
        defaultValue={(schedule.minimum_amount / 100).toFixed(2)}
      />
    </ActionForm>
  );
}

function NewPayout({ destinations }: { destinations: BankAccount[] }) {
  const [currency, setCurrency] = useState('USD');
  const currencyId = useId();
  const destinationId = useId();
  const choices = destinations.filter((d) => d.currency === currency);
  return (
    <ActionForm
      title="New payout"
      submit="Create payout"
      action={(v) =>
        unwrap(
          api.POST('/v1/payouts', {
            params: { header: { 'Idempotency-Key': crypto.randomUUID() } },
            body: {
              amount: minor(v.amount),
              currency,
              destination: v.destination || undefined,
              description: v.description || undefined,
            },
          }),
        )
      }
    >
      <Field label="Payout amount" name="amount" type="number" required placeholder="40.00" />
      <div className="field">
        <label htmlFor={currencyId}>Payout currency</label>
        <select id={currencyId} name="currency" value={currency} onChange={(event) => setCurrency(event.target.value)}>
          {currencies.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={destinationId}>Destination</label>
        <select id={destinationId} name="destination" key={currency}>
          <option value="">{`The ${currency} default`}</option>
          {choices.map((d) => (
            <option key={d.id} value={d.id}>
              {`${d.account_holder_name} ${describeAccount(d)}`}
            </option>
          ))}
        </select>
      </div>
      <Field label="Payout description" name="description" />
    </ActionForm>
  );
}

function Holds({ readOnly }: { readOnly: boolean }) {
  return (
    <section aria-labelledby="holds-title">
      <h2 id="holds-title">Holds</h2>
      {readOnly ? null : (
        <ActionForm
          title="New hold"
          submit="Place hold"
          action={(v) =>
            unwrap(
              api.POST('/v1/payout_holds', {
                body: {
                  reason: v.reason!,
                  payout: v.payout?.trim() || undefined,
                  until: v.until ? new Date(v.until).toISOString() : undefined,
                },
              }),
            )
          }
        >
          <Field label="Hold reason" name="reason" required />
          <Field label="Payout ID (empty: the whole account)" name="payout" placeholder="po_…" />
          <Field label="Until (empty: until released)" name="until" type="datetime-local" />
        </ActionForm>
      )}
      <PagedTable
        label="Holds"
        queryKey={['payout-holds']}
        fetchPage={(cursor) => unwrap(api.GET('/v1/payout_holds', { params: { query: { limit: 20, ...cursor } } }))}
        empty="No holds."
        columns={[
          { header: 'Reason', cell: (h) => h.reason },
          { header: 'On', cell: (h) => h.payout ?? 'The whole account' },
          { header: 'State', cell: (h) => <Status value={h.active ? 'active' : 'released'} /> },
          { header: 'Placed by', cell: (h) => h.created_by },
          {
            header: 'Until',
            cell: (h) =>
              h.released_at ? `Released ${date(h.released_at)}` : h.until ? date(h.until) : 'Until released',
          },
          ...(readOnly
            ? []
            : [
                {
                  header: 'Actions',
                  cell: (h: Schemas['PayoutHold']) =>
                    h.active ? (
                      <ActionButton
                        label={`Release hold: ${h.reason}`}
                        confirm={`Release the hold "${h.reason}"? Held payouts are sent at once.`}
                        action={() => unwrap(api.DELETE('/v1/payout_holds/{id}', { params: { path: { id: h.id } } }))}
                      />
                    ) : (
                      '—'
                    ),
                },
              ]),
        ]}
      />
    </section>
  );
}
