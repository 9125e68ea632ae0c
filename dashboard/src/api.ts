/**
 * The dashboard's API client: openapi-fetch typed by sdk/openapi.ts (generated from the
 * engine's OpenAPI document), so a renamed field fails `tsc`, not a page. Credentials are
 * the httpOnly session cookie; writes carry the CSRF token from the readable
 * `billing_csrf` cookie. Nothing is kept in localStorage but the chosen mode.
 */
import createClient from 'openapi-fetch';

import { currencyExponent } from '../../domain/money.ts';
import type { components, paths } from '../../sdk/openapi.ts';

export type Schemas = components['schemas'];
export type Mode = 'live' | 'test';

const modeKey = 'billing.mode';
let mode: Mode = (
  typeof localStorage !== 'undefined' && localStorage.getItem(modeKey) === 'live' ? 'live' : 'test'
) as Mode;
export const currentMode = () => mode;
export function setMode(next: Mode) {
  mode = next;
  localStorage.setItem(modeKey, next);
}

export function readCookie(name: string): string | undefined {
  return document.cookie
    .split('; ')
    .find((part) => part.startsWith(`${name}=`))
    ?.slice(name.length + 1);
}

export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
api.use({
  onRequest({ request }) {
    request.headers.set('x-sandbox-mode', String(mode === 'test'));
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const csrf = readCookie('billing_csrf');
      if (csrf) request.headers.set('x-csrf-token', decodeURIComponent(csrf));
    }
    return request;
  },
});

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The data of an openapi-fetch answer, or throws its `{ error, message }` as an ApiFailure. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) {
    const body = (error ?? {}) as { error?: string; message?: string };
    throw new ApiFailure(
      response.status,
      body.error ?? 'error',
      body.message ?? `The request failed (${response.status}).`,
    );
  }
  return data;
}

/** A binary answer (a PDF) fetched with the session and mode, as an object URL. */
export async function blobUrl(path: string): Promise<string> {
  const response = await fetch(path, {
    credentials: 'same-origin',
    headers: { 'x-sandbox-mode': String(mode === 'test') },
  });
  if (!response.ok) throw new ApiFailure(response.status, 'error', `Could not fetch ${path} (${response.status}).`);
  return URL.createObjectURL(await response.blob());
}

/** Minor units as money, by the currency's own decimals (JPY has none). */
export function money(amount: number, currency: string): string {
  const exponent = currencyExponent(currency);
  try {
    return new Intl.NumberFormat(undefined, {
      style: 'currency',
      currency,
      minimumFractionDigits: exponent,
      maximumFractionDigits: exponent,
    }).format(amount / 10 ** exponent);
  } catch {
    return `${(amount / 10 ** exponent).toFixed(exponent)} ${currency}`;
  }
}

export function date(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';
}

/**
 * A call to a route the generated types (sdk/openapi.ts) may not name yet (routes added in this
 * release before the SDK is regenerated): the same credentials, mode and CSRF token as `api`,
 * and the same `{ error, message }` thrown as an ApiFailure. Its answer is typed by the caller.
 */
export async function call<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  options: { body?: unknown; query?: Record<string, string | number | boolean | undefined> } = {},
): Promise<T> {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(options.query ?? {}))
    if (value !== undefined && value !== '') search.set(key, String(value));
  const headers: Record<string, string> = { 'x-sandbox-mode': String(mode === 'test') };
  if (method !== 'GET') {
    const csrf = readCookie('billing_csrf');
    if (csrf) headers['x-csrf-token'] = decodeURIComponent(csrf);
  }
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${path}${search.size ? `?${search}` : ''}`, {
    method,
    credentials: 'same-origin',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const failure = (body ?? {}) as { error?: string; message?: string };
    throw new ApiFailure(
      response.status,
      failure.error ?? 'error',
      failure.message ?? `The request failed (${response.status}).`,
    );
  }
  return body as T;
}

/** "49.90" in `currency`'s major units as minor units (4990), or null when it is not such an amount. */
export function toMinor(text: string, currency: string): number | null {
  const exponent = currencyExponent(currency);
  const trimmed = text.trim();
  const match = /^(-)?(\d+)(?:\.(\d+))?$/.exec(trimmed);
  if (!match || (match[3] ?? '').length > exponent) return null;
  const minor = Number(match[2]) * 10 ** exponent + Number((match[3] ?? '').padEnd(exponent, '0') || '0');
  return match[1] ? -minor : minor;
}

/** A day without the time ("Nov 27, 2026"), for periods and due dates. */
export function dateOnly(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleDateString(undefined, { dateStyle: 'medium' }) : '—';
}
