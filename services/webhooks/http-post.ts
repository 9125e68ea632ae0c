/**
 * One webhook POST: to an address already checked by checkWebhookUrl (the
 * connection goes to that address; the name is never resolved again, so DNS
 * rebinding between the check and the connection cannot redirect it), no
 * redirects followed (a 3xx is a failure), a deadline for the whole exchange,
 * and at most the first 1 KB of the response body kept.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import type { CheckedUrl } from '../../domain/webhook-url.ts';
import { deliveryTimeoutMs, responseBodyLimitBytes } from '../../domain/webhooks.ts';

export interface WebhookResponse {
  /** Null when no response came (connection refused, timeout, TLS error). */
  statusCode: number | null;
  /** From sending to the response's headers (or to the failure). */
  latencyMs: number;
  /** The first 1 KB of the body, as UTF-8. */
  body: string | null;
  error: string | null;
}

/** A `lookup` that answers with the checked addresses only. */
function pinnedLookup(addresses: CheckedUrl['addresses']): LookupFunction {
  return ((_hostname: string, options: { all?: boolean } | number, callback: (...args: unknown[]) => void) => {
    const cb = typeof options === 'function' ? (options as unknown as (...args: unknown[]) => void) : callback;
    const all = typeof options === 'object' && options !== null && options.all;
    if (all)
      cb(
        null,
        addresses.map((a) => ({ address: a.address, family: a.family })),
      );
    else cb(null, addresses[0]!.address, addresses[0]!.family);
  }) as unknown as LookupFunction;
}

/** Connection failures by code, in words that name no address, port or internal host (the log is the account's to read). */
const connectionErrors: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the receiver',
  EPIPE: 'connection closed by the receiver',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  HPE_INVALID_CONSTANT: 'the response is not valid HTTP',
};

/**
 * What an attempt's log says about a failed connection: a fixed phrase and the error code,
 * never the system's message (which carries the resolved address and port).
 */
export function connectionErrorMessage(error: NodeJS.ErrnoException, timeoutMs: number): string {
  if (error.message === `timed out after ${timeoutMs} ms`) return error.message;
  const code = typeof error.code === 'string' && /^[A-Z0-9_]+$/.test(error.code) ? error.code : undefined;
  if (code && connectionErrors[code]) return `${connectionErrors[code]} (${code})`;
  if (code && /CERT|TLS|SSL/.test(code)) return `TLS error (${code})`;
  if (code?.startsWith('HPE_')) return `the response is not valid HTTP (${code})`;
  return code ? `connection failed (${code})` : 'connection failed';
}

export function postWebhook(
  target: CheckedUrl,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs?: number; agent?: http.Agent } = {},
): Promise<WebhookResponse> {
  const timeoutMs = options.timeoutMs ?? deliveryTimeoutMs;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    let latencyMs: number | null = null;
    const finish = (result: Omit<WebhookResponse, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, latencyMs: latencyMs ?? elapsed() });
    };
    const { url } = target;
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(
      {
        protocol: url.protocol,
        hostname: target.hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(target.addresses),
        // A fresh connection per attempt unless the caller brings an agent: the address was checked for this attempt.
        agent: options.agent ?? false,
        ...(url.protocol === 'https:' ? { servername: target.hostname } : {}),
      },
      (response) => {
        latencyMs = elapsed();
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () => {
          finish({
            statusCode: response.statusCode ?? null,
            body: Buffer.concat(chunks).toString('utf8'),
            error: null,
          });
        };
        response.on('data', (chunk: Buffer) => {
          if (kept < responseBodyLimitBytes) {
            const slice = chunk.subarray(0, responseBodyLimitBytes - kept);
            chunks.push(slice);
            kept += slice.length;
          }
          if (kept >= responseBodyLimitBytes) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', done);
        response.on('close', done);
      },
    );
    const timer = setTimeout(() => {
      request.destroy(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) => {
      finish({ statusCode: null, body: null, error: connectionErrorMessage(error, timeoutMs) });
    });
    request.end(body);
  });
}
