/**
 * Where a webhook may be sent, with the name resolved: the url's own checks and the address rules are
 * domain/webhook-url.ts's (pure); this module asks DNS (the system's resolver, or a test's) and judges every
 * address the name has now. The API checks at creation (api/routes/webhooks.ts) and every attempt checks again
 * (services/webhooks/delivery.ts), then connects to the addresses checked (services/webhooks/http-post.ts).
 */
import { lookup } from 'node:dns/promises';

import {
  checkAddresses,
  type CheckedUrl,
  developmentUrlPolicy,
  parseWebhookUrl,
  type ResolvedAddress,
  type Resolver,
  unresolvedRefusal,
  type WebhookUrlPolicy,
} from '../../domain/webhook-url.ts';

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS), every address of the name. */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** Throws UrlNotAllowedError with the reason, or returns the url and the addresses that were checked. */
export async function checkWebhookUrl(
  raw: string,
  livemode: boolean,
  resolve: Resolver = systemResolver,
  policy: WebhookUrlPolicy = developmentUrlPolicy,
): Promise<CheckedUrl> {
  const parsed = parseWebhookUrl(raw, livemode);
  let addresses: ResolvedAddress[];
  if (parsed.literal) {
    addresses = [parsed.literal];
  } else {
    try {
      addresses = await resolve(parsed.hostname);
    } catch (error) {
      throw unresolvedRefusal(parsed.hostname, (error as NodeJS.ErrnoException).code);
    }
  }
  return checkAddresses(parsed, addresses, livemode, policy);
}
