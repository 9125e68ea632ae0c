/**
 * Verifies a webhook from the billing engine (the Standard Webhooks scheme), for
 * receivers written in TypeScript/JavaScript. No dependencies beyond node:crypto,
 * so it can be copied as is. Any Standard Webhooks library verifies the same
 * requests (for example the npm package `standardwebhooks`).
 *
 *   import { verifyWebhook } from 'billing-engine/verify-webhook';
 *   const event = verifyWebhook(process.env.WEBHOOK_SECRET!, req.headers, rawBody);
 *
 * Pass the raw body exactly as received (not re-serialized JSON).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, either way (default 300 s), against replays. */
  toleranceSeconds?: number;
  /** The current time in ms (default Date.now()). */
  now?: number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Checks `webhook-signature` against `secret` (the endpoint's `whsec_...`
 * secret, or a list of them while you rotate) and the timestamp against the
 * tolerance. Returns the parsed event; throws WebhookVerificationError otherwise.
 */
export function verifyWebhook<T = unknown>(
  secret: string | readonly string[],
  headers: HeaderSource,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): T {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('invalid webhook-timestamp');
  const tolerance = options.toleranceSeconds ?? 300;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - Number(timestamp)) > tolerance)
    throw new WebhookVerificationError('webhook-timestamp is outside the tolerance');
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const content = `${id}.${timestamp}.${text}`;
  const secrets = typeof secret === 'string' ? [secret] : secret;
  const expected = secrets.map((s) =>
    createHmac('sha256', Buffer.from(s.startsWith('whsec_') ? s.slice(6) : s, 'base64'))
      .update(content)
      .digest(),
  );
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',');
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (expected.some((e) => e.length === given.length && timingSafeEqual(e, given))) return JSON.parse(text) as T;
  }
  throw new WebhookVerificationError('no matching signature');
}
