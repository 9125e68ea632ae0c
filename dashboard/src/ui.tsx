import { type QueryKey, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useId, useState } from 'react';

import { ApiFailure, currentMode } from './api.ts';

/** Every list answers `{ data, has_more }` and pages with `starting_after` / `ending_before` ids. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export interface Column<T> {
  header: string;
  cell: (row: T) => ReactNode;
}

/** A table over a cursor-paged list: Next takes the page after the last id, Previous the page before the first. */
export function PagedTable<T extends { id: string }>(props: {
  label: string;
  queryKey: QueryKey;
  fetchPage: (cursor: { starting_after?: string; ending_before?: string }) => Promise<Page<T>>;
  columns: Column<T>[];
  empty?: string;
}) {
  const [cursor, setCursor] = useState<{ starting_after?: string; ending_before?: string }>({});
  const [pageNumber, setPageNumber] = useState(1);
  const query = useQuery({
    queryKey: [currentMode(), ...props.queryKey, cursor],
    queryFn: () => props.fetchPage(cursor),
  });
  const rows = query.data?.data ?? [];
  const hasNext = cursor.ending_before ? true : Boolean(query.data?.has_more);
  const hasPrevious = pageNumber > 1;
  return (
    <section aria-label={props.label}>
      {query.error ? <ErrorNote error={query.error} /> : null}
      <div className="table-wrap" tabIndex={0} role="region" aria-label={`${props.label} table`}>
        <table>
          <caption className="visually-hidden">{props.label}</caption>
          <thead>
            <tr>
              {props.columns.map((column) => (
                <th key={column.header} scope="col">
                  {column.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.id}>
                {props.columns.map((column) => (
                  <td key={column.header} data-label={column.header}>
                    {column.cell(row)}
                  </td>
                ))}
              </tr>
            ))}
            {!query.isLoading && rows.length === 0 ? (
              <tr>
                <td colSpan={props.columns.length}>{props.empty ?? 'Nothing here yet.'}</td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
      <nav className="pager" aria-label={`${props.label} pages`}>
        <button
          type="button"
          disabled={!hasPrevious || rows.length === 0}
          onClick={() => {
            setCursor({ ending_before: rows[0]!.id });
            setPageNumber((n) => n - 1);
          }}
        >
          Previous page
        </button>
        <span>Page {pageNumber}</span>
        <button
          type="button"
          disabled={!hasNext || rows.length === 0}
          onClick={() => {
            setCursor({ starting_after: rows[rows.length - 1]!.id });
            setPageNumber((n) => n + 1);
          }}
        >
          Next page
        </button>
      </nav>
    </section>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const message =
    error instanceof ApiFailure
      ? `${error.message} (${error.code})`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <p role="alert" className="error">
      {message}
    </p>
  );
}

export function Field(props: {
  label: string;
  name: string;
  type?: string;
  required?: boolean;
  defaultValue?: string | number;
  options?: string[];
  placeholder?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.options ? (
        <select id={id} name={props.name} defaultValue={props.defaultValue}>
          {props.options.map((option) => (
            <option key={option}>{option}</option>
          ))}
        </select>
      ) : (
        <input
          id={id}
          name={props.name}
          type={props.type ?? 'text'}
          required={props.required}
          defaultValue={props.defaultValue}
          placeholder={props.placeholder}
        />
      )}
    </div>
  );
}

/** A form whose submit calls `action` with its fields, shows the error, and refreshes the queries named by `invalidates`. */
export function ActionForm(props: {
  title: string;
  submit: string;
  /** `values` holds one value per field; `form` all of them (a multiple select's every choice). */
  action: (values: Record<string, string>, form: FormData) => Promise<unknown>;
  invalidates?: QueryKey;
  children: ReactNode;
  done?: (result: unknown) => void;
}) {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const values = Object.fromEntries([...data.entries()].map(([k, v]) => [k, String(v)]));
    setBusy(true);
    setError(null);
    try {
      const result = await props.action(values, data);
      form.reset();
      await client.invalidateQueries();
      props.done?.(result);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="card form" onSubmit={onSubmit} aria-label={props.title}>
      <h2>{props.title}</h2>
      {props.children}
      <ErrorNote error={error} />
      <button type="submit" disabled={busy}>
        {props.submit}
      </button>
    </form>
  );
}

/** A button that runs one API action, then refreshes every query. */
export function ActionButton(props: {
  label: string;
  action: () => Promise<unknown>;
  confirm?: string;
  className?: string;
  done?: (result: unknown) => void;
}) {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <span className="action">
      <button
        type="button"
        className={props.className}
        disabled={busy}
        onClick={async () => {
          if (props.confirm && !window.confirm(props.confirm)) return;
          setBusy(true);
          setError(null);
          try {
            const result = await props.action();
            await client.invalidateQueries();
            props.done?.(result);
          } catch (failure) {
            setError(failure);
          } finally {
            setBusy(false);
          }
        }}
      >
        {props.label}
      </button>
      <ErrorNote error={error} />
    </span>
  );
}

export function Status({ value }: { value: string }) {
  return <span className={`status status-${value}`}>{value.replaceAll('_', ' ')}</span>;
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  return (
    <header className="page-title">
      <h1>{children}</h1>
      {actions}
    </header>
  );
}
