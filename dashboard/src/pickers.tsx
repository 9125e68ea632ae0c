/**
 * Customers and plans chosen by name instead of typed ids, and shown by name in lists:
 * CustomerPicker searches (GET /v1/customers/search: name or email, substring), PlanPicker lists the
 * active plans with their price in words; CustomerName and PlanName show a record's name beside its id.
 */
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useId, useState } from 'react';

import { api, currentMode, type Schemas, unwrap } from './api.ts';
import { describePlan } from './pages/plans.tsx';

type Customer = Schemas['Customer'];
const customerLabel = (c: Customer) => (c.name ? `${c.name} (${c.email})` : c.email);
/** The search language quotes values in "…": a typed quote or backslash is dropped rather than escaped. */
const searchQueryFor = (text: string) => {
  const clean = text.replace(/["\\]/g, '').trim();
  return clean ? `email~"${clean}" OR name~"${clean}"` : '';
};

/**
 * A customer chosen by searching their name or email: a search box and the matches in a select named
 * `name` (so an ActionForm reads the id), or controlled by `value` / `onChange` (filters, where "" is any).
 */
export function CustomerPicker(props: {
  name?: string;
  label?: string;
  required?: boolean;
  value?: string;
  onChange?: (id: string) => void;
  anyLabel?: string;
}) {
  const id = useId();
  const [text, setText] = useState('');
  const query = searchQueryFor(text);
  const mode = currentMode();
  const matches = useQuery({
    queryKey: [mode, 'customer-picker', query],
    queryFn: async () =>
      query
        ? (await unwrap(api.GET('/v1/customers/search', { params: { query: { query, limit: 20 } } }))).data
        : (await unwrap(api.GET('/v1/customers', { params: { query: { limit: 20 } } }))).data,
  });
  const options = matches.data ?? [];
  const controlled = props.onChange !== undefined;
  return (
    <div className="field picker">
      <label htmlFor={`${id}-select`}>{props.label ?? 'Customer'}</label>
      <input
        id={`${id}-search`}
        type="search"
        aria-label={`Search ${(props.label ?? 'customer').toLowerCase()} by name or email`}
        placeholder="Search by name or email"
        value={text}
        onChange={(e) => setText(e.target.value)}
      />
      <select
        id={`${id}-select`}
        name={props.name}
        required={props.required}
        {...(controlled ? { value: props.value ?? '', onChange: (e) => props.onChange!(e.target.value) } : {})}
      >
        <option value="">
          {props.anyLabel ??
            (matches.isLoading ? 'Loading…' : options.length ? 'Choose a customer' : 'No customer matches')}
        </option>
        {/* A chosen customer stays listed while the search shows others. */}
        {controlled && props.value && !options.some((c) => c.id === props.value) ? (
          <option value={props.value}>{props.value}</option>
        ) : null}
        {options.map((c) => (
          <option key={c.id} value={c.id}>
            {customerLabel(c)}
          </option>
        ))}
      </select>
    </div>
  );
}

/** `fresh`: read again on every mount (a settings page must not miss a plan made a moment ago). */
export function useActivePlans(fresh = false) {
  return useQuery({
    queryKey: [currentMode(), 'plans', 'active'],
    queryFn: () => unwrap(api.GET('/v1/plans', { params: { query: { limit: 100, active: 'true' } } })),
    ...(fresh ? { staleTime: 0 } : {}),
  });
}

/** An active plan by name and price ("Pro: $20.00 per unit, every month"); `oneTime` chooses the one-time plans (setup fees), else the recurring ones. */
export function PlanPicker(props: {
  name: string;
  label?: string;
  required?: boolean;
  oneTime?: boolean;
  exclude?: string;
  value?: string;
  onChange?: (id: string) => void;
}) {
  const id = useId();
  const plans = useActivePlans();
  const options = (plans.data?.data ?? []).filter(
    (p) => (props.oneTime ? !p.interval : Boolean(p.interval)) && p.id !== props.exclude,
  );
  const controlled = props.onChange !== undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label ?? 'Plan'}</label>
      <select
        id={id}
        name={props.name}
        required={props.required}
        {...(controlled ? { value: props.value ?? '', onChange: (e) => props.onChange!(e.target.value) } : {})}
      >
        <option value="">{props.required ? 'Choose a plan' : 'None'}</option>
        {options.map((p) => {
          const described = describePlan(p);
          return (
            <option key={p.id} value={p.id}>
              {p.name}: {described.price}, {described.billing}
            </option>
          );
        })}
      </select>
    </div>
  );
}

/**
 * A customer's name (or email) linking to their page; the id while it loads or when it cannot be read.
 * `withEmail`: a list's cell, the email under the name.
 */
export function CustomerName({ id, withEmail }: { id: string; withEmail?: boolean }) {
  const customer = useQuery({
    queryKey: [currentMode(), 'customer', id],
    queryFn: () => unwrap(api.GET('/v1/customers/{id}', { params: { path: { id } } })),
    retry: false,
  });
  if (withEmail && customer.data)
    return <CustomerCell id={id} name={customer.data.name ?? null} email={customer.data.email ?? null} />;
  return (
    <Link to="/customers/$id" params={{ id }}>
      {customer.data ? (customer.data.name ?? customer.data.email) : <code>{id}</code>}
    </Link>
  );
}

/**
 * A payment request's payer: it names an email, not a customer; the account's customer with that email,
 * when there is one, by name (the email under it), else the email alone.
 */
export function CustomerByEmail({ email }: { email: string }) {
  const found = useQuery({
    queryKey: [currentMode(), 'customer-by-email', email],
    queryFn: () => unwrap(api.GET('/v1/customers', { params: { query: { email, limit: 1 } } })),
    retry: false,
  });
  const customer = found.data?.data[0];
  return customer ? <CustomerCell id={customer.id} name={customer.name ?? null} email={email} /> : <>{email}</>;
}

/** A list's customer cell from what the row already holds: the name linking to the customer, the email under it. */
export function CustomerCell({ id, name, email }: { id: string; name: string | null; email: string | null }) {
  return (
    <>
      <Link to="/customers/$id" params={{ id }}>
        {name ?? email ?? <code>{id}</code>}
      </Link>
      {name && email ? <div className="muted small">{email}</div> : null}
    </>
  );
}

/** A plan's name from the plan list (any plan, archived too), else its id. */
export function PlanName({ id }: { id: string }) {
  const plan = useQuery({
    queryKey: [currentMode(), 'plan', id],
    queryFn: () => unwrap(api.GET('/v1/plans/{id}', { params: { path: { id } } })),
    retry: false,
  });
  return plan.data ? <span title={id}>{plan.data.name}</span> : <code>{id}</code>;
}
